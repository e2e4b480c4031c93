use std::collections::HashSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// The gateway log fixtures: 13 parseable lines in four formats, plus garbage lines that are skipped.
fn fixture_dir() -> String {
    format!("{}/tests/fixtures/agw-home/logs", env!("CARGO_MANIFEST_DIR"))
}

async fn spawn_with_fixtures() -> TestApp {
    spawn_app_with(&["--agw-log-dir", &fixture_dir()]).await
}

async fn logs(app: &TestApp, query: &str) -> Vec<Value> {
    let reply = app.get(&format!("/api/logs?{query}"), &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{query}: {}", reply.text);
    reply.body["logs"].as_array().cloned().expect("logs array")
}

async fn add(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/api/logs", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["success"], true);
    reply.body["entry"].clone()
}

fn find<'a>(entries: &'a [Value], message: &str) -> &'a Value {
    entries.iter().find(|e| e["message"] == message).unwrap_or_else(|| panic!("no entry {message:?}"))
}

#[tokio::test]
async fn log_routes_enforce_roles() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/logs", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, "/api/logs?action=sources", None, "viewer").await;
    let body = json!({"action": "add", "message": "role check"});
    assert_min_role(&app, &roles, Method::POST, "/api/logs", Some(body), "operator").await;
}

#[tokio::test]
async fn recent_parses_every_file_format_newest_first() {
    let app = spawn_with_fixtures().await;
    let all = logs(&app, "").await;
    assert_eq!(all.len(), 13, "garbage lines are skipped: {all:#?}");
    let ts: Vec<i64> = all.iter().map(|e| e["timestamp"].as_i64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] >= w[1]), "newest first: {ts:?}");
    let ids: HashSet<&str> = all.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 13, "ids are unique");
    assert!(ids.iter().all(|id| id.starts_with("file-")));
    assert_eq!(logs(&app, "action=recent").await, all, "same ids and order on every read");

    // JSON lines (gateway.log): data and session kept, the file names the source.
    let started = find(&all, "gateway started");
    assert_eq!(started["timestamp"], 1_763_683_200_000i64);
    assert_eq!((started["level"].as_str(), started["source"].as_str()), (Some("info"), Some("gateway")));
    assert_eq!(started["data"], json!({"port": 18789}));
    let full = find(&all, "context window 85% full");
    assert_eq!((full["level"].as_str(), full["session"].as_str()), (Some("warn"), Some("builder:main")));
    assert!(full.get("data").is_none());
    // Pipe-delimited (monitor.log).
    let disk = find(&all, "Disk usage above 90%");
    assert_eq!((disk["level"].as_str(), disk["source"].as_str()), (Some("error"), Some("monitor")));
    assert_eq!(disk["timestamp"], 1_763_683_560_000i64);
    assert_eq!(find(&all, "Queue depth 120")["level"], "warn");
    assert_eq!(find(&all, "Consistency check completed")["level"], "info");
    assert_eq!(find(&all, "tick")["level"], "debug");
    // Date-time text with a bracketed level (app.log).
    let failed = find(&all, "failed to reach webhook endpoint");
    assert_eq!((failed["level"].as_str(), failed["source"].as_str()), (Some("error"), Some("app")));
    assert_eq!(failed["timestamp"], 1_763_684_401_250i64);
    assert_eq!(find(&all, "retrying")["timestamp"], 1_763_684_402_500i64);
    // Gateway journal lines.
    let slow = find(&all, "WARN slow response from provider");
    assert_eq!((slow["level"].as_str(), slow["source"].as_str()), (Some("warn"), Some("gateway/journal")));
    assert_eq!(slow["data"], json!({"host": "opsbox", "process": "agw", "pid": 1201}));
    assert_eq!(find(&all, "Error: session builder:main crashed")["level"], "error");
    assert!(
        all.iter().all(|e| e["message"] != "plain line without a timestamp" && e["message"] != "not json at all {")
    );
}

