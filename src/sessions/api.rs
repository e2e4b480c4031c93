//! `GET /api/sessions` and `POST /api/sessions/{id}/control`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use redb::ReadableTable;
use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::local::{self, LocalSession};
use super::{ControlState, Session, collapse, format_age, format_tokens};
use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::gateways::{GatewayRecord, client};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{RequireRole, app, json_body};
use crate::store::schema::SESSION_CONTROLS;
use crate::store::{StoreError, decode, encode, now_secs};
use crate::users::Role;

/// How long listing waits for one gateway's sessions.
const GATEWAY_WAIT: Duration = Duration::from_secs(3);
/// A local scan younger than this is reused (the scan job's period).
pub const LOCAL_SCAN_PERIOD: Duration = Duration::from_secs(60);
/// Local sessions idle longer than this are not active.
const LOCAL_ACTIVE_SECS: i64 = 30 * 60;

fn from_gateway(g: &GatewayRecord, s: client::GatewaySession, now: i64) -> Session {
    let id = if s.id.is_empty() { format!("{}:{}", s.agent, s.key) } else { s.id };
    let status = if s.status.is_empty() { "active".to_string() } else { s.status };
    Session {
        key: if s.key.is_empty() { id.clone() } else { s.key },
        id,
        agent: s.agent,
        kind: s.kind,
        age: format_age(now - s.updated_at),
        model: s.model,
        tokens: format_tokens(s.total_tokens, s.context_tokens),
        channel: s.channel,
        flags: s.flags,
        active: status == "active",
        status,
        start_time: s.start_time,
        last_activity: s.updated_at,
        source: "gateway".into(),
        total_tokens: s.total_tokens,
        user_messages: None,
        assistant_messages: None,
        tool_uses: None,
        estimated_cost: None,
        last_user_prompt: None,
        gateway_id: Some(g.id),
    }
}

fn from_local(s: &LocalSession, pricing: &crate::tokens::Pricing, now: i64) -> Session {
    let total = s.input_tokens + s.output_tokens;
    Session {
        id: s.id.clone(),
        key: s.id.clone(),
        agent: s.project.clone(),
        kind: "claude-code".into(),
        age: format_age(now - s.last_activity),
        model: s.model.clone(),
        tokens: format_tokens(s.context_used, None),
        channel: "local".into(),
        flags: vec![],
        active: now - s.last_activity < LOCAL_ACTIVE_SECS,
        status: "active".into(),
        start_time: s.start_time,
        last_activity: s.last_activity,
        source: "local".into(),
        total_tokens: total,
        user_messages: Some(s.user_messages),
        assistant_messages: Some(s.assistant_messages),
        tool_uses: Some(s.tool_uses),
        estimated_cost: Some(pricing.price(&s.model) * total as f64 / 1000.0),
        last_user_prompt: Some(s.last_user_prompt.clone()),
        gateway_id: None,
    }
}

/// Sessions of every gateway that is not offline, each waited for at most `GATEWAY_WAIT`.
async fn gateway_sessions(state: &AppState, now: i64) -> AppResult<Vec<Session>> {
    let gateways: Vec<GatewayRecord> =
        state.store.read(crate::gateways::store::list).await?.into_iter().filter(|g| g.status != "offline").collect();
    let fetches = gateways.iter().map(|g| tokio::time::timeout(GATEWAY_WAIT, client::sessions(&state.http, g)));
    let mut out = Vec::new();
    for (g, result) in gateways.iter().zip(join_all(fetches).await) {
        match result {
            Ok(Ok(list)) => out.extend(list.into_iter().map(|s| from_gateway(g, s, now))),
            Ok(Err(e)) => tracing::debug!(gateway = %g.name, error = %e, "gateway sessions unavailable"),
            Err(_) => tracing::debug!(gateway = %g.name, "gateway sessions timed out"),
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.last_activity));
    Ok(out)
}

/// The local transcripts, rescanned when the last scan is older than `LOCAL_SCAN_PERIOD`.
pub async fn local_sessions(state: &AppState, force: bool) -> Vec<LocalSession> {
    let mut cache = state.local_sessions.lock().await;
    if let Some((at, list)) = cache.as_ref()
        && !force
        && at.elapsed() < LOCAL_SCAN_PERIOD
    {
        return list.clone();
    }
    let root = state.config.local_sessions_dir.clone();
    let list = tokio::task::spawn_blocking(move || local::scan(&root)).await.unwrap_or_default();
    *cache = Some((Instant::now(), list.clone()));
    list
}

