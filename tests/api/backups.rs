use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use opsdeck::logs::store::NewLog;
use opsdeck::store::schema::{ALL_TABLES, AUDIT_BY_ACTION, COUNTERS, LOGS, TASKS, TASKS_BY_STATUS, TASKS_BY_TITLE};
use opsdeck::store::{Store, StoreError};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

fn backups_dir(app: &TestApp) -> PathBuf {
    app.state.config.data_dir.join("backups")
}

async fn create(app: &TestApp, auth: &Auth) -> Value {
    let reply = app.post("/api/backup", auth, json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["success"], true);
    reply.body["backup"].clone()
}

async fn names(app: &TestApp) -> Vec<String> {
    let reply = app.get("/api/backup", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["backups"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap().to_string()).collect()
}

/// Opens a backup file and checks it is a complete, consistent snapshot; returns its number of tasks.
fn check_snapshot(path: &Path) -> u64 {
    let db = redb::Database::open(path).expect("the backup opens as a redb database");
    let tx = db.begin_read().unwrap();
    let tables: BTreeSet<String> = tx.list_tables().unwrap().map(|t| t.name().to_string()).collect();
    assert_eq!(tables, ALL_TABLES.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(), "every table present");
    let tasks = tx.open_table(TASKS).unwrap();
    let titles = tx.open_table(TASKS_BY_TITLE).unwrap();
    let statuses = tx.open_table(TASKS_BY_STATUS).unwrap();
    let mut ids = Vec::new();
    for row in tasks.iter().unwrap() {
        let (k, v) = row.unwrap();
        let task: opsdeck::tasks::Task = opsdeck::store::decode(v.value()).expect("task decodes");
        assert_eq!(task.id, k.value());
        let indexed = titles.get(task.title.to_lowercase().as_str()).unwrap().map(|v| v.value());
        assert_eq!(indexed, Some(task.id), "title index entry of task {}", task.id);
        assert!(statuses.get((task.status.as_str(), task.id)).unwrap().is_some(), "status index of {}", task.id);
        ids.push(task.id);
    }
    let count = tasks.len().unwrap();
    assert_eq!(titles.len().unwrap(), count, "no index entry without its task");
    assert_eq!(statuses.len().unwrap(), count);
    // Ids come from the counter in the same transaction: 1..=n with nothing missing or extra.
    let counter = tx.open_table(COUNTERS).unwrap().get("tasks").unwrap().map_or(0, |v| v.value());
    assert_eq!(counter, count);
    assert_eq!(ids, (1..=count).collect::<Vec<_>>());
    // Each creation wrote its audit row in the same transaction.
    let audit = tx.open_table(AUDIT_BY_ACTION).unwrap();
    let created = audit.range(("task_created", 0)..=("task_created", u64::MAX)).unwrap().count() as u64;
    assert_eq!(created, count, "one task_created audit row per task");
    count
}

#[tokio::test]
async fn backup_routes_are_admin_only() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/backup", None, "admin").await;
    assert_min_role(&app, &roles, Method::POST, "/api/backup", Some(json!({})), "admin").await;
    let body = json!({"name": "svc-backup-2000-01-01_00-00-00.db"});
    assert_min_role(&app, &roles, Method::DELETE, "/api/backup", Some(body), "admin").await;
}

#[tokio::test]
async fn create_list_and_delete() {
    let app = spawn_app().await;
    let empty = app.get("/api/backup", &Auth::ApiKey).await;
    assert_eq!(empty.body["backups"], json!([]));
    let admin = app.admin().await;
    let before = opsdeck::store::now_secs();
    let backup = create(&app, &admin).await;
    let name = backup["name"].as_str().unwrap().to_string();
    assert!(
        name.starts_with("svc-backup-")
            && name.ends_with(".db")
            && name.len() == "svc-backup-2026-01-01_00-00-00.db".len(),
        "{name}"
    );
    let created_at = backup["created_at"].as_i64().unwrap();
    assert!(created_at >= before && created_at <= opsdeck::store::now_secs());
    let path = backups_dir(&app).join(&name);
    assert_eq!(backup["size"].as_u64().unwrap(), std::fs::metadata(&path).unwrap().len());
    check_snapshot(&path);

    let second = create(&app, &Auth::ApiKey).await;
    let listed = app.get("/api/backup", &Auth::ApiKey).await;
    assert_eq!(listed.body["backups"][0], second, "newest first");
    assert_eq!(listed.body["backups"][1], backup);
    let dir = std::fs::canonicalize(backups_dir(&app)).unwrap();
    assert_eq!(listed.body["dir"], dir.to_string_lossy().as_ref());
    // Created within the same second: the second one gets a suffix.
    let second_name = second["name"].as_str().unwrap();
    assert_ne!(second_name, name);

    let audit = app.audit("action=backup_create").await;
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[1]["actor"], ADMIN_USER);
    assert_eq!(audit[1]["detail"]["name"], name.as_str());
    assert_eq!(audit[0]["actor"], "api");

    let reply = app.delete("/api/backup", &admin, json!({"name": name})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body, json!({"success": true}));
    assert!(!path.exists());
    assert_eq!(names(&app).await, [second_name]);
    let audit = app.audit("action=backup_delete").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["detail"], json!({"name": name}));
    let again = app.delete("/api/backup", &admin, json!({"name": name})).await;
    assert_eq!((again.status, again.error()), (StatusCode::NOT_FOUND, "Backup not found"));
}

