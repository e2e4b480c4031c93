//! The embedded redb database: opening, blocking-safe read/write helpers and small generic repository
//! functions shared by the features.

pub mod codec;
pub mod schema;

use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};
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
        Ok(Self { db: Arc::new(db) })
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

    /// Runs `f` in one write transaction, off the async runtime; commits (durably) only when `f`
    /// succeeds and returns the events the change produced.
    pub async fn write<T, E, F>(&self, f: F) -> Result<(T, Committed), E>
    where
        F: FnOnce(&mut Tx) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_write().map_err(StoreError::from)?;
            let mut tx = Tx { txn, events: Vec::new(), queued_deliveries: false };
            let value = f(&mut tx)?; // dropping an uncommitted transaction aborts it
            let Tx { txn, events, queued_deliveries } = tx;
            txn.commit().map_err(StoreError::from)?;
            Ok((value, Committed { events, queued_deliveries }))
        })
        .await
        .map_err(|e| StoreError::Join(e.to_string()))?
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
