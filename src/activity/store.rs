//! Retention over the activity feed (ids grow with time).

use redb::{ReadTransaction, WriteTransaction};

use super::Activity;
use crate::store::schema::ACTIVITIES;
use crate::store::{StoreError, expired_ids};

/// Ids of activities created before `cutoff_secs`, oldest first.
pub fn expired(tx: &ReadTransaction, cutoff_secs: i64) -> Result<Vec<u64>, StoreError> {
    expired_ids(&tx.open_table(ACTIVITIES)?, cutoff_secs, |a: &Activity| a.created_at, |_| false)
}

/// Deletes the given activities; returns how many existed.
pub fn delete(tx: &WriteTransaction, ids: &[u64]) -> Result<u64, StoreError> {
    let mut table = tx.open_table(ACTIVITIES)?;
    let mut deleted = 0;
    for &id in ids {
        if table.remove(id)?.is_some() {
            deleted += 1;
        }
    }
    Ok(deleted)
}
