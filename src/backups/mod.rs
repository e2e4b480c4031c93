//! Database backups. A backup is a consistent snapshot: one read transaction of the live database is
//! copied table by table into a new redb file, which is synced and atomically renamed into place. The
//! same file is what `opsdeck restore` verifies and puts back.
//!
//! Online backups (`POST /api/backup`, the `auto_backup` job) live in `$SVC_DATA_DIR/backups` as
//! `svc-backup-YYYY-MM-DD_HH-MM-SS.db` (UTC; `-2`, `-3`… when the second is taken); the newest
//! `general.backup_retention_count` are kept. One backup runs at a time.

pub mod api;

use std::fs::{self, File};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{NaiveDateTime, Utc};
use redb::{Database, DatabaseError, ReadTransaction, ReadableDatabase, TableHandle};
use salvo_oapi::ToSchema;
use serde::Serialize;
use serde_json::json;

use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Principal;
use crate::settings::{self, Key};
use crate::store::schema;

const PREFIX: &str = "svc-backup-";
const SUFFIX: &str = ".db";
const NAME_TIME: &str = "%Y-%m-%d_%H-%M-%S";

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[salvo(schema(name = "Backup"))]
pub struct Backup {
    /// `svc-backup-YYYY-MM-DD_HH-MM-SS.db`.
    pub name: String,
    /// Bytes.
    pub size: u64,
    pub created_at: i64,
}

/// Who asked for a backup; decides the audit row.
#[derive(Debug, Clone)]
pub enum BackupActor {
    /// `backup_create` by an admin.
    User { principal: Principal, ip: IpAddr },
    /// `auto_backup` with actor `scheduler`; `triggered_by` names the caller of a manual run.
    Scheduler { triggered_by: Option<String> },
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("database: {0}")]
    Db(#[from] redb::Error),
}

macro_rules! from_redb {
    ($($t:ty),*) => { $( impl From<$t> for BackupError { fn from(e: $t) -> Self { Self::Db(e.into()) } } )* };
}
from_redb!(redb::TransactionError, redb::CommitError, redb::DatabaseError, redb::StorageError, redb::TableError);

pub fn backups_dir(config: &crate::config::Config) -> PathBuf {
    config.data_dir.join("backups")
}

/// `name` is acceptable for deletion: ends with `.db`, no `/` (or `\`), no `..`, not hidden.
pub fn valid_name(name: &str) -> bool {
    name.len() > SUFFIX.len()
        && name.ends_with(SUFFIX)
        && !name.contains(['/', '\\', '\0'])
        && !name.contains("..")
        && !name.starts_with('.')
}

/// The time and sequence encoded in a backup name (`svc-backup-<time>[-<n>].db`).
fn parse_name(name: &str) -> Option<(i64, u32)> {
    let stem = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (time, seq) = match stem.get(19..) {
        Some("") => (stem, 1),
        Some(rest) => (stem.get(..19)?, rest.strip_prefix('-')?.parse().ok()?),
        None => return None,
    };
    Some((NaiveDateTime::parse_from_str(time, NAME_TIME).ok()?.and_utc().timestamp(), seq))
}

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    // Directories can be opened read-only and synced on Unix; elsewhere this is best effort.
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(e) if cfg!(unix) => Err(e),
        Err(_) => Ok(()),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Copies the snapshot `src` into a new database file at `dest`: a temporary file in the same
