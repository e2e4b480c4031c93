//! The audit trail: who did what, from where. Rows are written in the same transaction as the change.

pub mod api;
pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::http::Principal;
use crate::store::{StoreError, Tx, now_secs};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "AuditEvent"))]
pub struct AuditEvent {
    pub id: u64,
    pub action: String,
    /// Username, or `scheduler` / `system`.
    pub actor: String,
    pub actor_id: Option<u64>,
    pub detail: serde_json::Value,
    pub ip_address: Option<String>,
    pub created_at: i64,
}

/// An audit row about to be written.
pub struct Entry {
    pub action: &'static str,
    pub actor: String,
    pub actor_id: Option<u64>,
    pub detail: serde_json::Value,
    pub ip_address: Option<String>,
}

impl Entry {
    /// An action by an authenticated principal from a client IP.
    pub fn by(p: &Principal, ip: std::net::IpAddr, action: &'static str, detail: serde_json::Value) -> Self {
        Self { action, actor: p.username.clone(), actor_id: Some(p.id), detail, ip_address: Some(ip.to_string()) }
    }

    /// An action of the service itself (`system`).
    pub fn system(action: &'static str, detail: serde_json::Value) -> Self {
        Self { action, actor: "system".into(), actor_id: None, detail, ip_address: None }
    }
}

pub fn record(tx: &mut Tx, entry: Entry) -> Result<AuditEvent, StoreError> {
    let event = AuditEvent {
        id: crate::store::next_id(tx, "audit")?,
        action: entry.action.to_string(),
        actor: entry.actor,
        actor_id: entry.actor_id,
        detail: entry.detail,
        ip_address: entry.ip_address,
        created_at: now_secs(),
    };
    store::insert(tx, &event)?;
    Ok(event)
}
