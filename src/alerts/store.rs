//! Alert rules.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::Rule;
use crate::store::schema::ALERT_RULES;
use crate::store::{StoreError, decode, get, next_id, put};

pub fn list(tx: &ReadTransaction) -> Result<Vec<Rule>, StoreError> {
    tx.open_table(ALERT_RULES)?.iter()?.map(|r| decode(r?.1.value())).collect()
}

pub fn get_w(tx: &WriteTransaction, id: u64) -> Result<Option<Rule>, StoreError> {
    get(&tx.open_table(ALERT_RULES)?, id)
}

pub fn new_id(tx: &WriteTransaction) -> Result<u64, StoreError> {
    next_id(tx, "alert_rules")
}

pub fn save(tx: &WriteTransaction, rule: &Rule) -> Result<(), StoreError> {
    put(tx, ALERT_RULES, rule.id, rule)
}

pub fn delete(tx: &WriteTransaction, id: u64) -> Result<bool, StoreError> {
    Ok(tx.open_table(ALERT_RULES)?.remove(id)?.is_some())
}
