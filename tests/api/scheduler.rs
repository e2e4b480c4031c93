use std::path::PathBuf;
use std::time::Duration;

use opsdeck::activity::Activity;
use opsdeck::agents::Agent;
use opsdeck::audit::AuditEvent;
use opsdeck::logs::LogEntry;
use opsdeck::logs::store::NewLog;
use opsdeck::notifications::Notification;
use opsdeck::scheduler::store::{INTERRUPTED, JobState};
use opsdeck::scheduler::{JobId, Trigger};
use opsdeck::store::schema::{
    ACTIVITIES, AUDIT, AUDIT_BY_ACTION, AUDIT_BY_ACTOR, LOG_SOURCES, LOGS, NOTIFICATIONS, NOTIFICATIONS_BY_RECIPIENT,
    NOTIFICATIONS_UNREAD, TOKEN_USAGE, TOKEN_USAGE_BY_SESSION, WEBHOOK_DELIVERIES, WEBHOOK_DELIVERIES_BY_WEBHOOK,
};
use opsdeck::store::{StoreError, next_id, now_millis, now_secs};
use opsdeck::webhooks::Delivery;
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::Receiver;

const DAY_SECS: i64 = 86_400;
const FIVE: [&str; 5] = ["auto_backup", "auto_cleanup", "agent_heartbeat", "webhook_retry", "local_session_scan"];

async fn tasks(app: &TestApp) -> Vec<Value> {
    let reply = app.get("/api/scheduler", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["tasks"].as_array().cloned().expect("tasks array")
}

async fn task(app: &TestApp, id: &str) -> Value {
    tasks(app).await.into_iter().find(|t| t["id"] == id).unwrap_or_else(|| panic!("task {id} listed"))
}

async fn run_now(app: &TestApp, auth: &Auth, id: &str) -> Reply {
    app.post("/api/scheduler", auth, json!({"task_id": id})).await
}

async fn set(app: &TestApp, key: &str, value: &str) {
    let reply = app.put("/api/settings", &Auth::ApiKey, json!({"settings": {key: value}})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
}

/// Waits, when needed, until at least `margin_ms` is left before the next tick of a schedule that fires
/// every `period_ms` at `offset_ms`, so a scheduled run cannot interleave with what a test does.
async fn clear_of_ticks(period_ms: i64, offset_ms: i64, margin_ms: i64) {
    let now = now_millis();
    let next = ((now - offset_ms).div_euclid(period_ms) + 1) * period_ms + offset_ms;
    if next - now < margin_ms {
        tokio::time::sleep(Duration::from_millis((next - now + 200) as u64)).await;
    }
}

const HEARTBEAT_TICKS: (i64, i64) = (300_000, 0);
const RETRY_TICKS: (i64, i64) = (60_000, 0);

fn backups_dir(app: &TestApp) -> PathBuf {
    app.state.config.data_dir.join("backups")
}

fn backup_files(app: &TestApp) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(backups_dir(app))
        .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn scheduler_routes_are_admin_only_and_documented() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/scheduler", None, "admin").await;
    let body = json!({"task_id": "agent_heartbeat"});
    assert_min_role(&app, &roles, Method::POST, "/api/scheduler", Some(body), "admin").await;
    let docs = app.get("/api/docs", &Auth::None).await;
    let path = &docs.body["paths"]["/api/scheduler"];
    assert_eq!(path["get"]["tags"], json!(["scheduler"]), "{path}");
    assert_eq!(path["post"]["tags"], json!(["scheduler"]));
    assert!(path["post"]["requestBody"].is_object(), "the body is documented");
}

#[tokio::test]
async fn the_list_shows_the_five_jobs_then_the_extras_with_their_schedules() {
    let app = spawn_app().await;
    let before = now_millis();
    let list = tasks(&app).await;
    let ids: Vec<&str> = list.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids[..5], FIVE, "the interface's five first, in order");
    assert_eq!(ids[5..], ["gateway_health", "alert_evaluation"], "then the extra jobs");
    for t in &list {
        let id = t["id"].as_str().unwrap();
        assert!(t["name"].as_str().is_some_and(|n| !n.is_empty()), "{t}");
        // The every-minute jobs may already have hit a minute mark since the app started.
        if !["webhook_retry", "local_session_scan"].contains(&id) {
            assert_eq!(t["lastRun"], Value::Null, "{id} never ran");
            assert_eq!(t["lastResult"], Value::Null, "{id}");
            assert_eq!(t["running"], false, "{id}");
        }
        assert!(t["nextRun"].as_i64().unwrap() > before, "{id} runs in the future: {t}");
    }
    let enabled: Vec<bool> = list.iter().map(|t| t["enabled"].as_bool().unwrap()).collect();
    // auto_backup and auto_cleanup are off by default; the others on.
    assert_eq!(enabled, [false, false, true, true, true, true, true]);

    let next = |i: usize| list[i]["nextRun"].as_i64().unwrap();
    let (minute, hour, day) = (60_000, 3_600_000, 86_400_000);
    assert_eq!(next(0) % day, 3 * hour, "auto_backup at 03:00 UTC");
    assert!(next(0) - before <= day);
    assert_eq!(next(1) % day, 4 * hour, "auto_cleanup at 04:00 UTC");
    assert!(next(1) - before <= day);
    assert_eq!(next(2) % (5 * minute), 0, "agent_heartbeat every 5 minutes");
    assert!(next(2) - before <= 5 * minute);
    assert_eq!(next(3) % minute, 0, "webhook_retry every minute");
    assert!(next(3) - before <= minute);
    assert_eq!(next(4) % minute, 30_000, "local_session_scan every minute, half a minute apart");
    assert!(next(4) - before <= minute);
    assert_eq!(next(5) % (5 * minute), 15_000, "gateway_health every 5 minutes");
    // The tests run with SVC_ALERT_EVAL_INTERVAL=86400: a fixed period from the start.
    assert!((next(6) - before - day).abs() < 60_000, "alert_evaluation in a day: {}", next(6) - before);

    set(&app, "general.auto_backup", "enabled").await;
    set(&app, "general.local_session_scan", "disabled").await;
    set(&app, "webhooks.retry_enabled", "false").await;
    let enabled: Vec<bool> = tasks(&app).await.iter().map(|t| t["enabled"].as_bool().unwrap()).collect();
    assert_eq!(enabled, [true, false, true, false, false, true, true], "settings take effect at once");
}

