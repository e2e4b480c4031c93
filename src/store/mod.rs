//! The embedded redb database: opening, blocking-safe read/write helpers and small generic repository
//! functions shared by the features.

pub mod codec;
pub mod schema;
mod writer;

use std::path::Path;
use std::sync::Arc;

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use codec::{decode, encode};
use schema::{COUNTERS, Records};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Db(#[from] redb::Error),
    #[error("record codec: {0}")]
    Codec(String),
    #[error("background task: {0}")]
    Join(String),
    #[error("the write could not be made durable: {0}")]
    Durability(String),
}

macro_rules! from_redb {
    ($($t:ty),*) => { $( impl From<$t> for StoreError { fn from(e: $t) -> Self { Self::Db(e.into()) } } )* };
}
from_redb!(redb::TableError, redb::StorageError, redb::TransactionError, redb::CommitError, redb::DatabaseError);

/// An event produced inside a write transaction; it reaches the SSE bus only after the commit.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    pub kind: String,
    pub data: serde_json::Value,
}

/// What a committed change implies beyond its rows.
#[derive(Debug, Default)]
pub struct Committed {
    pub events: Vec<PendingEvent>,
    pub queued_deliveries: bool,
}

/// A write transaction plus the events its change implies.
pub struct Tx {
    pub txn: WriteTransaction,
    pub events: Vec<PendingEvent>,
    /// Set when the change queued webhook deliveries: the sender is woken after the commit.
    pub queued_deliveries: bool,
}

impl Tx {
    pub fn emit(&mut self, kind: impl Into<String>, data: serde_json::Value) {
        self.events.push(PendingEvent { kind: kind.into(), data });
    }
}

impl std::ops::Deref for Tx {
    type Target = WriteTransaction;
    fn deref(&self) -> &WriteTransaction {
        &self.txn
    }
}

#[derive(Clone)]
pub struct Store {
    db: Arc<Database>,
    /// The group-commit writer (see `writer.rs`); declared after `db` so it is dropped last.
    writer: Arc<writer::Writer>,
}

impl Store {
    /// Opens (or creates) the database file and makes sure every table exists.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Db(redb::Error::Io(e)))?;
        }
        let db = Database::create(path)?;
        let tx = db.begin_write()?;
        schema::create_all(&tx)?;
        tx.commit()?;
        let db = Arc::new(db);
        let writer = Arc::new(writer::Writer::start(db.clone())?);
        Ok(Self { db, writer })
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A handle that does not keep the database open: its `strong_count` is 0 once it is closed.
    pub fn downgrade(&self) -> std::sync::Weak<Database> {
        Arc::downgrade(&self.db)
    }

    /// Runs `f` on a read snapshot, off the async runtime.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&ReadTransaction) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let tx = db.begin_read().map_err(StoreError::from)?;
            f(&tx)
        })
        .await
        .map_err(|e| StoreError::Join(e.to_string()))?
    }

    /// Runs `f` on a read snapshot right here on the calling task. Only for reads bounded by a small
    /// constant (one record by key, one page of an index): handing those to the blocking pool costs two
    /// thread switches, more than the read itself (a third of the CPU of `GET /api/tasks` in a profile).
    /// Scans and aggregations use [`Store::read`].
    pub fn read_now<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&ReadTransaction) -> Result<T, E>,
        E: From<StoreError>,
    {
        let tx = self.db.begin_read().map_err(StoreError::from)?;
        f(&tx)
    }

    /// Runs `f` in one write transaction on the writer thread; commits only when `f` succeeds and
    /// answers once the commit is durable (group commit: concurrent writes share one fsync). Returns the
    /// events the change produced.
    pub async fn write<T, E, F>(&self, f: F) -> Result<(T, Committed), E>
    where
        F: FnOnce(&mut Tx) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel::<Result<(T, Committed), E>>();
        let job: writer::Job = Box::new(move |db: &Database, durability: redb::Durability| {
            let outcome = (|| {
                let mut txn = db.begin_write().map_err(StoreError::from)?;
                txn.set_durability(durability).map_err(|e| StoreError::Db(e.into()))?;
                let mut tx = Tx { txn, events: Vec::new(), queued_deliveries: false };
                let value = f(&mut tx)?; // dropping an uncommitted transaction aborts it
                let Tx { txn, events, queued_deliveries } = tx;
                txn.commit().map_err(StoreError::from)?;
                Ok((value, Committed { events, queued_deliveries }))
            })();
            Box::new(move |synced: Result<(), Arc<String>>| {
                let result = match (outcome, synced) {
                    (Ok(done), Ok(())) => Ok(done),
                    (Ok(_), Err(e)) => Err(E::from(StoreError::Durability(e.to_string()))),
                    (Err(e), _) => Err(e),
                };
                let _ = reply.send(result);
            })
        });
        self.writer.send(job)?;
        answer.await.map_err(|_| StoreError::Join("the writer thread dropped a write".into()))?
    }
}

