//! Stored log entries: `(timestamp ms, sequence) → entry`, newest = last key. Recent and tail are
//! reverse range reads; retention deletes a key prefix.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::{Filter, LogEntry};
use crate::store::schema::{LOG_SOURCES, LOGS};
use crate::store::{StoreError, Tx, decode, encode, next_id};

/// A log entry about to be stored.
pub struct NewLog {
    pub timestamp: i64,
    pub level: String,
    pub source: String,
    pub session: Option<String>,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

/// Stores an entry (id `db-<n>`) and announces `log.added` after the commit.
pub fn insert(tx: &mut Tx, new: NewLog) -> Result<LogEntry, StoreError> {
    let seq = next_id(tx, "logs")?;
    let entry = LogEntry {
        id: format!("db-{seq}"),
        timestamp: new.timestamp,
        level: new.level,
        source: new.source,
        session: new.session,
        message: new.message,
        data: new.data,
    };
    let bytes = encode(&entry)?;
    tx.open_table(LOGS)?.insert((entry.timestamp.max(0) as u64, seq), bytes.as_slice())?;
    let mut sources = tx.open_table(LOG_SOURCES)?;
    let count = sources.get(entry.source.as_str())?.map(|v| v.value()).unwrap_or(0);
    sources.insert(entry.source.as_str(), count + 1)?;
    drop(sources);
    tx.emit("log.added", serde_json::to_value(&entry).unwrap_or_default());
    Ok(entry)
}

/// Matching entries, newest first, at most `limit`; with `filter.since` only the range after it is read.
pub fn query(tx: &ReadTransaction, filter: &Filter, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
    let table = tx.open_table(LOGS)?;
    let rows = match filter.since {
        Some(since) => table.range((since.saturating_add(1).max(0) as u64, 0)..)?,
        None => table.range::<(u64, u64)>(..)?,
    };
    let mut out = Vec::new();
    for row in rows.rev() {
        if out.len() >= limit {
            break;
        }
        let entry: LogEntry = decode(row?.1.value())?;
        if filter.matches(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Sources of stored entries.
pub fn sources(tx: &ReadTransaction) -> Result<Vec<String>, StoreError> {
    let table = tx.open_table(LOG_SOURCES)?;
    let mut out = Vec::new();
    for row in table.iter()? {
        out.push(row?.0.value().to_string());
    }
    Ok(out)
}

/// Deletes stored entries older than `cutoff_ms` (retention); returns how many were deleted.
pub fn prune_before(tx: &WriteTransaction, cutoff_ms: i64) -> Result<u64, StoreError> {
    let mut table = tx.open_table(LOGS)?;
    let mut removed: Vec<((u64, u64), String)> = Vec::new();
    for row in table.range(..(cutoff_ms.max(0) as u64, 0))? {
        let (k, v) = row?;
        let entry: Result<LogEntry, _> = decode(v.value());
        removed.push((k.value(), entry.map(|e| e.source).unwrap_or_default()));
    }
    let mut sources = tx.open_table(LOG_SOURCES)?;
    for (key, source) in &removed {
        table.remove(*key)?;
        let count = sources.get(source.as_str())?.map(|v| v.value()).unwrap_or(0);
        if count <= 1 {
            sources.remove(source.as_str())?;
        } else {
            sources.insert(source.as_str(), count - 1)?;
        }
    }
    Ok(removed.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn new(ts: i64, source: &str, message: &str) -> NewLog {
        NewLog {
            timestamp: ts,
            level: "info".into(),
            source: source.into(),
            session: None,
            message: message.into(),
            data: None,
        }
    }

    #[tokio::test]
    async fn stores_queries_and_prunes_by_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("svc.db")).unwrap();
        let (ids, events) = store
            .write(|tx| {
                let mut ids = Vec::new();
                for (ts, source, message) in [(300, "a", "third"), (100, "a", "first"), (200, "b", "second")] {
                    ids.push(insert(tx, new(ts, source, message))?.id);
                }
                Ok::<_, StoreError>(ids)
            })
            .await
            .unwrap();
        assert_eq!(ids, ["db-1", "db-2", "db-3"]);
        assert_eq!(events.events.iter().filter(|e| e.kind == "log.added").count(), 3);
        let messages = |v: Vec<LogEntry>| v.into_iter().map(|e| e.message).collect::<Vec<_>>();
        let all = store.read(|tx| query(tx, &Filter::default(), 10)).await.unwrap();
        assert_eq!(messages(all), ["third", "second", "first"], "time order, not insertion order");
        let since = store.read(|tx| query(tx, &Filter { since: Some(100), ..Filter::default() }, 10)).await.unwrap();
        assert_eq!(messages(since), ["third", "second"]);
        let one = store.read(|tx| query(tx, &Filter::default(), 1)).await.unwrap();
        assert_eq!(messages(one), ["third"]);
        let b = store.read(|tx| query(tx, &Filter { source: Some("b".into()), ..Filter::default() }, 10)).await;
        assert_eq!(messages(b.unwrap()), ["second"]);
        assert_eq!(store.read(sources).await.unwrap(), ["a", "b"]);

        let (pruned, _) = store.write(|tx| prune_before(tx, 250)).await.unwrap();
        assert_eq!(pruned, 2);
        assert_eq!(messages(store.read(|tx| query(tx, &Filter::default(), 10)).await.unwrap()), ["third"]);
        assert_eq!(store.read(sources).await.unwrap(), ["a"], "b has no entries left");
    }
}