#[tokio::test]
async fn only_the_three_runnable_jobs_are_accepted() {
    let app = spawn_app().await;
    for id in ["webhook_retry", "local_session_scan", "gateway_health", "nope", "", "AUTO_BACKUP"] {
        let reply = run_now(&app, &Auth::ApiKey, id).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{id}: {}", reply.text);
        assert_eq!(reply.error(), "Invalid task_id: must be one of auto_backup, auto_cleanup, agent_heartbeat");
    }
    let missing = app.post("/api/scheduler", &Auth::ApiKey, json!({})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.body["details"], json!(["task_id: is required"]));
    let wrong_type = app.post("/api/scheduler", &Auth::ApiKey, json!({"task_id": 3})).await;
    assert_eq!(wrong_type.status, StatusCode::BAD_REQUEST);
    assert!(backup_files(&app).is_empty(), "nothing ran");
    for t in tasks(&app).await {
        assert_eq!(t["lastRun"], Value::Null, "{t}");
    }
}

#[tokio::test]
async fn auto_backup_runs_on_demand_as_the_scheduler() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let reply = run_now(&app, &admin, "auto_backup").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["ok"], true);
    let files = backup_files(&app);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("svc-backup-") && files[0].ends_with(".db"));
    let message = reply.body["message"].as_str().unwrap();
    assert!(message.contains(&files[0]), "{message}");

    let audit = app.audit("action=auto_backup").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "scheduler");
    assert_eq!(audit[0]["actor_id"], Value::Null);
    assert_eq!(audit[0]["detail"]["triggered_by"], ADMIN_USER);
    assert_eq!(audit[0]["detail"]["name"], files[0].as_str());
    assert!(app.audit("action=backup_create").await.is_empty(), "not a user backup");

    let t = task(&app, "auto_backup").await;
    assert_eq!(t["running"], false);
    assert_eq!(t["lastResult"]["ok"], true);
    assert_eq!(t["lastResult"]["message"], message);
    let (last_run, finished) = (t["lastRun"].as_i64().unwrap(), t["lastResult"]["timestamp"].as_i64().unwrap());
    assert!(last_run <= finished && finished <= now_millis(), "{t}");
    assert_eq!(t["enabled"], false, "an on-demand run works with the setting off");

    let by_key = run_now(&app, &Auth::ApiKey, "auto_backup").await;
    assert_eq!(by_key.status, StatusCode::OK, "{}", by_key.text);
    assert_eq!(app.audit("action=auto_backup").await[0]["detail"]["triggered_by"], "api");
}

