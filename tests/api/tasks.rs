use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn create(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/api/tasks", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["task"].clone()
}

#[tokio::test]
async fn task_routes_enforce_roles() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    let id = create(&app, json!({"title": "role check"})).await["id"].as_u64().unwrap();
    assert_min_role(&app, &roles, Method::GET, "/api/tasks", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, &format!("/api/tasks/{id}"), None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, &format!("/api/tasks/{id}/comments"), None, "viewer").await;
    assert_min_role(&app, &roles, Method::POST, "/api/tasks", Some(json!({})), "operator").await;
    assert_min_role(&app, &roles, Method::PUT, "/api/tasks", Some(json!({})), "operator").await;
    assert_min_role(&app, &roles, Method::PUT, &format!("/api/tasks/{id}"), Some(json!({})), "operator").await;
    assert_min_role(&app, &roles, Method::POST, &format!("/api/tasks/{id}/comments"), Some(json!({})), "operator")
        .await;
    assert_min_role(&app, &roles, Method::GET, "/api/quality-review?taskId=1", None, "viewer").await;
    assert_min_role(&app, &roles, Method::POST, "/api/quality-review", Some(json!({})), "operator").await;
    assert_min_role(&app, &roles, Method::GET, "/api/notifications", None, "viewer").await;
    assert_min_role(&app, &roles, Method::DELETE, "/api/notifications", Some(json!({"ids": []})), "admin").await;
}

#[tokio::test]
async fn create_applies_defaults_and_persists() {
    let app = spawn_app().await;
    let (_, operator) = app.user_with_role("olga", "operator").await;
    let reply = app.post("/api/tasks", &operator, json!({"title": "  Write docs  "})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let t = &reply.body["task"];
    assert_eq!(t["title"], "Write docs");
    assert_eq!(t["status"], "inbox");
    assert_eq!(t["priority"], "medium");
    assert_eq!(t["created_by"], "olga");
    assert_eq!(t["description"], "");
    assert_eq!(t["tags"], json!([]));
    assert_eq!(t["metadata"], json!({}));
    assert!(t["assigned_to"].is_null());
    assert!(t["created_at"].as_i64().unwrap() > 0);
    let id = t["id"].as_u64().unwrap();
    let got = app.get(&format!("/api/tasks/{id}"), &Auth::ApiKey).await;
    assert_eq!(got.body["task"], *t);

    let full = create(
        &app,
        json!({"title": "Full", "description": "d", "status": "assigned", "priority": "critical", "created_by": "bot",
               "due_date": "2026-12-01", "estimated_hours": 2.5, "tags": ["a", "b"], "metadata": {"k": 1}}),
    )
    .await;
    assert_eq!(full["status"], "assigned");
    assert_eq!(full["priority"], "critical");
    assert_eq!(full["created_by"], "bot");
    assert_eq!(full["due_date"], "2026-12-01");
    assert_eq!(full["estimated_hours"], 2.5);
    assert_eq!(full["tags"], json!(["a", "b"]));
    assert_eq!(full["metadata"], json!({"k": 1}));
    let audit = app.audit("action=task_created").await;
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[1]["actor"], "olga");
}

#[tokio::test]
async fn duplicate_title_is_409_and_bad_fields_are_400() {
    let app = spawn_app().await;
    create(&app, json!({"title": "Unique"})).await;
    let dup = app.post("/api/tasks", &Auth::ApiKey, json!({"title": "unique"})).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    assert_eq!(dup.error(), "Task title already exists");
    let cases = [
        (json!({}), "title: is required"),
        (json!({"title": ""}), "title: must not be empty"),
        (
            json!({"title": "x", "status": "doing"}),
            "status: must be one of inbox, assigned, in_progress, quality_review, done",
        ),
        (json!({"title": "x", "priority": "urgent"}), "priority: must be one of critical, high, medium, low"),
        (json!({"title": "x", "due_date": "next week"}), "due_date: must be an ISO 8601 date or date-time"),
        (json!({"title": "x", "estimated_hours": -1}), "estimated_hours: must be a non-negative number"),
        (json!({"title": "x", "tags": vec!["t"; 51]}), "tags: at most 50 tags"),
        (json!({"title": "x", "tags": ["y".repeat(101)]}), "tags: each tag at most 100 characters"),
        (json!({"title": "x", "metadata": [1]}), "metadata: must be an object"),
        (
            json!({"title": "x", "status": "done"}),
            "status: a new task cannot start as done (it needs quality approval)",
        ),
    ];
    for (body, detail) in cases {
        let reply = app.post("/api/tasks", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["details"][0], detail, "{body}");
    }
    let wrong_type = app.post("/api/tasks", &Auth::ApiKey, json!({"title": "x", "tags": "a,b"})).await;
    assert_eq!(wrong_type.status, StatusCode::BAD_REQUEST);
    let list = app.get("/api/tasks", &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 1, "nothing half-written");
}

