use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

async fn seed(app: &TestApp) {
    for i in 0..3 {
        let body = json!({"username": format!("u{i}"), "password": "a-long-password"});
        assert_eq!(app.post("/api/auth/users", &Auth::ApiKey, body).await.status, StatusCode::CREATED);
    }
    app.login(ADMIN_USER, ADMIN_PASS).await;
}

#[tokio::test]
async fn audit_filters_paging_and_shape() {
    let app = spawn_app().await;
    seed(&app).await;
    // seeded admin + 3 creations + 1 login
    let all = app.get("/api/audit", &Auth::ApiKey).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(all.body["total"], 5);
    assert_eq!(all.body["limit"], 1000);
    assert_eq!(all.body["offset"], 0);
    let events = all.body["events"].as_array().unwrap();
    let ids: Vec<u64> = events.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let e = &events[1];
    for field in ["id", "action", "actor", "actor_id", "detail", "ip_address", "created_at"] {
        assert!(e.get(field).is_some(), "{field} in {e}");
    }
    assert_eq!(e["action"], "user_created");
    assert_eq!(e["actor"], "api");
    assert_eq!(e["actor_id"], 0);
    assert!(e["detail"].is_object());

    let created = app.audit("action=user_created").await;
    assert_eq!(created.len(), 4);
    let by_api = app.audit("actor=api").await;
    assert_eq!(by_api.len(), 3);
    let both = app.audit("action=user_created&actor=system").await;
    assert_eq!(both.len(), 1, "the seeded first admin");

    let page = app.get("/api/audit?limit=2&offset=1", &Auth::ApiKey).await;
    assert_eq!(page.body["total"], 5);
    assert_eq!(page.body["events"].as_array().unwrap().len(), 2);
    assert_eq!(page.body["events"][0]["id"], ids[1]);

    let clamped = app.get("/api/audit?limit=50000", &Auth::ApiKey).await;
    assert_eq!(clamped.body["limit"], 10000);

    let now = opsdeck::store::now_secs();
    assert_eq!(app.audit(&format!("since={}", now + 100)).await.len(), 0);
    assert_eq!(app.audit(&format!("until={}", now + 100)).await.len(), 5);
    assert_eq!(app.audit("until=0").await.len(), 0);
}

#[tokio::test]
async fn audit_rejects_invalid_parameters() {
    let app = spawn_app().await;
    for query in ["limit=-1", "limit=abc", "offset=-5", "offset=1.5", "since=yesterday", "until=-3", "since=10&until=5"]
    {
        let reply = app.get(&format!("/api/audit?{query}"), &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}: {}", reply.text);
        assert_eq!(reply.error(), "Validation failed");
    }
}
