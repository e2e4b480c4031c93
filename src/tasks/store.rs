// TEMPORARY placeholder, replaced by main's tasks feature on merge.
//! The two task queries the agents feature needs, with the signatures main's tasks feature provides.
//! No task table exists in this branch yet, so every agent has no tasks.

use redb::ReadTransaction;

use super::{Task, TaskStats};
use crate::store::StoreError;

/// Counts of the tasks assigned to `agent`.
pub fn agent_task_stats(_tx: &ReadTransaction, _agent: &str) -> Result<TaskStats, StoreError> {
    Ok(TaskStats::default())
}

/// Tasks assigned to `agent` with status `assigned` or `in_progress`, critical first, then oldest.
pub fn pending_for_agent(_tx: &ReadTransaction, _agent: &str, _limit: usize) -> Result<Vec<Task>, StoreError> {
    Ok(Vec::new())
}
