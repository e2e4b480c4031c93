//! The activity feed: one row per notable change, written in the change's transaction and announced as
//! the SSE event `activity.created` after the commit (webhooks turn rows into `activity.<type>`).

pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::store::schema::ACTIVITIES;
use crate::store::{StoreError, Tx, next_id, now_secs, put};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "Activity"))]
pub struct Activity {
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub entity_type: String,
    pub entity_id: Option<u64>,
    pub actor: String,
    pub description: String,
    pub data: serde_json::Value,
    pub created_at: i64,
}

pub struct NewActivity<'a> {
    pub kind: &'a str,
    pub entity_type: &'a str,
    pub entity_id: Option<u64>,
    pub actor: &'a str,
    pub description: String,
    pub data: serde_json::Value,
}

pub fn record(tx: &mut Tx, new: NewActivity<'_>) -> Result<Activity, StoreError> {
    let activity = Activity {
        id: next_id(tx, "activities")?,
        kind: new.kind.to_string(),
        entity_type: new.entity_type.to_string(),
        entity_id: new.entity_id,
        actor: new.actor.to_string(),
        description: new.description,
        data: new.data,
        created_at: now_secs(),
    };
    put(tx, ACTIVITIES, activity.id, &activity)?;
    let json = serde_json::to_value(&activity).unwrap_or_default();
    crate::webhooks::fire(tx, &format!("activity.{}", activity.kind), &json)?;
    tx.emit("activity.created", json);
    Ok(activity)
}