#[tokio::test]
async fn list_filters_and_pages() {
    let app = spawn_app().await;
    for i in 0..7 {
        let status = if i % 2 == 0 { "assigned" } else { "inbox" };
        let agent = if i < 4 { "builder" } else { "scout" };
        let priority = if i == 3 { "high" } else { "low" };
        create(&app, json!({"title": format!("t{i}"), "status": status, "assigned_to": agent, "priority": priority}))
            .await;
    }
    let all = app.get("/api/tasks", &Auth::ApiKey).await;
    assert_eq!(all.body["total"], 7);
    assert_eq!(all.body["page"], 1);
    assert_eq!(all.body["limit"], 50);
    assert_eq!(all.body["tasks"][0]["title"], "t6", "newest first");

    let titles = |v: &Value| -> Vec<String> {
        v["tasks"].as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap().to_string()).collect()
    };
    let q = app.get("/api/tasks?status=assigned", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t6", "t4", "t2", "t0"]);
    let q = app.get("/api/tasks?assigned_to=builder", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t3", "t2", "t1", "t0"]);
    let q = app.get("/api/tasks?assigned_to=builder&status=inbox", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t3", "t1"]);
    let q = app.get("/api/tasks?assigned_to=builder&priority=high", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t3"]);
    assert_eq!(q.body["total"], 1);
    let q = app.get("/api/tasks?status=inbox&priority=low", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t5", "t1"]);
    let q = app.get("/api/tasks?priority=high", &Auth::ApiKey).await;
    assert_eq!(titles(&q.body), ["t3"]);
    let page = app.get("/api/tasks?limit=2&offset=4", &Auth::ApiKey).await;
    assert_eq!(titles(&page.body), ["t2", "t1"]);
    assert_eq!(page.body["page"], 3);
    assert_eq!(page.body["total"], 7);
    assert_eq!(app.get("/api/tasks?limit=999", &Auth::ApiKey).await.body["limit"], 200);
    for bad in ["limit=-1", "offset=x", "status=nope", "priority=urgent"] {
        assert_eq!(app.get(&format!("/api/tasks?{bad}"), &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn update_changes_fields_and_records_side_effects() {
    let app = spawn_app().await;
    let id = create(&app, json!({"title": "Edit me"})).await["id"].as_u64().unwrap();
    let (_, mut live) = app.state.bus.subscribe_after(None);
    let reply = app
        .put(
            &format!("/api/tasks/{id}"),
            &Auth::ApiKey,
            json!({"title": "Edited", "status": "in_progress", "priority": "high", "assigned_to": "builder", "tags": ["x"]}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let t = &reply.body["task"];
    assert_eq!(
        (t["title"].as_str(), t["status"].as_str(), t["assigned_to"].as_str()),
        (Some("Edited"), Some("in_progress"), Some("builder"))
    );
    assert_eq!(app.get(&format!("/api/tasks/{id}"), &Auth::ApiKey).await.body["task"]["priority"], "high");

    let mut kinds = Vec::new();
    while let Ok(e) = live.try_recv() {
        kinds.push(e.kind.clone());
        if e.kind == "task.status_changed" {
            assert_eq!(e.data["previous_status"], "inbox");
            assert_eq!(e.data["status"], "in_progress");
        }
    }
    for k in ["task.updated", "task.status_changed", "notification.created", "activity.created"] {
        assert!(kinds.contains(&k.to_string()), "{k} in {kinds:?}");
    }
    let assigned = app.audit("action=task_assigned").await;
    assert_eq!(assigned[0]["detail"]["assigned_to"], "builder");
    let notes = app.get("/api/notifications?recipient=builder", &Auth::ApiKey).await;
    assert_eq!(notes.body["notifications"][0]["type"], "task_assigned");
    assert_eq!(notes.body["notifications"][0]["source_type"], "task");
    assert_eq!(notes.body["notifications"][0]["source_id"], id);

    let none = app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({})).await;
    assert_eq!(none.status, StatusCode::BAD_REQUEST);
    assert_eq!(none.error(), "No fields to update");
    let missing = app.put("/api/tasks/999", &Auth::ApiKey, json!({"title": "x"})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let bad_id = app.put("/api/tasks/abc", &Auth::ApiKey, json!({"title": "x"})).await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/tasks/0", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/tasks/77", &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    create(&app, json!({"title": "Other"})).await;
    let clash = app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"title": "other"})).await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    let bad = app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"status": "finished"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn assignment_on_create_notifies_and_subscribes_the_agent() {
    let app = spawn_app().await;
    let t = create(&app, json!({"title": "Assigned", "assigned_to": "builder", "status": "assigned"})).await;
    let notes = app.get("/api/notifications?recipient=builder", &Auth::ApiKey).await;
    assert_eq!(notes.body["total"], 1);
    let n = &notes.body["notifications"][0];
    assert_eq!(n["type"], "task_assigned");
    assert_eq!(n["recipient"], "builder");
    assert!(n["read_at"].is_null());
    // Subscribed: a comment notifies the agent.
    let id = t["id"].as_u64().unwrap();
    app.post(&format!("/api/tasks/{id}/comments"), &Auth::ApiKey, json!({"content": "progress?"})).await;
    let notes = app.get("/api/notifications?recipient=builder", &Auth::ApiKey).await;
    assert_eq!(notes.body["total"], 2);
    assert_eq!(notes.body["notifications"][0]["type"], "info");
}

#[tokio::test]
async fn done_needs_quality_approval() {
    let app = spawn_app().await;
    let id = create(&app, json!({"title": "Gate"})).await["id"].as_u64().unwrap();
    let refused = app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"status": "done"})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.error(), format!("Quality approval required for task {id}"));
    let bulk = app.put("/api/tasks", &Auth::ApiKey, json!({"tasks": [{"id": id, "status": "done"}]})).await;
    assert_eq!(bulk.status, StatusCode::FORBIDDEN);
    assert_eq!(bulk.error(), format!("Quality approval required for task {id}"));

    // Another reviewer's approval does not open the gate.
    let other = app
        .post(
            "/api/quality-review",
            &Auth::ApiKey,
            json!({"taskId": id, "reviewer": "intern", "status": "approved", "notes": "lgtm"}),
        )
        .await;
    assert_eq!(other.status, StatusCode::OK);
    assert_eq!(other.body["task_status"], "inbox");
    assert_eq!(
        app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"status": "done"})).await.status,
        StatusCode::FORBIDDEN
    );

    let rejected = app
        .post("/api/quality-review", &Auth::ApiKey, json!({"taskId": id, "status": "rejected", "notes": "no tests"}))
        .await;
    assert_eq!(rejected.body["review"]["reviewer"], "aegis");
    assert_eq!(rejected.body["task_status"], "inbox");

    let approved = app
        .post("/api/quality-review", &Auth::ApiKey, json!({"taskId": id, "status": "approved", "notes": "ok"}))
        .await;
    assert_eq!(approved.status, StatusCode::OK);
    assert_eq!(approved.body["task_status"], "done");
    let task = app.get(&format!("/api/tasks/{id}"), &Auth::ApiKey).await;
    assert_eq!(task.body["task"]["status"], "done");

    // Approved: moving back and forth through done is allowed.
    assert_eq!(
        app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"status": "in_progress"})).await.status,
        StatusCode::OK
    );
    assert_eq!(
        app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"status": "done"})).await.status,
        StatusCode::OK
    );

    let reviews = app.get(&format!("/api/quality-review?taskId={id}"), &Auth::ApiKey).await;
    let statuses: Vec<&str> =
        reviews.body["reviews"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["approved", "rejected", "approved"], "newest first");
    assert_eq!(reviews.body["reviews"][0]["taskId"], id);

    for (body, status) in [
        (json!({"taskId": id, "status": "maybe"}), StatusCode::BAD_REQUEST),
        (json!({"status": "approved"}), StatusCode::BAD_REQUEST),
        (json!({"taskId": 999, "status": "approved"}), StatusCode::NOT_FOUND),
    ] {
        assert_eq!(app.post("/api/quality-review", &Auth::ApiKey, body.clone()).await.status, status, "{body}");
    }
    assert_eq!(app.get("/api/quality-review", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/quality-review?taskId=x", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bulk_update_is_all_or_nothing() {
    let app = spawn_app().await;
    let a = create(&app, json!({"title": "A"})).await["id"].as_u64().unwrap();
    let b = create(&app, json!({"title": "B"})).await["id"].as_u64().unwrap();
    let ok = app
        .put(
            "/api/tasks",
            &Auth::ApiKey,
            json!({"tasks": [{"id": a, "status": "assigned"}, {"id": b, "status": "in_progress"}]}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.body, json!({"success": true, "updated": 2}));
    let unknown = app
        .put(
            "/api/tasks",
            &Auth::ApiKey,
            json!({"tasks": [{"id": a, "status": "quality_review"}, {"id": 999, "status": "inbox"}]}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "Task 999 not found");
    let gate = app
        .put("/api/tasks", &Auth::ApiKey, json!({"tasks": [{"id": a, "status": "inbox"}, {"id": b, "status": "done"}]}))
        .await;
    assert_eq!(gate.status, StatusCode::FORBIDDEN);
    let task_a = app.get(&format!("/api/tasks/{a}"), &Auth::ApiKey).await;
    assert_eq!(task_a.body["task"]["status"], "assigned", "nothing changed by the refused bulk moves");
    for body in [
        json!({"tasks": []}),
        json!({"tasks": [{"status": "inbox"}]}),
        json!({"tasks": [{"id": a, "status": "x"}]}),
        json!({}),
    ] {
        let reply = app.put("/api/tasks", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
    }
}

#[tokio::test]
async fn delete_own_or_as_admin() {
    let app = spawn_app().await;
    let (_, alice) = app.user_with_role("alice", "operator").await;
    let (_, bob) = app.user_with_role("bob", "operator").await;
    let id = app.post("/api/tasks", &alice, json!({"title": "Alice's"})).await.body["task"]["id"].as_u64().unwrap();
    app.post(&format!("/api/tasks/{id}/comments"), &alice, json!({"content": "note"})).await;
    let refused = app.delete(&format!("/api/tasks/{id}"), &bob, json!({})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let ok = app.delete(&format!("/api/tasks/{id}"), &alice, json!({})).await;
    assert_eq!(ok.body, json!({"success": true}));
    assert_eq!(app.get(&format!("/api/tasks/{id}"), &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/api/tasks/{id}/comments"), &Auth::ApiKey).await.status, StatusCode::NOT_FOUND);
    // The title is free again.
    let again = app.post("/api/tasks", &bob, json!({"title": "Alice's"})).await;
    assert_eq!(again.status, StatusCode::OK);
    let other = again.body["task"]["id"].as_u64().unwrap();
    assert_eq!(app.delete(&format!("/api/tasks/{other}"), &Auth::ApiKey, json!({})).await.status, StatusCode::OK);
    assert_eq!(app.delete("/api/tasks/12345", &Auth::ApiKey, json!({})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn comments_default_author_and_notify_mentions() {
    let app = spawn_app().await;
    let (_, operator) = app.user_with_role("cora", "operator").await;
    let id = create(&app, json!({"title": "Discuss"})).await["id"].as_u64().unwrap();
    let reply =
        app.post(&format!("/api/tasks/{id}/comments"), &operator, json!({"content": "ping @scout please"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["comment"]["author"], "cora");
    assert_eq!(reply.body["comment"]["task_id"], id);
    let by = app
        .post(&format!("/api/tasks/{id}/comments"), &operator, json!({"content": "second", "author": "builder"}))
        .await;
    assert_eq!(by.body["comment"]["author"], "builder");
    let list = app.get(&format!("/api/tasks/{id}/comments"), &Auth::ApiKey).await;
    let contents: Vec<&str> =
        list.body["comments"].as_array().unwrap().iter().map(|c| c["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["ping @scout please", "second"]);
    let scout = app.get("/api/notifications?recipient=scout", &Auth::ApiKey).await;
    assert_eq!(scout.body["notifications"][0]["type"], "mention");
    let activity: Vec<Value> = app.state.bus.subscribe_after(Some(0)).0.iter().map(|e| e.data.clone()).collect();
    assert!(activity.iter().any(|d| d["type"] == "comment_added"));
    for body in [json!({}), json!({"content": "   "}), json!({"content": 5})] {
        assert_eq!(
            app.post(&format!("/api/tasks/{id}/comments"), &Auth::ApiKey, body).await.status,
            StatusCode::BAD_REQUEST
        );
    }
    assert_eq!(
        app.post("/api/tasks/999/comments", &Auth::ApiKey, json!({"content": "x"})).await.status,
        StatusCode::NOT_FOUND
    );
}

async fn agent(app: &TestApp, name: &str) {
    let reply = app.post("/api/agents", &Auth::ApiKey, json!({"name": name, "role": "developer"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
}

#[tokio::test]
async fn broadcast_reaches_subscribers_and_assignee_or_named_agents() {
    let app = spawn_app().await;
    for name in ["builder", "scout", "qa"] {
        agent(&app, name).await;
    }
    let id = create(&app, json!({"title": "Release", "assigned_to": "builder"})).await["id"].as_u64().unwrap();
    // A second assignment subscribes scout too; "ghost" is subscribed but not a registered agent.
    app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"assigned_to": "ghost"})).await;
    app.put(&format!("/api/tasks/{id}"), &Auth::ApiKey, json!({"assigned_to": "scout"})).await;
    let (_, operator) = app.user_with_role("ops", "operator").await;
    let all = app.post(&format!("/api/tasks/{id}/broadcast"), &operator, json!({"message": "ship at 5"})).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text);
    assert_eq!(all.body["success"], true);
    let mut to: Vec<String> =
        all.body["delivered_to"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().into()).collect();
    to.sort();
    assert_eq!(to, ["builder", "scout"]);
    let comms = app.get("/api/agents/comms?agent=builder", &Auth::ApiKey).await;
    let m = &comms.body["messages"][0];
    assert_eq!(
        (m["from_agent"].as_str(), m["type"].as_str(), m["content"].as_str()),
        (Some("ops"), Some("broadcast"), Some("ship at 5"))
    );

    let named = app.post(&format!("/api/tasks/{id}/broadcast"), &Auth::ApiKey, json!({"agents": ["qa"]})).await;
    assert_eq!(named.body["delivered_to"], json!(["qa"]));
    let unknown =
        app.post(&format!("/api/tasks/{id}/broadcast"), &Auth::ApiKey, json!({"agents": ["qa", "nobody"]})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let qa = app.get("/api/agents/comms?agent=qa", &Auth::ApiKey).await;
    assert_eq!(qa.body["messages"].as_array().unwrap().len(), 1, "nothing half-delivered");
    assert_eq!(app.post("/api/tasks/999/broadcast", &Auth::ApiKey, json!({})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.post(&format!("/api/tasks/{id}/broadcast"), &Auth::ApiKey, json!({"agents": "qa"})).await.status,
        StatusCode::BAD_REQUEST
    );
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::POST, &format!("/api/tasks/{id}/broadcast"), Some(json!({})), "operator")
        .await;
}
