use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn gateways(app: &TestApp) -> Vec<Value> {
    app.get("/api/gateways", &Auth::ApiKey).await.body["gateways"].as_array().unwrap().clone()
}

#[tokio::test]
async fn gateway_routes_are_admin_only() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    for (method, path) in [
        (Method::GET, "/api/gateways"),
        (Method::POST, "/api/gateways"),
        (Method::PUT, "/api/gateways"),
        (Method::DELETE, "/api/gateways"),
    ] {
        let body = (method != Method::GET).then(|| json!({}));
        assert_min_role(&app, &roles, method, path, body, "admin").await;
    }
}

#[tokio::test]
async fn a_default_primary_is_seeded_from_configuration() {
    let app = spawn_app_with(&[
        "--gateway-host",
        "10.1.2.3",
        "--gateway-port",
        "18800",
        "--gateway-token",
        "sekrit",
        "--default-gateway-name",
        "main-gw",
    ])
    .await;
    let list = gateways(&app).await;
    assert_eq!(list.len(), 1);
    let g = &list[0];
    assert_eq!(
        (g["name"].as_str(), g["host"].as_str(), g["port"].as_u64()),
        (Some("main-gw"), Some("10.1.2.3"), Some(18800))
    );
    assert_eq!(g["is_primary"], true);
    assert_eq!(g["status"], "unknown");
    assert_eq!(g["token_set"], true);
    assert_ne!(g["token"], "sekrit");
    let text = app.get("/api/gateways", &Auth::ApiKey).await.text;
    assert!(!text.contains("sekrit"), "the token never leaves the server");
}

