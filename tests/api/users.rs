use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn user_routes_are_admin_only() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/auth/users", None, "admin").await;
    assert_min_role(&app, &roles, Method::POST, "/api/auth/users", Some(json!({})), "admin").await;
    assert_min_role(&app, &roles, Method::PUT, "/api/auth/users", Some(json!({})), "admin").await;
    assert_min_role(&app, &roles, Method::DELETE, "/api/auth/users", Some(json!({})), "admin").await;
    assert_min_role(&app, &roles, Method::GET, "/api/auth/access-requests", None, "admin").await;
    assert_min_role(&app, &roles, Method::POST, "/api/auth/access-requests", Some(json!({})), "admin").await;
    assert_min_role(&app, &roles, Method::GET, "/api/auth/me", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, "/api/audit", None, "admin").await;
}

#[tokio::test]
async fn create_list_update_delete_user() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let created = app
        .post(
            "/api/auth/users",
            &admin,
            json!({"username": "ops1", "password": "a-long-password", "display_name": "Ops One", "role": "operator", "email": "ops1@example.com"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let user = &created.body["user"];
    assert_eq!(user["username"], "ops1");
    assert_eq!(user["display_name"], "Ops One");
    assert_eq!(user["role"], "operator");
    assert_eq!(user["email"], "ops1@example.com");
    assert_eq!(user["provider"], "local");
    assert_eq!(user["workspace_id"], 1);
    assert!(user["created_at"].as_i64().unwrap() > 1_700_000_000);
    let id = user["id"].as_u64().unwrap();

    let list = app.get("/api/auth/users", &admin).await;
    let names: Vec<&str> =
        list.body["users"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin", "ops1"]);
    assert!(!list.text.contains("password"), "no password field or hash in {}", list.text);
    assert!(!list.text.contains("$argon2"));

    let updated = app.put("/api/auth/users", &admin, json!({"id": id, "role": "viewer", "display_name": "Ops"})).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.text);
    assert_eq!(updated.body["user"]["role"], "viewer");
    assert_eq!(updated.body["user"]["display_name"], "Ops");

    // The new password works, the old one does not.
    let pw = app.put("/api/auth/users", &admin, json!({"id": id, "password": "another-long-password"})).await;
    assert_eq!(pw.status, StatusCode::OK);
    assert_eq!(app.login_reply("ops1", "a-long-password").await.status, StatusCode::UNAUTHORIZED);
    app.login("ops1", "another-long-password").await;

    let deleted = app.delete("/api/auth/users", &admin, json!({"id": id})).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.body, json!({"success": true}));
    let list = app.get("/api/auth/users", &admin).await;
    assert_eq!(list.body["users"].as_array().unwrap().len(), 1);

    let actions: Vec<String> = app.audit("").await.iter().map(|e| e["action"].as_str().unwrap().to_string()).collect();
    for action in ["user_created", "user_updated", "user_deleted"] {
        assert!(actions.contains(&action.to_string()), "{action} audited: {actions:?}");
    }
    let updates = app.audit("action=user_updated").await;
    assert_eq!(updates[1]["detail"]["changes"][0], json!({"field": "role", "before": "operator", "after": "viewer"}));
    assert_eq!(updates[1]["actor"], "admin");
}

#[tokio::test]
async fn duplicate_username_is_409_case_insensitively() {
    let app = spawn_app().await;
    let body = json!({"username": "Dup", "password": "a-long-password"});
    assert_eq!(app.post("/api/auth/users", &Auth::ApiKey, body).await.status, StatusCode::CREATED);
    let again =
        app.post("/api/auth/users", &Auth::ApiKey, json!({"username": "dup", "password": "a-long-password"})).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.error(), "Username already exists");
}

