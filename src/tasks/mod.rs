// TEMPORARY placeholder, replaced by main's tasks feature on merge.
//! Tasks: only the types the agents feature reads (task counts and an agent's pending tasks).

pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

/// Task counts of one agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TaskStats {
    pub total: u64,
    pub assigned: u64,
    pub in_progress: u64,
    pub completed: u64,
}

/// A task (the fields the heartbeat shows).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Task {
    pub id: u64,
    pub title: String,
    pub status: String,
    pub priority: String,
    pub assigned_to: Option<String>,
    pub created_at: i64,
}
