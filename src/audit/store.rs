//! Audit rows and their action/actor indexes. Newest first = highest id first.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::AuditEvent;
use crate::store::schema::{AUDIT, AUDIT_BY_ACTION, AUDIT_BY_ACTOR};
use crate::store::{StoreError, decode, expired_ids, get, newest_page, newest_page_by_key, put};

pub fn insert(tx: &WriteTransaction, event: &AuditEvent) -> Result<(), StoreError> {
    put(tx, AUDIT, event.id, event)?;
    tx.open_table(AUDIT_BY_ACTION)?.insert((event.action.as_str(), event.id), ())?;
    tx.open_table(AUDIT_BY_ACTOR)?.insert((event.actor.as_str(), event.id), ())?;
    Ok(())
}

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub action: Option<String>,
    pub actor: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}

/// Matching events newest first, paged, with the total count of matches. Walks the action or actor
/// index when one is given, else the table itself, from the newest id down.
pub fn query(
    tx: &ReadTransaction,
    f: &Filter,
    limit: usize,
    offset: usize,
) -> Result<(Vec<AuditEvent>, usize), StoreError> {
    let table = tx.open_table(AUDIT)?;
    // Hot paths: no filter, or one index key alone: only the page is decoded.
    if f.since.is_none() && f.until.is_none() {
        match (&f.action, &f.actor) {
            (None, None) => return newest_page(tx, AUDIT, limit, offset),
            (Some(action), None) => return newest_page_by_key(tx, AUDIT_BY_ACTION, AUDIT, action, limit, offset),
            (None, Some(actor)) => return newest_page_by_key(tx, AUDIT_BY_ACTOR, AUDIT, actor, limit, offset),
            (Some(_), Some(_)) => {}
        }
    }
    let ids: Box<dyn Iterator<Item = Result<u64, StoreError>>> = match (&f.action, &f.actor) {
        (Some(action), _) => Box::new(index_ids(tx, AUDIT_BY_ACTION, action)?.into_iter().map(Ok)),
        (None, Some(actor)) => Box::new(index_ids(tx, AUDIT_BY_ACTOR, actor)?.into_iter().map(Ok)),
        (None, None) => Box::new(table.iter()?.rev().map(|r| r.map(|(k, _)| k.value()).map_err(StoreError::from))),
    };
    let mut page = Vec::new();
    let mut total = 0;
    for id in ids {
        let Some(event) = get::<AuditEvent>(&table, id?)? else { continue };
        let matches = f.actor.as_ref().is_none_or(|a| *a == event.actor)
            && f.since.is_none_or(|s| event.created_at >= s)
            && f.until.is_none_or(|u| event.created_at <= u);
        if matches {
            if total >= offset && page.len() < limit {
                page.push(event);
            }
            total += 1;
        }
    }
    Ok((page, total))
}

/// Ids under one key of a `(key, id)` index, newest first.
fn index_ids(
    tx: &ReadTransaction,
    index: redb::TableDefinition<'static, (&'static str, u64), ()>,
    key: &str,
) -> Result<Vec<u64>, StoreError> {
    let table = tx.open_table(index)?;
    let rows = table.range((key, 0)..=(key, u64::MAX))?;
    let mut ids = rows.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<Vec<_>, _>>()?;
    ids.reverse();
    Ok(ids)
}

/// All rows decoded (used by tests and retention).
pub fn all(tx: &ReadTransaction) -> Result<Vec<AuditEvent>, StoreError> {
    let table = tx.open_table(AUDIT)?;
    table.iter()?.map(|r| decode(r?.1.value())).collect()
}

/// Ids of audit events created before `cutoff_secs`, oldest first (retention).
pub fn expired(tx: &ReadTransaction, cutoff_secs: i64) -> Result<Vec<u64>, StoreError> {
    expired_ids(&tx.open_table(AUDIT)?, cutoff_secs, |e: &AuditEvent| e.created_at, |_| false)
}

/// Deletes the given audit events with their index entries; returns how many existed.
pub fn delete(tx: &WriteTransaction, ids: &[u64]) -> Result<u64, StoreError> {
    let mut table = tx.open_table(AUDIT)?;
    let mut by_action = tx.open_table(AUDIT_BY_ACTION)?;
    let mut by_actor = tx.open_table(AUDIT_BY_ACTOR)?;
    let mut deleted = 0;
    for &id in ids {
        let Some(event) = get::<AuditEvent>(&table, id)? else { continue };
        table.remove(id)?;
        by_action.remove((event.action.as_str(), id))?;
        by_actor.remove((event.actor.as_str(), id))?;
        deleted += 1;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use redb::ReadableDatabase;

    use super::*;
    use crate::store::Store;

    const ACTIONS: [&str; 3] = ["login", "task_created", "user_deleted"];
    const ACTORS: [&str; 3] = ["admin", "ada", "system"];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every filter combination and page equals filtering a full scan, newest first.
        #[test]
        fn pages_equal_a_filtered_scan(
            specs in proptest::collection::vec((0..3usize, 0..3usize, 0i64..20), 0..60),
            action in proptest::option::of(0..3usize),
            actor in proptest::option::of(0..3usize),
            since in proptest::option::of(0i64..20),
            until in proptest::option::of(0i64..20),
            limit in 1usize..20,
            offset in 0usize..70,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(&dir.path().join("t.db")).unwrap();
            let txn = store.database().begin_write().unwrap();
            let all: Vec<AuditEvent> = specs
                .iter()
                .enumerate()
                .map(|(i, &(a, b, t))| AuditEvent {
                    id: i as u64 + 1,
                    action: ACTIONS[a].into(),
                    actor: ACTORS[b].into(),
                    actor_id: None,
                    detail: serde_json::Value::Null,
                    ip_address: None,
                    created_at: t,
                })
                .collect();
            for event in &all {
                insert(&txn, event).unwrap();
            }
            txn.commit().unwrap();
            let filter = Filter {
                action: action.map(|a| ACTIONS[a].to_string()),
                actor: actor.map(|a| ACTORS[a].to_string()),
                since,
                until,
            };
            let matching: Vec<u64> = all
                .iter()
                .rev()
                .filter(|e| filter.action.as_ref().is_none_or(|a| *a == e.action))
                .filter(|e| filter.actor.as_ref().is_none_or(|a| *a == e.actor))
                .filter(|e| since.is_none_or(|s| e.created_at >= s) && until.is_none_or(|u| e.created_at <= u))
                .map(|e| e.id)
                .collect();
            let (page, total) = query(&store.database().begin_read().unwrap(), &filter, limit, offset).unwrap();
            prop_assert_eq!(page.iter().map(|e| e.id).collect::<Vec<_>>(), matching.iter().skip(offset).take(limit).copied().collect::<Vec<_>>());
            prop_assert_eq!(total, matching.len());
        }
    }
}
