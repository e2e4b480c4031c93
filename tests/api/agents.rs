use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// Creates an agent through the API and returns it.
async fn create(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/api/agents", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["agent"].clone()
}

async fn agent(app: &TestApp, key: &str) -> Value {
    let reply = app.get(&format!("/api/agents/{key}"), &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["agent"].clone()
}

/// The data of every event of `kind` published so far (from the bus's replay buffer).
fn events(app: &TestApp, kind: &str) -> Vec<Value> {
    let (replay, _rx) = app.state.bus.subscribe_after(Some(0));
    replay.iter().filter(|e| e.kind == kind).map(|e| e.data.clone()).collect()
}

/// Activity rows (announced as `activity.created`) of one type.
fn activities(app: &TestApp, kind: &str) -> Vec<Value> {
    events(app, "activity.created").into_iter().filter(|a| a["type"] == kind).collect()
}

fn names(list: &Value) -> Vec<String> {
    list["agents"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap().to_string()).collect()
}

fn assert_validation(reply: &Reply, detail: &str) {
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text);
    assert_eq!(reply.error(), "Validation failed", "{}", reply.text);
    let details: Vec<&str> = reply.body["details"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    assert!(details.iter().any(|d| d.starts_with(detail)), "{detail:?} in {details:?}");
}

#[tokio::test]
async fn agent_routes_require_their_roles() {
    let app = spawn_app().await;
    create(&app, json!({"name": "probe", "role": "qa"})).await;
    let roles = app.role_sessions().await;
    let cases: [(Method, &str, Option<Value>, &str); 18] = [
        (Method::GET, "/api/agents", None, "viewer"),
        (Method::POST, "/api/agents", Some(json!({})), "operator"),
        (Method::PUT, "/api/agents", Some(json!({})), "operator"),
        (Method::GET, "/api/agents/probe", None, "viewer"),
        (Method::PUT, "/api/agents/probe", Some(json!({})), "operator"),
        (Method::DELETE, "/api/agents/nobody", None, "operator"),
        (Method::GET, "/api/agents/probe/heartbeat", None, "viewer"),
        (Method::POST, "/api/agents/probe/heartbeat", Some(json!({})), "operator"),
        (Method::GET, "/api/agents/probe/soul", None, "viewer"),
        (Method::PUT, "/api/agents/probe/soul", Some(json!({})), "operator"),
        (Method::GET, "/api/agents/probe/memory", None, "viewer"),
        (Method::PUT, "/api/agents/probe/memory", Some(json!({})), "operator"),
        (Method::POST, "/api/agents/probe/wake", Some(json!({})), "operator"),
        (Method::POST, "/api/agents/message", Some(json!({})), "operator"),
        (Method::GET, "/api/agents/comms", None, "viewer"),
        (Method::POST, "/api/connect", Some(json!({})), "operator"),
        (Method::GET, "/api/agents/nobody", None, "viewer"),
        (Method::GET, "/api/agents?status=online", None, "viewer"),
    ];
    for (method, path, body, min) in cases {
        assert_min_role(&app, &roles, method, path, body, min).await;
    }
}

#[tokio::test]
async fn create_applies_defaults_and_reads_back_by_id_and_name() {
    let app = spawn_app().await;
    let created = create(&app, json!({"name": "scout", "role": "researcher"})).await;
    let id = created["id"].as_u64().unwrap();
    assert_eq!(created["name"], "scout");
    assert_eq!(created["role"], "researcher");
    assert_eq!(created["status"], "offline");
    assert_eq!(created["config"], json!({}));
    assert_eq!(created["session_key"], Value::Null);
    assert_eq!(created["soul_content"], Value::Null);
    assert_eq!(created["last_seen"], Value::Null);
    assert_eq!(created["last_activity"], Value::Null);
    assert_eq!(created["taskStats"], json!({"total": 0, "assigned": 0, "in_progress": 0, "completed": 0}));
    assert!(created["created_at"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(created["created_at"], created["updated_at"]);

    assert_eq!(agent(&app, &id.to_string()).await, created);
    assert_eq!(agent(&app, "scout").await, created);

    let audit = app.audit("action=agent_created").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "api");
    assert_eq!(audit[0]["detail"], json!({"id": id, "name": "scout", "role": "researcher"}));
    let activity = activities(&app, "agent_created");
    assert_eq!(activity.len(), 1);
    assert_eq!(activity[0]["entity_id"], id);
    let sse = events(&app, "agent.created");
    assert_eq!(sse.len(), 1);
    assert_eq!(sse[0]["name"], "scout");
}

#[tokio::test]
async fn create_stores_every_given_field() {
    let app = spawn_app().await;
    let created = create(
        &app,
        json!({
            "name": "Aegis the Guardian", "role": "qa", "status": "idle", "session_key": "agent:aegis:main",
            "soul_content": "Guard the gates.", "config": {"model": "m1", "workspace": "/srv/aegis"}
        }),
    )
    .await;
    assert_eq!(created["status"], "idle");
    assert_eq!(created["session_key"], "agent:aegis:main");
    assert_eq!(created["soul_content"], "Guard the gates.");
    assert_eq!(created["config"], json!({"model": "m1", "workspace": "/srv/aegis"}));
    // A name with spaces is reachable by its URL-encoded form.
    assert_eq!(agent(&app, "Aegis%20the%20Guardian").await["id"], created["id"]);
}

#[tokio::test]
async fn template_and_gateway_config_merge_into_config() {
    let app = spawn_app().await;
    let dev = create(&app, json!({"name": "dev", "role": "developer", "template": "developer"})).await;
    assert!(dev["config"]["model"].as_str().unwrap().contains("claude"));
    let tools: Vec<&str> = dev["config"]["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tools.contains(&"exec") && tools.contains(&"write"), "{tools:?}");

    let merged = create(
        &app,
        json!({
            "name": "analyst-1", "role": "analyst", "template": "analyst",
            "config": {"model": "custom-model", "sandbox": "strict"},
            "gateway_config": {"preferred_gateway": "edge", "sandbox": "off"}
        }),
    )
    .await;
    let config = &merged["config"];
    assert_eq!(config["model"], "custom-model", "config overrides the template");
    assert_eq!(config["sandbox"], "off", "gateway_config overrides config");
    assert_eq!(config["preferred_gateway"], "edge");
    assert!(config["tools"].as_array().unwrap().contains(&json!("web_search")), "template tools kept");
    assert_eq!(agent(&app, "analyst-1").await["config"], *config, "persisted");

    let unknown = app.post("/api/agents", &Auth::ApiKey, json!({"name": "x", "role": "r", "template": "wizard"})).await;
    assert_validation(&unknown, "template: must be one of developer, analyst, qa, researcher");
}

#[tokio::test]
async fn create_rejects_bad_input() {
    let app = spawn_app().await;
    let cases = [
        (json!({"role": "qa"}), "name: is required"),
        (json!({"name": "a"}), "role: is required"),
        (json!({"name": "  ", "role": "qa"}), "name: must be 1-100 characters"),
        (json!({"name": "a/b", "role": "qa"}), "name: must not contain"),
        (json!({"name": "a", "role": ""}), "role: must be 1-64 characters"),
        (json!({"name": "a", "role": "x".repeat(65)}), "role: must be 1-64 characters"),
        (json!({"name": "a", "role": "qa", "status": "sleeping"}), "status: must be one of online, offline"),
        (json!({"name": "a", "role": "qa", "config": [1, 2]}), "config: must be a JSON object"),
        (json!({"name": "a", "role": "qa", "config": {"workspace": 7}}), "config.workspace: must be a string"),
        (json!({"name": "a", "role": "qa", "gateway_config": "x"}), "gateway_config: must be a JSON object"),
        (json!({"name": 5, "role": "qa"}), "name: invalid type"),
    ];
    for (body, detail) in cases {
        let reply = app.post("/api/agents", &Auth::ApiKey, body.clone()).await;
        assert_validation(&reply, detail);
    }
    let malformed = app.raw(Method::POST, "/api/agents", &Auth::ApiKey, "{\"name\": ").await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.error(), "Invalid JSON body");
    let list = app.get("/api/agents", &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 0, "nothing was created");
}

#[tokio::test]
async fn duplicate_name_is_409() {
    let app = spawn_app().await;
    create(&app, json!({"name": "twin", "role": "qa"})).await;
    let again = app.post("/api/agents", &Auth::ApiKey, json!({"name": "twin", "role": "developer"})).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.error(), "Agent name already exists");
    // Names are exact: another case is another agent.
    create(&app, json!({"name": "Twin", "role": "qa"})).await;
    assert_eq!(app.get("/api/agents", &Auth::ApiKey).await.body["total"], 2);
}

#[tokio::test]
async fn list_filters_by_status_and_role_and_pages() {
    let app = spawn_app().await;
    for (name, role, status) in [
        ("a1", "qa", "online"),
        ("a2", "developer", "online"),
        ("a3", "qa", "offline"),
        ("a4", "qa", "online"),
        ("a5", "analyst", "busy"),
    ] {
        create(&app, json!({"name": name, "role": role, "status": status})).await;
    }
    let all = app.get("/api/agents", &Auth::ApiKey).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(names(&all.body), ["a1", "a2", "a3", "a4", "a5"]);
    assert_eq!(
        (all.body["total"].clone(), all.body["page"].clone(), all.body["limit"].clone()),
        (json!(5), json!(1), json!(50))
    );
    assert!(all.body["agents"][0]["taskStats"].is_object());

    let online = app.get("/api/agents?status=online", &Auth::ApiKey).await;
    assert_eq!(names(&online.body), ["a1", "a2", "a4"]);
    assert_eq!(online.body["total"], 3);
    let qa = app.get("/api/agents?role=qa", &Auth::ApiKey).await;
    assert_eq!(names(&qa.body), ["a1", "a3", "a4"]);
    let both = app.get("/api/agents?status=online&role=qa", &Auth::ApiKey).await;
    assert_eq!(names(&both.body), ["a1", "a4"]);
    assert_eq!(both.body["total"], 2);
    let none = app.get("/api/agents?role=nobody", &Auth::ApiKey).await;
    assert_eq!((names(&none.body).len(), none.body["total"].clone()), (0, json!(0)));

    let page = app.get("/api/agents?limit=2&offset=2", &Auth::ApiKey).await;
    assert_eq!(names(&page.body), ["a3", "a4"]);
    assert_eq!(
        (page.body["total"].clone(), page.body["page"].clone(), page.body["limit"].clone()),
        (json!(5), json!(2), json!(2))
    );
    let filtered_page = app.get("/api/agents?status=online&limit=1&offset=1", &Auth::ApiKey).await;
    assert_eq!(names(&filtered_page.body), ["a2"]);
    assert_eq!(filtered_page.body["total"], 3);
    let clamped = app.get("/api/agents?limit=1000", &Auth::ApiKey).await;
    assert_eq!(clamped.body["limit"], 200);

    assert_validation(&app.get("/api/agents?status=asleep", &Auth::ApiKey).await, "status: must be one of");
    assert_validation(&app.get("/api/agents?limit=-1", &Auth::ApiKey).await, "limit:");
    assert_validation(&app.get("/api/agents?offset=abc", &Auth::ApiKey).await, "offset:");
}

#[tokio::test]
async fn unknown_agents_are_404_on_every_route() {
    let app = spawn_app().await;
    create(&app, json!({"name": "real", "role": "qa"})).await;
    let gone = "Agent not found";
    for path in ["/api/agents/999", "/api/agents/abc", "/api/agents/0", "/api/agents/-1"] {
        let reply = app.get(path, &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.error(), gone);
    }
    let checks = [
        app.put("/api/agents/abc", &Auth::ApiKey, json!({"role": "qa"})).await,
        app.delete("/api/agents/abc", &Auth::ApiKey, json!({})).await,
        app.get("/api/agents/abc/heartbeat", &Auth::ApiKey).await,
        app.post("/api/agents/abc/heartbeat", &Auth::ApiKey, json!({})).await,
        app.get("/api/agents/abc/soul", &Auth::ApiKey).await,
        app.put("/api/agents/abc/soul", &Auth::ApiKey, json!({"soul_content": "x"})).await,
        app.get("/api/agents/abc/memory", &Auth::ApiKey).await,
        app.put("/api/agents/abc/memory", &Auth::ApiKey, json!({"memory": {}})).await,
        app.post("/api/agents/abc/wake", &Auth::ApiKey, json!({})).await,
        app.put("/api/agents", &Auth::ApiKey, json!({"name": "abc", "status": "online"})).await,
    ];
    for reply in checks {
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text);
        assert_eq!(reply.error(), gone);
    }
}

