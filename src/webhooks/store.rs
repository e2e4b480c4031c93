//! Webhooks, their deliveries (newest 200 per webhook), the durable outbox and held attempts.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::{Delivery, HISTORY_PER_WEBHOOK, WebhookRecord};
use crate::store::schema::{WEBHOOK_DELIVERIES, WEBHOOK_DELIVERIES_BY_WEBHOOK, WEBHOOK_HELD, WEBHOOK_OUTBOX, WEBHOOKS};
use crate::store::{StoreError, decode, expired_ids, get, next_id, now_secs, put};

pub fn list(tx: &ReadTransaction) -> Result<Vec<WebhookRecord>, StoreError> {
    tx.open_table(WEBHOOKS)?.iter()?.map(|r| decode(r?.1.value())).collect()
}

pub fn list_w(tx: &WriteTransaction) -> Result<Vec<WebhookRecord>, StoreError> {
    tx.open_table(WEBHOOKS)?.iter()?.map(|r| decode(r?.1.value())).collect()
}

pub fn get_hook(tx: &WriteTransaction, id: u64) -> Result<Option<WebhookRecord>, StoreError> {
    get(&tx.open_table(WEBHOOKS)?, id)
}

pub fn get_hook_r(tx: &ReadTransaction, id: u64) -> Result<Option<WebhookRecord>, StoreError> {
    get(&tx.open_table(WEBHOOKS)?, id)
}

pub fn new_hook_id(tx: &WriteTransaction) -> Result<u64, StoreError> {
    next_id(tx, "webhooks")
}

pub fn save_hook(tx: &WriteTransaction, hook: &WebhookRecord) -> Result<(), StoreError> {
    put(tx, WEBHOOKS, hook.id, hook)
}

/// Deletes a webhook with its deliveries, queued and held attempts.
pub fn delete_hook(tx: &WriteTransaction, id: u64) -> Result<(), StoreError> {
    tx.open_table(WEBHOOKS)?.remove(id)?;
    for delivery_id in delivery_ids(tx, id)? {
        remove_delivery(tx, id, delivery_id)?;
    }
    Ok(())
}

fn delivery_ids(tx: &WriteTransaction, webhook_id: u64) -> Result<Vec<u64>, StoreError> {
    let index = tx.open_table(WEBHOOK_DELIVERIES_BY_WEBHOOK)?;
    let ids = index.range((webhook_id, 0)..=(webhook_id, u64::MAX))?.map(|r| r.map(|(k, _)| k.value().1));
    Ok(ids.collect::<Result<Vec<_>, _>>()?)
}

fn remove_delivery(tx: &WriteTransaction, webhook_id: u64, id: u64) -> Result<(), StoreError> {
    if let Some(d) = get::<Delivery>(&tx.open_table(WEBHOOK_DELIVERIES)?, id)? {
        if d.state == "pending" {
            tx.open_table(WEBHOOK_OUTBOX)?.remove((d.due_ms, id))?;
        }
        tx.open_table(WEBHOOK_HELD)?.remove((webhook_id, id))?;
    }
    tx.open_table(WEBHOOK_DELIVERIES)?.remove(id)?;
    tx.open_table(WEBHOOK_DELIVERIES_BY_WEBHOOK)?.remove((webhook_id, id))?;
    Ok(())
}

/// Writes a pending attempt and puts it in the outbox, due at `due_ms`.
pub fn queue(
    tx: &WriteTransaction,
    webhook_id: u64,
    event: &str,
    body: &str,
    attempt: u32,
    message_id: Option<u64>,
    due_ms: u64,
) -> Result<Delivery, StoreError> {
    let id = next_id(tx, "webhook_deliveries")?;
    let delivery = Delivery {
        id,
        webhook_id,
        event_type: event.to_string(),
        status_code: None,
        response_body: String::new(),
        error: None,
        duration_ms: 0.0,
        attempt,
        is_retry: attempt > 0,
        next_retry_at: None,
        created_at: now_secs(),
        state: "pending".into(),
        payload: body.to_string(),
        message_id: message_id.unwrap_or(id),
        due_ms,
    };
    put(tx, WEBHOOK_DELIVERIES, id, &delivery)?;
    tx.open_table(WEBHOOK_DELIVERIES_BY_WEBHOOK)?.insert((webhook_id, id), ())?;
    tx.open_table(WEBHOOK_OUTBOX)?.insert((due_ms, id), ())?;
    trim_history(tx, webhook_id)?;
    Ok(delivery)
}

/// Keeps the newest `HISTORY_PER_WEBHOOK` deliveries of a webhook by removing the oldest finished ones;
/// an attempt still waiting (pending or held) is never dropped, whatever the backlog.
fn trim_history(tx: &WriteTransaction, webhook_id: u64) -> Result<(), StoreError> {
    let ids = delivery_ids(tx, webhook_id)?;
    let mut excess = ids.len().saturating_sub(HISTORY_PER_WEBHOOK);
    for id in ids {
        if excess == 0 {
            break;
        }
        let finished = get::<Delivery>(&tx.open_table(WEBHOOK_DELIVERIES)?, id)?.is_none_or(|d| d.state != "pending");
        if finished {
            remove_delivery(tx, webhook_id, id)?;
            excess -= 1;
        }
    }
    Ok(())
}

