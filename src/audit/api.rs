//! `GET /api/audit` (admin).

use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::Serialize;

use super::AuditEvent;
use super::store::{self, Filter};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::{Page, RequireRole, app};
use crate::users::Role;

const DEFAULT_LIMIT: usize = 1000;
const MAX_LIMIT: usize = 10_000;

#[derive(Serialize, ToSchema)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    pub total: usize,
    pub limit: usize,
    pub offset: usize,
}

/// Audit trail, newest first. Admin.
#[endpoint(
    tags("audit"),
    parameters(
        ("action" = Option<String>, Query, description = "exact action"),
        ("actor" = Option<String>, Query, description = "exact actor"),
        ("since" = Option<i64>, Query, description = "Unix seconds, inclusive"),
        ("until" = Option<i64>, Query, description = "Unix seconds, inclusive"),
        ("limit" = Option<u32>, Query, description = "default 1000, max 10000"),
        ("offset" = Option<u32>, Query, description = "default 0"),
    )
)]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AuditPage>> {
    let state = app(depot)?;
    let page = Page::from_query(req, DEFAULT_LIMIT, MAX_LIMIT)?;
    const SECS: &str = "must be a non-negative integer (Unix seconds)";
    let since = query_opt::<i64>(req, "since", SECS)?;
    let until = query_opt::<i64>(req, "until", SECS)?;
    if since.is_some_and(|s| s < 0) || until.is_some_and(|u| u < 0) {
        return Err(AppError::validation("since/until", SECS));
    }
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        return Err(AppError::validation("since", "must not be after until"));
    }
    let text = |name: &str| req.queries().get(name).filter(|s| !s.is_empty()).cloned();
    let filter = Filter { action: text("action"), actor: text("actor"), since, until };
    let (events, total) = state.store.read(move |tx| store::query(tx, &filter, page.limit, page.offset)).await?;
    Ok(Json(AuditPage { events, total, limit: page.limit, offset: page.offset }))
}

pub fn router() -> Router {
    Router::with_path("audit").hoop(RequireRole(Role::Admin)).get(list)
}