#[tokio::test]
async fn create_update_delete_with_one_primary() {
    let app = spawn_app().await;
    let created = app
        .post(
            "/api/gateways",
            &Auth::ApiKey,
            json!({"name": "edge", "host": "edge.lan", "port": 18790, "token": "t0ken"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let g = &created.body["gateway"];
    assert_eq!(
        (g["is_primary"].as_bool(), g["token_set"].as_bool(), g["token"].as_str()),
        (Some(false), Some(true), Some("********"))
    );
    let id = g["id"].as_u64().unwrap();
    let dup = app.post("/api/gateways", &Auth::ApiKey, json!({"name": "EDGE", "host": "x", "port": 1})).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    assert_eq!(dup.error(), "Gateway name already exists");

    let promoted = app
        .put("/api/gateways", &Auth::ApiKey, json!({"id": id, "is_primary": true, "port": 18791, "token": ""}))
        .await;
    assert_eq!(promoted.status, StatusCode::OK, "{}", promoted.text);
    assert_eq!(promoted.body["gateway"]["token_set"], false);
    let list = gateways(&app).await;
    let primaries: Vec<&str> =
        list.iter().filter(|g| g["is_primary"] == true).map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(primaries, ["edge"], "at most one primary");
    let seeded = list.iter().find(|g| g["name"] == "primary").unwrap()["id"].as_u64().unwrap();

    let refused = app.delete("/api/gateways", &Auth::ApiKey, json!({"id": id})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.error(), "The primary gateway cannot be deleted");
    let deleted = app.delete("/api/gateways", &Auth::ApiKey, json!({"id": seeded})).await;
    assert_eq!(deleted.body, json!({"success": true}));
    assert_eq!(gateways(&app).await.len(), 1);
    assert_eq!(app.delete("/api/gateways", &Auth::ApiKey, json!({"id": 999})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn gateway_bad_input() {
    let app = spawn_app().await;
    for (body, detail) in [
        (
            json!({"name": "a", "host": "http://x", "port": 1}),
            "host: must be a hostname or IP address (no scheme, path or spaces)",
        ),
        (
            json!({"name": "a", "host": "a host", "port": 1}),
            "host: must be a hostname or IP address (no scheme, path or spaces)",
        ),
        (json!({"name": "a", "host": "x", "port": 0}), "port: must be between 1 and 65535"),
        (json!({"name": "", "host": "x", "port": 1}), "name: must be 1-100 characters"),
        (json!({"name": "a", "host": "x"}), "port: is required"),
    ] {
        let reply = app.post("/api/gateways", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["details"][0], detail, "{body}");
    }
    for body in [
        json!({"name": "a", "host": "x", "port": 70000}),
        json!({"name": "a", "host": "x", "port": "80"}),
        json!({"name": "a", "host": "x", "port": -1}),
    ] {
        assert_eq!(
            app.post("/api/gateways", &Auth::ApiKey, body.clone()).await.status,
            StatusCode::BAD_REQUEST,
            "{body}"
        );
    }
    assert_eq!(app.put("/api/gateways", &Auth::ApiKey, json!({"id": 1})).await.error(), "No fields to update");
    assert_eq!(
        app.put("/api/gateways", &Auth::ApiKey, json!({"id": 1, "status": "great"})).await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.put("/api/gateways", &Auth::ApiKey, json!({"id": 77, "port": 2})).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn health_checks_update_status_and_follow_the_failure_rule() {
    let sim = opsdeck::gateways::sim::start("127.0.0.1", 0, Some("gw-token".into())).await.unwrap();
    let app = spawn_app_with(&["--gateway-port", &sim.port().to_string(), "--gateway-token", "gw-token"]).await;
    let report = app.post("/api/gateways/health", &Auth::ApiKey, json!({})).await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text);
    assert_eq!(report.body["healthy"], true);
    assert!(report.body["latency_ms"].as_u64().is_some());
    let d = &report.body["details"][0];
    assert_eq!((d["name"].as_str(), d["status"].as_str()), (Some("primary"), Some("online")));
    assert_eq!(d["response"]["simulated"], true);
    let g = &gateways(&app).await[0];
    assert_eq!(g["status"], "online");
    assert!(g["last_seen"].as_i64().is_some());
    assert!(g["latency"].as_u64().is_some());

    // A wrong token is a failed check: one failure after success → degraded, three → offline.
    let id = g["id"].as_u64().unwrap();
    app.put("/api/gateways", &Auth::ApiKey, json!({"id": id, "token": "wrong"})).await;
    let statuses = [("degraded", 1), ("degraded", 2), ("offline", 3)];
    for (expected, n) in statuses {
        let report = opsdeck::gateways::api::check(&app.state, Some(id)).await.unwrap();
        assert!(!report.healthy);
        assert_eq!(report.details[0].status, expected, "after {n} failures");
        assert!(report.details[0].error.as_deref().unwrap().contains("401"));
    }
}

#[tokio::test]
async fn manual_health_checks_are_limited_to_one_per_ten_seconds() {
    let app =
        spawn_app_with(&["--disable-rate-limit", "false", "--rate-limit-per-minute", "1000", "--gateway-port", "1"])
            .await;
    let first = app.post("/api/gateways/health", &Auth::ApiKey, json!({})).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.body["healthy"], false);
    assert!(first.body["details"][0]["error"].as_str().unwrap().contains("unreachable"));
    let second = app.post("/api/gateways/health", &Auth::ApiKey, json!({})).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(second.error(), "Rate limit exceeded");
    assert_eq!(
        app.post("/api/gateways/health", &Auth::ApiKey, json!({"gateway_id": "x"})).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn health_of_a_hanging_gateway_is_bounded() {
    // A listener that accepts and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = spawn_app_with(&["--gateway-port", &port.to_string()]).await;
    let started = std::time::Instant::now();
    let report = app.post("/api/gateways/health", &Auth::ApiKey, json!({"gateway_id": 1})).await;
    assert!(started.elapsed() < Duration::from_secs(12));
    assert_eq!(report.body["healthy"], false);
    assert_eq!(report.body["details"][0]["error"], "gateway timed out");
    drop(listener);
    let missing = app.post("/api/gateways/health", &Auth::ApiKey, json!({"gateway_id": 99})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.error(), "Gateway not found");
}
