use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

async fn app_with_sim() -> TestApp {
    let sim = opsdeck::gateways::sim::start("127.0.0.1", 0, Some("t".into())).await.unwrap();
    spawn_app_with(&[
        "--gateway-port",
        &sim.port().to_string(),
        "--gateway-token",
        "t",
        "--local-sessions-dir",
        &fixture("local-sessions"),
    ])
    .await
}

fn find<'a>(sessions: &'a [Value], id: &str) -> &'a Value {
    sessions.iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("{id} in {sessions:?}"))
}

async fn sessions(app: &TestApp, query: &str) -> Vec<Value> {
    let reply = app.get(&format!("/api/sessions{query}"), &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["sessions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn lists_gateway_then_local_sessions_in_the_interface_shape() {
    let app = app_with_sim().await;
    let list = sessions(&app, "").await;
    let sources: Vec<&str> = list.iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["gateway", "gateway", "gateway", "local"], "gateway first; the cron duplicate collapsed");
    let builder = find(&list, "builder:main");
    assert_eq!(
        (builder["agent"].as_str(), builder["key"].as_str(), builder["kind"].as_str()),
        (Some("builder"), Some("main"), Some("chat"))
    );
    assert_eq!(builder["channel"], "discord");
    assert_eq!(builder["active"], true);
    assert_eq!(builder["age"], "0m");
    assert!(builder["tokens"].as_str().unwrap().ends_with("/200k (6%)"), "{}", builder["tokens"]);
    let scout = find(&list, "scout:research");
    assert!(scout["tokens"].as_str().unwrap().starts_with("1.5m/200k"), "{}", scout["tokens"]);
    let cron = find(&list, "gatekeeper:review");
    assert_eq!(cron["tokens"], "10k/200k (5%)", "the most recently updated duplicate wins");
    assert_eq!(cron["age"], "2m");
    assert_eq!(cron["flags"], json!(["cron"]));
    let local = find(&list, "5f0c2a9e-1111-4a2b-9c3d-000000000001");
    assert_eq!(local["agent"], "webshop");
    assert_eq!(local["channel"], "local");
    assert_eq!(local["model"], "claude-sonnet-4-5");
    assert_eq!(
        (local["userMessages"].as_u64(), local["assistantMessages"].as_u64(), local["toolUses"].as_u64()),
        (Some(2), Some(2), Some(2))
    );
    assert_eq!(local["lastUserPrompt"], "Now write a test for it");
    assert!(local["age"].as_str().unwrap().ends_with('d'));
    assert_eq!(local["active"], false);
    for field in ["startTime", "lastActivity", "estimatedCost"] {
        assert!(local[field].is_number(), "{field}");
    }
    assert_eq!(sessions(&app, "?agent=builder").await.len(), 1);
    assert_eq!(sessions(&app, "?limit=2").await.len(), 2);
    assert_eq!(app.get("/api/sessions?limit=x", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn control_is_forwarded_to_the_gateway_or_kept_locally() {
    let app = app_with_sim().await;
    let pause = app.post("/api/sessions/builder:main/control", &Auth::ApiKey, json!({"action": "pause"})).await;
    assert_eq!(pause.status, StatusCode::OK, "{}", pause.text);
    assert_eq!(pause.body, json!({"success": true, "status": "paused"}));
    let builder = find(&sessions(&app, "").await, "builder:main").clone();
    assert_eq!((builder["status"].as_str(), builder["active"].as_bool()), (Some("paused"), Some(false)));
    app.post("/api/sessions/builder:main/control", &Auth::ApiKey, json!({"action": "resume"})).await;
    assert_eq!(find(&sessions(&app, "").await, "builder:main")["status"], "active");
    let kill = app.post("/api/sessions/scout:research/control", &Auth::ApiKey, json!({"action": "kill"})).await;
    assert_eq!(kill.body["status"], "completed");
    let again = app.post("/api/sessions/scout:research/control", &Auth::ApiKey, json!({"action": "resume"})).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "a completed session has expired");

    let local_id = "5f0c2a9e-1111-4a2b-9c3d-000000000001";
    let paused =
        app.post(&format!("/api/sessions/{local_id}/control"), &Auth::ApiKey, json!({"action": "pause"})).await;
    assert_eq!(paused.status, StatusCode::OK);
    assert_eq!(find(&sessions(&app, "").await, local_id)["status"], "paused");

    let bad = app.post("/api/sessions/builder:main/control", &Auth::ApiKey, json!({"action": "explode"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.body["details"], json!(["action: must be pause, resume or kill"]));
    let missing = app.post("/api/sessions/nope:none/control", &Auth::ApiKey, json!({"action": "pause"})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.error(), "Session not found");
    assert_eq!(
        app.post("/api/sessions/builder:main/control", &Auth::ApiKey, json!({})).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn session_roles_and_the_per_session_limit() {
    let app = app_with_sim().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/sessions", None, "viewer").await;
    assert_min_role(
        &app,
        &roles,
        Method::POST,
        "/api/sessions/x/control",
        Some(json!({"action": "pause"})),
        "operator",
    )
    .await;

    let limited = spawn_app_with(&[
        "--disable-rate-limit",
        "false",
        "--rate-limit-per-minute",
        "1000",
        "--local-sessions-dir",
        &fixture("local-sessions"),
    ])
    .await;
    let id = "5f0c2a9e-1111-4a2b-9c3d-000000000001";
    for i in 0..10 {
        let action = if i % 2 == 0 { "pause" } else { "resume" };
        let r = limited.post(&format!("/api/sessions/{id}/control"), &Auth::ApiKey, json!({"action": action})).await;
        assert_eq!(r.status, StatusCode::OK, "{i}: {}", r.text);
    }
    let eleventh =
        limited.post(&format!("/api/sessions/{id}/control"), &Auth::ApiKey, json!({"action": "pause"})).await;
    assert_eq!(eleventh.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn unreachable_gateways_do_not_break_the_list() {
    let app = spawn_app_with(&["--gateway-port", "1", "--local-sessions-dir", "/nonexistent/dir"]).await;
    assert!(sessions(&app, "").await.is_empty());
}

#[tokio::test]
async fn token_usage_yields_sessions_and_local_sessions_are_costed() {
    let app = app_with_sim().await;
    let reply = app
        .post("/api/tokens", &Auth::ApiKey, json!({"model": "claude-opus-4-5", "sessionId": "ledger:nightly", "inputTokens": 1500, "outputTokens": 500}))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    // A token session whose id a gateway already reports is not listed twice.
    app.post(
        "/api/tokens",
        &Auth::ApiKey,
        json!({"model": "m", "sessionId": "builder:main", "inputTokens": 1, "outputTokens": 1}),
    )
    .await;
    let list = sessions(&app, "").await;
    let derived = find(&list, "ledger:nightly");
    assert_eq!(
        (derived["source"].as_str(), derived["agent"].as_str(), derived["key"].as_str()),
        (Some("tokens"), Some("ledger"), Some("nightly"))
    );
    assert_eq!(derived["tokens"], "2k/200k (1%)");
    assert!((derived["estimatedCost"].as_f64().unwrap() - 30.0).abs() < 1e-9, "2,000 tokens at 15.00 per 1K");
    assert_eq!(list.iter().filter(|s| s["id"] == "builder:main").count(), 1);
    assert_eq!(list.last().unwrap()["source"], "tokens", "token-derived sessions come last");
    let local = find(&list, "5f0c2a9e-1111-4a2b-9c3d-000000000001");
    assert!((local["estimatedCost"].as_f64().unwrap() - 2.650 * 3.0).abs() < 1e-9, "{}", local["estimatedCost"]);
}
