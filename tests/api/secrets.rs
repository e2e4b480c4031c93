//! Secrets never leave the server: after creating users, a gateway with a token and a webhook, no GET
//! response (every GET route of the router) contains a password hash, a password, the gateway token or
//! the full webhook secret.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn no_read_response_contains_a_secret() {
    let app = spawn_app().await;
    let password = "a-very-secret-password";
    app.post("/api/auth/users", &Auth::ApiKey, json!({"username": "keeper", "password": password, "role": "operator"}))
        .await;
    app.login("keeper", password).await;
    let gateway_token = "gw-token-that-must-not-leak";
    let gw = app
        .post(
            "/api/gateways",
            &Auth::ApiKey,
            json!({"name": "edge", "host": "127.0.0.1", "port": 1, "token": gateway_token}),
        )
        .await;
    assert_eq!(gw.status, StatusCode::OK);
    let hook = app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "h", "url": "http://127.0.0.1:1/x"})).await;
    let secret = hook.body["secret"].as_str().unwrap().to_string();
    app.put("/api/webhooks", &Auth::ApiKey, json!({"id": hook.body["id"], "name": "renamed"})).await;
    let task = app.post("/api/tasks", &Auth::ApiKey, json!({"title": "t", "assigned_to": "a"})).await;
    assert_eq!(task.status, StatusCode::OK);

    let doc = app.get("/api/docs", &Auth::None).await.body;
    let mut checked = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if ops.get("get").is_none() || path == "/api/events" {
            continue;
        }
        let path = path.replace("{id}", "1");
        for query in ["", "?action=stats", "?action=sources"] {
            let reply = app.get(&format!("{path}{query}"), &Auth::ApiKey).await;
            for needle in ["$argon2", password, gateway_token, &secret, ADMIN_PASS] {
                assert!(!reply.text.contains(needle), "GET {path}{query} leaks {needle}: {}", reply.text);
            }
            assert!(!reply.text.contains("password_hash"), "GET {path}{query}");
            checked += 1;
        }
    }
    assert!(checked > 60, "checked {checked} responses");
}

#[tokio::test]
async fn unknown_user_and_wrong_password_take_the_same_work() {
    // Both paths verify an Argon2 hash (a dummy one for unknown users); compare medians loosely so the
    // test is about the work done, not about timing noise.
    // Each attempt comes from its own client address so the brute-force guard stays out of the way.
    let app =
        spawn_app_with(&["--argon2-memory-kib", "4096", "--argon2-iterations", "2", "--trusted-proxies", "127.0.0.1"])
            .await;
    let counter = std::sync::atomic::AtomicU32::new(1);
    let attempt = |user: &'static str| {
        let (app, counter) = (&app, &counter);
        async move {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let rb = app
                .request(reqwest::Method::POST, "/api/auth/login", &Auth::None)
                .header("x-forwarded-for", format!("10.9.{}.{}", n / 250, n % 250))
                .json(&json!({"username": user, "password": "wrong-password!!"}));
            let started = std::time::Instant::now();
            let reply = app.send(rb).await;
            assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
            started.elapsed().as_secs_f64()
        }
    };
    // Interleaved, so a change in machine load hits both samples alike.
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..11 {
        known.push(attempt(ADMIN_USER).await);
        unknown.push(attempt("nobody-at-all").await);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (known, unknown) = (median(known), median(unknown));
    let ratio = known.max(unknown) / known.min(unknown);
    assert!(ratio < 3.0, "known {known:.4}s vs unknown {unknown:.4}s");
}