#[tokio::test]
async fn delete_rejects_bad_names() {
    let app = spawn_app().await;
    create(&app, &Auth::ApiKey).await;
    // Files that must never be reachable through the endpoint.
    std::fs::write(app.state.config.data_dir.join("outside.db"), b"x").unwrap();
    std::fs::write(backups_dir(&app).join("notes.txt"), b"x").unwrap();
    for name in [
        "../svc.db",
        "../outside.db",
        "sub/x.db",
        "/etc/passwd.db",
        "..db",
        "a..b.db",
        "notes.txt",
        "x.db.bak",
        ".db",
        "",
    ] {
        let reply = app.delete("/api/backup", &Auth::ApiKey, json!({"name": name})).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{name:?}: {}", reply.text);
        assert_eq!(reply.body["details"], json!(["name: must end with .db and contain no '/' or '..'"]));
    }
    for name in ["svc-backup-1999-01-01_00-00-00.db", "missing.db"] {
        let reply = app.delete("/api/backup", &Auth::ApiKey, json!({"name": name})).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{name}: {}", reply.text);
    }
    std::fs::create_dir(backups_dir(&app).join("folder.db")).unwrap();
    let reply = app.delete("/api/backup", &Auth::ApiKey, json!({"name": "folder.db"})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "a directory is not a backup");
    let reply = app.delete("/api/backup", &Auth::ApiKey, json!({})).await;
    assert_eq!(reply.body["details"], json!(["name: is required"]));
    assert!(app.state.config.data_dir.join("outside.db").exists());
    assert!(app.state.config.db_path.exists());
    assert!(backups_dir(&app).join("notes.txt").exists());
    assert_eq!(names(&app).await.len(), 1);
    assert!(app.audit("action=backup_delete").await.is_empty());
}

#[tokio::test]
async fn retention_count_setting_prunes_the_oldest() {
    let app = spawn_app().await;
    let reply =
        app.put("/api/settings", &Auth::ApiKey, json!({"settings": {"general.backup_retention_count": 2}})).await;
    assert_eq!(reply.status, StatusCode::OK);
    // Someone else's file in the directory is never pruned.
    std::fs::create_dir_all(backups_dir(&app)).unwrap();
    std::fs::write(backups_dir(&app).join("manual.db"), b"x").unwrap();
    let mut made = Vec::new();
    for _ in 0..4 {
        made.push(create(&app, &Auth::ApiKey).await["name"].as_str().unwrap().to_string());
    }
    let listed = names(&app).await;
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(
        listed.contains(&made[3]) && listed.contains(&made[2]) && listed.contains(&"manual.db".to_string()),
        "{listed:?} {made:?}"
    );
    assert!(!backups_dir(&app).join(&made[0]).exists() && !backups_dir(&app).join(&made[1]).exists());
    let audit = app.audit("action=backup_create").await;
    assert_eq!(audit[0]["detail"]["pruned"], json!([made[1]]));
}

#[tokio::test]
async fn the_scheduler_backs_up_through_the_same_function() {
    let app = spawn_app().await;
    // The temporary file of an interrupted backup is cleaned up by the next one.
    std::fs::create_dir_all(backups_dir(&app)).unwrap();
    let stale = backups_dir(&app).join(".svc-backup-2020-01-01_00-00-00.db.tmp");
    std::fs::write(&stale, b"half a backup").unwrap();
    let actor = opsdeck::backups::BackupActor::Scheduler { triggered_by: Some("admin".into()) };
    let backup = opsdeck::backups::create_backup(&app.state, actor).await.expect("scheduled backup");
    assert!(!stale.exists());
    assert_eq!(names(&app).await, vec![backup.name.clone()]);
    check_snapshot(&backups_dir(&app).join(&backup.name));
    let audit = app.audit("action=auto_backup").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "scheduler");
    assert!(audit[0]["actor_id"].is_null());
    assert_eq!(audit[0]["detail"]["triggered_by"], "admin");
    assert_eq!(audit[0]["detail"]["name"], backup.name.as_str());
    assert!(app.audit("action=backup_create").await.is_empty());
    let actor = opsdeck::backups::BackupActor::Scheduler { triggered_by: None };
    opsdeck::backups::create_backup(&app.state, actor).await.unwrap();
    assert!(app.audit("action=auto_backup").await[0]["detail"].get("triggered_by").is_none());
}

