use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

async fn with_sim() -> TestApp {
    let sim = opsdeck::gateways::sim::start("127.0.0.1", 0, None).await.unwrap();
    spawn_app_with(&["--gateway-port", &sim.port().to_string(), "--agw-home", "/nonexistent/agw-home"]).await
}

async fn agent(app: &TestApp, name: &str) -> Value {
    let reply = app.get(&format!("/api/agents/{name}"), &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{name}: {}", reply.text);
    reply.body["agent"].clone()
}

#[tokio::test]
async fn sync_from_the_gateway_creates_then_leaves_agents_unchanged() {
    let app = with_sim().await;
    let first = app.call(Method::POST, "/api/agents/sync", &Auth::ApiKey, None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(
        (first.body["synced"].as_u64(), first.body["created"].as_u64(), first.body["updated"].as_u64()),
        (Some(3), Some(3), Some(0))
    );
    assert_eq!(first.body["source"], "gateway");
    let names: Vec<&str> =
        first.body["agents"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Builder", "Scout", "gatekeeper"]);
    let builder = agent(&app, "Builder").await;
    assert_eq!(builder["role"], "developer");
    assert_eq!(builder["status"], "offline");
    assert_eq!(builder["config"]["model"], "anthropic/claude-sonnet-4-20250514");
    assert_eq!(builder["config"]["tools"], json!(["shell", "git", "sessions_send"]));
    assert_eq!(agent(&app, "gatekeeper").await["role"], "qa");
    let second = app.call(Method::POST, "/api/agents/sync", &Auth::ApiKey, None).await;
    assert_eq!((second.body["created"].as_u64(), second.body["updated"].as_u64()), (Some(0), Some(0)));
    assert!(second.body["agents"].as_array().unwrap().iter().all(|a| a["action"] == "unchanged"));
}

#[tokio::test]
async fn sync_falls_back_to_the_file_with_workspace_files() {
    let app = spawn_app_with(&["--gateway-port", "1", "--agw-home", &fixture("agw-home")]).await;
    // An existing agent with another soul is updated from its workspace's soul.md.
    app.post("/api/agents", &Auth::ApiKey, json!({"name": "Builder", "role": "developer", "soul_content": "old soul"}))
        .await;
    let reply = app.call(Method::POST, "/api/agents/sync", &Auth::ApiKey, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["source"], "file");
    assert_eq!((reply.body["created"].as_u64(), reply.body["updated"].as_u64()), (Some(2), Some(1)));
    let builder = agent(&app, "Builder").await;
    let soul = std::fs::read_to_string(fixture("agw-home/workspaces/builder/soul.md")).unwrap();
    assert_eq!(builder["soul_content"].as_str(), Some(soul.as_str()));
    assert!(builder["config"]["workspace"].as_str().unwrap().ends_with("workspaces/builder"));
    assert_eq!(builder["config"]["identity"]["emoji"], "🔨", "identity.md wins over the config");
    let scout = agent(&app, "Scout").await;
    assert_eq!(scout["role"], "analyst", "identity.md without a heading keeps the config name");
}

#[tokio::test]
async fn sync_without_gateway_or_file_is_a_clear_error() {
    let app = spawn_app_with(&["--gateway-port", "1", "--agw-home", "/nonexistent/agw-home"]).await;
    let reply = app.call(Method::POST, "/api/agents/sync", &Auth::ApiKey, None).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    assert!(reply.error().contains("openclaw.json"), "{}", reply.error());
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::POST, "/api/agents/sync", None, "operator").await;
}

#[tokio::test]
async fn write_to_gateway_spawns_through_the_gateway() {
    let app = with_sim().await;
    let reply = app
        .post(
            "/api/agents",
            &Auth::ApiKey,
            json!({"name": "runner", "role": "developer", "session_key": "job-7", "write_to_gateway": true}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let sessions = app.get("/api/sessions?agent=runner", &Auth::ApiKey).await;
    let s = &sessions.body["sessions"][0];
    assert_eq!((s["id"].as_str(), s["kind"].as_str()), (Some("runner:job-7"), Some("spawn")));

    let down = spawn_app_with(&["--gateway-port", "1"]).await;
    let refused =
        down.post("/api/agents", &Auth::ApiKey, json!({"name": "ghost", "role": "qa", "write_to_gateway": true})).await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        down.get("/api/agents/ghost", &Auth::ApiKey).await.status,
        StatusCode::NOT_FOUND,
        "nothing half-created"
    );
}

#[tokio::test]
async fn wake_works_with_and_without_a_reachable_gateway() {
    for app in [with_sim().await, spawn_app_with(&["--gateway-port", "1"]).await] {
        app.post("/api/agents", &Auth::ApiKey, json!({"name": "sleepy", "role": "qa"})).await;
        let reply = app.post("/api/agents/sleepy/wake", &Auth::ApiKey, json!({"reason": "new work"})).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        assert_eq!(agent(&app, "sleepy").await["status"], "idle");
    }
}