#[tokio::test]
async fn a_failing_job_answers_500_with_its_message_and_records_it() {
    let app = spawn_app().await;
    // A file where the backups directory should be: the backup cannot be written.
    std::fs::write(backups_dir(&app), b"in the way").unwrap();
    let reply = run_now(&app, &Auth::ApiKey, "auto_backup").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", reply.text);
    let error = reply.error().to_string();
    assert!(error.starts_with("backup failed"), "the job's own message, not a generic text: {error}");
    let t = task(&app, "auto_backup").await;
    assert_eq!(t["lastResult"]["ok"], false);
    assert_eq!(t["lastResult"]["message"], error);
    assert_eq!(t["running"], false);
    assert!(t["lastRun"].is_i64());
    assert!(app.audit("action=auto_backup").await.is_empty());
}

/// Rows of every kind, written through the stores with old (or new) timestamps.
async fn seed_rows(app: &TestApp, hook_id: u64, created_secs: i64, tag: &str) {
    let tag = tag.to_string();
    app.state
        .store
        .write(move |tx| {
            let created_ms = created_secs * 1000;
            let id = next_id(tx, "activities")?;
            let activity = Activity {
                id,
                kind: "seeded".into(),
                entity_type: "test".into(),
                entity_id: None,
                actor: tag.clone(),
                description: tag.clone(),
                data: json!({}),
                created_at: created_secs,
            };
            opsdeck::store::put(tx, ACTIVITIES, id, &activity)?;
            let event = AuditEvent {
                id: next_id(tx, "audit")?,
                action: "seeded".into(),
                actor: tag.clone(),
                actor_id: None,
                detail: json!({}),
                ip_address: None,
                created_at: created_secs,
            };
            opsdeck::audit::store::insert(tx, &event)?;
            let n = Notification {
                id: next_id(tx, "notifications")?,
                recipient: tag.clone(),
                kind: "info".into(),
                title: tag.clone(),
                message: tag.clone(),
                source_type: None,
                source_id: None,
                read_at: None,
                created_at: created_secs,
            };
            opsdeck::notifications::store::insert(tx, &n)?;
            let log = NewLog {
                timestamp: created_ms,
                level: "info".into(),
                source: tag.clone(),
                session: None,
                message: tag.clone(),
                data: None,
            };
            opsdeck::logs::store::insert(tx, log)?;
            let usage = opsdeck::tokens::NewUsage {
                model: "claude-sonnet-4".into(),
                session_id: format!("{tag}:s"),
                input_tokens: 10,
                output_tokens: 5,
                operation: None,
                duration_ms: None,
                timestamp_ms: Some(created_ms as u64),
                rate: opsdeck::tokens::Pricing::default().rate("claude-sonnet-4"),
            };
            opsdeck::tokens::record_usage(tx, usage)?;
            // One finished delivery and one still pending (never due during the test).
            let mut done =
                opsdeck::webhooks::store::queue(tx, hook_id, &format!("seeded.{tag}"), "{}", 0, None, u64::MAX / 2)?;
            done.state = "success".into();
            done.created_at = created_secs;
            opsdeck::webhooks::store::finish(tx, &done)?;
            let mut pending =
                opsdeck::webhooks::store::queue(tx, hook_id, &format!("seeded.{tag}"), "{}", 0, None, u64::MAX / 2)?;
            pending.created_at = created_secs;
            opsdeck::store::put(tx, WEBHOOK_DELIVERIES, pending.id, &pending)?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
}

/// Per kind, how many rows carry `tag` (and the index rows that must go with them).
#[derive(Debug, PartialEq)]
struct Counts {
    activities: usize,
    audit: usize,
    audit_index: usize,
    notifications: usize,
    notification_index: usize,
    logs: usize,
    log_source: bool,
    tokens: usize,
    deliveries: usize,
    pending_deliveries: usize,
}

fn counts(app: &TestApp, tag: &str) -> Counts {
    fn decoded<T: serde::de::DeserializeOwned, K: redb::Key + 'static>(
        tx: &redb::ReadTransaction,
        table: redb::TableDefinition<'static, K, &'static [u8]>,
    ) -> Vec<T> {
        let t = tx.open_table(table).unwrap();
        t.iter().unwrap().map(|r| opsdeck::store::decode::<T>(r.unwrap().1.value()).unwrap()).collect()
    }
    let tx = app.state.store.database().begin_read().unwrap();
    let activities = decoded::<Activity, _>(&tx, ACTIVITIES).iter().filter(|a| a.actor == tag).count();
    let audit = decoded::<AuditEvent, _>(&tx, AUDIT).iter().filter(|a| a.actor == tag).count();
    let audit_index = tx.open_table(AUDIT_BY_ACTOR).unwrap().range((tag, 0)..=(tag, u64::MAX)).unwrap().count();
    let audit_rows = tx.open_table(AUDIT).unwrap().len().unwrap();
    assert_eq!(tx.open_table(AUDIT_BY_ACTION).unwrap().len().unwrap(), audit_rows, "action index matches");
    assert_eq!(tx.open_table(AUDIT_BY_ACTOR).unwrap().len().unwrap(), audit_rows, "actor index matches");
    let notifications = decoded::<Notification, _>(&tx, NOTIFICATIONS).iter().filter(|n| n.recipient == tag).count();
    let by_recipient = tx.open_table(NOTIFICATIONS_BY_RECIPIENT).unwrap();
    let unread = tx.open_table(NOTIFICATIONS_UNREAD).unwrap();
    let notification_index = by_recipient.range((tag, 0)..=(tag, u64::MAX)).unwrap().count()
        + unread.range((tag, 0)..=(tag, u64::MAX)).unwrap().count();
    let logs = decoded::<LogEntry, _>(&tx, LOGS).iter().filter(|l| l.source == tag).count();
    let log_source = tx.open_table(LOG_SOURCES).unwrap().get(tag).unwrap().is_some();
    let session = format!("{tag}:s");
    let by_session = tx.open_table(TOKEN_USAGE_BY_SESSION).unwrap();
    let tokens = by_session.range((session.as_str(), 0, 0)..=(session.as_str(), u64::MAX, u64::MAX)).unwrap().count();
    assert_eq!(by_session.len().unwrap(), tx.open_table(TOKEN_USAGE).unwrap().len().unwrap(), "session index matches");
    let deliveries_all = decoded::<Delivery, _>(&tx, WEBHOOK_DELIVERIES);
    assert_eq!(
        tx.open_table(WEBHOOK_DELIVERIES_BY_WEBHOOK).unwrap().len().unwrap() as usize,
        deliveries_all.len(),
        "the per-webhook index matches"
    );
    let seeded: Vec<&Delivery> = deliveries_all.iter().filter(|d| d.event_type == format!("seeded.{tag}")).collect();
    Counts {
        activities,
        audit,
        audit_index,
        notifications,
        notification_index,
        logs,
        log_source,
        tokens,
        deliveries: seeded.iter().filter(|d| d.state != "pending").count(),
        pending_deliveries: seeded.iter().filter(|d| d.state == "pending").count(),
    }
}

#[tokio::test]
async fn auto_cleanup_deletes_old_rows_of_every_kind_and_keeps_new_ones() {
    let app = spawn_app().await;
    let hook = app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "h", "url": "http://127.0.0.1:1/x"})).await;
    let hook_id = hook.body["id"].as_u64().unwrap();
    // Older than every default retention (at most 180 days), and fresh.
    seed_rows(&app, hook_id, now_secs() - 400 * DAY_SECS, "old").await;
    seed_rows(&app, hook_id, now_secs() - 60, "new").await;
    // Older than the 30-day windows, younger than the 90-day ones: only notifications and logs go.
    seed_rows(&app, hook_id, now_secs() - 45 * DAY_SECS, "mid").await;
    let full = Counts {
        activities: 1,
        audit: 1,
        audit_index: 1,
        notifications: 1,
        notification_index: 2,
        logs: 1,
        log_source: true,
        tokens: 1,
        deliveries: 1,
        pending_deliveries: 1,
    };
    assert_eq!(counts(&app, "old"), full, "seeded");

    let admin = app.admin().await;
    let reply = run_now(&app, &admin, "auto_cleanup").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["ok"], true);

    let old = counts(&app, "old");
    assert_eq!((old.activities, old.audit, old.audit_index), (0, 0, 0));
    assert_eq!((old.notifications, old.notification_index), (0, 0));
    assert_eq!((old.logs, old.log_source), (0, false));
    assert_eq!(old.tokens, 0);
    assert_eq!(old.deliveries, 0, "the old finished delivery is gone");
    assert_eq!(old.pending_deliveries, 1, "pending deliveries are never pruned");
    assert_eq!(counts(&app, "new"), full, "fresh rows stay");
    let mid = counts(&app, "mid");
    assert_eq!((mid.notifications, mid.logs), (0, 0), "30-day kinds pruned");
    assert_eq!((mid.activities, mid.audit, mid.tokens), (1, 1, 1), "90-day and 180-day kinds kept");

    let audit = app.audit("action=auto_cleanup").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "scheduler");
    let detail = &audit[0]["detail"];
    assert_eq!(detail["triggered_by"], ADMIN_USER);
    let expected = json!({"activities": 1, "audit_log": 1, "notifications": 2, "logs": 2, "token_usage": 1,
                          "webhook_deliveries": 1});
    assert_eq!(detail["deleted"], expected);
    assert_eq!(detail["total_deleted"], 8);
    assert_eq!(detail["retention_days"]["audit_log"], 180);
    let message = reply.body["message"].as_str().unwrap();
    assert!(message.starts_with("Deleted 8 old records"), "{message}");
    assert_eq!(task(&app, "auto_cleanup").await["lastResult"]["message"], message);

    // 0 keeps forever.
    set(&app, "retention.activities_days", "0").await;
    seed_rows(&app, hook_id, now_secs() - 400 * DAY_SECS, "ancient").await;
    let reply = run_now(&app, &Auth::ApiKey, "auto_cleanup").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let ancient = counts(&app, "ancient");
    assert_eq!(ancient.activities, 1, "activities kept forever");
    assert_eq!(ancient.deliveries, 1, "deliveries follow the activities retention");
    assert_eq!((ancient.audit, ancient.logs, ancient.tokens), (0, 0, 0), "the other kinds still pruned");
    let detail = &app.audit("action=auto_cleanup").await[0]["detail"];
    assert_eq!(detail["deleted"]["activities"], 0);
    assert_eq!(detail["triggered_by"], "api");
}

