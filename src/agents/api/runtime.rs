//! Heartbeat (poll and report), soul, memory and wake.

use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MAX_CONTENT_BYTES, key_of};
use crate::agents::{
    AgentChanges, AgentMessage, HEARTBEAT_MESSAGE_LIMIT, HEARTBEAT_TASK_LIMIT, non_empty, rules, store,
    validate_memory, workspace,
};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::Success;
use crate::http::extract::optional_json_body;
use crate::http::{app, json_body, require_principal};
use crate::tasks::{self, Problems, Task};
use crate::tokens;

#[derive(Serialize, ToSchema)]
pub struct HeartbeatMessage {
    pub from: String,
    pub content: String,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Serialize, ToSchema)]
pub struct HeartbeatPoll {
    /// The agent's name.
    pub agent: String,
    /// Tasks assigned to the agent with status assigned or in_progress (critical first, then oldest;
    /// at most 20).
    pub pending_tasks: Vec<Task>,
    /// Unread messages (oldest first, at most 100), now marked read.
    pub messages: Vec<HeartbeatMessage>,
}

/// The agent's poll: pending tasks and unread messages (which become read). Sets `last_seen`; an offline
/// agent becomes online. Viewer.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn heartbeat_poll(req: &mut Request, depot: &mut Depot) -> AppResult<Json<HeartbeatPoll>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key_of(req);
    let (agent, messages) = state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            let agent = rules::touch(tx, &who.username, &agent)?;
            let messages = store::take_unread(tx, &agent.name, HEARTBEAT_MESSAGE_LIMIT, crate::store::now_secs())?;
            Ok::<_, AppError>((agent, messages))
        })
        .await?;
    let name = agent.name.clone();
    let pending_tasks =
        state.store.read(move |tx| tasks::store::pending_for_agent(tx, &name, HEARTBEAT_TASK_LIMIT)).await?;
    let messages = messages
        .into_iter()
        .map(|m: AgentMessage| HeartbeatMessage { from: m.from_agent, content: m.content, kind: m.kind })
        .collect();
    Ok(Json(HeartbeatPoll { agent: agent.name, pending_tasks, messages }))
}

#[derive(Deserialize, ToSchema)]
pub struct TokenUsageReport {
    pub model: String,
    #[serde(rename = "inputTokens")]
    pub input_tokens: u64,
    #[serde(rename = "outputTokens")]
    pub output_tokens: u64,
}

#[derive(Deserialize, ToSchema)]
pub struct HeartbeatReport {
    /// A connection id from `POST /api/connect` of this agent.
    pub connection_id: Option<String>,
    /// Recorded and costed as a token usage record of session `<agent>:<connection_id>` (or
    /// `<agent>:heartbeat` without a connection).
    pub token_usage: Option<TokenUsageReport>,
}

/// A heartbeat from the agent (optional body). Sets `last_seen`; an offline agent becomes online.
/// Operator.
#[endpoint(tags("agents"), request_body = HeartbeatReport, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn heartbeat_report(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key_of(req);
    let body: HeartbeatReport = optional_json_body(req).await?;
    let usage = match body.token_usage {
        Some(u) => {
            let model = u.model.trim().to_string();
            let mut p = Problems::default();
            tokens::check_usage(&mut p, "token_usage.", &model, Some(u.input_tokens), Some(u.output_tokens));
            p.finish()?;
            let rate = state.config.pricing.rate(&model);
            Some((model, u.input_tokens, u.output_tokens, rate))
        }
        None => None,
    };
    let connection_id = non_empty(body.connection_id);
    state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            if let Some(id) = &connection_id {
                rules::connection_heartbeat(tx, &agent, id)?;
            }
            rules::touch(tx, &who.username, &agent)?;
            if let Some((model, input_tokens, output_tokens, rate)) = usage {
                let session = connection_id.as_deref().unwrap_or("heartbeat");
                let new = tokens::NewUsage {
                    model,
                    session_id: format!("{}:{session}", agent.name),
                    input_tokens,
                    output_tokens,
                    operation: None,
                    duration_ms: None,
                    timestamp_ms: None,
                    rate,
                };
                tokens::record_usage(tx, new)?;
            }
            Ok::<_, AppError>(())
        })
        .await?;
    Ok(Json(Success::ok()))
}

#[derive(Serialize, ToSchema)]
pub struct Soul {
    pub soul_content: Option<String>,
    /// `workspace` (from `<workspace>/soul.md`), `database` or `none`.
    pub source: &'static str,
}

