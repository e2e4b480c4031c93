//! Gateways and their unique-name index.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::GatewayRecord;
use crate::store::schema::{GATEWAYS, GATEWAYS_BY_NAME};
use crate::store::{StoreError, decode, get, next_id, put};

fn name_key(name: &str) -> String {
    name.trim().to_lowercase()
}

pub fn list(tx: &ReadTransaction) -> Result<Vec<GatewayRecord>, StoreError> {
    tx.open_table(GATEWAYS)?.iter()?.map(|r| decode(r?.1.value())).collect()
}

pub fn list_w(tx: &WriteTransaction) -> Result<Vec<GatewayRecord>, StoreError> {
    tx.open_table(GATEWAYS)?.iter()?.map(|r| decode(r?.1.value())).collect()
}

pub fn get_w(tx: &WriteTransaction, id: u64) -> Result<Option<GatewayRecord>, StoreError> {
    get(&tx.open_table(GATEWAYS)?, id)
}

pub fn get_r(tx: &ReadTransaction, id: u64) -> Result<Option<GatewayRecord>, StoreError> {
    get(&tx.open_table(GATEWAYS)?, id)
}

pub fn find_by_name(tx: &ReadTransaction, name: &str) -> Result<Option<GatewayRecord>, StoreError> {
    match tx.open_table(GATEWAYS_BY_NAME)?.get(name_key(name).as_str())?.map(|v| v.value()) {
        Some(id) => get_r(tx, id),
        None => Ok(None),
    }
}

pub fn primary(tx: &ReadTransaction) -> Result<Option<GatewayRecord>, StoreError> {
    Ok(list(tx)?.into_iter().find(|g| g.is_primary))
}

/// The id holding `name`, if any.
pub fn id_by_name(tx: &WriteTransaction, name: &str) -> Result<Option<u64>, StoreError> {
    Ok(tx.open_table(GATEWAYS_BY_NAME)?.get(name_key(name).as_str())?.map(|v| v.value()))
}

pub fn new_id(tx: &WriteTransaction) -> Result<u64, StoreError> {
    next_id(tx, "gateways")
}

/// Saves a gateway (replacing `old`'s name index entry); a primary unsets every other primary.
pub fn save(tx: &WriteTransaction, old: Option<&GatewayRecord>, g: &GatewayRecord) -> Result<(), StoreError> {
    if let Some(old) = old {
        tx.open_table(GATEWAYS_BY_NAME)?.remove(name_key(&old.name).as_str())?;
    }
    if g.is_primary {
        for mut other in list_w(tx)?.into_iter().filter(|o| o.id != g.id && o.is_primary) {
            other.is_primary = false;
            put(tx, GATEWAYS, other.id, &other)?;
        }
    }
    put(tx, GATEWAYS, g.id, g)?;
    tx.open_table(GATEWAYS_BY_NAME)?.insert(name_key(&g.name).as_str(), g.id)?;
    Ok(())
}

pub fn delete(tx: &WriteTransaction, g: &GatewayRecord) -> Result<(), StoreError> {
    tx.open_table(GATEWAYS)?.remove(g.id)?;
    tx.open_table(GATEWAYS_BY_NAME)?.remove(name_key(&g.name).as_str())?;
    Ok(())
}
