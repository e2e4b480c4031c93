//! `/api/logs`: recent / sources / tail (viewer) over stored and file logs, and `add` (operator).

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::store::{self, NewLog};
use super::{Filter, LEVELS, LogEntry, effective_source, file_entries, merge, sources};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::{Page, RequireRole, app, json_body};
use crate::store::{StoreError, now_millis};
use crate::users::Role;

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 200;
const MAX_MESSAGE_CHARS: usize = 10_000;
const MAX_NAME_CHARS: usize = 200;

#[derive(Serialize, ToSchema)]
pub struct LogList {
    /// Newest first.
    pub logs: Vec<LogEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct SourceList {
    pub sources: Vec<String>,
}

/// `{logs}` for `recent` and `tail`, `{sources}` for `sources`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum LogsReply {
    Logs(LogList),
    Sources(SourceList),
}

fn text(req: &Request, name: &str) -> Option<String> {
    req.queries().get(name).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Stored and file entries matching `filter`, merged newest first.
async fn read_logs(state: &crate::app::AppState, filter: Filter, limit: usize) -> AppResult<Vec<LogEntry>> {
    let dir = state.config.agw_log_dir.clone();
    let files = tokio::task::spawn_blocking(move || file_entries(&dir));
    let db_filter = filter.clone();
    let stored = state.store.read(move |tx| store::query(tx, &db_filter, limit)).await?;
    let mut all = files.await.map_err(|e| StoreError::Join(e.to_string()))?;
    all.extend(stored);
    Ok(merge(all, &filter, limit))
}

/// Logs from the database (added through the API) and the gateway's log files.
/// `action=recent` (default): filters level, source, session, search; limit default 100, max 200.
/// `action=sources`: the source names. `action=tail`: entries newer than `since` (ms; required).
#[endpoint(
    tags("logs"),
    parameters(
        ("action" = Option<String>, Query, description = "recent (default), sources or tail"),
        ("level" = Option<String>, Query, description = "recent: info, warn, error or debug"),
        ("source" = Option<String>, Query, description = "recent and tail: exact source name"),
        ("session" = Option<String>, Query, description = "recent: session id"),
        ("search" = Option<String>, Query, description = "recent: case-insensitive text in the message"),
        ("since" = Option<i64>, Query, description = "tail (required): milliseconds; only newer entries"),
        ("limit" = Option<u32>, Query, description = "default 100, max 200"),
    )
)]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<LogsReply>> {
    let state = app(depot)?;
    let action = text(req, "action").unwrap_or_else(|| "recent".into());
    match action.as_str() {
        "recent" => {
            let limit = Page::from_query(req, DEFAULT_LIMIT, MAX_LIMIT)?.limit;
            let level = text(req, "level");
            if let Some(l) = &level
                && !LEVELS.contains(&l.as_str())
            {
                return Err(AppError::validation("level", "must be one of info, warn, error, debug"));
            }
            let filter = Filter {
                level,
                source: text(req, "source"),
                session: text(req, "session"),
                search: text(req, "search").map(|s| s.to_lowercase()),
                since: None,
            };
            Ok(Json(LogsReply::Logs(LogList { logs: read_logs(&state, filter, limit).await? })))
        }
        "tail" => {
            let limit = Page::from_query(req, DEFAULT_LIMIT, MAX_LIMIT)?.limit;
            let since = query_opt::<i64>(req, "since", "must be an integer (milliseconds)")?
                .ok_or_else(|| AppError::validation("since", "is required for action=tail"))?;
            let filter = Filter { source: text(req, "source"), since: Some(since), ..Filter::default() };
            Ok(Json(LogsReply::Logs(LogList { logs: read_logs(&state, filter, limit).await? })))
        }
        "sources" => {
            let dir = state.config.agw_log_dir.clone();
            let files = tokio::task::spawn_blocking(move || file_entries(&dir));
            let stored = state.store.read(store::sources).await?;
            let files = files.await.map_err(|e| StoreError::Join(e.to_string()))?;
            Ok(Json(LogsReply::Sources(SourceList { sources: sources(&files, stored) })))
        }
        _ => Err(AppError::validation("action", "must be one of recent, sources, tail")),
    }
}

#[derive(Deserialize, ToSchema)]
pub struct AddLog {
    /// Must be `add`.
    pub action: String,
    pub message: String,
    /// `info` (default), `warn`, `error` or `debug`.
    pub level: Option<String>,
    /// Default (and in place of `mission-control`): `opsdeck`.
    pub source: Option<String>,
    pub session: Option<String>,
    /// Optional structured data (an object).
    pub data: Option<serde_json::Value>,
}

#[derive(Serialize, ToSchema)]
pub struct AddedLog {
    pub success: bool,
    pub entry: LogEntry,
}

/// Add a log entry (`action: "add"`). Stored, merged into `GET /api/logs`, announced as `log.added`.
#[endpoint(tags("logs"), request_body = AddLog)]
pub async fn add(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AddedLog>> {
    let state = app(depot)?;
    let body: AddLog = json_body(req).await?;
    let mut problems = Vec::new();
    if body.action != "add" {
        problems.push("action: must be add".to_string());
    }
    let message = body.message.trim().to_string();
    if message.is_empty() {
        problems.push("message: must not be empty".into());
    } else if message.chars().count() > MAX_MESSAGE_CHARS {
        problems.push(format!("message: must be at most {MAX_MESSAGE_CHARS} characters"));
    }
    let level = body.level.as_deref().map(str::trim).filter(|l| !l.is_empty()).unwrap_or("info").to_string();
    if !LEVELS.contains(&level.as_str()) {
        problems.push("level: must be one of info, warn, error, debug".into());
    }
    let source = effective_source(body.source.as_deref());
    let session = body.session.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    for (field, value) in [("source", Some(&source)), ("session", session.as_ref())] {
        if value.is_some_and(|v| v.chars().count() > MAX_NAME_CHARS || v.chars().any(char::is_control)) {
            problems.push(format!("{field}: must be at most {MAX_NAME_CHARS} characters without control characters"));
        }
    }
    let data = body.data.filter(|d| !d.is_null());
    if data.as_ref().is_some_and(|d| !d.is_object()) {
        problems.push("data: must be an object".into());
    }
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let new = NewLog { timestamp: now_millis(), level, source, session, message, data };
    let entry = state.write(move |tx| Ok::<_, AppError>(store::insert(tx, new)?)).await?;
    Ok(Json(AddedLog { success: true, entry }))
}

pub fn router() -> Router {
    Router::with_path("logs")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list))
        .push(Router::new().hoop(RequireRole(Role::Operator)).post(add))
}