/// The agent's soul: the workspace's `soul.md` when it exists, else the stored text. Viewer.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn get_soul(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Soul>> {
    let state = app(depot)?;
    let key = key_of(req);
    let agent = state.store.read(move |tx| store::resolve(tx, &key)).await?.ok_or_else(rules::not_found)?;
    if let Some(dir) = workspace::dir_of(&agent)?
        && let Some(text) = workspace::read_soul(dir).await?
    {
        return Ok(Json(Soul { soul_content: Some(text), source: "workspace" }));
    }
    Ok(Json(match agent.soul_content {
        Some(text) if !text.is_empty() => Soul { soul_content: Some(text), source: "database" },
        _ => Soul { soul_content: None, source: "none" },
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct SoulBody {
    pub soul_content: String,
}

#[derive(Serialize, ToSchema)]
pub struct SoulTargets {
    pub database: bool,
    pub workspace: bool,
}

#[derive(Serialize, ToSchema)]
pub struct SoulUpdated {
    pub success: bool,
    pub updated: SoulTargets,
}

/// Replace the soul in the database and, when the config names a workspace (an absolute path without
/// `..`), in `<workspace>/soul.md`. Operator.
#[endpoint(tags("agents"), request_body = SoulBody, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn put_soul(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SoulUpdated>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key_of(req);
    let body: SoulBody = json_body(req).await?;
    let text = body.soul_content.clone();
    let dir = state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            let dir = workspace::dir_of(&agent)?;
            let changes =
                AgentChanges { soul_content: Some(Some(text).filter(|s| !s.is_empty())), ..Default::default() };
            rules::update(tx, &who.username, agent, changes)?;
            Ok::<_, AppError>(dir)
        })
        .await?;
    let written = match dir {
        Some(dir) => match workspace::write_file(dir, workspace::SOUL_FILE, body.soul_content.into_bytes()).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "workspace soul not written");
                false
            }
        },
        None => false,
    };
    Ok(Json(SoulUpdated { success: true, updated: SoulTargets { database: true, workspace: written } }))
}

#[derive(Serialize, ToSchema)]
pub struct Memory {
    /// A JSON object.
    pub memory: Value,
}

/// The agent's memory (a JSON object; `{}` when none was stored). Viewer.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn get_memory(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Memory>> {
    let state = app(depot)?;
    let key = key_of(req);
    let memory = state
        .store
        .read(move |tx| {
            let agent = store::resolve(tx, &key)?.ok_or_else(rules::not_found)?;
            Ok::<_, AppError>(store::get_memory(tx, agent.id)?)
        })
        .await?;
    Ok(Json(Memory { memory }))
}

#[derive(Deserialize, ToSchema)]
pub struct MemoryBody {
    /// A JSON object of at most 256 KiB when serialized.
    pub memory: Value,
}

#[derive(Serialize, ToSchema)]
pub struct MemoryUpdated {
    pub success: bool,
    pub memory: Value,
}

/// Replace the agent's memory; also written to `<workspace>/memory.json` when the config names a
/// workspace. Operator.
#[endpoint(tags("agents"), request_body = MemoryBody, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn put_memory(req: &mut Request, depot: &mut Depot) -> AppResult<Json<MemoryUpdated>> {
    let state = app(depot)?;
    let key = key_of(req);
    let body: MemoryBody = json_body(req).await?;
    validate_memory(&body.memory)?;
    let memory = body.memory;
    let stored = memory.clone();
    let dir = state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            let dir = workspace::dir_of(&agent)?;
            store::set_memory(tx, agent.id, &stored)?;
            Ok::<_, AppError>(dir)
        })
        .await?;
    if let Some(dir) = dir {
        let pretty = serde_json::to_vec_pretty(&memory).map_err(AppError::internal)?;
        if let Err(e) = workspace::write_file(dir, workspace::MEMORY_FILE, pretty).await {
            tracing::warn!(error = %e, "workspace memory not written");
        }
    }
    Ok(Json(MemoryUpdated { success: true, memory }))
}

#[derive(Deserialize, ToSchema)]
pub struct WakeBody {
    pub reason: Option<String>,
}

/// Wake an agent: a `wake` message from `system` with the reason, and `offline` → `idle`. Operator.
#[endpoint(tags("agents"), request_body = WakeBody, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn wake(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key_of(req);
    let body: WakeBody = optional_json_body(req).await?;
    let reason = non_empty(body.reason).unwrap_or_else(|| "Wake requested".into());
    if reason.len() > MAX_CONTENT_BYTES {
        return Err(AppError::validation("reason", "must be at most 65536 bytes"));
    }
    let nudge_reason = reason.clone();
    let (agent, _) = state.write(move |tx| rules::wake(tx, &who.username, &key, &reason)).await?;
    super::gateway::nudge(&state, &agent.config, agent.session_key.as_deref(), &nudge_reason).await;
    Ok(Json(Success::ok()))
}
