use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn healthz_answers_without_auth() {
    let app = spawn_app().await;
    let reply = app.get("/healthz", &Auth::None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}));
    assert_eq!(reply.header("content-type"), Some("application/json; charset=utf-8"));
    assert_eq!(reply.header("content-length"), Some(reply.text.len().to_string().as_str()), "one body, sized");
}

#[tokio::test]
async fn accepted_connections_have_nagle_off() {
    // Otherwise a response written in two parts can stall ~40 ms on the client's delayed ACK.
    let (acceptor, addr) = opsdeck::bind("127.0.0.1", 0).await.expect("bind");
    let _client = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (accepted, _) = acceptor.inner().accept().await.expect("accept");
    assert!(accepted.nodelay().expect("reads TCP_NODELAY"));
}

#[tokio::test]
async fn every_response_has_security_headers() {
    let app = spawn_app().await;
    for path in ["/healthz", "/api/auth/me", "/api/nope"] {
        let reply = app.get(path, &Auth::None).await;
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{path}");
        assert_eq!(reply.header("x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(reply.header("referrer-policy"), Some("strict-origin-when-cross-origin"), "{path}");
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_are_json_errors() {
    let app = spawn_app().await;
    let nope = app.get("/api/does-not-exist", &Auth::ApiKey).await;
    assert_eq!(nope.status, StatusCode::NOT_FOUND);
    assert_eq!(nope.body, json!({"error": "Not found"}));
    let method = app.call(Method::PATCH, "/api/auth/login", &Auth::None, Some(json!({}))).await;
    assert_eq!(method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(method.body, json!({"error": "Method not allowed"}));
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let app = spawn_app().await;
    let huge = format!("{{\"username\":\"{}\",\"password\":\"x\"}}", "a".repeat(2 * 1024 * 1024));
    let reply = app.raw(Method::POST, "/api/auth/users", &Auth::ApiKey, huge).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.error(), "Request body too large");
}

#[tokio::test]
async fn bodies_of_every_wrong_shape_are_400() {
    let app = spawn_app().await;
    for body in ["", "null", "42", "\"str\"", "[]", "{", "{\"id\": }", "\u{0}"] {
        let reply = app.raw(Method::PUT, "/api/auth/users", &Auth::ApiKey, body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body:?}: {}", reply.text);
        assert!(reply.body["error"].is_string());
    }
    for body in [json!({"id": -1, "role": "admin"}), json!({"id": 1.5}), json!({"id": "1"}), json!({"id": null})] {
        let reply = app.put("/api/auth/users", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}: {}", reply.text);
        assert_eq!(reply.error(), "Validation failed");
    }
}

#[tokio::test]
async fn general_rate_limit_with_headers_and_retry_after() {
    let app = spawn_app_with(&["--disable-rate-limit", "false", "--rate-limit-per-minute", "3"]).await;
    let first = app.get("/api/auth/me", &Auth::ApiKey).await;
    assert_eq!(first.header("x-ratelimit-limit"), Some("3"));
    assert_eq!(first.header("x-ratelimit-remaining"), Some("2"));
    let reset: i64 = first.header("x-ratelimit-reset").unwrap().parse().unwrap();
    let now = opsdeck::store::now_secs();
    assert!(reset > now && reset <= now + 61, "reset is Unix seconds: {reset}");
    app.get("/api/auth/me", &Auth::ApiKey).await;
    app.get("/api/auth/me", &Auth::ApiKey).await;
    let limited = app.get("/api/auth/me", &Auth::ApiKey).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.body, json!({"error": "Rate limit exceeded"}));
    assert!(limited.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(limited.header("x-ratelimit-remaining"), Some("0"));
    // Outside /api there is no limit.
    assert_eq!(app.get("/healthz", &Auth::None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn rate_limit_zero_disables_it() {
    let app = spawn_app_with(&["--disable-rate-limit", "false", "--rate-limit-per-minute", "0"]).await;
    for _ in 0..5 {
        let reply = app.get("/api/auth/me", &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.header("x-ratelimit-limit").is_none());
    }
}

#[tokio::test]
async fn production_blocks_unlisted_hosts() {
    let app = spawn_app_with(&["--env", "production", "--allowed-hosts", "127.0.0.1,*.lan.example,100.*"]).await;
    let with_host =
        |host: &'static str| app.send(app.request(Method::GET, "/healthz", &Auth::None).header("host", host));
    assert_eq!(with_host("127.0.0.1").await.status, StatusCode::OK);
    assert_eq!(with_host("box.lan.example:3005").await.status, StatusCode::OK);
    assert_eq!(with_host("100.64.0.7").await.status, StatusCode::OK);
    let blocked = with_host("evil.example").await;
    assert_eq!(blocked.status, StatusCode::FORBIDDEN);
    assert_eq!(blocked.error(), "Host not allowed");
    assert!(blocked.body["details"][0].as_str().unwrap().contains("SVC_ALLOWED_HOSTS"));
    assert_eq!(with_host("lan.example").await.status, StatusCode::FORBIDDEN, "bare domain is not a subdomain");
}

#[tokio::test]
async fn development_and_allow_any_host_skip_the_allowlist() {
    let dev = spawn_app().await;
    let reply = dev.send(dev.request(Method::GET, "/healthz", &Auth::None).header("host", "anything.example")).await;
    assert_eq!(reply.status, StatusCode::OK);
    let any = spawn_app_with(&["--env", "production", "--allow-any-host", "true"]).await;
    let reply = any.send(any.request(Method::GET, "/healthz", &Auth::None).header("host", "anything.example")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn openapi_document_describes_the_api() {
    let app = spawn_app().await;
    let reply = app.get("/api/docs", &Auth::None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = &reply.body;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.2.0");
    assert_eq!(doc["servers"][0]["url"], "/");
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["cookieAuth"]["in"], "cookie");
    assert_eq!(schemes["cookieAuth"]["name"], "svc-session");
    assert_eq!(schemes["apiKeyHeader"]["name"], "x-api-key");
    for (path, method) in [
        ("/api/auth/login", "post"),
        ("/api/auth/logout", "post"),
        ("/api/auth/me", "get"),
        ("/api/auth/users", "get"),
        ("/api/auth/users", "post"),
        ("/api/auth/users", "put"),
        ("/api/auth/users", "delete"),
        ("/api/auth/access-requests", "get"),
        ("/api/auth/access-requests", "post"),
        ("/api/audit", "get"),
        ("/api/events", "get"),
        ("/api/docs", "get"),
        ("/healthz", "get"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path} documented");
    }
    assert!(doc["components"]["schemas"]["User"].is_object());
    assert!(doc["components"]["schemas"]["Error"].is_object());
}

#[tokio::test]
async fn first_admin_is_seeded_once_and_a_password_generated_when_none_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_string_lossy().to_string();
    let args = ["--env", "development", "--data-dir", &data, "--argon2-memory-kib", "8", "--argon2-iterations", "1"];
    let settings = || opsdeck::config::Settings::from_args(args).unwrap().validate().unwrap();
    let mut config = settings();
    config.admin_pass = None;
    let app = opsdeck::build(config).await.unwrap();
    let generated = app.generated_admin_password.clone().expect("a generated password");
    assert!(generated.len() >= 12);
    assert!(data.len() > 1 && dir.path().join("svc.db").exists(), "database created under SVC_DATA_DIR");
    drop(app);
    // Background tasks let go of the database a moment after the app is dropped.
    let mut again = None;
    for _ in 0..50 {
        let mut config = settings();
        config.admin_pass = None;
        match opsdeck::build(config).await {
            Ok(app) => {
                again = Some(app);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let again = again.expect("the database reopens");
    assert!(again.generated_admin_password.is_none(), "users exist: nothing seeded twice");
}

#[test]
fn config_rejects_bad_values_with_one_clear_line() {
    use opsdeck::config::Settings;
    let err = |args: &[&str]| Settings::from_args(args).and_then(Settings::validate).err().unwrap();
    assert!(err(&["--auth-pass-b64", "%%%"]).contains("AUTH_PASS_B64"));
    assert!(err(&["--auth-pass", "short"]).contains("at least 12 characters"));
    assert!(err(&["--cookie-samesite", "sometimes"]).contains("SVC_COOKIE_SAMESITE"));
    assert!(err(&["--trusted-proxies", "not-an-ip"]).contains("SVC_TRUSTED_PROXIES"));
    assert!(err(&["--port", "99999"]).contains("99999"));
    let ok = Settings::from_args(["--auth-pass-b64", "c2VjcmV0LXBhc3N3b3JkLTE="]).unwrap().validate().unwrap();
    assert_eq!(ok.admin_pass.as_deref(), Some("secret-password-1"));
}
