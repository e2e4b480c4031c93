//! Notifications for users and agents: created inside the change that causes them (task assignment,
//! comments, alerts) and announced as the SSE event `notification.created` after the commit.

pub mod api;
pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::store::{StoreError, Tx, now_secs};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "Notification"))]
pub struct Notification {
    pub id: u64,
    pub recipient: String,
    /// e.g. `task_assigned`, `mention`, `info`, `alert`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub message: String,
    pub source_type: Option<String>,
    pub source_id: Option<u64>,
    pub read_at: Option<i64>,
    pub created_at: i64,
}

pub struct NewNotification<'a> {
    pub recipient: &'a str,
    pub kind: &'a str,
    pub title: String,
    pub message: String,
    pub source_type: Option<&'a str>,
    pub source_id: Option<u64>,
}

pub fn notify(tx: &mut Tx, new: NewNotification<'_>) -> Result<Notification, StoreError> {
    let n = Notification {
        id: crate::store::next_id(tx, "notifications")?,
        recipient: new.recipient.to_string(),
        kind: new.kind.to_string(),
        title: new.title,
        message: new.message,
        source_type: new.source_type.map(str::to_string),
        source_id: new.source_id,
        read_at: None,
        created_at: now_secs(),
    };
    store::insert(tx, &n)?;
    tx.emit("notification.created", serde_json::to_value(&n).unwrap_or_default());
    Ok(n)
}