#[tokio::test]
async fn create_user_validation() {
    let app = spawn_app().await;
    let cases = [
        (json!({"username": "shorty", "password": "short"}), "password: must be at least 12 characters"),
        (
            json!({"username": "x", "password": "a-long-password", "role": "god"}),
            "role: must be one of viewer, operator, admin",
        ),
        (
            json!({"username": "has space", "password": "a-long-password"}),
            "username: must be 1-64 characters of letters, digits and . _ - @",
        ),
        (json!({"username": "e", "password": "a-long-password", "email": "nope"}), "email: must be an e-mail address"),
        (json!({"password": "a-long-password"}), "username: is required"),
    ];
    for (body, detail) in cases {
        let reply = app.post("/api/auth/users", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.error(), "Validation failed");
        assert_eq!(reply.body["details"][0], detail, "{body}");
    }
    let wrong_type = app.post("/api/auth/users", &Auth::ApiKey, json!({"username": ["a"], "password": 1})).await;
    assert_eq!(wrong_type.status, StatusCode::BAD_REQUEST);
    // Nothing was created.
    assert_eq!(app.get("/api/auth/users", &Auth::ApiKey).await.body["users"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn update_and_delete_rules() {
    let app = spawn_app().await;
    let admin_id = 1;
    let admin = app.admin().await;
    let own_role = app.put("/api/auth/users", &admin, json!({"id": admin_id, "role": "viewer"})).await;
    assert_eq!(own_role.status, StatusCode::BAD_REQUEST);
    assert_eq!(own_role.error(), "Cannot change your own role");
    let own_delete = app.delete("/api/auth/users", &admin, json!({"id": admin_id})).await;
    assert_eq!(own_delete.status, StatusCode::BAD_REQUEST);
    assert_eq!(own_delete.error(), "Cannot delete your own account");
    let nothing = app.put("/api/auth/users", &admin, json!({"id": admin_id})).await;
    assert_eq!(nothing.status, StatusCode::BAD_REQUEST);
    assert_eq!(nothing.error(), "No fields to update");
    let unknown = app.put("/api/auth/users", &admin, json!({"id": 999, "display_name": "x"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "User not found");
    let unknown = app.delete("/api/auth/users", &admin, json!({"id": 999})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "User not found");
    let bad_id = app.delete("/api/auth/users", &admin, json!({"id": "one"})).await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
    let bad_role = app.put("/api/auth/users", &admin, json!({"id": admin_id, "role": "root"})).await;
    assert_eq!(bad_role.status, StatusCode::BAD_REQUEST);
    let short = app.put("/api/auth/users", &admin, json!({"id": admin_id, "password": "short"})).await;
    assert_eq!(short.body["details"], json!(["password: must be at least 12 characters"]));
    // The API key (id 0) cannot demote the only admin either.
    let last = app.put("/api/auth/users", &Auth::ApiKey, json!({"id": admin_id, "role": "operator"})).await;
    assert_eq!(last.status, StatusCode::BAD_REQUEST);
    assert_eq!(last.error(), "Cannot remove the last admin");
}

#[tokio::test]
async fn deleting_a_user_destroys_their_sessions_at_once() {
    let app = spawn_app().await;
    let (id, session) = app.user_with_role("leaver", "operator").await;
    assert_eq!(app.get("/api/auth/me", &session).await.status, StatusCode::OK);
    assert_eq!(app.delete("/api/auth/users", &Auth::ApiKey, json!({"id": id})).await.status, StatusCode::OK);
    let after = app.get("/api/auth/me", &session).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    assert_eq!(after.error(), "Authentication required");
}

#[tokio::test]
async fn a_role_change_applies_to_live_sessions() {
    let app = spawn_app().await;
    let (id, session) = app.user_with_role("promoted", "viewer").await;
    assert_eq!(app.get("/api/auth/users", &session).await.status, StatusCode::FORBIDDEN);
    app.put("/api/auth/users", &Auth::ApiKey, json!({"id": id, "role": "admin"})).await;
    assert_eq!(app.get("/api/auth/users", &session).await.status, StatusCode::OK);
}

async fn insert_request(app: &TestApp, username: &str, email: &str) -> u64 {
    let (u, e) = (username.to_string(), email.to_string());
    let (request, _) = app
        .state
        .store
        .write(move |tx| {
            let new = opsdeck::users::NewAccessRequest {
                username: u,
                email: e,
                reason: "signed in with Google".into(),
                display_name: None,
                avatar_url: None,
            };
            opsdeck::users::store::upsert_access_request(tx, new)
        })
        .await
        .unwrap();
    request.id
}

#[tokio::test]
async fn access_requests_approve_and_reject() {
    let app = spawn_app().await;
    let first = insert_request(&app, "gina", "gina@example.com").await;
    let second = insert_request(&app, "rex", "rex@example.com").await;
    let list = app.get("/api/auth/access-requests", &Auth::ApiKey).await;
    assert_eq!(list.status, StatusCode::OK);
    let requests = list.body["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["id"], second, "newest first");
    assert_eq!(requests[1]["username"], "gina");
    assert_eq!(requests[1]["email"], "gina@example.com");
    assert_eq!(requests[1]["status"], "pending");
    assert_eq!(requests[1]["reason"], "signed in with Google");

    let approved = app
        .post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": first, "action": "approve", "role": "operator"}))
        .await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.text);
    assert_eq!(approved.body["ok"], true);
    assert_eq!(approved.body["user"]["username"], "gina");
    assert_eq!(approved.body["user"]["role"], "operator");
    assert_eq!(approved.body["user"]["provider"], "google");

    let rejected =
        app.post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": second, "action": "reject"})).await;
    assert_eq!(rejected.body, json!({"ok": true}));
    let list = app.get("/api/auth/access-requests", &Auth::ApiKey).await;
    let statuses: Vec<&str> =
        list.body["requests"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["rejected", "approved"]);

    // A rejected person who signs in again is pending again.
    insert_request(&app, "rex", "rex@example.com").await;
    let list = app.get("/api/auth/access-requests", &Auth::ApiKey).await;
    assert_eq!(list.body["requests"][0]["status"], "pending");

    let bad = app.post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": first, "action": "maybe"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let missing = app.post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": 99, "action": "reject"})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let bad_role = app
        .post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": second, "action": "approve", "role": "x"}))
        .await;
    assert_eq!(bad_role.status, StatusCode::BAD_REQUEST);
}
