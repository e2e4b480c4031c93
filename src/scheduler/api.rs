//! `/api/scheduler` (admin): the jobs' status, and running `auto_backup`, `auto_cleanup` or
//! `agent_heartbeat` now.

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::{JobId, TaskStatus, Trigger};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::{RequireRole, app, json_body, require_principal};
use crate::users::Role;

#[derive(Serialize, ToSchema)]
pub struct SchedulerTasks {
    /// The interface's five jobs first, then the extra ones.
    pub tasks: Vec<TaskStatus>,
}

#[derive(Deserialize, ToSchema)]
pub struct RunTask {
    /// `auto_backup`, `auto_cleanup` or `agent_heartbeat`.
    pub task_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct TaskRun {
    pub ok: bool,
    /// What the run did.
    pub message: String,
}

/// Every scheduled job with its schedule state.
#[endpoint(tags("scheduler"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<SchedulerTasks>> {
    let state = app(depot)?;
    Ok(Json(SchedulerTasks { tasks: super::statuses(&state).await? }))
}

/// Run `auto_backup`, `auto_cleanup` or `agent_heartbeat` now (also when its setting is off) and wait for
/// it. 400 for any other task_id, 409 while that job is already running, 500 with the job's message when
/// it fails.
#[endpoint(
    tags("scheduler"),
    request_body = RunTask,
    responses(
        (status_code = 409, description = "The job is already running"),
        (status_code = 500, description = "The job failed; `error` is its message")
    )
)]
pub async fn run(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TaskRun>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let body: RunTask = json_body(req).await?;
    let Some(id) = JobId::parse(&body.task_id).filter(|id| JobId::ON_DEMAND.contains(id)) else {
        let allowed: Vec<&str> = JobId::ON_DEMAND.iter().map(|j| j.as_str()).collect();
        return Err(AppError::BadRequest(format!("Invalid task_id: must be one of {}", allowed.join(", "))));
    };
    // Its own task: a client that disconnects does not cut the run short.
    let message = tokio::spawn(async move { super::run(&state, id, Trigger::Manual { by: who.username }).await })
        .await
        .map_err(|e| AppError::Failed(format!("the job {} stopped: {e}", id.as_str())))??;
    Ok(Json(TaskRun { ok: true, message }))
}

pub fn router() -> Router {
    Router::with_path("scheduler").hoop(RequireRole(Role::Admin)).get(list).post(run)
}