/// directory, one write transaction, commit, fsync of the file and the directory, atomic rename.
/// Returns the file's size.
pub fn snapshot(src: &ReadTransaction, dest: &Path) -> Result<u64, BackupError> {
    let file_name = dest.file_name().and_then(|n| n.to_str()).unwrap_or("backup.db");
    let tmp = parent_dir(dest).join(format!(".{file_name}.tmp"));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let db = Database::create(&tmp)?;
        let tx = db.begin_write()?;
        schema::copy_all(src, &tx)?;
        tx.commit()?;
        drop(db);
        File::open(&tmp)?.sync_all()?;
        fs::rename(&tmp, dest)?;
        fsync_dir(&parent_dir(dest))?;
        Ok::<_, BackupError>(fs::metadata(dest)?.len())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Backups in `dir`, newest first. A missing directory has none.
pub fn list(dir: &Path) -> std::io::Result<Vec<Backup>> {
    let read = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found: Vec<(i64, u32, Backup)> = Vec::new();
    for entry in read.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() || !valid_name(&name) {
            continue;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64);
        let (created_at, seq) = parse_name(&name).unwrap_or((mtime, 0));
        found.push((created_at, seq, Backup { name, size: meta.len(), created_at }));
    }
    found.sort_by(|a, b| (b.0, b.1, &b.2.name).cmp(&(a.0, a.1, &a.2.name)));
    Ok(found.into_iter().map(|(_, _, b)| b).collect())
}

/// Deletes the oldest of this service's backups beyond `keep`, never `protect` (the one just made);
/// returns the deleted names.
pub fn prune(dir: &Path, keep: usize, protect: &str) -> std::io::Result<Vec<String>> {
    let (protected, ours): (Vec<Backup>, Vec<Backup>) =
        list(dir)?.into_iter().filter(|b| parse_name(&b.name).is_some()).partition(|b| b.name == protect);
    let keep = keep.saturating_sub(protected.len());
    let mut deleted = Vec::new();
    for b in ours.into_iter().skip(keep) {
        fs::remove_file(dir.join(&b.name))?;
        deleted.push(b.name);
    }
    Ok(deleted)
}

/// A free `svc-backup-<time>[-n].db` name in `dir` that sorts after every backup of the same second
/// (so it is never taken for an older one, even after pruning freed a lower number).
fn free_name(dir: &Path, now: chrono::DateTime<Utc>) -> String {
    let stamp = now.format(NAME_TIME).to_string();
    let second = now.timestamp();
    let taken = fs::read_dir(dir)
        .map(|read| {
            read.flatten()
                .filter_map(|e| parse_name(e.file_name().to_str()?))
                .filter(|(at, _)| *at == second)
                .map(|(_, seq)| seq)
                .max()
        })
        .unwrap_or(None);
    let mut seq = taken.map_or(1, |n| n + 1);
    loop {
        let name = if seq == 1 { format!("{PREFIX}{stamp}{SUFFIX}") } else { format!("{PREFIX}{stamp}-{seq}{SUFFIX}") };
        if !dir.join(&name).exists() {
            return name;
        }
        seq += 1;
    }
}

/// Takes an online backup of the live database into `$SVC_DATA_DIR/backups`, prunes old ones beyond
/// `general.backup_retention_count` and writes the audit row (`backup_create` for a user, `auto_backup`
/// with actor `scheduler` for the scheduler). 409 while another backup runs; 500 when it fails.
pub async fn create_backup(state: &AppState, actor: BackupActor) -> AppResult<Backup> {
    let Ok(_running) = state.backup_lock.try_lock() else {
        return Err(AppError::Conflict("A backup is already in progress".into()));
    };
    let keep = settings::number(state, Key::BackupRetentionCount).await?.max(1) as usize;
    let dir = backups_dir(&state.config);
    let store = state.store.clone();
    let (backup, pruned) = tokio::task::spawn_blocking(move || {
        fs::create_dir_all(&dir)?;
        // Leftovers of an interrupted backup.
        for entry in fs::read_dir(&dir)?.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with(&format!(".{PREFIX}")) && name.ends_with(".tmp") {
                let _ = fs::remove_file(entry.path());
            }
        }
        let now = Utc::now();
        let name = free_name(&dir, now);
        let read = store.database().begin_read()?;
        let size = snapshot(&read, &dir.join(&name))?;
        drop(read);
        let pruned = prune(&dir, keep, &name)?;
        Ok::<_, BackupError>((Backup { name, size, created_at: now.timestamp() }, pruned))
    })
    .await
    .map_err(|e| AppError::internal(format!("backup task: {e}")))?
    .map_err(|e| AppError::internal(format!("backup failed: {e}")))?;
    let detail = json!({"name": backup.name, "size": backup.size, "pruned": pruned});
    let entry = match actor {
        BackupActor::User { principal, ip } => Entry::by(&principal, ip, "backup_create", detail),
        BackupActor::Scheduler { triggered_by } => {
            let mut detail = detail;
            if let Some(by) = triggered_by {
                detail["triggered_by"] = json!(by);
            }
            Entry { action: "auto_backup", actor: "scheduler".into(), actor_id: None, detail, ip_address: None }
        }
    };
    state.write(move |tx| Ok::<_, AppError>(audit::record(tx, entry)?)).await?;
    Ok(backup)
}

