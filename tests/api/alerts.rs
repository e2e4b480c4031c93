use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn rule(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/api/alerts", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["rule"].clone()
}

async fn evaluate(app: &TestApp, auth: &Auth) -> Value {
    let reply = app.post("/api/alerts", auth, json!({"action": "evaluate"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body
}

#[tokio::test]
async fn alert_roles() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/alerts", None, "viewer").await;
    assert_min_role(&app, &roles, Method::POST, "/api/alerts", Some(json!({"action": "evaluate"})), "viewer").await;
    let body = json!({"name": "x", "entity_type": "agent", "condition_field": "status", "condition_operator": "equals", "condition_value": "error"});
    assert_min_role(&app, &roles, Method::POST, "/api/alerts", Some(body), "operator").await;
    assert_min_role(&app, &roles, Method::PUT, "/api/alerts", Some(json!({"id": 1, "enabled": false})), "operator")
        .await;
    assert_min_role(&app, &roles, Method::DELETE, "/api/alerts", Some(json!({"id": 1})), "admin").await;
}

#[tokio::test]
async fn create_with_defaults_update_and_delete() {
    let app = spawn_app().await;
    let r = rule(&app, json!({"name": "Agent errors", "entity_type": "agent", "condition_field": "status", "condition_operator": "equals", "condition_value": "error"})).await;
    assert_eq!(
        (r["enabled"].as_bool(), r["action_type"].as_str(), r["cooldown_minutes"].as_u64()),
        (Some(true), Some("notification"), Some(60))
    );
    assert_eq!((r["trigger_count"].as_u64(), r["created_by"].as_str()), (Some(0), Some("api")));
    assert!(r["last_triggered_at"].is_null());
    let id = r["id"].as_u64().unwrap();
    let numeric = rule(&app, json!({"name": "Busy", "entity_type": "task", "condition_field": "status", "condition_operator": "count_above", "condition_value": 5})).await;
    assert_eq!(numeric["condition_value"], "5");

    let off = app.put("/api/alerts", &Auth::ApiKey, json!({"id": id, "enabled": false, "cooldown_minutes": 5})).await;
    assert_eq!(off.status, StatusCode::OK, "{}", off.text);
    assert_eq!(
        (off.body["rule"]["enabled"].as_bool(), off.body["rule"]["cooldown_minutes"].as_u64()),
        (Some(false), Some(5))
    );
    let bad = app.put("/api/alerts", &Auth::ApiKey, json!({"id": id, "condition_field": "title"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "title is not an agent field");
    assert_eq!(app.put("/api/alerts", &Auth::ApiKey, json!({"id": id})).await.error(), "No fields to update");
    assert_eq!(
        app.put("/api/alerts", &Auth::ApiKey, json!({"id": 99, "enabled": true})).await.status,
        StatusCode::NOT_FOUND
    );
    let list = app.get("/api/alerts", &Auth::ApiKey).await;
    assert_eq!(list.body["rules"].as_array().unwrap().len(), 2);
    assert_eq!(app.delete("/api/alerts", &Auth::ApiKey, json!({"id": id})).await.body, json!({"success": true}));
    assert_eq!(app.delete("/api/alerts", &Auth::ApiKey, json!({"id": id})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn rule_validation() {
    let app = spawn_app().await;
    let base = json!({"name": "n", "entity_type": "agent", "condition_field": "status", "condition_operator": "equals", "condition_value": "x"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    for (body, detail) in [
        (with("entity_type", json!("planet")), "entity_type: must be one of agent, task, session, activity"),
        (
            with("condition_field", json!("title")),
            "condition_field: for agent must be one of status, role, name, last_seen, last_activity, created_at",
        ),
        (
            with("condition_operator", json!("like")),
            "condition_operator: must be one of equals, not_equals, greater_than, less_than, contains, count_above, count_below, age_minutes_above",
        ),
        (with("condition_operator", json!("greater_than")), "condition_value: must be a number for this operator"),
        (with("action_type", json!("email")), "action_type: must be notification"),
        (with("name", json!("")), "name: must be 1-100 characters"),
        (with("condition_value", json!({"a": 1})), "condition_value: must be a string or a number"),
        (json!({"entity_type": "agent"}), "name: is required"),
    ] {
        let reply = app.post("/api/alerts", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["details"][0], detail, "{body}");
    }
    assert_eq!(
        app.post("/api/alerts", &Auth::ApiKey, json!({"action": "explode"})).await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.post("/api/alerts", &Auth::ApiKey, with("cooldown_minutes", json!(-1))).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn evaluation_triggers_notifies_and_cools_down() {
    let app = spawn_app().await;
    let (_, viewer) = app.user_with_role("watch", "viewer").await;
    app.post("/api/agents", &Auth::ApiKey, json!({"name": "broken", "role": "qa", "status": "error"})).await;
    app.post("/api/agents", &Auth::ApiKey, json!({"name": "fine", "role": "qa", "status": "online"})).await;
    let hit = rule(
        &app,
        json!({"name": "Agent errors", "entity_type": "agent", "condition_field": "status",
        "condition_operator": "equals", "condition_value": "error", "action_config": {"recipient": "watch"}}),
    )
    .await;
    let miss = rule(
        &app,
        json!({"name": "Busy agents", "entity_type": "agent", "condition_field": "status",
        "condition_operator": "count_above", "condition_value": "busy:0"}),
    )
    .await;
    rule(
        &app,
        json!({"name": "Off", "entity_type": "agent", "condition_field": "status", "condition_operator": "equals",
        "condition_value": "error", "enabled": false}),
    )
    .await;

    let report = evaluate(&app, &viewer).await;
    assert_eq!((report["evaluated"].as_u64(), report["triggered"].as_u64()), (Some(2), Some(1)));
    let results = report["results"].as_array().unwrap();
    let first = results.iter().find(|r| r["rule_id"] == hit["id"]).unwrap();
    assert_eq!((first["triggered"].as_bool(), first["rule_name"].as_str()), (Some(true), Some("Agent errors")));
    assert_eq!(first["reason"], "1 agent(s) with status equal to error");
    let second = results.iter().find(|r| r["rule_id"] == miss["id"]).unwrap();
    assert_eq!(second["triggered"], false);

    let notes = app.get("/api/notifications", &viewer).await;
    let n = &notes.body["notifications"][0];
    assert_eq!(
        (n["type"].as_str(), n["title"].as_str(), n["recipient"].as_str()),
        (Some("alert"), Some("Alert: Agent errors"), Some("watch"))
    );
    assert_eq!((n["source_type"].as_str(), n["source_id"].as_u64()), (Some("alert_rule"), hit["id"].as_u64()));
    assert!(n["message"].as_str().unwrap().contains("Agent errors"));
    let events: Vec<String> = app.state.bus.subscribe_after(Some(0)).0.iter().map(|e| e.kind.clone()).collect();
    assert!(events.contains(&"alert.triggered".to_string()) && events.contains(&"notification.created".to_string()));

    let stored = app.get("/api/alerts", &Auth::ApiKey).await.body["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == hit["id"])
        .cloned()
        .unwrap();
    assert_eq!(stored["trigger_count"], 1);
    assert!(stored["last_triggered_at"].as_i64().is_some());

    let again = evaluate(&app, &Auth::ApiKey).await;
    let first = again["results"].as_array().unwrap().iter().find(|r| r["rule_id"] == hit["id"]).cloned().unwrap();
    assert_eq!((first["triggered"].as_bool(), first["reason"].as_str()), (Some(false), Some("In cooldown")));
    assert_eq!(app.get("/api/notifications", &viewer).await.body["total"], 1);
}

#[tokio::test]
async fn task_activity_and_session_rules() {
    let app = spawn_app().await;
    for i in 0..3 {
        app.post("/api/tasks", &Auth::ApiKey, json!({"title": format!("t{i}"), "priority": "critical"})).await;
    }
    rule(&app, json!({"name": "Critical pile", "entity_type": "task", "condition_field": "priority", "condition_operator": "count_above", "condition_value": "critical:2"})).await;
    rule(&app, json!({"name": "Busy hour", "entity_type": "activity", "condition_field": "type", "condition_operator": "count_above", "condition_value": "task_created:2"})).await;
    rule(&app, json!({"name": "Title", "entity_type": "task", "condition_field": "title", "condition_operator": "contains", "condition_value": "T1"})).await;
    rule(&app, json!({"name": "Sessions", "entity_type": "session", "condition_field": "total_tokens", "condition_operator": "greater_than", "condition_value": "1000"})).await;
    let report = evaluate(&app, &Auth::ApiKey).await;
    let triggered: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["triggered"] == true)
        .map(|r| r["rule_name"].as_str().unwrap())
        .collect();
    assert_eq!(triggered, ["Critical pile", "Busy hour", "Title"], "{report}");
}

#[tokio::test]
async fn manual_evaluation_is_limited_to_one_per_ten_seconds() {
    let app = spawn_app_with(&["--disable-rate-limit", "false", "--rate-limit-per-minute", "1000"]).await;
    evaluate(&app, &Auth::ApiKey).await;
    let second = app.post("/api/alerts", &Auth::ApiKey, json!({"action": "evaluate"})).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
}