#[tokio::test]
async fn recent_filters_and_limits() {
    let app = spawn_with_fixtures().await;
    let count = |v: Vec<Value>| v.len();
    assert_eq!(count(logs(&app, "level=error").await), 4);
    assert_eq!(count(logs(&app, "level=warn").await), 4);
    assert_eq!(count(logs(&app, "level=debug").await), 1);
    assert_eq!(count(logs(&app, "level=info").await), 4);
    let journal = logs(&app, "source=gateway/journal").await;
    assert_eq!(journal.len(), 3);
    assert!(journal.iter().all(|e| e["source"] == "gateway/journal"));
    let session = logs(&app, "session=builder:main").await;
    assert_eq!(session.len(), 1);
    assert_eq!(session[0]["message"], "context window 85% full");
    let search = logs(&app, "search=WEBHOOK").await;
    assert_eq!(search.len(), 1, "search is case-insensitive");
    assert_eq!(count(logs(&app, "search=builder:main").await), 1);
    assert_eq!(count(logs(&app, "level=error&source=monitor").await), 1);
    let two = logs(&app, "limit=2").await;
    assert_eq!(two.len(), 2);
    assert_eq!(two[0]["message"], "retrying", "the newest two");
    assert_eq!(count(logs(&app, "limit=100000").await), 13, "over the maximum is clamped");

    // Stored entries merge with file entries under the same filters.
    add(&app, json!({"action": "add", "message": "db error", "level": "error", "source": "monitor"})).await;
    let errors = logs(&app, "level=error&source=monitor").await;
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["message"], "db error", "the stored entry is the newest");
    let limited = logs(&app, "level=error&limit=200").await;
    assert_eq!(limited.len(), 5);
}

#[tokio::test]
async fn bad_queries_are_400() {
    let app = spawn_with_fixtures().await;
    for (query, detail) in [
        ("action=delete", "action: must be one of recent, sources, tail"),
        ("level=verbose", "level: must be one of info, warn, error, debug"),
        ("level=INFO", "level: must be one of info, warn, error, debug"),
        ("action=tail", "since: is required for action=tail"),
        ("action=tail&since=", "since: is required for action=tail"),
        ("action=tail&since=yesterday", "since: must be an integer (milliseconds)"),
        ("action=tail&since=1.5", "since: must be an integer (milliseconds)"),
        ("limit=abc", "limit: must be a non-negative integer"),
        ("limit=-1", "limit: must be a non-negative integer"),
    ] {
        let reply = app.get(&format!("/api/logs?{query}"), &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}: {}", reply.text);
        assert_eq!(reply.body["details"], json!([detail]), "{query}");
    }
}

#[tokio::test]
async fn sources_list_files_and_stored_entries() {
    let app = spawn_with_fixtures().await;
    let reply = app.get("/api/logs?action=sources", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, json!({"sources": ["app", "gateway", "gateway/journal", "monitor"]}));
    add(&app, json!({"action": "add", "message": "one", "source": "builder"})).await;
    add(&app, json!({"action": "add", "message": "two"})).await;
    let reply = app.get("/api/logs?action=sources", &Auth::ApiKey).await;
    assert_eq!(reply.body["sources"], json!(["app", "builder", "gateway", "gateway/journal", "monitor", "opsdeck"]));
}

#[tokio::test]
async fn tail_returns_entries_newer_than_since() {
    let app = spawn_with_fixtures().await;
    // 00:10:00 UTC: the three journal lines and the three app.log lines are newer.
    let newer = logs(&app, "action=tail&since=1763683800000").await;
    assert_eq!(newer.len(), 6, "{newer:#?}");
    assert!(newer.iter().all(|e| e["timestamp"].as_i64().unwrap() > 1_763_683_800_000));
    let ts: Vec<i64> = newer.iter().map(|e| e["timestamp"].as_i64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] >= w[1]), "newest first");
    assert_eq!(logs(&app, "action=tail&since=1763683800000&source=gateway/journal").await.len(), 3);
    assert_eq!(logs(&app, "action=tail&since=1763683800000&source=monitor").await.len(), 0);
    assert_eq!(logs(&app, "action=tail&since=1763683800000&limit=2").await.len(), 2);
    assert_eq!(logs(&app, "action=tail&since=1763684402500").await.len(), 0, "strictly newer");

    let entry = add(&app, json!({"action": "add", "message": "fresh"})).await;
    let at = entry["timestamp"].as_i64().unwrap();
    let fresh = logs(&app, &format!("action=tail&since={}", at - 1)).await;
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh[0]["id"], entry["id"]);
    assert!(logs(&app, &format!("action=tail&since={at}")).await.is_empty());
}

