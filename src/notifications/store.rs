//! Notifications with a per-recipient index and an unread index (so unread counts need no decoding).

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, WriteTransaction};

use super::Notification;
use crate::store::schema::{NOTIFICATIONS, NOTIFICATIONS_BY_RECIPIENT, NOTIFICATIONS_UNREAD};
use crate::store::{StoreError, expired_ids, get, put};

pub fn insert(tx: &WriteTransaction, n: &Notification) -> Result<(), StoreError> {
    put(tx, NOTIFICATIONS, n.id, n)?;
    tx.open_table(NOTIFICATIONS_BY_RECIPIENT)?.insert((n.recipient.as_str(), n.id), ())?;
    if n.read_at.is_none() {
        tx.open_table(NOTIFICATIONS_UNREAD)?.insert((n.recipient.as_str(), n.id), ())?;
    }
    Ok(())
}

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub recipient: Option<String>,
    pub unread_only: bool,
    pub kind: Option<String>,
}

/// Matching notifications newest first, paged, with the total and the unread count of the recipient
/// (of everyone when no recipient is given).
pub fn list(
    tx: &ReadTransaction,
    f: &Filter,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Notification>, usize, u64), StoreError> {
    let table = tx.open_table(NOTIFICATIONS)?;
    let unread = tx.open_table(NOTIFICATIONS_UNREAD)?;
    let ids: Vec<u64> = match (&f.recipient, f.unread_only) {
        (Some(r), true) => keys(&unread, r)?,
        (Some(r), false) => keys(&tx.open_table(NOTIFICATIONS_BY_RECIPIENT)?, r)?,
        (None, true) => {
            let mut ids: Vec<u64> = unread.iter()?.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<_, _>>()?;
            ids.sort_unstable_by(|a, b| b.cmp(a));
            ids
        }
        (None, false) => table.iter()?.rev().map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?,
    };
    let mut page = Vec::new();
    let mut total = 0;
    for id in ids {
        let in_window = total >= offset && page.len() < limit;
        if f.kind.is_none() && !in_window {
            total += 1;
            continue;
        }
        let Some(n) = get::<Notification>(&table, id)? else { continue };
        if f.kind.as_ref().is_some_and(|k| *k != n.kind) {
            continue;
        }
        if in_window {
            page.push(n);
        }
        total += 1;
    }
    let unread_count = match &f.recipient {
        Some(r) => unread.range((r.as_str(), 0)..=(r.as_str(), u64::MAX))?.count() as u64,
        None => unread.len()?,
    };
    Ok((page, total, unread_count))
}

/// Ids under one recipient of a `(recipient, id)` index, newest first.
fn keys(index: &impl ReadableTable<(&'static str, u64), ()>, recipient: &str) -> Result<Vec<u64>, StoreError> {
    let rows = index.range((recipient, 0)..=(recipient, u64::MAX))?.rev();
    Ok(rows.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<_, _>>()?)
}

/// Marks the given notifications read (only those of `owner` when set); returns how many changed.
pub fn mark_read(tx: &WriteTransaction, ids: &[u64], owner: Option<&str>, now: i64) -> Result<usize, StoreError> {
    let mut changed = 0;
    for &id in ids {
        let Some(mut n) = get::<Notification>(&tx.open_table(NOTIFICATIONS)?, id)? else { continue };
        if n.read_at.is_some() || owner.is_some_and(|o| o != n.recipient) {
            continue;
        }
        n.read_at = Some(now);
        put(tx, NOTIFICATIONS, id, &n)?;
        tx.open_table(NOTIFICATIONS_UNREAD)?.remove((n.recipient.as_str(), id))?;
        changed += 1;
    }
    Ok(changed)
}

/// Ids of a recipient's unread notifications.
pub fn unread_ids(tx: &WriteTransaction, recipient: &str) -> Result<Vec<u64>, StoreError> {
    keys(&tx.open_table(NOTIFICATIONS_UNREAD)?, recipient)
}

pub fn delete(tx: &WriteTransaction, ids: &[u64]) -> Result<usize, StoreError> {
    let mut deleted = 0;
    for &id in ids {
        let Some(n) = get::<Notification>(&tx.open_table(NOTIFICATIONS)?, id)? else { continue };
        tx.open_table(NOTIFICATIONS)?.remove(id)?;
        tx.open_table(NOTIFICATIONS_BY_RECIPIENT)?.remove((n.recipient.as_str(), id))?;
        tx.open_table(NOTIFICATIONS_UNREAD)?.remove((n.recipient.as_str(), id))?;
        deleted += 1;
    }
    Ok(deleted)
}

/// Ids of notifications created before `cutoff_secs`, oldest first (retention; [`delete`] removes them).
pub fn expired(tx: &ReadTransaction, cutoff_secs: i64) -> Result<Vec<u64>, StoreError> {
    expired_ids(&tx.open_table(NOTIFICATIONS)?, cutoff_secs, |n: &Notification| n.created_at, |_| false)
}
