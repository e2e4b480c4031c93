//! `/api/quality-review`: the gate before `done`. The configured reviewer's newest review decides; an
//! approval by that reviewer also moves the task to `done`.

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::rules::{self, Actor, ReviewInput};
use super::{Problems, Review, store};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::users::Role;

#[derive(Deserialize, ToSchema)]
pub struct NewReview {
    #[serde(rename = "taskId")]
    pub task_id: u64,
    /// Defaults to `SVC_QUALITY_REVIEWER` (`aegis`).
    pub reviewer: Option<String>,
    /// `approved` or `rejected`.
    pub status: String,
    pub notes: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ReviewResult {
    pub success: bool,
    pub review: Review,
    /// The task's status after the review.
    pub task_status: String,
}

/// Record a quality review of a task. Operator.
#[endpoint(tags("tasks"), request_body = NewReview)]
pub async fn submit(req: &mut Request, depot: &mut Depot) -> AppResult<Json<ReviewResult>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let body: NewReview = json_body(req).await?;
    let reviewer = body
        .reviewer
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| state.config.quality_reviewer.clone());
    let notes = body.notes.unwrap_or_default();
    let mut p = Problems::default();
    p.check(["approved", "rejected"].contains(&body.status.as_str()), "status", "must be approved or rejected");
    p.check(reviewer.chars().count() <= 100, "reviewer", "must be at most 100 characters");
    p.check(notes.len() <= 100_000, "notes", "must be at most 100000 characters");
    p.finish()?;
    let gatekeeper = state.config.quality_reviewer.clone();
    let new = ReviewInput { task_id: body.task_id, reviewer, status: body.status, notes };
    let (review, task_status) = state.write(move |tx| rules::review(tx, &actor, &gatekeeper, new)).await?;
    Ok(Json(ReviewResult { success: true, review, task_status }))
}

#[derive(Serialize, ToSchema)]
pub struct ReviewList {
    pub reviews: Vec<Review>,
}

/// A task's reviews, newest first.
#[endpoint(tags("tasks"), parameters(("taskId" = u64, Query, description = "task id")))]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<ReviewList>> {
    let state = app(depot)?;
    let task_id = query_opt::<u64>(req, "taskId", "must be a positive integer")?
        .ok_or_else(|| AppError::validation("taskId", "is required"))?;
    let reviews = state.store.read(move |tx| store::reviews(tx, task_id)).await?;
    Ok(Json(ReviewList { reviews }))
}

pub fn router() -> Router {
    Router::with_path("quality-review")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list))
        .push(Router::new().hoop(RequireRole(Role::Operator)).post(submit))
}