#[tokio::test]
async fn update_by_name_changes_fields_and_rejects_empty_updates() {
    let app = spawn_app().await;
    create(&app, json!({"name": "worker", "role": "developer"})).await;
    let reply = app
        .put(
            "/api/agents",
            &Auth::ApiKey,
            json!({"name": "worker", "status": "busy", "last_activity": "compiling", "config": {"model": "m2"},
                   "session_key": "s-1", "soul_content": "Work hard.", "role": "qa"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body, json!({"success": true}));
    let stored = agent(&app, "worker").await;
    assert_eq!(stored["status"], "busy");
    assert_eq!(stored["last_activity"], "compiling");
    assert_eq!(stored["config"], json!({"model": "m2"}));
    assert_eq!(stored["session_key"], "s-1");
    assert_eq!(stored["soul_content"], "Work hard.");
    assert_eq!(stored["role"], "qa");
    assert_eq!(names(&app.get("/api/agents?role=qa", &Auth::ApiKey).await.body), ["worker"], "role index moved");
    assert_eq!(names(&app.get("/api/agents?role=developer", &Auth::ApiKey).await.body).len(), 0);

    let empty = app.put("/api/agents", &Auth::ApiKey, json!({"name": "worker"})).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    assert_eq!(empty.error(), "No fields to update");
    let unknown_only = app.put("/api/agents", &Auth::ApiKey, json!({"name": "worker", "colour": "blue"})).await;
    assert_eq!(unknown_only.error(), "No fields to update");
    assert_validation(&app.put("/api/agents", &Auth::ApiKey, json!({"status": "busy"})).await, "name: is required");
    assert_validation(
        &app.put("/api/agents", &Auth::ApiKey, json!({"name": "worker", "status": "napping"})).await,
        "status: must be one of",
    );
    assert_validation(
        &app.put("/api/agents", &Auth::ApiKey, json!({"name": "worker", "config": "x"})).await,
        "config: must be a JSON object",
    );
    let malformed = app.raw(Method::PUT, "/api/agents", &Auth::ApiKey, "not json").await;
    assert_eq!(malformed.error(), "Invalid JSON body");
}

#[tokio::test]
async fn update_by_id_renames_and_reports_events() {
    let app = spawn_app().await;
    let first = create(&app, json!({"name": "alpha", "role": "qa"})).await;
    create(&app, json!({"name": "beta", "role": "qa"})).await;
    let id = first["id"].as_u64().unwrap();

    let renamed =
        app.put(&format!("/api/agents/{id}"), &Auth::ApiKey, json!({"name": "gamma", "session_key": "k"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.text);
    assert_eq!(renamed.body["agent"]["name"], "gamma");
    assert_eq!(renamed.body["agent"]["session_key"], "k");
    assert!(renamed.body["agent"]["taskStats"].is_object());
    assert_eq!(agent(&app, "gamma").await["id"], id);
    assert_eq!(app.get("/api/agents/alpha", &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    // The old name is free again.
    create(&app, json!({"name": "alpha", "role": "qa"})).await;

    let taken = app.put("/api/agents/gamma", &Auth::ApiKey, json!({"name": "beta"})).await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_eq!(taken.error(), "Agent name already exists");
    let same = app.put("/api/agents/gamma", &Auth::ApiKey, json!({"name": "gamma"})).await;
    assert_eq!(same.status, StatusCode::OK, "renaming to its own name is fine");

    let updated_before = events(&app, "agent.updated").len();
    let status = app.put("/api/agents/gamma", &Auth::ApiKey, json!({"status": "error"})).await;
    assert_eq!(status.body["agent"]["status"], "error");
    let status_events = events(&app, "agent.status");
    assert_eq!(status_events, [json!({"id": id, "name": "gamma", "status": "error", "previous_status": "offline"})]);
    assert_eq!(events(&app, "agent.updated").len(), updated_before, "a status-only change is not agent.updated");
    let activity = activities(&app, "agent_status_changed");
    assert_eq!(activity.len(), 1);
    assert_eq!(activity[0]["data"], json!({"status": "error", "previous_status": "offline"}));
    assert_eq!(names(&app.get("/api/agents?status=error", &Auth::ApiKey).await.body), ["gamma"]);
    assert_eq!(names(&app.get("/api/agents?status=offline", &Auth::ApiKey).await.body), ["beta", "alpha"]);

    let updated = events(&app, "agent.updated");
    assert!(updated.iter().any(|e| e["name"] == "gamma" && e["session_key"] == "k"), "{updated:?}");

    let empty = app.put("/api/agents/gamma", &Auth::ApiKey, json!({})).await;
    assert_eq!(empty.error(), "No fields to update");
    assert_validation(&app.put("/api/agents/gamma", &Auth::ApiKey, json!({"role": ""})).await, "role:");
    assert_validation(&app.put("/api/agents/gamma", &Auth::ApiKey, json!({"name": "a/b"})).await, "name:");
    let malformed = app.raw(Method::PUT, "/api/agents/gamma", &Auth::ApiKey, "{").await;
    assert_eq!(malformed.error(), "Invalid JSON body");
}

#[tokio::test]
async fn delete_removes_the_agent_and_frees_its_name() {
    let app = spawn_app().await;
    let created = create(&app, json!({"name": "temp", "role": "qa", "status": "online"})).await;
    let id = created["id"].as_u64().unwrap();
    let reply = app.delete(&format!("/api/agents/{id}"), &Auth::ApiKey, json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body, json!({"success": true}));
    assert_eq!(app.get("/api/agents/temp", &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/api/agents/{id}"), &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    let list = app.get("/api/agents?status=online", &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 0, "status index cleaned");
    assert_eq!(app.delete("/api/agents/temp", &Auth::ApiKey, json!({})).await.status, StatusCode::NOT_FOUND);

    let audit = app.audit("action=agent_deleted").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["detail"], json!({"id": id, "name": "temp"}));
    assert_eq!(events(&app, "agent.deleted"), [json!({"id": id, "name": "temp"})]);
    assert_eq!(activities(&app, "agent_deleted").len(), 1);

    let again = create(&app, json!({"name": "temp", "role": "qa"})).await;
    assert_ne!(again["id"], id);
}

#[tokio::test]
async fn heartbeat_poll_delivers_messages_once_and_brings_the_agent_online() {
    let app = spawn_app().await;
    let created = create(&app, json!({"name": "poller", "role": "qa"})).await;
    let id = created["id"].as_u64().unwrap();
    for (content, kind) in [("first", "request"), ("second", "notification")] {
        let sent = app
            .post(
                "/api/agents/message",
                &Auth::ApiKey,
                json!({"from": "boss", "to": "poller", "content": content, "type": kind}),
            )
            .await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    }
    let (_, viewer) = app.user_with_role("watcher", "viewer").await;
    let poll = app.get(&format!("/api/agents/{id}/heartbeat"), &viewer).await;
    assert_eq!(poll.status, StatusCode::OK, "{}", poll.text);
    assert_eq!(
        poll.body,
        json!({
            "agent": "poller",
            "pending_tasks": [],
            "messages": [
                {"from": "boss", "content": "first", "type": "request"},
                {"from": "boss", "content": "second", "type": "notification"}
            ]
        })
    );
    let stored = agent(&app, "poller").await;
    assert_eq!(stored["status"], "online");
    let seen = stored["last_seen"].as_i64().expect("last_seen set");
    assert!(seen >= created["created_at"].as_i64().unwrap());
    assert_eq!(
        events(&app, "agent.status"),
        [json!({"id": id, "name": "poller", "status": "online", "previous_status": "offline"})]
    );

    let again = app.get("/api/agents/poller/heartbeat", &Auth::ApiKey).await;
    assert_eq!(again.body["messages"], json!([]), "messages are delivered once");
    let comms = app.get("/api/agents/comms?agent=poller", &Auth::ApiKey).await;
    assert!(comms.body["messages"].as_array().unwrap().iter().all(|m| m["read_at"].is_i64()), "marked read");
    assert_eq!(events(&app, "agent.status").len(), 1, "an online agent stays online without a new event");

    // A busy agent stays busy.
    app.put("/api/agents/poller", &Auth::ApiKey, json!({"status": "busy"})).await;
    app.get("/api/agents/poller/heartbeat", &Auth::ApiKey).await;
    assert_eq!(agent(&app, "poller").await["status"], "busy");
}

#[tokio::test]
async fn heartbeat_report_checks_its_body_and_connection() {
    let app = spawn_app().await;
    create(&app, json!({"name": "reporter", "role": "qa"})).await;
    let empty = app.send(app.request(Method::POST, "/api/agents/reporter/heartbeat", &Auth::ApiKey)).await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.text);
    assert_eq!(empty.body, json!({"success": true}));
    let stored = agent(&app, "reporter").await;
    assert_eq!(stored["status"], "online");
    assert!(stored["last_seen"].is_i64());

    let usage = json!({"token_usage": {"model": "claude-sonnet-4", "inputTokens": 10, "outputTokens": 5}});
    assert_eq!(app.post("/api/agents/reporter/heartbeat", &Auth::ApiKey, usage).await.status, StatusCode::OK);
    assert_validation(
        &app.post(
            "/api/agents/reporter/heartbeat",
            &Auth::ApiKey,
            json!({"token_usage": {"model": "m", "inputTokens": -1, "outputTokens": 1}}),
        )
        .await,
        "token_usage.inputTokens:",
    );
    assert_validation(
        &app.post(
            "/api/agents/reporter/heartbeat",
            &Auth::ApiKey,
            json!({"token_usage": {"inputTokens": 1, "outputTokens": 1}}),
        )
        .await,
        "token_usage.model: is required",
    );
    assert_validation(
        &app.post(
            "/api/agents/reporter/heartbeat",
            &Auth::ApiKey,
            json!({"token_usage": {"model": " ", "inputTokens": 1, "outputTokens": 1}}),
        )
        .await,
        "token_usage.model: must not be empty",
    );
    let unknown = app.post("/api/agents/reporter/heartbeat", &Auth::ApiKey, json!({"connection_id": "nope"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "Connection not found");
    let malformed = app.raw(Method::POST, "/api/agents/reporter/heartbeat", &Auth::ApiKey, "{oops").await;
    assert_eq!(malformed.error(), "Invalid JSON body");

    // A connection of this agent is accepted; one of another agent is not.
    let connected = app.post("/api/connect", &Auth::ApiKey, json!({"agent_name": "reporter"})).await;
    let connection = connected.body["connection_id"].as_str().unwrap().to_string();
    let ok = app.post("/api/agents/reporter/heartbeat", &Auth::ApiKey, json!({"connection_id": connection})).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
    create(&app, json!({"name": "other", "role": "qa"})).await;
    let foreign = app.post("/api/agents/other/heartbeat", &Auth::ApiKey, json!({"connection_id": connection})).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn soul_comes_from_workspace_then_database_then_none() {
    let app = spawn_app().await;
    create(&app, json!({"name": "plain", "role": "qa"})).await;
    let none = app.get("/api/agents/plain/soul", &Auth::ApiKey).await;
    assert_eq!(none.status, StatusCode::OK);
    assert_eq!(none.body, json!({"soul_content": null, "source": "none"}));

    let put = app.put("/api/agents/plain/soul", &Auth::ApiKey, json!({"soul_content": "Be brief."})).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.text);
    assert_eq!(put.body, json!({"success": true, "updated": {"database": true, "workspace": false}}));
    let db = app.get("/api/agents/plain/soul", &Auth::ApiKey).await;
    assert_eq!(db.body, json!({"soul_content": "Be brief.", "source": "database"}));
    assert_eq!(agent(&app, "plain").await["soul_content"], "Be brief.");

    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().to_str().unwrap();
    create(&app, json!({"name": "housed", "role": "qa", "soul_content": "old", "config": {"workspace": dir}})).await;
    assert_eq!(app.get("/api/agents/housed/soul", &Auth::ApiKey).await.body["source"], "database", "no soul.md yet");
    let put = app.put("/api/agents/housed/soul", &Auth::ApiKey, json!({"soul_content": "# Housed\nStay home."})).await;
    assert_eq!(put.body, json!({"success": true, "updated": {"database": true, "workspace": true}}));
    assert_eq!(std::fs::read_to_string(ws.path().join("soul.md")).unwrap(), "# Housed\nStay home.");
    assert_eq!(agent(&app, "housed").await["soul_content"], "# Housed\nStay home.");
    std::fs::write(ws.path().join("soul.md"), "edited on disk").unwrap();
    let from_file = app.get("/api/agents/housed/soul", &Auth::ApiKey).await;
    assert_eq!(from_file.body, json!({"soul_content": "edited on disk", "source": "workspace"}));

    // A workspace that does not exist is reported, not created.
    let missing = ws.path().join("not-there");
    create(&app, json!({"name": "homeless", "role": "qa", "config": {"workspace": missing}})).await;
    let put = app.put("/api/agents/homeless/soul", &Auth::ApiKey, json!({"soul_content": "x"})).await;
    assert_eq!(put.body["updated"], json!({"database": true, "workspace": false}));
    assert!(!missing.exists());

    assert_validation(&app.put("/api/agents/plain/soul", &Auth::ApiKey, json!({})).await, "soul_content: is required");
    assert_validation(
        &app.put("/api/agents/plain/soul", &Auth::ApiKey, json!({"soul_content": 3})).await,
        "soul_content:",
    );
}

#[tokio::test]
async fn soul_refuses_workspaces_that_escape_or_are_relative() {
    let app = spawn_app().await;
    let ws = tempfile::tempdir().unwrap();
    let escaping = format!("{}/inner/..", ws.path().display());
    for (name, workspace) in [("escaper", escaping.as_str()), ("relative", "agents/dev")] {
        create(&app, json!({"name": name, "role": "qa", "soul_content": "keep", "config": {"workspace": workspace}}))
            .await;
        let put = app.put(&format!("/api/agents/{name}/soul"), &Auth::ApiKey, json!({"soul_content": "changed"})).await;
        assert_validation(&put, "config.workspace: must be an absolute path without .. components");
        assert_eq!(agent(&app, name).await["soul_content"], "keep", "database unchanged");
        let get = app.get(&format!("/api/agents/{name}/soul"), &Auth::ApiKey).await;
        assert_eq!(get.status, StatusCode::BAD_REQUEST);
        let memory = app.put(&format!("/api/agents/{name}/memory"), &Auth::ApiKey, json!({"memory": {"a": 1}})).await;
        assert_validation(&memory, "config.workspace:");
    }
    assert!(!ws.path().join("soul.md").exists());
}

#[tokio::test]
async fn memory_is_an_object_stored_with_the_agent() {
    let app = spawn_app().await;
    let ws = tempfile::tempdir().unwrap();
    create(&app, json!({"name": "mind", "role": "qa"})).await;
    create(&app, json!({"name": "housed", "role": "qa", "config": {"workspace": ws.path()}})).await;

    let empty = app.get("/api/agents/mind/memory", &Auth::ApiKey).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.body, json!({"memory": {}}));
    let memory = json!({"facts": ["sky is blue"], "count": 2, "nested": {"k": null, "f": 1.5}});
    let put = app.put("/api/agents/mind/memory", &Auth::ApiKey, json!({"memory": memory})).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.text);
    assert_eq!(put.body, json!({"success": true, "memory": memory}));
    assert_eq!(app.get("/api/agents/mind/memory", &Auth::ApiKey).await.body, json!({"memory": memory}));
    assert_eq!(app.get("/api/agents/housed/memory", &Auth::ApiKey).await.body, json!({"memory": {}}), "per agent");
    let list = app.get("/api/agents", &Auth::ApiKey).await;
    assert!(!list.text.contains("sky is blue"), "lists do not carry memory");

    let put = app.put("/api/agents/housed/memory", &Auth::ApiKey, json!({"memory": {"x": 1}})).await;
    assert_eq!(put.status, StatusCode::OK);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(ws.path().join("memory.json")).unwrap()).unwrap();
    assert_eq!(file, json!({"x": 1}));

    assert_validation(
        &app.put("/api/agents/mind/memory", &Auth::ApiKey, json!({"memory": [1]})).await,
        "memory: must be a JSON object",
    );
    assert_validation(
        &app.put("/api/agents/mind/memory", &Auth::ApiKey, json!({"memory": "x"})).await,
        "memory: must be a JSON object",
    );
    assert_validation(&app.put("/api/agents/mind/memory", &Auth::ApiKey, json!({})).await, "memory: is required");
    let big = json!({"memory": {"blob": "x".repeat(256 * 1024)}});
    let too_large = app.put("/api/agents/mind/memory", &Auth::ApiKey, big).await;
    assert_validation(&too_large, "memory: must be at most 262144 bytes");
    let just_fits = json!({"memory": {"b": "x".repeat(256 * 1024 - 10)}});
    assert_eq!(app.put("/api/agents/mind/memory", &Auth::ApiKey, just_fits).await.status, StatusCode::OK);
    assert_eq!(app.raw(Method::PUT, "/api/agents/mind/memory", &Auth::ApiKey, "[").await.error(), "Invalid JSON body");

    // Deleting the agent deletes its memory: a new agent with the same name starts empty.
    app.delete("/api/agents/mind", &Auth::ApiKey, json!({})).await;
    create(&app, json!({"name": "mind", "role": "qa"})).await;
    assert_eq!(app.get("/api/agents/mind/memory", &Auth::ApiKey).await.body, json!({"memory": {}}));
}

#[tokio::test]
async fn wake_leaves_a_message_and_moves_offline_to_idle() {
    let app = spawn_app().await;
    let created = create(&app, json!({"name": "sleeper", "role": "qa"})).await;
    let id = created["id"].as_u64().unwrap();
    let reply = app.post("/api/agents/sleeper/wake", &Auth::ApiKey, json!({"reason": "new task"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body, json!({"success": true}));
    assert_eq!(agent(&app, "sleeper").await["status"], "idle");
    assert_eq!(
        events(&app, "agent.status"),
        [json!({"id": id, "name": "sleeper", "status": "idle", "previous_status": "offline"})]
    );

    // Without a body; a busy agent stays busy.
    app.put("/api/agents/sleeper", &Auth::ApiKey, json!({"status": "busy"})).await;
    let bare = app.send(app.request(Method::POST, "/api/agents/sleeper/wake", &Auth::ApiKey)).await;
    assert_eq!(bare.status, StatusCode::OK, "{}", bare.text);
    assert_eq!(agent(&app, "sleeper").await["status"], "busy");

    let poll = app.get("/api/agents/sleeper/heartbeat", &Auth::ApiKey).await;
    assert_eq!(
        poll.body["messages"],
        json!([{"from": "system", "content": "new task", "type": "wake"}, {"from": "system", "content": "Wake requested", "type": "wake"}])
    );
    assert_validation(&app.post("/api/agents/sleeper/wake", &Auth::ApiKey, json!({"reason": 5})).await, "reason:");
}

#[tokio::test]
async fn messages_and_comms() {
    let app = spawn_app().await;
    create(&app, json!({"name": "ann", "role": "qa"})).await;
    create(&app, json!({"name": "bob", "role": "qa"})).await;
    create(&app, json!({"name": "cy", "role": "qa"})).await;
    let send = |from: &'static str, to: &'static str, content: &'static str| {
        let app = &app;
        async move {
            app.post("/api/agents/message", &Auth::ApiKey, json!({"from": from, "to": to, "content": content})).await
        }
    };
    let first = send("ann", "bob", "hi bob").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.body["success"], true);
    let first_id = first.body["id"].as_u64().unwrap();
    send("bob", "ann", "hi ann").await;
    send("cy", "bob", "psst").await;
    let last = send("ann", "ann", "note to self").await;
    assert!(last.body["id"].as_u64().unwrap() > first_id);

    let all = app.get("/api/agents/comms", &Auth::ApiKey).await;
    assert_eq!(all.status, StatusCode::OK);
    let contents = |r: &Reply| -> Vec<String> {
        r.body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(contents(&all), ["note to self", "psst", "hi ann", "hi bob"]);
    let m = &all.body["messages"][3];
    assert_eq!(m["id"], first_id);
    assert_eq!(
        (m["from_agent"].as_str(), m["to_agent"].as_str(), m["type"].as_str()),
        (Some("ann"), Some("bob"), Some("notification"))
    );
    assert!(m["created_at"].is_i64());
    assert_eq!(m["read_at"], Value::Null);

    let ann = app.get("/api/agents/comms?agent=ann", &Auth::ApiKey).await;
    assert_eq!(contents(&ann), ["note to self", "hi ann", "hi bob"], "from or to ann, once each");
    let cy = app.get("/api/agents/comms?agent=cy", &Auth::ApiKey).await;
    assert_eq!(contents(&cy), ["psst"]);
    let limited = app.get("/api/agents/comms?agent=ann&limit=2", &Auth::ApiKey).await;
    assert_eq!(contents(&limited), ["note to self", "hi ann"]);
    assert_eq!(contents(&app.get("/api/agents/comms?limit=1", &Auth::ApiKey).await), ["note to self"]);
    assert_validation(&app.get("/api/agents/comms?limit=x", &Auth::ApiKey).await, "limit:");

    let typed = app
        .post(
            "/api/agents/message",
            &Auth::ApiKey,
            json!({"from": "ops", "to": "cy", "content": "do it", "type": "request"}),
        )
        .await;
    assert_eq!(typed.status, StatusCode::OK);
    assert_eq!(
        app.get("/api/agents/comms?agent=cy&limit=1", &Auth::ApiKey).await.body["messages"][0]["type"],
        "request"
    );

    let unknown =
        app.post("/api/agents/message", &Auth::ApiKey, json!({"from": "ann", "to": "zed", "content": "?"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "Agent not found");
    assert_validation(
        &app.post("/api/agents/message", &Auth::ApiKey, json!({"from": "a", "to": "bob"})).await,
        "content: is required",
    );
    assert_validation(
        &app.post("/api/agents/message", &Auth::ApiKey, json!({"from": "a", "to": "bob", "content": "  "})).await,
        "content: must not be empty",
    );
    assert_validation(
        &app.post("/api/agents/message", &Auth::ApiKey, json!({"from": "", "to": "bob", "content": "x"})).await,
        "from: must be 1-100 characters",
    );
    assert_validation(
        &app.post(
            "/api/agents/message",
            &Auth::ApiKey,
            json!({"from": "a", "to": "bob", "content": "x", "type": "no spaces"}),
        )
        .await,
        "type:",
    );
    assert_eq!(app.raw(Method::POST, "/api/agents/message", &Auth::ApiKey, "}").await.error(), "Invalid JSON body");
    assert_eq!(
        contents(&app.get("/api/agents/comms", &Auth::ApiKey).await).len(),
        5,
        "rejected messages were not stored"
    );
}

#[tokio::test]
async fn connect_finds_or_creates_the_agent_and_records_the_connection() {
    let app = spawn_app().await;
    let reply = app
        .post(
            "/api/connect",
            &Auth::ApiKey,
            json!({"tool_name": "claude-code", "tool_version": "1.2.3", "agent_name": "cli-bot"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let body = &reply.body;
    let id = body["agent_id"].as_u64().unwrap();
    assert_eq!(body["agent_name"], "cli-bot");
    assert_eq!(body["status"], "connected");
    assert_eq!(body["sse_url"], "/api/events");
    assert_eq!(body["heartbeat_url"], format!("/api/agents/{id}/heartbeat"));
    assert_eq!(body["token_report_url"], "/api/tokens");
    let uuid = body["connection_id"].as_str().unwrap();
    let parts: Vec<&str> = uuid.split('-').collect();
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{uuid}");
    assert!(parts[2].starts_with('4') && uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));

    let created = agent(&app, "cli-bot").await;
    assert_eq!(
        (created["id"].as_u64(), created["role"].as_str(), created["status"].as_str()),
        (Some(id), Some("cli"), Some("online"))
    );
    assert!(created["last_seen"].is_i64());
    assert_eq!(app.audit("action=agent_created").await.len(), 1);
    let activity = activities(&app, "connection_created");
    assert_eq!(activity.len(), 1);
    assert_eq!(activity[0]["data"]["connection_id"], uuid);
    assert_eq!(activity[0]["data"]["tool_name"], "claude-code");

    // The heartbeat URL works as given.
    let hb = app.get(body["heartbeat_url"].as_str().unwrap(), &Auth::ApiKey).await;
    assert_eq!(hb.body["agent"], "cli-bot");

    // Connecting again finds the same agent; an offline one comes back online; a new connection id.
    app.put("/api/agents/cli-bot", &Auth::ApiKey, json!({"status": "offline"})).await;
    let again =
        app.post("/api/connect", &Auth::ApiKey, json!({"agent_name": "cli-bot", "agent_role": "ignored"})).await;
    assert_eq!(again.body["agent_id"], id);
    assert_ne!(again.body["connection_id"], body["connection_id"]);
    let back = agent(&app, "cli-bot").await;
    assert_eq!((back["status"].as_str(), back["role"].as_str()), (Some("online"), Some("cli")));
    assert_eq!(events(&app, "agent.status").last().unwrap()["previous_status"], "offline");
    assert_eq!(app.audit("action=agent_created").await.len(), 1, "not created twice");

    let role =
        app.post("/api/connect", &Auth::ApiKey, json!({"agent_name": "builder", "agent_role": "developer"})).await;
    assert_eq!(agent(&app, role.body["agent_id"].as_u64().unwrap().to_string().as_str()).await["role"], "developer");

    assert_validation(
        &app.post("/api/connect", &Auth::ApiKey, json!({"tool_name": "x"})).await,
        "agent_name: is required",
    );
    assert_validation(
        &app.post("/api/connect", &Auth::ApiKey, json!({"agent_name": ""})).await,
        "agent_name: must be 1-100",
    );
    assert_eq!(app.raw(Method::POST, "/api/connect", &Auth::ApiKey, "nope").await.error(), "Invalid JSON body");
}

#[tokio::test]
async fn agent_routes_are_documented() {
    let app = spawn_app().await;
    let doc = app.get("/api/docs", &Auth::None).await;
    assert_eq!(doc.status, StatusCode::OK);
    let paths = doc.body["paths"].as_object().unwrap();
    for path in [
        "/api/agents",
        "/api/agents/{id}",
        "/api/agents/{id}/heartbeat",
        "/api/agents/{id}/soul",
        "/api/agents/{id}/memory",
        "/api/agents/{id}/wake",
        "/api/agents/message",
        "/api/agents/comms",
        "/api/connect",
    ] {
        assert!(paths.contains_key(path), "{path} in {:?}", paths.keys().collect::<Vec<_>>());
    }
    assert!(paths["/api/agents"]["post"]["requestBody"].is_object());
    assert!(paths["/api/agents"]["get"]["tags"].as_array().unwrap().contains(&json!("agents")));
}

async fn task(app: &TestApp, title: &str, status: &str, priority: &str, assigned_to: &str) -> u64 {
    let body = json!({"title": title, "status": status, "priority": priority, "assigned_to": assigned_to});
    let reply = app.post("/api/tasks", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["task"]["id"].as_u64().unwrap()
}

#[tokio::test]
async fn task_stats_and_heartbeat_pending_tasks_come_from_the_tasks() {
    let app = spawn_app().await;
    // Tasks assigned before the agent exists count too.
    let low = task(&app, "low one", "assigned", "low", "worker").await;
    let created = create(&app, json!({"name": "worker", "role": "developer"})).await;
    assert_eq!(created["taskStats"], json!({"total": 1, "assigned": 1, "in_progress": 0, "completed": 0}));
    let critical = task(&app, "critical one", "in_progress", "critical", "worker").await;
    let high = task(&app, "high one", "assigned", "high", "worker").await;
    task(&app, "still in inbox", "inbox", "critical", "worker").await;
    let reviewed = task(&app, "finished", "assigned", "medium", "worker").await;
    let approval = app
        .post("/api/quality-review", &Auth::ApiKey, json!({"taskId": reviewed, "status": "approved", "notes": "ok"}))
        .await;
    assert_eq!(approval.status, StatusCode::OK, "{}", approval.text);
    task(&app, "someone else's", "assigned", "critical", "other").await;

    let stats = json!({"total": 5, "assigned": 2, "in_progress": 1, "completed": 1});
    assert_eq!(agent(&app, "worker").await["taskStats"], stats);
    let list = app.get("/api/agents", &Auth::ApiKey).await;
    assert_eq!(list.body["agents"][0]["taskStats"], stats);

    let poll = app.get("/api/agents/worker/heartbeat", &Auth::ApiKey).await;
    assert_eq!(poll.status, StatusCode::OK, "{}", poll.text);
    let pending = poll.body["pending_tasks"].as_array().unwrap();
    let ids: Vec<u64> = pending.iter().map(|t| t["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [critical, high, low], "critical first, then by priority, only assigned/in_progress");
    assert_eq!(pending[0]["title"], "critical one");
    assert_eq!(pending[0]["status"], "in_progress");
    assert_eq!(pending[0]["assigned_to"], "worker");

    // At most 20, the most urgent first.
    for i in 0..21 {
        task(&app, &format!("bulk {i}"), "assigned", "medium", "worker").await;
    }
    let poll = app.get("/api/agents/worker/heartbeat", &Auth::ApiKey).await;
    let pending = poll.body["pending_tasks"].as_array().unwrap();
    assert_eq!(pending.len(), 20);
    assert_eq!(pending[0]["id"], critical);
    assert_eq!(pending[2]["title"], "bulk 0", "medium tasks oldest first, after high");
}