pub fn get_delivery(tx: &WriteTransaction, id: u64) -> Result<Option<Delivery>, StoreError> {
    get(&tx.open_table(WEBHOOK_DELIVERIES)?, id)
}

pub fn get_delivery_r(tx: &ReadTransaction, id: u64) -> Result<Option<Delivery>, StoreError> {
    get(&tx.open_table(WEBHOOK_DELIVERIES)?, id)
}

/// Saves an attempted delivery and takes it out of the outbox.
pub fn finish(tx: &WriteTransaction, d: &Delivery) -> Result<(), StoreError> {
    tx.open_table(WEBHOOK_OUTBOX)?.remove((d.due_ms, d.id))?;
    tx.open_table(WEBHOOK_HELD)?.remove((d.webhook_id, d.id))?;
    if tx.open_table(WEBHOOK_DELIVERIES)?.get(d.id)?.is_some() {
        put(tx, WEBHOOK_DELIVERIES, d.id, d)?;
    }
    Ok(())
}

/// Up to `limit` outbox entries due at or before `now_ms`, oldest first.
pub fn due(tx: &ReadTransaction, now_ms: u64, limit: usize) -> Result<Vec<u64>, StoreError> {
    let outbox = tx.open_table(WEBHOOK_OUTBOX)?;
    let ids = outbox.range((0, 0)..=(now_ms, u64::MAX))?.take(limit).map(|r| r.map(|(k, _)| k.value().1));
    Ok(ids.collect::<Result<Vec<_>, _>>()?)
}

/// Number of attempts waiting in the outbox.
pub fn pending_count(tx: &ReadTransaction) -> Result<u64, StoreError> {
    use redb::ReadableTableMetadata;
    Ok(tx.open_table(WEBHOOK_OUTBOX)?.len()?)
}

/// Moves a queued attempt of a webhook whose circuit is open out of the outbox until reset.
pub fn hold(tx: &WriteTransaction, d: &Delivery) -> Result<(), StoreError> {
    tx.open_table(WEBHOOK_OUTBOX)?.remove((d.due_ms, d.id))?;
    tx.open_table(WEBHOOK_HELD)?.insert((d.webhook_id, d.id), ())?;
    Ok(())
}

/// Puts a webhook's held attempts back in the outbox, due now.
pub fn release_held(tx: &WriteTransaction, webhook_id: u64, now_ms: u64) -> Result<usize, StoreError> {
    let held: Vec<u64> = {
        let table = tx.open_table(WEBHOOK_HELD)?;
        let ids = table.range((webhook_id, 0)..=(webhook_id, u64::MAX))?.map(|r| r.map(|(k, _)| k.value().1));
        ids.collect::<Result<_, _>>()?
    };
    for id in &held {
        tx.open_table(WEBHOOK_HELD)?.remove((webhook_id, *id))?;
        if let Some(mut d) = get_delivery(tx, *id)? {
            d.due_ms = now_ms;
            put(tx, WEBHOOK_DELIVERIES, d.id, &d)?;
            tx.open_table(WEBHOOK_OUTBOX)?.insert((now_ms, d.id), ())?;
        }
    }
    Ok(held.len())
}

/// Deliveries newest first (of one webhook, or all), paged, with the total.
pub fn deliveries(
    tx: &ReadTransaction,
    webhook_id: Option<u64>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Delivery>, usize), StoreError> {
    let table = tx.open_table(WEBHOOK_DELIVERIES)?;
    let ids: Vec<u64> = match webhook_id {
        Some(w) => {
            let index = tx.open_table(WEBHOOK_DELIVERIES_BY_WEBHOOK)?;
            let ids = index.range((w, 0)..=(w, u64::MAX))?.rev().map(|r| r.map(|(k, _)| k.value().1));
            ids.collect::<Result<_, _>>()?
        }
        None => table.iter()?.rev().map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?,
    };
    let total = ids.len();
    let mut page = Vec::new();
    for id in ids.into_iter().skip(offset).take(limit) {
        if let Some(d) = get(&table, id)? {
            page.push(d);
        }
    }
    Ok((page, total))
}

/// Ids of finished deliveries created before `cutoff_secs`, oldest first (retention). Pending attempts
/// (queued or held) are kept.
pub fn expired_deliveries(tx: &ReadTransaction, cutoff_secs: i64) -> Result<Vec<u64>, StoreError> {
    expired_ids(&tx.open_table(WEBHOOK_DELIVERIES)?, cutoff_secs, |d: &Delivery| d.created_at, |d| d.state == "pending")
}

/// Deletes the given deliveries unless they are pending; returns how many were deleted.
pub fn delete_deliveries(tx: &WriteTransaction, ids: &[u64]) -> Result<u64, StoreError> {
    let mut deleted = 0;
    for &id in ids {
        let Some(d) = get_delivery(tx, id)? else { continue };
        if d.state == "pending" {
            continue;
        }
        remove_delivery(tx, d.webhook_id, id)?;
        deleted += 1;
    }
    Ok(deleted)
}