#[tokio::test]
async fn add_applies_defaults_persists_and_announces() {
    let app = spawn_app().await;
    let (_, operator) = app.user_with_role("ops", "operator").await;
    let (_, mut live) = app.state.bus.subscribe_after(None);
    let before = opsdeck::store::now_millis();
    let reply = app.post("/api/logs", &operator, json!({"action": "add", "message": "  deploy started  "})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let entry = &reply.body["entry"];
    assert_eq!(entry["message"], "deploy started");
    assert_eq!(entry["level"], "info");
    assert_eq!(entry["source"], "opsdeck");
    assert!(entry.get("session").is_none());
    assert!(entry["id"].as_str().unwrap().starts_with("db-"));
    assert!(entry["timestamp"].as_i64().unwrap() >= before);
    let event = live.recv().await.unwrap();
    assert_eq!(event.kind, "log.added");
    assert_eq!(event.data, *entry);

    let mc = add(
        &app,
        json!({"action": "add", "message": "m", "source": "mission-control", "level": "warn", "session": "a:b",
               "data": {"k": 1}}),
    )
    .await;
    assert_eq!(
        (mc["source"].as_str(), mc["level"].as_str(), mc["session"].as_str()),
        (Some("opsdeck"), Some("warn"), Some("a:b"))
    );
    assert_eq!(mc["data"], json!({"k": 1}));
    let custom = add(&app, json!({"action": "add", "message": "c", "source": "builder", "level": "debug"})).await;
    assert_eq!(custom["source"], "builder");

    // Stored in the database (no log directory exists for this app), newest first.
    let recent = logs(&app, "").await;
    assert_eq!(recent.iter().map(|e| e["message"].as_str().unwrap()).collect::<Vec<_>>(), ["c", "m", "deploy started"]);
    let filter = opsdeck::logs::Filter::default();
    let stored =
        app.state.store.read(move |tx| opsdeck::logs::store::query(tx, &filter, 10)).await.expect("stored entries");
    assert_eq!(stored.len(), 3);
    assert_eq!(serde_json::to_value(&stored[2]).unwrap(), *entry);
}

#[tokio::test]
async fn add_rejects_bad_input() {
    let app = spawn_app().await;
    for (body, detail) in [
        (json!({"message": "x"}), "action: is required"),
        (json!({"action": "remove", "message": "x"}), "action: must be add"),
        (json!({"action": "add"}), "message: is required"),
        (json!({"action": "add", "message": "   "}), "message: must not be empty"),
        (json!({"action": "add", "message": "x", "level": "fatal"}), "level: must be one of info, warn, error, debug"),
        (json!({"action": "add", "message": "x", "level": "WARN"}), "level: must be one of info, warn, error, debug"),
        (json!({"action": "add", "message": "x", "data": [1, 2]}), "data: must be an object"),
        (json!({"action": "add", "message": "x".repeat(10_001)}), "message: must be at most 10000 characters"),
    ] {
        let reply = app.post("/api/logs", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}: {}", reply.text);
        assert_eq!(reply.body["details"], json!([detail]), "{body}");
    }
    let reply = app.post("/api/logs", &Auth::ApiKey, json!({"action": "add", "message": 5})).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let reply = app.raw(Method::POST, "/api/logs", &Auth::ApiKey, "{not json").await;
    assert_eq!((reply.status, reply.error()), (StatusCode::BAD_REQUEST, "Invalid JSON body"));
    assert!(logs(&app, "").await.is_empty(), "nothing was stored");
}

#[tokio::test]
async fn a_missing_log_directory_means_no_file_entries() {
    let app = spawn_app_with(&["--agw-log-dir", "/nonexistent/opsdeck-logs"]).await;
    assert!(logs(&app, "").await.is_empty());
    let reply = app.get("/api/logs?action=sources", &Auth::ApiKey).await;
    assert_eq!(reply.body, json!({"sources": []}));
}
