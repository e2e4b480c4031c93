//! Every route of the router (as the OpenAPI document lists them) × {no credentials, viewer, operator,
//! admin, API key}: 401 / 403 / allowed exactly as the interface's roles say. A route missing from the
//! table below fails the test, so a new route cannot ship without a declared role.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

/// (method, path, minimum role) — `public` needs no credentials.
const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/healthz", "public"),
    ("GET", "/api/docs", "public"),
    ("POST", "/api/auth/login", "public"),
    ("GET", "/api/auth/google", "public"),
    ("POST", "/api/auth/logout", "viewer"),
    ("GET", "/api/auth/me", "viewer"),
    ("GET", "/api/auth/users", "admin"),
    ("POST", "/api/auth/users", "admin"),
    ("PUT", "/api/auth/users", "admin"),
    ("DELETE", "/api/auth/users", "admin"),
    ("GET", "/api/auth/access-requests", "admin"),
    ("POST", "/api/auth/access-requests", "admin"),
    ("GET", "/api/agents", "viewer"),
    ("POST", "/api/agents", "operator"),
    ("PUT", "/api/agents", "operator"),
    ("GET", "/api/agents/comms", "viewer"),
    ("POST", "/api/agents/message", "operator"),
    ("POST", "/api/agents/sync", "operator"),
    ("GET", "/api/agents/{id}", "viewer"),
    ("PUT", "/api/agents/{id}", "operator"),
    ("DELETE", "/api/agents/{id}", "operator"),
    ("GET", "/api/agents/{id}/heartbeat", "viewer"),
    ("POST", "/api/agents/{id}/heartbeat", "operator"),
    ("GET", "/api/agents/{id}/memory", "viewer"),
    ("PUT", "/api/agents/{id}/memory", "operator"),
    ("GET", "/api/agents/{id}/soul", "viewer"),
    ("PUT", "/api/agents/{id}/soul", "operator"),
    ("POST", "/api/agents/{id}/wake", "operator"),
    ("POST", "/api/connect", "operator"),
    ("GET", "/api/alerts", "viewer"),
    // Creating a rule needs an operator; `{action: "evaluate"}` only a viewer (tests/api/alerts.rs).
    ("POST", "/api/alerts", "operator"),
    ("PUT", "/api/alerts", "operator"),
    ("DELETE", "/api/alerts", "admin"),
    ("GET", "/api/audit", "admin"),
    ("GET", "/api/backup", "admin"),
    ("POST", "/api/backup", "admin"),
    ("DELETE", "/api/backup", "admin"),
    ("GET", "/api/events", "viewer"),
    ("GET", "/api/gateways", "admin"),
    ("POST", "/api/gateways", "admin"),
    ("PUT", "/api/gateways", "admin"),
    ("DELETE", "/api/gateways", "admin"),
    ("POST", "/api/gateways/health", "admin"),
    ("GET", "/api/logs", "viewer"),
    ("POST", "/api/logs", "operator"),
    ("GET", "/api/notifications", "viewer"),
    ("PUT", "/api/notifications", "viewer"),
    ("DELETE", "/api/notifications", "admin"),
    ("GET", "/api/quality-review", "viewer"),
    ("POST", "/api/quality-review", "operator"),
    ("GET", "/api/scheduler", "admin"),
    ("POST", "/api/scheduler", "admin"),
    ("GET", "/api/sessions", "viewer"),
    ("POST", "/api/sessions/{id}/control", "operator"),
    ("GET", "/api/settings", "admin"),
    ("PUT", "/api/settings", "admin"),
    ("DELETE", "/api/settings", "admin"),
    ("GET", "/api/tasks", "viewer"),
    ("POST", "/api/tasks", "operator"),
    ("PUT", "/api/tasks", "operator"),
    ("GET", "/api/tasks/{id}", "viewer"),
    ("PUT", "/api/tasks/{id}", "operator"),
    ("DELETE", "/api/tasks/{id}", "operator"),
    ("POST", "/api/tasks/{id}/broadcast", "operator"),
    ("GET", "/api/tasks/{id}/comments", "viewer"),
    ("POST", "/api/tasks/{id}/comments", "operator"),
    ("GET", "/api/tokens", "viewer"),
    ("POST", "/api/tokens", "operator"),
    ("GET", "/api/webhooks", "admin"),
    ("POST", "/api/webhooks", "admin"),
    ("PUT", "/api/webhooks", "admin"),
    ("DELETE", "/api/webhooks", "admin"),
    ("GET", "/api/webhooks/deliveries", "admin"),
    ("POST", "/api/webhooks/retry", "admin"),
    ("POST", "/api/webhooks/test", "admin"),
];

const RANKS: [&str; 4] = ["public", "viewer", "operator", "admin"];

fn rank(role: &str) -> usize {
    RANKS.iter().position(|r| *r == role).unwrap()
}

/// Status of a call, and the error text for 401/403 (streams such as SSE are not read).
async fn status_of(app: &TestApp, method: &str, path: &str, auth: &Auth) -> (StatusCode, String) {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let mut rb = app.request(method.clone(), path, auth);
    if method != Method::GET {
        rb = rb.json(&json!({}));
    }
    let res = rb.send().await.unwrap();
    let status = res.status();
    let error = if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        res.json::<serde_json::Value>()
            .await
            .map(|b| b["error"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    } else {
        String::new()
    };
    (status, error)
}

#[tokio::test]
async fn every_route_enforces_its_role() {
    let app = spawn_app().await;
    let doc = app.get("/api/docs", &Auth::None).await.body;
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in
            ops.as_object().unwrap().keys().filter(|m| ["get", "post", "put", "delete", "patch"].contains(&m.as_str()))
        {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    for (m, p) in &documented {
        assert!(ROUTES.iter().any(|(rm, rp, _)| rm == m && rp == p), "{m} {p} has no declared role in the matrix");
    }
    for (m, p, _) in ROUTES {
        assert!(documented.iter().any(|(dm, dp)| dm == m && dp == p), "{m} {p} is in the matrix but not in the router");
    }

    let roles = app.role_sessions().await;
    let callers: [(&str, Auth); 4] = [
        ("viewer", roles.viewer.clone()),
        ("operator", roles.operator.clone()),
        ("admin", roles.admin.clone()),
        ("admin", Auth::ApiKey),
    ];
    for (method, template, min) in ROUTES.iter().filter(|(_, p, _)| *p != "/api/auth/logout") {
        let path = template.replace("{id}", "1");
        let (status, error) = status_of(&app, method, &path, &Auth::None).await;
        if *min == "public" {
            assert!(
                status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                "{method} {path} is public: {status}"
            );
            continue;
        }
        assert_eq!(
            (status, error.as_str()),
            (StatusCode::UNAUTHORIZED, "Authentication required"),
            "{method} {path} anonymous"
        );
        for (role, auth) in &callers {
            let (status, error) = status_of(&app, method, &path, auth).await;
            if rank(role) < rank(min) {
                assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path} as {role}");
                assert_eq!(error, format!("Requires {min} role or higher"), "{method} {path} as {role}");
            } else {
                assert!(
                    status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                    "{method} {path} as {role}: {status} {error}"
                );
            }
        }
    }
    // Logout last: it ends the sessions it is called with.
    assert_eq!(status_of(&app, "POST", "/api/auth/logout", &Auth::None).await.0, StatusCode::UNAUTHORIZED);
    for auth in [&roles.viewer, &roles.operator, &roles.admin, &Auth::ApiKey] {
        assert_eq!(status_of(&app, "POST", "/api/auth/logout", auth).await.0, StatusCode::OK);
    }
}