fn controls(tx: &redb::ReadTransaction) -> Result<HashMap<String, ControlState>, StoreError> {
    let table = tx.open_table(SESSION_CONTROLS)?;
    let mut map = HashMap::new();
    for row in table.iter()? {
        let (k, v) = row?;
        if let Ok(c) = decode::<ControlState>(v.value()) {
            map.insert(k.value().to_string(), c);
        }
    }
    Ok(map)
}

/// Every session: gateway sessions first, then local, then token-derived; duplicates collapsed.
pub async fn collect(state: &AppState) -> AppResult<Vec<Session>> {
    let now = now_secs();
    let mut all = gateway_sessions(state, now).await?;
    let mut locals: Vec<Session> =
        local_sessions(state, false).await.iter().map(|s| from_local(s, &state.config.pricing, now)).collect();
    locals.sort_by_key(|s| std::cmp::Reverse(s.last_activity));
    all.extend(locals);
    all.extend(crate::sessions::from_token_usage(state, now).await?);
    let controls = state.store.read(controls).await?;
    for s in all.iter_mut().filter(|s| s.gateway_id.is_none()) {
        if let Some(c) = controls.get(&s.id) {
            s.status = c.status.clone();
            s.active = s.active && c.status == "active";
        }
    }
    Ok(collapse(all))
}

#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// Sessions from gateways, local transcripts and token usage.
#[endpoint(
    tags("sessions"),
    parameters(
        ("agent" = Option<String>, Query, description = "only this agent's sessions"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
    )
)]
pub async fn list_sessions(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SessionList>> {
    let state = app(depot)?;
    let limit = query_opt::<usize>(req, "limit", "must be a non-negative integer")?.unwrap_or(50).clamp(1, 200);
    let agent = req.queries().get("agent").map(|a| a.trim().to_string()).filter(|a| !a.is_empty());
    let mut sessions = collect(&state).await?;
    if let Some(a) = agent {
        sessions.retain(|s| s.agent == a);
    }
    sessions.truncate(limit);
    Ok(Json(SessionList { sessions }))
}

#[derive(Deserialize, ToSchema)]
pub struct ControlBody {
    /// `pause`, `resume` or `kill`.
    pub action: String,
}

#[derive(Serialize, ToSchema)]
pub struct ControlResult {
    pub success: bool,
    /// The session's status afterwards.
    pub status: String,
}

/// Pause, resume or kill a session (10 per minute per session). Operator.
#[endpoint(tags("sessions"), request_body = ControlBody, parameters(("id" = String, Path, description = "session id")))]
pub async fn control_session(req: &mut Request, depot: &mut Depot) -> AppResult<Json<ControlResult>> {
    let state = app(depot)?;
    let id = req.param::<String>("id").unwrap_or_default();
    let body: ControlBody = json_body(req).await?;
    let status = match body.action.as_str() {
        "pause" => "paused",
        "resume" => "active",
        "kill" => "completed",
        _ => return Err(AppError::validation("action", "must be pause, resume or kill")),
    };
    let sessions = collect(&state).await?;
    let session = sessions
        .into_iter()
        .find(|s| s.id == id || s.key == id)
        .ok_or_else(|| AppError::NotFound("Session not found".into()))?;
    if session.status == "completed" {
        return Err(AppError::NotFound("Session not found".into()));
    }
    match session.gateway_id {
        Some(gateway_id) => {
            let gateway = state
                .store
                .read(move |tx| crate::gateways::store::get_r(tx, gateway_id))
                .await?
                .ok_or_else(|| AppError::NotFound("Session not found".into()))?;
            client::control(&state.http, &gateway, &session.id, &body.action).await.map_err(AppError::Upstream)?;
        }
        None => {
            let record = encode(&ControlState { status: status.into(), updated_at: now_secs() })?;
            let key = session.id.clone();
            state
                .write(move |tx| {
                    tx.open_table(SESSION_CONTROLS)?.insert(key.as_str(), record.as_slice())?;
                    Ok(())
                })
                .await?;
        }
    }
    state
        .bus
        .publish("session.controlled", serde_json::json!({"id": session.id, "action": body.action, "status": status}));
    Ok(Json(ControlResult { success: true, status: status.into() }))
}

pub fn router() -> Router {
    Router::with_path("sessions").push(Router::new().hoop(RequireRole(Role::Viewer)).get(list_sessions)).push(
        Router::with_path("{id}/control")
            .hoop(RequireRole(Role::Operator))
            .hoop(RouteLimit::new("session_control", 10, Duration::from_secs(60), KeyBy::PathParam("id")))
            .post(control_session),
    )
}