/// Allocates the next id of a record table inside the caller's write transaction.
pub fn next_id(tx: &WriteTransaction, table: &str) -> Result<u64, StoreError> {
    let mut counters = tx.open_table(COUNTERS)?;
    let id = counters.get(table)?.map(|v| v.value()).unwrap_or(0) + 1;
    counters.insert(table, id)?;
    Ok(id)
}

pub fn put<T: Serialize>(tx: &WriteTransaction, table: Records, id: u64, value: &T) -> Result<(), StoreError> {
    let bytes = encode(value)?;
    tx.open_table(table)?.insert(id, bytes.as_slice())?;
    Ok(())
}

/// Reads one record from any readable table (read or write transaction).
pub fn get<T: DeserializeOwned>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    id: u64,
) -> Result<Option<T>, StoreError> {
    match table.get(id)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// A `(key, id) → ()` index over a record table, such as tasks by status.
pub type KeyIndex = TableDefinition<'static, (&'static str, u64), ()>;

/// One page of a record table, newest (highest id) first, with the table's length as the total: only the
/// page is decoded.
pub fn newest_page<T: DeserializeOwned>(
    tx: &ReadTransaction,
    records: Records,
    limit: usize,
    offset: usize,
) -> Result<(Vec<T>, usize), StoreError> {
    let table = tx.open_table(records)?;
    let total = table.len()? as usize;
    let page = table.iter()?.rev().skip(offset).take(limit).map(|r| decode(r?.1.value())).collect::<Result<_, _>>()?;
    Ok((page, total))
}

/// One page of the records under `key` of a [`KeyIndex`], newest first, with the number of index entries
/// under `key` as the total: the entries are counted, only the page is decoded.
pub fn newest_page_by_key<T: DeserializeOwned>(
    tx: &ReadTransaction,
    index: KeyIndex,
    records: Records,
    key: &str,
    limit: usize,
    offset: usize,
) -> Result<(Vec<T>, usize), StoreError> {
    let (index, table) = (tx.open_table(index)?, tx.open_table(records)?);
    let range = || index.range((key, 0)..=(key, u64::MAX));
    let total = range()?.count();
    let mut page = Vec::with_capacity(limit.min(total));
    for row in range()?.rev().skip(offset).take(limit) {
        if let Some(record) = get(&table, row?.0.value().1)? {
            page.push(record);
        }
    }
    Ok((page, total))
}

/// Retention walks stop after this many records in a row inside the retention window: ids grow with
/// time, so the rest are newer (the slack tolerates a few records out of order after a clock step).
pub const RETENTION_STOP_AFTER: usize = 1000;

/// Ids of the records of an id-ordered table that retention may delete, oldest first: created before
/// `cutoff` (as `created_at` reads it) and not spared by `keep`. Walks from the oldest id and stops after
/// [`RETENTION_STOP_AFTER`] records in a row at or after the cutoff.
pub fn expired_ids<T: DeserializeOwned>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    cutoff: i64,
    created_at: impl Fn(&T) -> i64,
    keep: impl Fn(&T) -> bool,
) -> Result<Vec<u64>, StoreError> {
    let mut ids = Vec::new();
    let mut recent_in_a_row = 0;
    for row in table.iter()? {
        let (k, v) = row?;
        let record: T = decode(v.value())?;
        if created_at(&record) >= cutoff {
            recent_in_a_row += 1;
            if recent_in_a_row >= RETENTION_STOP_AFTER {
                break;
            }
            continue;
        }
        recent_in_a_row = 0;
        if !keep(&record) {
            ids.push(k.value());
        }
    }
    Ok(ids)
}