/// Creates an agent and moves its `last_seen` / `created_at` back as given (seconds ago).
async fn agent(app: &TestApp, name: &str, status: &str, seen_ago: Option<i64>, created_ago: i64) -> u64 {
    let reply = app.post("/api/agents", &Auth::ApiKey, json!({"name": name, "role": "dev", "status": status})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let id = reply.body["agent"]["id"].as_u64().unwrap();
    app.state
        .store
        .write(move |tx| {
            let before: Agent = opsdeck::agents::store::get_agent_w(tx, id)?.unwrap();
            let mut after = before.clone();
            after.last_seen = seen_ago.map(|s| now_secs() - s);
            after.created_at = now_secs() - created_ago;
            opsdeck::agents::store::save_agent(tx, &before, &after)?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    id
}

async fn status_of(app: &TestApp, id: u64) -> String {
    let reply = app.get(&format!("/api/agents/{id}"), &Auth::ApiKey).await;
    reply.body["agent"]["status"].as_str().or(reply.body["status"].as_str()).unwrap_or_default().to_string()
}

#[tokio::test]
async fn agent_heartbeat_marks_silent_agents_offline() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    let hook = app
        .post(
            "/api/webhooks",
            &Auth::ApiKey,
            json!({"name": "h", "url": receiver.url, "events": ["agent.status_change"]}),
        )
        .await;
    assert_eq!(hook.status, StatusCode::OK, "{}", hook.text);
    let minute = 60;
    // Scheduled checks skip while the setting is off; on-demand runs do not.
    set(&app, "general.agent_heartbeat", "disabled").await;
    // Timeout 10 minutes (the default).
    let stale = agent(&app, "stale", "online", Some(11 * minute), DAY_SECS).await;
    let fresh = agent(&app, "fresh", "online", Some(9 * minute), DAY_SECS).await;
    let silent = agent(&app, "silent", "busy", None, 11 * minute).await;
    let young = agent(&app, "young", "idle", None, 2 * minute).await;
    let idle = agent(&app, "sleepy", "idle", Some(30 * minute), DAY_SECS).await;
    let errored = agent(&app, "errored", "error", Some(DAY_SECS), DAY_SECS).await;
    let (_, mut live) = app.state.bus.subscribe_after(None);

    let admin = app.admin().await;
    let reply = run_now(&app, &admin, "agent_heartbeat").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["message"], "Marked 3 agents offline: stale, silent, sleepy");

    for (id, expected) in [
        (stale, "offline"),
        (fresh, "online"),
        (silent, "offline"),
        (young, "idle"),
        (idle, "offline"),
        (errored, "error"),
    ] {
        assert_eq!(status_of(&app, id).await, expected, "agent {id}");
    }
    let mut changes = Vec::new();
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(500), live.recv()).await {
        if event.kind == "agent.status" {
            changes.push(event.data.clone());
        }
    }
    assert_eq!(
        changes,
        [
            json!({"id": stale, "name": "stale", "status": "offline", "previous_status": "online"}),
            json!({"id": silent, "name": "silent", "status": "offline", "previous_status": "busy"}),
            json!({"id": idle, "name": "sleepy", "status": "offline", "previous_status": "idle"}),
        ]
    );
    let hits = receiver.wait_for(3).await;
    let mut named: Vec<String> = hits.iter().map(|h| h.json()["data"]["name"].as_str().unwrap().to_string()).collect();
    named.sort();
    assert_eq!(named, ["silent", "sleepy", "stale"], "agent.status_change webhooks");

    let audit = app.audit("action=heartbeat_check").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "scheduler");
    assert_eq!(audit[0]["detail"]["marked_offline"], json!(["stale", "silent", "sleepy"]));
    assert_eq!(audit[0]["detail"]["triggered_by"], ADMIN_USER);
    let activity = app.state.bus.subscribe_after(Some(0)).0;
    let by_scheduler = activity
        .iter()
        .filter(|e| {
            e.kind == "activity.created" && e.data["actor"] == "scheduler" && e.data["type"] == "agent_status_changed"
        })
        .count();
    assert_eq!(by_scheduler, 3, "one activity row per change, by the scheduler");

    // A second run finds nothing; an on-demand run is audited all the same.
    let again = run_now(&app, &Auth::ApiKey, "agent_heartbeat").await;
    assert_eq!(again.body["message"], "No agent timed out");
    let audit = app.audit("action=heartbeat_check").await;
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0]["detail"]["marked_offline"], json!([]));

    // The timeout is a setting.
    set(&app, "general.agent_timeout_minutes", "5").await;
    let reply = run_now(&app, &Auth::ApiKey, "agent_heartbeat").await;
    assert_eq!(reply.body["message"], "Marked 1 agents offline: fresh");
}

