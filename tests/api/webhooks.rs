use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::helpers::*;
use crate::receiver::Receiver;

async fn create_hook(app: &TestApp, url: &str, events: Option<Value>) -> (u64, String) {
    let mut body = json!({"name": "hook", "url": url});
    if let Some(e) = events {
        body["events"] = e;
    }
    let reply = app.post("/api/webhooks", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    (reply.body["id"].as_u64().unwrap(), reply.body["secret"].as_str().unwrap().to_string())
}

fn hmac_hex(secret: &str, body: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

async fn hook_state(app: &TestApp, id: u64) -> Value {
    let list = app.get("/api/webhooks", &Auth::ApiKey).await;
    list.body["webhooks"].as_array().unwrap().iter().find(|w| w["id"] == id).cloned().unwrap()
}

#[tokio::test]
async fn webhook_routes_are_admin_only() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    for (method, path) in [
        (Method::GET, "/api/webhooks"),
        (Method::POST, "/api/webhooks"),
        (Method::PUT, "/api/webhooks"),
        (Method::DELETE, "/api/webhooks"),
        (Method::GET, "/api/webhooks/deliveries"),
        (Method::POST, "/api/webhooks/retry"),
        (Method::POST, "/api/webhooks/test"),
    ] {
        let body = (method != Method::GET).then(|| json!({}));
        assert_min_role(&app, &roles, method, path, body, "admin").await;
    }
}

#[tokio::test]
async fn create_shows_the_secret_once_then_masks_it() {
    let app = spawn_app().await;
    let reply =
        app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "ci", "url": "https://example.com/hook"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let secret = reply.body["secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64);
    assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(reply.body["events"], json!(["*"]));
    assert_eq!(reply.body["enabled"], true);
    assert!(reply.body["message"].is_string());
    let hook = hook_state(&app, reply.body["id"].as_u64().unwrap()).await;
    let masked = hook["secret"].as_str().unwrap();
    assert!(masked.ends_with(&secret[60..]));
    assert!(!masked.contains(&secret[..60]));
    for field in [
        "consecutive_failures",
        "circuit_open",
        "total_deliveries",
        "successful_deliveries",
        "failed_deliveries",
        "created_by",
    ] {
        assert!(hook.get(field).is_some(), "{field}");
    }
    let list = app.get("/api/webhooks", &Auth::ApiKey).await;
    assert!(!list.text.contains(&secret), "the full secret never appears in reads");

    let regenerated =
        app.put("/api/webhooks", &Auth::ApiKey, json!({"id": hook["id"], "regenerate_secret": true})).await;
    let new_secret = regenerated.body["secret"].as_str().unwrap();
    assert_eq!(new_secret.len(), 64);
    assert_ne!(new_secret, secret);
    let unsigned = app
        .post("/api/webhooks", &Auth::ApiKey, json!({"name": "u", "url": "http://x.example", "generate_secret": false}))
        .await;
    assert_eq!(unsigned.body["secret"], "");
}

#[tokio::test]
async fn webhook_validation() {
    let app = spawn_app().await;
    for (body, detail) in [
        (json!({"name": "x", "url": "ftp://example.com"}), "url: must be an http or https URL"),
        (json!({"name": "x", "url": "not a url"}), "url: must be an http or https URL"),
        (json!({"name": "", "url": "http://example.com"}), "name: must be 1-100 characters"),
        (json!({"name": "x", "url": "http://example.com", "events": []}), "events: must not be empty"),
        (
            json!({"name": "x", "url": "http://example.com", "events": ["nonsense"]}),
            "events: each must be * or an event type such as activity.task_created",
        ),
        (json!({"url": "http://example.com"}), "name: is required"),
    ] {
        let reply = app.post("/api/webhooks", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["details"][0], detail, "{body}");
    }
    assert_eq!(
        app.put("/api/webhooks", &Auth::ApiKey, json!({"id": 9, "name": "y"})).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.put("/api/webhooks", &Auth::ApiKey, json!({"id": 9})).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.delete("/api/webhooks", &Auth::ApiKey, json!({"id": 9})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": 9})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.post("/api/webhooks/retry", &Auth::ApiKey, json!({"delivery_id": 9})).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.get("/api/webhooks/deliveries?webhook_id=x", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/webhooks/deliveries?limit=-2", &Auth::ApiKey).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn events_are_delivered_once_signed_with_every_header() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    let (_, secret) = create_hook(&app, &receiver.url, Some(json!(["activity.task_created"]))).await;
    let reply = app.post("/api/tasks", &Auth::ApiKey, json!({"title": "Ship it", "assigned_to": "builder"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let hits = receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.hits().len(), 1, "only the subscribed event, exactly once");
    let hit = &hits[0];
    assert_eq!(hit.header("content-type"), Some("application/json"));
    assert_eq!(hit.header("user-agent"), Some("SvcWebhook/1.0"));
    assert_eq!(hit.header("x-svc-event"), Some("activity.task_created"));
    let expected = format!("sha256={}", hmac_hex(&secret, &hit.body));
    assert_eq!(hit.header("x-svc-signature"), Some(expected.as_str()));
    assert!(hit.header("webhook-id").unwrap().starts_with("msg_"));
    assert!(hit.header("webhook-timestamp").unwrap().parse::<i64>().is_ok());
    assert!(hit.header("webhook-signature").unwrap().starts_with("v1,"));
    let body = hit.json();
    assert_eq!(body["event"], "activity.task_created");
    assert!(
        body["timestamp"].as_i64().unwrap() > 1_700_000_000 && body["timestamp"].as_i64().unwrap() < 10_000_000_000
    );
    assert_eq!(body["data"]["type"], "task_created");
    assert_eq!(body["data"]["data"]["title"], "Ship it");
}

#[tokio::test]
async fn a_wildcard_hook_gets_activity_notification_and_security_events() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    create_hook(&app, &receiver.url, None).await;
    app.login_reply(ADMIN_USER, "wrong-password!!").await;
    app.post("/api/tasks", &Auth::ApiKey, json!({"title": "T", "assigned_to": "builder"})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let events: Vec<String> = receiver.hits().iter().map(|h| h.header("x-svc-event").unwrap().to_string()).collect();
    for e in ["security.login_failed", "activity.task_created", "activity.task_assigned", "notification.task_assigned"]
    {
        assert_eq!(events.iter().filter(|x| *x == e).count(), 1, "{e} exactly once in {events:?}");
    }
}

#[tokio::test]
async fn test_ping_and_delivery_history() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    let (id, _) = create_hook(&app, &receiver.url, Some(json!(["test.ping"]))).await;
    let reply = app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": id})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["success"], true);
    assert_eq!(reply.body["status_code"], 200);
    assert_eq!(reply.body["response_body"], "status 200");
    assert!(reply.body["error"].is_null());
    assert!(reply.body["duration_ms"].as_f64().unwrap() >= 0.0);
    let hit = &receiver.hits()[0];
    assert_eq!(hit.json()["event"], "test.ping");
    assert_eq!(hit.json()["data"]["webhook_id"], id);
    assert_eq!(hit.json()["data"]["triggered_by"], "api");
    let deliveries = app.get(&format!("/api/webhooks/deliveries?webhook_id={id}"), &Auth::ApiKey).await;
    assert_eq!(deliveries.body["total"], 1);
    let d = &deliveries.body["deliveries"][0];
    assert_eq!(d["id"], reply.body["delivery_id"]);
    assert_eq!(d["event_type"], "test.ping");
    assert_eq!(d["attempt"], 0);
    assert_eq!(d["is_retry"], false);
    let hook = hook_state(&app, id).await;
    assert_eq!(
        (hook["total_deliveries"].as_u64(), hook["successful_deliveries"].as_u64(), hook["last_status"].as_u64()),
        (Some(1), Some(1), Some(200))
    );
}

#[tokio::test]
async fn failures_schedule_retries_open_the_circuit_and_reset_resumes() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(500);
    let (id, _) = create_hook(&app, &receiver.url, None).await;
    app.post("/api/tasks", &Auth::ApiKey, json!({"title": "Fails"})).await;
    receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let list = app.get(&format!("/api/webhooks/deliveries?webhook_id={id}"), &Auth::ApiKey).await;
    let deliveries = list.body["deliveries"].as_array().unwrap();
    let failed = deliveries.iter().find(|d| d["attempt"] == 0).unwrap();
    assert_eq!(failed["status_code"], 500);
    assert_eq!(failed["state"], "failed");
    assert_eq!(failed["error"], "HTTP 500");
    let next = failed["next_retry_at"].as_i64().expect("a retry is scheduled");
    let delay = next - opsdeck::store::now_secs();
    assert!((22..=37).contains(&delay), "about 30 s ±20%: {delay}");
    let pending = deliveries.iter().find(|d| d["attempt"] == 1).unwrap();
    assert_eq!(pending["state"], "pending");
    assert_eq!(pending["is_retry"], true);

    // Four more consecutive failures (manual tests) open the circuit.
    for _ in 0..4 {
        let reply = app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": id})).await;
        assert_eq!(reply.body["success"], false);
        assert_eq!(reply.body["status_code"], 500);
    }
    let hook = hook_state(&app, id).await;
    assert_eq!(hook["consecutive_failures"], 5);
    assert_eq!(hook["circuit_open"], true);
    assert_eq!(hook["enabled"], false);
    assert_eq!(hook["failed_deliveries"], 5);
    let opened = app.state.bus.subscribe_after(Some(0)).0.iter().any(|e| e.kind == "webhook.circuit_opened");
    assert!(opened);

    // While open, new events queue nothing; a reset re-enables and the next attempts succeed.
    receiver.respond_with(204);
    let reset = app.put("/api/webhooks", &Auth::ApiKey, json!({"id": id, "reset_circuit": true})).await;
    assert_eq!(reset.status, StatusCode::OK);
    assert_eq!(reset.body["circuit_open"], false);
    assert_eq!(reset.body["consecutive_failures"], 0);
    assert_eq!(reset.body["enabled"], true);
    let retry = app.post("/api/webhooks/retry", &Auth::ApiKey, json!({"delivery_id": failed["id"]})).await;
    assert_eq!(retry.status, StatusCode::OK);
    assert_eq!(retry.body["success"], true);
    assert_eq!(retry.body["status_code"], 204);
    assert!(retry.body["response_time_ms"].as_f64().is_some());
    let last = receiver.hits().last().cloned().unwrap();
    assert_eq!(last.header("x-svc-event"), Some("activity.task_created"), "the retry resends the same event");
}

#[tokio::test]
async fn a_timeout_or_refused_connection_is_a_failure_with_null_status() {
    let app = spawn_app().await;
    // A port nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let (id, _) = create_hook(&app, &url, None).await;
    let reply = app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": id})).await;
    assert_eq!(reply.body["success"], false);
    assert!(reply.body["status_code"].is_null());
    assert!(reply.body["error"].as_str().unwrap().starts_with("Network error"));
}

#[tokio::test]
async fn history_keeps_the_newest_200_and_delete_removes_everything() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    let (id, _) = create_hook(&app, &receiver.url, Some(json!(["test.ping"]))).await;
    let mut last = Value::Null;
    for _ in 0..203 {
        last = app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": id})).await.body["delivery_id"].clone();
    }
    let list = app.get(&format!("/api/webhooks/deliveries?webhook_id={id}&limit=500"), &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 200);
    assert_eq!(list.body["deliveries"].as_array().unwrap().len(), 200, "limit clamps to 200");
    assert_eq!(list.body["deliveries"][0]["id"], last);
    let deleted = app.delete("/api/webhooks", &Auth::ApiKey, json!({"id": id})).await;
    assert_eq!(deleted.body, json!({"success": true}));
    let list = app.get("/api/webhooks/deliveries", &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 0);
}

#[tokio::test]
async fn queued_deliveries_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_string_lossy().to_string();
    let receiver = Receiver::start().await;
    {
        let app = spawn_app_with(&["--data-dir", &data]).await;
        create_hook(&app, &receiver.url, None).await;
        receiver.respond_with(503);
        app.post("/api/tasks", &Auth::ApiKey, json!({"title": "Survives"})).await;
        receiver.wait_for(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    receiver.respond_with(200);
    // The first process is gone; a new one opens the same database once it is released.
    let mut reopened = None;
    for _ in 0..50 {
        match try_spawn_app_with(&["--data-dir", &data]).await {
            Ok(app) => {
                reopened = Some(app);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let app = reopened.expect("database reopened");
    // Make the scheduled retry due now and wake the sender (instead of waiting ~30 s).
    app.state
        .store
        .write(|tx| {
            use redb::ReadableTable;
            let entries: Vec<(u64, u64)> = {
                let t = tx.open_table(opsdeck::store::schema::WEBHOOK_OUTBOX)?;
                t.iter()?.map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?
            };
            assert_eq!(entries.len(), 1, "one retry waiting in the durable outbox");
            let mut outbox = tx.open_table(opsdeck::store::schema::WEBHOOK_OUTBOX)?;
            for (due, id) in entries {
                outbox.remove((due, id))?;
                outbox.insert((0, id), ())?;
            }
            drop(outbox);
            let mut d: opsdeck::webhooks::Delivery = {
                let t = tx.open_table(opsdeck::store::schema::WEBHOOK_DELIVERIES)?;
                let last = t.last()?.unwrap();
                opsdeck::store::decode(last.1.value())?
            };
            d.due_ms = 0;
            opsdeck::store::put(tx, opsdeck::store::schema::WEBHOOK_DELIVERIES, d.id, &d)?;
            Ok::<_, opsdeck::store::StoreError>(())
        })
        .await
        .unwrap();
    app.state.webhook_wake.notify_one();
    let hits = receiver.wait_for(2).await;
    assert_eq!(hits[1].header("x-svc-event"), Some("activity.task_created"));
    assert_eq!(hits[0].body, hits[1].body, "the retry resends the same signed body");
    assert_eq!(hits[0].header("webhook-id"), hits[1].header("webhook-id"));
}

#[tokio::test]
async fn agent_status_changes_fire_status_change_and_error_events() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    create_hook(&app, &receiver.url, Some(json!(["agent.status_change", "agent.error"]))).await;
    let reply =
        app.post("/api/agents", &Auth::ApiKey, json!({"name": "rover", "role": "qa", "status": "online"})).await;
    let id = reply.body["agent"]["id"].as_u64().unwrap();
    app.put(&format!("/api/agents/{id}"), &Auth::ApiKey, json!({"status": "error"})).await;
    let hits = receiver.wait_for(2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.hits().len(), 2);
    let change = hits.iter().find(|h| h.header("x-svc-event") == Some("agent.status_change")).unwrap().json();
    assert_eq!(change["data"], json!({"id": id, "name": "rover", "status": "error", "previous_status": "online"}));
    assert!(hits.iter().any(|h| h.header("x-svc-event") == Some("agent.error")));
}

#[tokio::test]
async fn the_retry_setting_switches_scheduled_retries_off() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(500);
    let (id, _) = create_hook(&app, &receiver.url, Some(json!(["activity.task_created"]))).await;
    let off =
        app.put("/api/settings", &Auth::ApiKey, json!({"settings": {"webhooks.retry_enabled": "disabled"}})).await;
    assert_eq!(off.status, StatusCode::OK, "{}", off.text);
    app.post("/api/tasks", &Auth::ApiKey, json!({"title": "No retry"})).await;
    receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let list = app.get(&format!("/api/webhooks/deliveries?webhook_id={id}"), &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 1, "no retry queued: {}", list.text);
    assert!(list.body["deliveries"][0]["next_retry_at"].is_null());
}

#[tokio::test]
async fn link_local_and_metadata_targets_are_refused_unless_allowed() {
    let app = spawn_app().await;
    for url in ["http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/", "http://[fe80::1]:8080/x"] {
        let reply = app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "meta", "url": url})).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{url}");
        assert!(reply.body["details"][0].as_str().unwrap().contains("SVC_WEBHOOK_ALLOW_LINK_LOCAL"), "{}", reply.text);
    }
    let allowed = spawn_app_with(&["--webhook-allow-link-local", "true"]).await;
    let reply =
        allowed.post("/api/webhooks", &Auth::ApiKey, json!({"name": "meta", "url": "http://169.254.169.254/x"})).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(302);
    let (id, _) = create_hook(&app, &receiver.url, Some(json!(["test.ping"]))).await;
    let reply = app.post("/api/webhooks/test", &Auth::ApiKey, json!({"id": id})).await;
    assert_eq!(reply.body["status_code"], 302);
    assert_eq!(reply.body["success"], false, "3xx is a failure, not followed");
    assert_eq!(receiver.hits().len(), 1);
}

#[tokio::test]
async fn history_trimming_never_drops_a_waiting_delivery() {
    use opsdeck::webhooks::store;
    let app = spawn_app().await;
    // A receiver that is never attempted: the outbox is filled straight through the store.
    let (id, _) = create_hook(&app, "http://127.0.0.1:1/never", Some(json!(["test.ping"]))).await;
    app.state
        .store
        .write(move |tx| {
            for _ in 0..250 {
                store::queue(tx, id, "test.ping", "{}", 0, None, u64::MAX - 1)?;
            }
            Ok::<_, opsdeck::store::StoreError>(())
        })
        .await
        .unwrap();
    let list = app.get(&format!("/api/webhooks/deliveries?webhook_id={id}&limit=200"), &Auth::ApiKey).await;
    assert_eq!(list.body["total"], 250, "250 waiting deliveries are all kept");
}
