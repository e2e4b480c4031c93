use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn login_sets_a_session_cookie_with_every_attribute() {
    let app = spawn_app().await;
    let reply = app.login_reply(ADMIN_USER, ADMIN_PASS).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["user"]["username"], "admin");
    assert_eq!(reply.body["user"]["role"], "admin");
    assert_eq!(reply.body["user"]["provider"], "local");
    assert!(reply.body["user"].get("password_hash").is_none());
    let cookie = reply.session_cookie().unwrap();
    let token = cookie.split(';').next().unwrap().trim_start_matches("svc-session=");
    assert_eq!(token.len(), 64);
    assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    for attr in ["Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=604800"] {
        assert!(cookie.contains(attr), "{attr} missing from {cookie}");
    }
    assert!(!cookie.contains("Secure"), "secure is off in this test config: {cookie}");

    let me = app.get("/api/auth/me", &Auth::Session(token.into())).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.body["user"]["username"], "admin");
    assert!(me.body["user"]["last_login_at"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn cookie_is_secure_in_production_and_samesite_is_configurable() {
    let app = spawn_app_with(&["--env", "production", "--cookie-secure", "true", "--cookie-samesite", "lax"]).await;
    let cookie = app.login_reply(ADMIN_USER, ADMIN_PASS).await.session_cookie().unwrap();
    assert!(cookie.contains("Secure"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
}

#[tokio::test]
async fn wrong_password_and_unknown_user_get_the_same_401_and_are_audited() {
    let app = spawn_app().await;
    let wrong = app.login_reply(ADMIN_USER, "not-the-password").await;
    let unknown = app.login_reply("nobody", "not-the-password").await;
    for reply in [&wrong, &unknown] {
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert_eq!(reply.error(), "Invalid credentials");
        assert!(reply.session_cookie().is_none());
    }
    app.login(ADMIN_USER, ADMIN_PASS).await;
    let events = app.audit("action=login").await;
    let successes: Vec<bool> = events.iter().map(|e| e["detail"]["success"].as_bool().unwrap()).collect();
    assert_eq!(successes, [true, false, false], "newest first");
    assert_eq!(events[1]["actor"], "nobody");
    assert_eq!(events[0]["actor"], "admin");
    assert_eq!(events[0]["ip_address"], "127.0.0.1");
}

#[tokio::test]
async fn login_bad_input_is_4xx() {
    let app = spawn_app().await;
    let missing = app.post("/api/auth/login", &Auth::None, json!({"username": "admin"})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.error(), "Validation failed");
    assert_eq!(missing.body["details"], json!(["password: is required"]));
    let wrong_type = app.post("/api/auth/login", &Auth::None, json!({"username": 5, "password": "x"})).await;
    assert_eq!(wrong_type.status, StatusCode::BAD_REQUEST);
    assert!(wrong_type.body["details"][0].as_str().unwrap().starts_with("username:"));
    let not_json = app.raw(Method::POST, "/api/auth/login", &Auth::None, "{nope").await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_json.error(), "Invalid JSON body");
    let array = app.raw(Method::POST, "/api/auth/login", &Auth::None, "[1,2]").await;
    assert_eq!(array.status, StatusCode::BAD_REQUEST);
    assert_eq!(array.body["details"], json!(["body: must be a JSON object"]));
}

#[tokio::test]
async fn brute_force_guard_blocks_an_ip_after_five_failures() {
    let app = spawn_app().await;
    for _ in 0..5 {
        assert_eq!(app.login_reply(ADMIN_USER, "wrong-password!").await.status, StatusCode::UNAUTHORIZED);
    }
    let blocked = app.login_reply(ADMIN_USER, ADMIN_PASS).await;
    assert_eq!(blocked.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(blocked.error(), "Too many login attempts");
    assert!(blocked.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
}

#[tokio::test]
async fn brute_force_guard_is_per_client_ip() {
    // The test client is a trusted proxy here, so X-Forwarded-For names the client.
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    let attempt = |ip: &'static str, password: &'static str| {
        let rb = app
            .request(Method::POST, "/api/auth/login", &Auth::None)
            .header("x-forwarded-for", ip)
            .json(&json!({"username": ADMIN_USER, "password": password}));
        app.send(rb)
    };
    for _ in 0..5 {
        assert_eq!(attempt("203.0.113.7", "wrong-password!").await.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(attempt("203.0.113.7", ADMIN_PASS).await.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(attempt("198.51.100.1", ADMIN_PASS).await.status, StatusCode::OK);
    let failed = app.audit("action=login").await;
    assert!(failed.iter().any(|e| e["ip_address"] == "203.0.113.7"));
}

#[tokio::test]
async fn logout_destroys_the_session_and_clears_the_cookie() {
    let app = spawn_app().await;
    let token = app.login(ADMIN_USER, ADMIN_PASS).await;
    let auth = Auth::Session(token);
    let reply = app.call(Method::POST, "/api/auth/logout", &auth, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, json!({"ok": true}));
    assert!(reply.session_cookie().unwrap().contains("Max-Age=0"));
    let me = app.get("/api/auth/me", &auth).await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED);
    assert_eq!(me.error(), "Authentication required");
    assert_eq!(app.audit("action=logout").await.len(), 1);
}

#[tokio::test]
async fn api_key_works_as_header_and_bearer_and_is_the_api_admin() {
    let app = spawn_app().await;
    for auth in [Auth::ApiKey, Auth::Bearer] {
        let me = app.get("/api/auth/me", &auth).await;
        assert_eq!(me.status, StatusCode::OK);
        assert_eq!(me.body["user"]["id"], 0);
        assert_eq!(me.body["user"]["username"], "api");
        assert_eq!(me.body["user"]["role"], "admin");
    }
    let wrong = app.send(app.request(Method::GET, "/api/auth/me", &Auth::None).header("x-api-key", "wrong")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong.error(), "Authentication required");
}

#[tokio::test]
async fn unknown_and_malformed_cookies_are_unauthenticated() {
    let app = spawn_app().await;
    for token in ["0".repeat(64), "zz".into(), "".into(), "x".repeat(5000)] {
        let reply = app.get("/api/auth/me", &Auth::Session(token)).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert_eq!(reply.error(), "Authentication required");
    }
}

#[tokio::test]
async fn a_valid_session_wins_over_an_api_key() {
    let app = spawn_app().await;
    let (_, viewer) = app.user_with_role("vic", "viewer").await;
    let Auth::Session(token) = viewer else { unreachable!() };
    let rb = app.request(Method::GET, "/api/auth/me", &Auth::Session(token.clone())).header("x-api-key", API_KEY);
    let reply = app.send(rb).await;
    assert_eq!(reply.body["user"]["username"], "vic");
    // An invalid cookie falls back to the key.
    let rb = app.request(Method::GET, "/api/auth/me", &Auth::Session("f".repeat(64))).header("x-api-key", API_KEY);
    assert_eq!(app.send(rb).await.body["user"]["username"], "api");
}

#[tokio::test]
async fn expired_sessions_are_refused_and_purged_on_login() {
    use opsdeck::store::schema::SESSIONS;
    use redb::{ReadableTable, ReadableTableMetadata};
    let app = spawn_app().await;
    let token = app.login(ADMIN_USER, ADMIN_PASS).await;
    // Age the session past its lifetime directly in the store.
    let hash = opsdeck::users::token_hash(&token);
    app.state
        .store
        .write(move |tx| {
            let mut s: opsdeck::users::SessionRecord = {
                let t = tx.open_table(SESSIONS)?;
                let v = t.get(hash.as_str())?.unwrap();
                opsdeck::store::decode(v.value())?
            };
            s.expires_at = opsdeck::store::now_secs() - 1;
            let bytes = opsdeck::store::encode(&s)?;
            tx.open_table(SESSIONS)?.insert(hash.as_str(), bytes.as_slice())?;
            Ok::<_, opsdeck::store::StoreError>(())
        })
        .await
        .unwrap();
    let reply = app.get("/api/auth/me", &Auth::Session(token)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    app.login(ADMIN_USER, ADMIN_PASS).await;
    let live = app.state.store.read(|tx| Ok::<_, opsdeck::store::StoreError>(tx.open_table(SESSIONS)?.len()?)).await;
    assert_eq!(live.unwrap(), 1, "the expired session was purged by the login");
}

#[tokio::test]
async fn csrf_refuses_cross_origin_writes_but_not_api_key_writes() {
    let app = spawn_app().await;
    let host = app.addr.to_string();
    let login = |origin: String| {
        let rb = app
            .request(Method::POST, "/api/auth/login", &Auth::None)
            .header("origin", origin)
            .json(&json!({"username": ADMIN_USER, "password": ADMIN_PASS}));
        app.send(rb)
    };
    let evil = login("http://evil.example".into()).await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN);
    assert_eq!(evil.error(), "CSRF origin mismatch");
    assert_eq!(login(format!("http://{host}")).await.status, StatusCode::OK);

    let token = app.login(ADMIN_USER, ADMIN_PASS).await;
    let body = json!({"username": "csrf-user", "password": "long-enough-password"});
    let rb =
        app.request(Method::POST, "/api/auth/users", &Auth::Session(token)).header("origin", "http://evil.example");
    let reply = app.send(rb.json(&body)).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(reply.error(), "CSRF origin mismatch");
    let rb = app.request(Method::POST, "/api/auth/users", &Auth::ApiKey).header("origin", "http://evil.example");
    assert_eq!(app.send(rb.json(&body)).await.status, StatusCode::CREATED);
    // Reads are not subject to the check.
    let rb = app.request(Method::GET, "/api/auth/me", &Auth::ApiKey).header("origin", "http://evil.example");
    assert_eq!(app.send(rb).await.status, StatusCode::OK);
}