#[tokio::test]
async fn backup_creation_is_limited_per_admin_and_single_flight() {
    let app = spawn_app_with(&["--disable-rate-limit", "false"]).await;
    let (_, other_admin) = app.user_with_role("second-admin", "admin").await;
    for i in 0..10 {
        let reply = app.post("/api/backup", &Auth::ApiKey, json!({})).await;
        assert_eq!(reply.status, StatusCode::OK, "backup {i}: {}", reply.text);
    }
    let limited = app.post("/api/backup", &Auth::ApiKey, json!({})).await;
    assert_eq!((limited.status, limited.error()), (StatusCode::TOO_MANY_REQUESTS, "Rate limit exceeded"));
    assert!(limited.header("retry-after").is_some());
    assert_eq!(app.get("/api/backup", &Auth::ApiKey).await.status, StatusCode::OK, "listing is not limited");
    create(&app, &other_admin).await;

    // While a backup runs, another is refused.
    let running = app.state.backup_lock.lock().await;
    let busy = app.post("/api/backup", &other_admin, json!({})).await;
    assert_eq!((busy.status, busy.error()), (StatusCode::CONFLICT, "A backup is already in progress"));
    drop(running);
    create(&app, &other_admin).await;
}

#[tokio::test]
async fn backup_is_a_consistent_snapshot_while_writes_go_on() {
    let app = spawn_app().await;
    let stop = Arc::new(AtomicBool::new(false));
    let created = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (client, url, stop, created) = (app.client.clone(), app.url("/api/tasks"), stop.clone(), created.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let res = client
                    .post(&url)
                    .header("x-api-key", API_KEY)
                    .json(&json!({"title": format!("Task {i}"), "priority": "high"}))
                    .send()
                    .await
                    .expect("task request");
                assert_eq!(res.status(), StatusCode::OK);
                created.fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
        })
    };
    while created.load(Ordering::SeqCst) < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let mut snapshots = Vec::new();
    for _ in 0..3 {
        let backup = create(&app, &Auth::ApiKey).await;
        snapshots.push(backups_dir(&app).join(backup["name"].as_str().unwrap()));
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    }
    let after_backups = created.load(Ordering::SeqCst);
    while created.load(Ordering::SeqCst) < after_backups + 5 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let total = created.load(Ordering::SeqCst) as u64;

    let counts: Vec<u64> = snapshots.iter().map(|p| check_snapshot(p)).collect();
    assert!(counts[0] >= 20, "{counts:?}");
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "later snapshots hold more: {counts:?}");
    assert!(counts[2] < total, "writes went on after the last snapshot: {counts:?} of {total}");

    // The online backup is what `opsdeck restore` puts back.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("svc.db");
    opsdeck::backups::restore_file(&snapshots[1], &target).expect("restore");
    assert_eq!(check_snapshot(&target), counts[1]);
}

// ---- `opsdeck backup` / `opsdeck restore` (service stopped) ----

async fn add_logs(path: &Path, n: usize) -> u64 {
    let store = Store::open(path).expect("store opens");
    let (count, _) = store
        .write(move |tx| {
            for i in 0..n {
                let new = NewLog {
                    timestamp: opsdeck::store::now_millis(),
                    level: "info".into(),
                    source: "test".into(),
                    session: None,
                    message: format!("entry {i}"),
                    data: None,
                };
                opsdeck::logs::store::insert(tx, new)?;
            }
            Ok::<_, StoreError>(tx.open_table(LOGS)?.len()?)
        })
        .await
        .unwrap();
    count
}

fn log_count(path: &Path) -> u64 {
    let db = redb::Database::open(path).unwrap();
    let tx = db.begin_read().unwrap();
    tx.open_table(LOGS).unwrap().len().unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[tokio::test]
async fn cli_backup_and_restore_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data/svc.db");
    assert_eq!(add_logs(&db, 3).await, 3);
    let out = dir.path().join("copy.db");
    let size = opsdeck::backups::backup_file(&db, &out).expect("backup");
    assert_eq!(size, std::fs::metadata(&out).unwrap().len());
    assert_eq!(log_count(&out), 3);
    assert!(opsdeck::backups::verify(&out).unwrap() >= 3);

    assert_eq!(add_logs(&db, 2).await, 5);
    opsdeck::backups::restore_file(&out, &db).expect("restore");
    assert_eq!(log_count(&db), 3, "the database is back at the backup's state");
    assert_eq!(log_count(&out), 3, "the backup file itself is untouched");
    assert!(leftovers(&dir.path().join("data")).is_empty());
    // The restored database is a working database.
    assert_eq!(add_logs(&db, 1).await, 4);

    // Restoring into a place with no database yet works too.
    let fresh = dir.path().join("fresh/svc.db");
    opsdeck::backups::restore_file(&out, &fresh).expect("restore into an empty place");
    assert_eq!(log_count(&fresh), 3);

    assert!(
        opsdeck::backups::backup_file(&dir.path().join("none.db"), &out).unwrap_err().starts_with("no database at")
    );
}

