//! `--demo` seeding, checked through the API: agents in every status, tasks in every column (one done
//! through the quality review), a week of token usage, alert rules, a webhook, notifications, and the
//! primary gateway on the simulator. Seeding happens once, and only into an empty database.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

async fn get_ok(app: &TestApp, path: &str) -> Value {
    let reply = app.get(path, &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text);
    reply.body
}

fn strings(list: &Value, field: &str) -> BTreeSet<String> {
    list.as_array().unwrap().iter().map(|v| v[field].as_str().unwrap().to_string()).collect()
}

async fn demo(app: &TestApp) -> opsdeck::demo::DemoReport {
    let sim = opsdeck::gateways::sim::start("127.0.0.1", 0, None).await.unwrap();
    opsdeck::demo::prepare(&app.state, sim).await.expect("demo prepared")
}

#[tokio::test]
async fn demo_seeds_a_living_fleet() {
    let app = spawn_app().await;
    let report = demo(&app).await;
    let seeded = report.seeded.clone().expect("an empty database is seeded");
    assert!(report.gateway_pointed);

    let agents = get_ok(&app, "/api/agents?limit=200").await;
    let statuses = strings(&agents["agents"], "status");
    assert_eq!(statuses, ["busy", "error", "idle", "offline", "online"].map(String::from).into());
    assert_eq!(agents["total"], seeded.agents);

    let tasks = get_ok(&app, "/api/tasks?limit=200").await;
    let columns = strings(&tasks["tasks"], "status");
    assert_eq!(columns, opsdeck::tasks::STATUSES.map(String::from).into());
    let done = tasks["tasks"].as_array().unwrap().iter().find(|t| t["status"] == "done").unwrap();
    let reviews = get_ok(&app, &format!("/api/quality-review?taskId={}", done["id"])).await;
    assert_eq!(reviews["reviews"][0]["status"], "approved");
    assert_eq!(reviews["reviews"][0]["reviewer"], app.state.config.quality_reviewer.as_str());

    let commented = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["status"] == "in_progress" && t["priority"] == "critical")
        .unwrap();
    let comments = get_ok(&app, &format!("/api/tasks/{}/comments", commented["id"])).await;
    assert_eq!(comments["comments"].as_array().unwrap().len(), 1);
    let messages = get_ok(&app, "/api/agents/comms?agent=builder").await;
    assert!(messages["messages"].as_array().unwrap().len() >= 3, "{messages}");

    // A week of token usage, across agents and models.
    let week = get_ok(&app, "/api/tokens?action=stats&timeframe=week").await;
    assert_eq!(week["summary"]["requestCount"], seeded.token_records);
    assert!(seeded.token_records >= 7 * 24 / 3 * 4, "{seeded:?}");
    assert!(week["models"].as_object().unwrap().len() >= 4, "{week}");
    let day = get_ok(&app, "/api/tokens?action=stats&timeframe=day").await;
    let today = day["summary"]["requestCount"].as_u64().unwrap();
    assert!(today > 0 && today < seeded.token_records as u64 / 5, "spread over the week: {today} today");
    let all = get_ok(&app, "/api/tokens?action=list&timeframe=all&limit=1").await;
    let total = all["total"].as_u64().unwrap();
    let oldest = get_ok(&app, &format!("/api/tokens?action=list&timeframe=all&limit=1&offset={}", total - 1)).await;
    let oldest_ms = oldest["usage"][0]["timestamp"].as_u64();
    let age_days = (opsdeck::tokens::now_ms() - oldest_ms.expect("oldest record")) as f64 / 86_400_000.0;
    assert!((6.0..7.0).contains(&age_days), "the oldest record is {age_days} days old");

    let sessions = get_ok(&app, "/api/sessions").await;
    assert!(sessions["sessions"].as_array().unwrap().iter().any(|s| s["source"] == "gateway"), "{sessions}");

    let rules = get_ok(&app, "/api/alerts").await;
    assert_eq!(rules["rules"].as_array().unwrap().len(), seeded.alert_rules);
    let hooks = get_ok(&app, "/api/webhooks").await;
    assert_eq!(hooks["webhooks"][0]["url"], opsdeck::demo::DEMO_WEBHOOK_URL);
    let notes = get_ok(&app, &format!("/api/notifications?recipient={ADMIN_USER}")).await;
    assert!(notes["total"].as_u64().unwrap() >= 2, "{notes}");

    let gateways = get_ok(&app, "/api/gateways").await;
    let primary = gateways["gateways"].as_array().unwrap().iter().find(|g| g["is_primary"] == true).unwrap().clone();
    assert_eq!(primary["port"], report.simulator.port());
    assert_eq!(primary["status"], "online");

    // Made through the rules: the activity feed and the audit trail have the rows.
    assert!(!app.audit("action=task_created").await.is_empty());
    assert!(app.audit("action=agent_created").await.iter().all(|e| e["actor"] == "demo"));
}

#[tokio::test]
async fn demo_seeds_once_and_repoints_its_gateway() {
    let app = spawn_app().await;
    let first = demo(&app).await.seeded.expect("seeded");
    let tasks_before = get_ok(&app, "/api/tasks").await["total"].clone();
    let second = demo(&app).await;
    assert!(second.seeded.is_none(), "not seeded twice");
    assert!(second.gateway_pointed, "a demo database follows its new simulator");
    assert_eq!(get_ok(&app, "/api/tasks").await["total"], tasks_before);
    assert_eq!(get_ok(&app, "/api/agents").await["total"], first.agents);
    let gateways = get_ok(&app, "/api/gateways").await;
    assert_eq!(gateways["gateways"][0]["port"], second.simulator.port());
}

#[tokio::test]
async fn demo_leaves_a_database_with_data_alone() {
    let app = spawn_app().await;
    let created = app.post("/api/agents", &Auth::ApiKey, json!({"name": "real-agent", "role": "ops"})).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let gateway_before = get_ok(&app, "/api/gateways").await;
    let report = demo(&app).await;
    assert!(report.seeded.is_none());
    assert!(!report.gateway_pointed);
    assert_eq!(get_ok(&app, "/api/agents").await["total"], 1);
    assert_eq!(get_ok(&app, "/api/tasks").await["total"], 0);
    assert_eq!(get_ok(&app, "/api/gateways").await, gateway_before);
}
