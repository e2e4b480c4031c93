use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

/// Assigns one task per name to create notifications for those recipients.
async fn assign(app: &TestApp, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        let reply = app.post("/api/tasks", &Auth::ApiKey, json!({"title": format!("n{i}"), "assigned_to": name})).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn users_see_only_their_own_admins_see_all() {
    let app = spawn_app().await;
    let (_, vera) = app.user_with_role("vera", "viewer").await;
    assign(&app, &["vera", "vera", "other"]).await;
    let own = app.get("/api/notifications", &vera).await;
    assert_eq!(own.status, StatusCode::OK);
    assert_eq!(own.body["total"], 2);
    assert_eq!(own.body["unreadCount"], 2);
    let sneaky = app.get("/api/notifications?recipient=other", &vera).await;
    assert_eq!(sneaky.body["total"], 2, "the recipient filter cannot reach others' notifications");
    let all = app.get("/api/notifications", &Auth::ApiKey).await;
    assert_eq!(all.body["total"], 3);
    let other = app.get("/api/notifications?recipient=other&type=task_assigned", &Auth::ApiKey).await;
    assert_eq!(other.body["total"], 1);
    assert_eq!(app.get("/api/notifications?type=mention", &Auth::ApiKey).await.body["total"], 0);
    let page = app.get("/api/notifications?limit=1&offset=1", &Auth::ApiKey).await;
    assert_eq!(page.body["notifications"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["total"], 3);
}

#[tokio::test]
async fn mark_read_by_ids_and_all() {
    let app = spawn_app().await;
    let (_, vera) = app.user_with_role("vera", "viewer").await;
    assign(&app, &["vera", "vera", "vera", "other"]).await;
    let list = app.get("/api/notifications", &vera).await;
    let ids: Vec<u64> =
        list.body["notifications"].as_array().unwrap().iter().map(|n| n["id"].as_u64().unwrap()).collect();
    let other_id =
        app.get("/api/notifications?recipient=other", &Auth::ApiKey).await.body["notifications"][0]["id"].clone();

    let marked = app.put("/api/notifications", &vera, json!({"ids": [ids[0], other_id]})).await;
    assert_eq!(marked.body, json!({"success": true, "markedAsRead": 1}), "others' notifications are not touched");
    let unread = app.get("/api/notifications?unread_only=true", &vera).await;
    assert_eq!(unread.body["total"], 2);
    assert_eq!(unread.body["unreadCount"], 2);
    let read = app.get("/api/notifications", &vera).await;
    assert!(read.body["notifications"][0]["read_at"].as_i64().is_some());

    let all = app.put("/api/notifications", &vera, json!({"recipient": "vera", "markAllRead": true})).await;
    assert_eq!(all.body["markedAsRead"], 2);
    assert_eq!(app.get("/api/notifications", &vera).await.body["unreadCount"], 0);
    assert_eq!(app.get("/api/notifications?recipient=other", &Auth::ApiKey).await.body["unreadCount"], 1);

    for body in [json!({}), json!({"ids": "1"}), json!({"markAllRead": true})] {
        let reply = app.put("/api/notifications", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
    }
    assert_eq!(app.get("/api/notifications?unread_only=maybe", &vera).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn admins_delete_notifications() {
    let app = spawn_app().await;
    assign(&app, &["x", "y"]).await;
    let list = app.get("/api/notifications", &Auth::ApiKey).await;
    let id = list.body["notifications"][0]["id"].clone();
    let reply = app.delete("/api/notifications", &Auth::ApiKey, json!({"ids": [id, 999]})).await;
    assert_eq!(reply.body, json!({"success": true, "deleted": 1}));
    let after = app.get("/api/notifications", &Auth::ApiKey).await;
    assert_eq!(after.body["total"], 1);
    assert_eq!(after.body["unreadCount"], 1);
}
