//! Stored setting overrides: key → encoded [`StoredSetting`].

use std::collections::BTreeMap;

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::StoredSetting;
use crate::store::schema::SETTINGS;
use crate::store::{StoreError, decode, encode};

/// One stored override from any readable settings table (read or write transaction).
pub fn get(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<StoredSetting>, StoreError> {
    match table.get(key)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// Every stored override, by key.
pub fn all(tx: &ReadTransaction) -> Result<BTreeMap<String, StoredSetting>, StoreError> {
    let table = tx.open_table(SETTINGS)?;
    let mut out = BTreeMap::new();
    for row in table.iter()? {
        let (k, v) = row?;
        out.insert(k.value().to_string(), decode(v.value())?);
    }
    Ok(out)
}

pub fn put(tx: &WriteTransaction, key: &str, setting: &StoredSetting) -> Result<(), StoreError> {
    let bytes = encode(setting)?;
    tx.open_table(SETTINGS)?.insert(key, bytes.as_slice())?;
    Ok(())
}

/// Removes an override; returns it when one was stored.
pub fn remove(tx: &WriteTransaction, key: &str) -> Result<Option<StoredSetting>, StoreError> {
    let mut table = tx.open_table(SETTINGS)?;
    let old = table.remove(key)?.map(|v| decode(v.value())).transpose()?;
    Ok(old)
}