/// Cut points that prune a `(timestamp ms, sequence)`-keyed table before `cutoff_ms` in batches of about
/// `batch` rows: the timestamp of every `batch`-th row before the cutoff, then the cutoff itself. Pruning
/// "before" each point in turn deletes everything before the cutoff, one short transaction at a time.
pub fn batch_cutoffs(
    table: &impl ReadableTable<(u64, u64), &'static [u8]>,
    cutoff_ms: u64,
    batch: usize,
) -> Result<Vec<u64>, StoreError> {
    let mut points: Vec<u64> = Vec::new();
    for (i, row) in table.range(..(cutoff_ms, 0))?.enumerate() {
        let (k, _) = row?;
        let ts = k.value().0;
        if i > 0 && i % batch.max(1) == 0 && points.last() != Some(&ts) {
            points.push(ts);
        }
    }
    if points.last() != Some(&cutoff_ms) {
        points.push(cutoff_ms);
    }
    Ok(points)
}

pub fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

pub fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use redb::{ReadableDatabase, TableHandle};

    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Row {
        at: i64,
        pinned: bool,
    }

    const ROWS: redb::TableDefinition<'static, u64, &'static [u8]> = redb::TableDefinition::new("rows");
    const TIMED: redb::TableDefinition<'static, (u64, u64), &'static [u8]> = redb::TableDefinition::new("timed");

    #[test]
    fn expired_ids_walk_oldest_first_spare_kept_rows_and_stop_after_a_run_of_recent_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.db")).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx.open_table(ROWS).unwrap();
            let mut put = |id: u64, at: i64, pinned: bool| {
                t.insert(id, encode(&Row { at, pinned }).unwrap().as_slice()).unwrap();
            };
            put(1, 10, false);
            put(2, 11, true); // old but kept
            put(3, 500, false); // recent
            put(4, 12, false); // old, out of order after a recent one: still found
            for id in 5..5 + RETENTION_STOP_AFTER as u64 {
                put(id, 600, false);
            }
            // Beyond a full run of recent rows the walk has stopped.
            put(10_000, 13, false);
        }
        let t = tx.open_table(ROWS).unwrap();
        let ids = expired_ids(&t, 100, |r: &Row| r.at, |r| r.pinned).unwrap();
        assert_eq!(ids, [1, 4]);
        assert!(expired_ids(&t, 0, |r: &Row| r.at, |_| false).unwrap().is_empty());
    }

    #[test]
    fn batch_cutoffs_split_a_time_keyed_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.db")).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx.open_table(TIMED).unwrap();
            for (i, ts) in [10u64, 20, 20, 20, 30, 40, 50, 60, 70].into_iter().enumerate() {
                t.insert((ts, i as u64), b"x".as_slice()).unwrap();
            }
        }
        let t = tx.open_table(TIMED).unwrap();
        // Rows before 65: 10 20 20 20 30 40 50 60 → every 2nd row's time, deduplicated, then the cutoff.
        assert_eq!(batch_cutoffs(&t, 65, 2).unwrap(), [20, 30, 50, 65]);
        assert_eq!(batch_cutoffs(&t, 65, 100).unwrap(), [65]);
        assert_eq!(batch_cutoffs(&t, 5, 2).unwrap(), [5], "nothing before the cutoff");
        assert_eq!(batch_cutoffs(&t, 20, 1).unwrap(), [20], "the cutoff is not repeated");
    }

    /// The backup copies `ALL_TABLES`; it must be exactly the set of tables a database holds.
    #[test]
    fn all_tables_is_every_table_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("svc.db")).unwrap();
        let tx = store.database().begin_read().unwrap();
        let in_file: BTreeSet<String> = tx.list_tables().unwrap().map(|t| t.name().to_string()).collect();
        let declared: BTreeSet<String> = schema::ALL_TABLES.iter().map(|s| s.to_string()).collect();
        assert_eq!(declared.len(), schema::ALL_TABLES.len(), "a table name is declared twice");
        assert_eq!(in_file, declared);
        assert_eq!(tx.list_multimap_tables().unwrap().count(), 0, "multimap tables are not copied by backups");
        assert_eq!(schema::check_all(&tx).unwrap(), 0);
    }
}