/// Deletes a backup file by name: 400 for an invalid name, 404 when it does not exist.
pub fn delete(dir: &Path, name: &str) -> AppResult<()> {
    if !valid_name(name) {
        return Err(AppError::validation("name", "must end with .db and contain no '/' or '..'"));
    }
    let path = dir.join(name);
    match fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => fs::remove_file(&path).map_err(AppError::internal),
        Ok(_) => Err(AppError::NotFound("Backup not found".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(AppError::NotFound("Backup not found".into())),
        Err(e) => Err(AppError::internal(e)),
    }
}

fn open_error(path: &Path, e: DatabaseError) -> String {
    match e {
        DatabaseError::DatabaseAlreadyOpen => format!(
            "the database {} is in use; stop the service first (online backups: POST /api/backup)",
            path.display()
        ),
        other => format!("cannot open the database {}: {other}", path.display()),
    }
}

/// `opsdeck backup --out FILE`: with the service stopped, writes a consistent copy of the database at
/// `db_path` to `out`. Returns the size of the backup.
pub fn backup_file(db_path: &Path, out: &Path) -> Result<u64, String> {
    if !db_path.is_file() {
        return Err(format!("no database at {}", db_path.display()));
    }
    if out.exists() && fs::canonicalize(out).ok() == fs::canonicalize(db_path).ok() {
        return Err("--out must name a new file, not the database itself".into());
    }
    let db = Database::open(db_path).map_err(|e| open_error(db_path, e))?;
    let tx = db.begin_read().map_err(|e| format!("cannot read the database: {e}"))?;
    snapshot(&tx, out).map_err(|e| format!("cannot write {}: {e}", out.display()))
}

/// Checks that `path` is an OpsDeck database: it opens as redb, passes redb's integrity check, holds
/// every table of the schema with the right types, and every row can be read. Returns the row count.
pub fn verify(path: &Path) -> Result<u64, String> {
    let mut db = Database::open(path).map_err(|e| format!("not a valid database: {e}"))?;
    match db.check_integrity() {
        Ok(true) => {}
        Ok(false) => return Err("the database file is damaged (it fails redb's integrity check)".into()),
        Err(e) => return Err(format!("the database file is damaged: {e}")),
    }
    let tx = db.begin_read().map_err(|e| format!("cannot read the database: {e}"))?;
    let present: Vec<String> =
        tx.list_tables().map_err(|e| format!("cannot list tables: {e}"))?.map(|t| t.name().to_string()).collect();
    let missing: Vec<&str> = schema::ALL_TABLES.iter().copied().filter(|t| !present.iter().any(|p| p == t)).collect();
    if !missing.is_empty() {
        let shown = missing.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        let more = if missing.len() > 5 { format!(" and {} more", missing.len() - 5) } else { String::new() };
        return Err(format!("not an OpsDeck database: missing tables {shown}{more}"));
    }
    schema::check_all(&tx).map_err(|e| match e {
        redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TableIsNotMultimap(_) => {
            format!("not an OpsDeck database: {e}")
        }
        other => format!("the database file is damaged: {other}"),
    })
}

/// `opsdeck restore FILE`: with the service stopped, replaces the database at `db_path` with the backup
/// `src`. The backup is copied next to the database, verified there ([`verify`]) and renamed into place;
/// on any failure the current database is left untouched. Returns the restored file's size.
pub fn restore_file(src: &Path, db_path: &Path) -> Result<u64, String> {
    let meta = fs::metadata(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", src.display()));
    }
    let dir = parent_dir(db_path);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file_name = db_path.file_name().and_then(|n| n.to_str()).unwrap_or("svc.db");
    let tmp = dir.join(format!(".{file_name}.restore-{}.tmp", std::process::id()));
    let result = (|| {
        fs::copy(src, &tmp).map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), tmp.display()))?;
        verify(&tmp).map_err(|e| format!("refusing to restore {}: {e}", src.display()))?;
        File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| format!("cannot sync {}: {e}", tmp.display()))?;
        if db_path.exists() {
            // Refuse while a running service holds the database; a damaged one may be replaced.
            match Database::open(db_path) {
                Err(DatabaseError::DatabaseAlreadyOpen) => {
                    return Err(open_error(db_path, DatabaseError::DatabaseAlreadyOpen));
                }
                Ok(db) => drop(db),
                Err(_) => {}
            }
        }
        fs::rename(&tmp, db_path).map_err(|e| format!("cannot replace {}: {e}", db_path.display()))?;
        fsync_dir(&dir).map_err(|e| format!("cannot sync {}: {e}", dir.display()))?;
        fs::metadata(db_path).map(|m| m.len()).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use redb::ReadableDatabase;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// A backup holds exactly the rows of its source snapshot, in every table, and verifies.
        #[test]
        fn a_backup_equals_its_source(
            titles in proptest::collection::vec("[a-z ]{1,12}", 0..40),
            comments in proptest::collection::vec((any::<prop::sample::Index>(), ".{0,40}"), 0..20),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = crate::store::Store::open(&dir.path().join("svc.db")).unwrap();
            let txn = store.database().begin_write().unwrap();
            let mut tx = crate::store::Tx { txn, events: Vec::new(), queued_deliveries: false };
            let mut tasks = Vec::new();
            for title in &titles {
                let id = crate::tasks::store::new_task_id(&tx.txn).unwrap();
                let task = crate::tasks::Task {
                    id,
                    title: title.clone(),
                    description: String::new(),
                    status: "inbox".into(),
                    priority: "medium".into(),
                    assigned_to: None,
                    created_by: "test".into(),
                    due_date: None,
                    estimated_hours: Some(id as f64 / 3.0),
                    tags: vec![title.clone()],
                    metadata: serde_json::json!({"n": id}),
                    created_at: id as i64,
                    updated_at: id as i64,
                };
                crate::tasks::store::insert(&tx.txn, &task).unwrap();
                let entry = crate::audit::Entry::system("task_created", serde_json::json!({"id": id}));
                crate::audit::record(&mut tx, entry).unwrap();
                tasks.push(task);
            }
            for (pick, text) in &comments {
                if !tasks.is_empty() {
                    crate::tasks::store::insert_comment(&tx.txn, tasks[pick.index(tasks.len())].id, "ada", text).unwrap();
                }
            }
            for pick in &removed {
                if !tasks.is_empty() {
                    let task = tasks.remove(pick.index(tasks.len()));
                    crate::tasks::store::delete(&tx.txn, &task).unwrap();
                }
            }
            tx.txn.commit().unwrap();

            let source = store.database().begin_read().unwrap();
            let dest = dir.path().join("backups").join("svc-backup-test.db");
            fs::create_dir_all(dest.parent().unwrap()).unwrap();
            snapshot(&source, &dest).unwrap();
            let copy = Database::open(&dest).unwrap();
            let copied = copy.begin_read().unwrap();
            prop_assert_eq!(schema::dump_all(&copied).unwrap(), schema::dump_all(&source).unwrap());
            prop_assert_eq!(schema::check_all(&copied).unwrap(), schema::check_all(&source).unwrap());
            drop((copied, copy));
            prop_assert!(verify(&dest).is_ok());
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("svc-backup-2026-01-02_03-04-05.db"));
        assert!(valid_name("mine.db"));
        for bad in ["", ".db", "a/b.db", "..db", "x..y.db", "../x.db", "x.sqlite", "x.db.tmp", ".hidden.db", "a\\b.db"]
        {
            assert!(!valid_name(bad), "{bad}");
        }
        assert_eq!(parse_name("svc-backup-2026-01-02_03-04-05.db"), Some((1_767_323_045, 1)));
        assert_eq!(parse_name("svc-backup-2026-01-02_03-04-05-3.db"), Some((1_767_323_045, 3)));
        assert_eq!(parse_name("svc-backup-2026-01-02_03-04-05-x.db"), None);
        assert_eq!(parse_name("svc-backup-bad.db"), None);
        assert_eq!(parse_name("other.db"), None);
    }

    #[test]
    fn list_orders_newest_first_and_prune_keeps_the_newest_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "svc-backup-2026-01-02_03-04-05.db",
            "svc-backup-2026-01-02_03-04-05-2.db",
            "svc-backup-2025-12-31_23-59-59.db",
            "svc-backup-2026-01-03_00-00-00.db",
            ".svc-backup-2026-01-04_00-00-00.db.tmp",
            "notes.txt",
        ] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        fs::create_dir(dir.path().join("folder.db")).unwrap();
        let names = |v: Vec<Backup>| v.into_iter().map(|b| b.name).collect::<Vec<_>>();
        assert_eq!(
            names(list(dir.path()).unwrap()),
            [
                "svc-backup-2026-01-03_00-00-00.db",
                "svc-backup-2026-01-02_03-04-05-2.db",
                "svc-backup-2026-01-02_03-04-05.db",
                "svc-backup-2025-12-31_23-59-59.db",
            ]
        );
        let deleted = prune(dir.path(), 3, "svc-backup-2025-12-31_23-59-59.db").unwrap();
        assert_eq!(deleted, ["svc-backup-2026-01-02_03-04-05.db"], "the protected one counts as kept");
        let deleted = prune(dir.path(), 2, "svc-backup-none.db").unwrap();
        assert_eq!(deleted, ["svc-backup-2025-12-31_23-59-59.db"]);
        let left = names(list(dir.path()).unwrap());
        assert_eq!(left, ["svc-backup-2026-01-03_00-00-00.db", "svc-backup-2026-01-02_03-04-05-2.db"]);
        assert!(list(&dir.path().join("missing")).unwrap().is_empty());
    }

    #[test]
    fn free_name_adds_a_suffix_when_the_second_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let now = chrono::DateTime::from_timestamp(1_767_323_045, 0).unwrap();
        let first = free_name(dir.path(), now);
        assert_eq!(first, "svc-backup-2026-01-02_03-04-05.db");
        fs::write(dir.path().join(&first), b"").unwrap();
        let second = free_name(dir.path(), now);
        assert_eq!(second, "svc-backup-2026-01-02_03-04-05-2.db");
        fs::write(dir.path().join(&second), b"").unwrap();
        assert_eq!(free_name(dir.path(), now), "svc-backup-2026-01-02_03-04-05-3.db");
        fs::remove_file(dir.path().join(&first)).unwrap();
        assert_eq!(
            free_name(dir.path(), now),
            "svc-backup-2026-01-02_03-04-05-3.db",
            "a pruned lower number is not reused"
        );
    }
}