#[tokio::test]
async fn jobs_disabled_by_their_setting_skip_scheduled_runs() {
    let app = spawn_app().await;
    clear_of_ticks(HEARTBEAT_TICKS.0, HEARTBEAT_TICKS.1, 10_000).await;
    let stale = agent(&app, "stale", "online", Some(3600), DAY_SECS).await;
    set(&app, "general.agent_heartbeat", "disabled").await;
    let t = task(&app, "agent_heartbeat").await;
    assert_eq!(t["enabled"], false);

    let message = opsdeck::scheduler::run(&app.state, JobId::AgentHeartbeat, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Skipped: general.agent_heartbeat is disabled");
    assert_eq!(status_of(&app, stale).await, "online", "a skipped run changes nothing");
    assert!(app.audit("action=heartbeat_check").await.is_empty());
    let t = task(&app, "agent_heartbeat").await;
    assert_eq!(t["lastResult"]["ok"], true);
    assert_eq!(t["lastResult"]["message"], message);
    assert!(t["lastRun"].is_i64());

    let message = opsdeck::scheduler::run(&app.state, JobId::AutoBackup, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Skipped: general.auto_backup is disabled", "off by default");
    assert!(backup_files(&app).is_empty());
    let message = opsdeck::scheduler::run(&app.state, JobId::AutoCleanup, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Skipped: general.auto_cleanup is disabled");
    assert!(app.audit("action=auto_cleanup").await.is_empty());

    // Switched on, the same scheduled runs do their work (audited without triggered_by).
    set(&app, "general.agent_heartbeat", "enabled").await;
    set(&app, "general.auto_backup", "enabled").await;
    let message = opsdeck::scheduler::run(&app.state, JobId::AgentHeartbeat, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Marked 1 agents offline: stale");
    assert_eq!(status_of(&app, stale).await, "offline");
    let audit = app.audit("action=heartbeat_check").await;
    assert_eq!(audit[0]["detail"]["triggered_by"], Value::Null);
    opsdeck::scheduler::run(&app.state, JobId::AutoBackup, Trigger::Schedule).await.unwrap();
    assert_eq!(backup_files(&app).len(), 1);
    let audit = app.audit("action=auto_backup").await;
    assert_eq!((audit[0]["actor"].as_str(), audit[0]["detail"].get("triggered_by")), (Some("scheduler"), None));
    // A scheduled heartbeat check that finds nothing writes no audit row.
    opsdeck::scheduler::run(&app.state, JobId::AgentHeartbeat, Trigger::Schedule).await.unwrap();
    assert_eq!(app.audit("action=heartbeat_check").await.len(), 1);
}

#[tokio::test]
async fn webhook_retry_is_the_periodic_sender_and_obeys_its_setting() {
    let app = spawn_app().await;
    let receiver = Receiver::start().await;
    let hook = app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "h", "url": receiver.url})).await;
    let hook_id = hook.body["id"].as_u64().unwrap();
    clear_of_ticks(RETRY_TICKS.0, RETRY_TICKS.1, 10_000).await;
    // A retry that is due, queued without waking the sender (as a retry becomes due with time): it waits
    // for the job.
    app.state
        .store
        .write(move |tx| {
            opsdeck::webhooks::store::queue(tx, hook_id, "test.retry", "{\"x\":1}", 1, None, 0)?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(receiver.hits().is_empty(), "not sent before the job runs");

    set(&app, "webhooks.retry_enabled", "disabled").await;
    let message = opsdeck::scheduler::run(&app.state, JobId::WebhookRetry, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Skipped: webhooks.retry_enabled is disabled");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(receiver.hits().is_empty());

    set(&app, "webhooks.retry_enabled", "enabled").await;
    let message = opsdeck::scheduler::run(&app.state, JobId::WebhookRetry, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Attempted 1 due webhook deliveries");
    let hits = receiver.wait_for(1).await;
    assert_eq!(hits[0].header("x-svc-event"), Some("test.retry"));

    // First attempts still go out at once, without the job.
    app.post("/api/tasks", &Auth::ApiKey, json!({"title": "Immediate"})).await;
    receiver.wait_for(2).await;
}

#[tokio::test]
async fn the_extra_jobs_run() {
    let app = spawn_app().await;
    let message = opsdeck::scheduler::run(&app.state, JobId::GatewayHealth, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Checked 1 gateways: 0 online", "the default gateway on a closed port");
    let message = opsdeck::scheduler::run(&app.state, JobId::LocalSessionScan, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Found 0 local sessions");

    let rule = json!({"name": "Broken agents", "entity_type": "agent", "condition_field": "status",
                      "condition_operator": "equals", "condition_value": "error"});
    let created = app.post("/api/alerts", &Auth::ApiKey, rule).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let message = opsdeck::scheduler::run(&app.state, JobId::AlertEvaluation, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Evaluated 1 alert rules: 0 triggered");
    app.post("/api/agents", &Auth::ApiKey, json!({"name": "broken", "role": "dev", "status": "error"})).await;
    let message = opsdeck::scheduler::run(&app.state, JobId::AlertEvaluation, Trigger::Schedule).await.unwrap();
    assert_eq!(message, "Evaluated 1 alert rules: 1 triggered");
    let notes = app.get("/api/notifications", &Auth::ApiKey).await;
    assert!(notes.body["notifications"].as_array().unwrap().iter().any(|n| n["type"] == "alert"), "{}", notes.text);
    for id in ["gateway_health", "local_session_scan", "alert_evaluation"] {
        assert_eq!(task(&app, id).await["lastResult"]["ok"], true, "{id}");
    }
}

#[tokio::test]
async fn a_job_never_runs_twice_at_once() {
    let app = spawn_app().await;
    clear_of_ticks(HEARTBEAT_TICKS.0, HEARTBEAT_TICKS.1, 10_000).await;
    // The first use of the API key is recorded (a write): get it done before the database is held.
    assert_eq!(task(&app, "agent_heartbeat").await["running"], false);
    // Hold the database's write lock: the first run starts (its flag is set) and waits for it.
    let store = app.state.store.clone();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let tx = store.database().begin_write().unwrap();
        held_tx.send(()).unwrap();
        let _ = release_rx.recv_timeout(Duration::from_secs(20));
        drop(tx);
    });
    held_rx.recv().unwrap();
    let first = {
        let url = app.url("/api/scheduler");
        let client = app.client.clone();
        tokio::spawn(async move {
            client.post(url).header("x-api-key", API_KEY).json(&json!({"task_id": "agent_heartbeat"})).send().await
        })
    };
    let mut running = false;
    for _ in 0..100 {
        if task(&app, "agent_heartbeat").await["running"] == true {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(running, "the first run shows as running");
    let second = run_now(&app, &Auth::ApiKey, "agent_heartbeat").await;
    assert_eq!(second.status, StatusCode::CONFLICT, "{}", second.text);
    assert_eq!(second.error(), "Task agent_heartbeat is already running");
    let scheduled = opsdeck::scheduler::run(&app.state, JobId::AgentHeartbeat, Trigger::Schedule).await;
    assert!(scheduled.is_err(), "a scheduled tick during the run is not a second run");

    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let t = task(&app, "agent_heartbeat").await;
    assert_eq!(t["running"], false);
    assert_eq!(t["lastResult"]["ok"], true);
    assert_eq!(app.audit("action=heartbeat_check").await.len(), 1, "exactly one run happened");
    let third = run_now(&app, &Auth::ApiKey, "agent_heartbeat").await;
    assert_eq!(third.status, StatusCode::OK, "free again: {}", third.text);
}

#[tokio::test]
async fn job_state_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_string_lossy().to_string();
    let before = {
        let app = spawn_app_with(&["--data-dir", &data]).await;
        let reply = run_now(&app, &Auth::ApiKey, "auto_cleanup").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        // A backup cut short by the stop: still marked running in the database.
        app.state
            .store
            .write(|tx| {
                let state = JobState { last_run: Some(1_000), next_run: Some(2_000), running: true, last_result: None };
                opsdeck::scheduler::store::put(tx, "auto_backup", &state)?;
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
        task(&app, "auto_cleanup").await
    };
    assert!(before["lastRun"].is_i64() && before["lastResult"]["ok"] == true, "{before}");
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
    let after = task(&app, "auto_cleanup").await;
    assert_eq!(after["lastRun"], before["lastRun"]);
    assert_eq!(after["lastResult"], before["lastResult"]);
    assert_eq!(after["running"], false);
    assert!(after["nextRun"].as_i64().unwrap() > now_millis());
    let interrupted = task(&app, "auto_backup").await;
    assert_eq!(interrupted["running"], false);
    assert_eq!(interrupted["lastRun"], 1_000);
    assert_eq!(interrupted["lastResult"]["ok"], false);
    assert_eq!(interrupted["lastResult"]["message"], INTERRUPTED);
    assert!(interrupted["nextRun"].as_i64().unwrap() > now_millis(), "planned anew");
    let stored = app.state.store.read(|tx| opsdeck::scheduler::store::get(tx, "auto_backup")).await.unwrap().unwrap();
    assert!(!stored.running, "the flag is cleared in the database too");
    assert_eq!(task(&app, "agent_heartbeat").await["lastRun"], Value::Null);
}

#[tokio::test]
async fn the_runner_stops_when_the_app_is_dropped() {
    let app = spawn_app().await;
    let weak = std::sync::Arc::downgrade(&app.state);
    drop(app);
    // Nothing else keeps the state alive: the job tasks hold only a weak reference.
    for _ in 0..100 {
        if weak.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the app state is still alive");
}

#[tokio::test]
async fn huge_retention_windows_keep_everything_without_overflow() {
    let app =
        spawn_app_with(&["--retain-logs-days", "99999999999999", "--retain-audit-days", "18446744073709551615"]).await;
    let hook = app.post("/api/webhooks", &Auth::ApiKey, json!({"name": "h", "url": "http://127.0.0.1:1/x"})).await;
    seed_rows(&app, hook.body["id"].as_u64().unwrap(), now_secs() - 400 * DAY_SECS, "old").await;
    let reply = run_now(&app, &Auth::ApiKey, "auto_cleanup").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let old = counts(&app, "old");
    assert_eq!((old.logs, old.audit), (1, 1), "kept");
    assert_eq!(old.activities, 0, "the default windows still apply to the rest");
}