#[tokio::test]
async fn restore_refuses_bad_files_and_leaves_the_database_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data/svc.db");
    add_logs(&db, 2).await;
    let good = dir.path().join("good.db");
    opsdeck::backups::backup_file(&db, &good).unwrap();
    let good_bytes = std::fs::read(&good).unwrap();
    let original = std::fs::read(&db).unwrap();

    let bad = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let mut header_zeroed = good_bytes.clone();
    header_zeroed[..64].fill(0);
    let foreign = dir.path().join("foreign.db");
    {
        let other = redb::Database::create(&foreign).unwrap();
        let tx = other.begin_write().unwrap();
        tx.open_table(redb::TableDefinition::<&str, u64>::new("something_else")).unwrap().insert("a", 1).unwrap();
        tx.commit().unwrap();
    }
    let wrong_types = dir.path().join("wrong-types.db");
    {
        // Every table name of the schema, but `tasks` with other key/value types.
        let other = redb::Database::create(&wrong_types).unwrap();
        let tx = other.begin_write().unwrap();
        opsdeck::store::schema::create_all(&tx).unwrap();
        tx.delete_table(TASKS).unwrap();
        tx.open_table(redb::TableDefinition::<&str, &str>::new("tasks")).unwrap().insert("x", "y").unwrap();
        tx.commit().unwrap();
    }
    let cases = [
        bad("garbage.db", b"this is not a database at all"),
        bad("empty.db", b""),
        bad("truncated.db", &good_bytes[..good_bytes.len() / 2]),
        bad("header.db", &header_zeroed),
        foreign,
        wrong_types,
        dir.path().join("missing.db"),
        dir.path().to_path_buf(),
    ];
    for file in &cases {
        let err = opsdeck::backups::restore_file(file, &db).expect_err(&format!("{} must be refused", file.display()));
        assert!(!err.contains('\n'), "one line: {err}");
        assert!(!err.is_empty());
        assert_eq!(std::fs::read(&db).unwrap(), original, "database untouched after {}", file.display());
        assert!(leftovers(&dir.path().join("data")).is_empty(), "no temp file left after {}", file.display());
    }
    let err = opsdeck::backups::restore_file(&dir.path().join("foreign.db"), &db).unwrap_err();
    assert!(err.contains("not an OpsDeck database: missing tables"), "{err}");
    let err = opsdeck::backups::restore_file(&dir.path().join("wrong-types.db"), &db).unwrap_err();
    assert!(err.contains("not an OpsDeck database: tasks is of type"), "{err}");
    assert_eq!(log_count(&db), 2);

    // A running service holds the database: both commands refuse.
    let live = Store::open(&db).unwrap();
    let err = opsdeck::backups::restore_file(&good, &db).unwrap_err();
    assert!(err.contains("in use"), "{err}");
    let err = opsdeck::backups::backup_file(&db, &dir.path().join("while-open.db")).unwrap_err();
    assert!(err.contains("in use"), "{err}");
    drop(live);
    opsdeck::backups::restore_file(&good, &db).expect("fine once stopped");
}

#[tokio::test]
async fn the_binary_backs_up_and_restores() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    add_logs(&data.join("svc.db"), 2).await;
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_opsdeck"))
            .args(args)
            .env("SVC_DATA_DIR", &data)
            .env_remove("SVC_DB_PATH")
            .env("RUST_LOG", "error")
            .output()
            .expect("run opsdeck")
    };
    let out = dir.path().join("cli.db");
    let backup = run(&["backup", "--out", out.to_str().unwrap()]);
    assert!(backup.status.success(), "{}", String::from_utf8_lossy(&backup.stderr));
    assert!(String::from_utf8_lossy(&backup.stdout).starts_with("backup written to"));
    assert_eq!(log_count(&out), 2);

    add_logs(&data.join("svc.db"), 3).await;
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, b"not a database").unwrap();
    let refused = run(&["restore", garbage.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("opsdeck: restore failed: refusing to restore"), "{stderr}");
    assert_eq!(log_count(&data.join("svc.db")), 5);

    let restored = run(&["restore", out.to_str().unwrap()]);
    assert!(restored.status.success(), "{}", String::from_utf8_lossy(&restored.stderr));
    assert_eq!(log_count(&data.join("svc.db")), 2);
}
