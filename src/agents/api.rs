//! `/api/agents/*` and `/api/connect`: thin handlers that parse, call the rules and store, and shape the
//! interface's responses.

use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rules::{self, ConnectRequest};
use super::{
    AgentChanges, AgentMessage, AgentStatus, AgentView, Checks, HEARTBEAT_MESSAGE_LIMIT, HEARTBEAT_TASK_LIMIT,
    NewAgent, TEMPLATES, as_object, merge_config, non_empty, store, template_defaults, uuid_v4, validate_config,
    validate_memory, validate_message_type, validate_name, validate_role, workspace,
};
use crate::error::{AppError, AppResult};
use crate::http::extract::{optional_json_body, query_opt};
use crate::http::{Page, RequireRole, app, client_ip, json_body, require_principal};
use crate::store::StoreError;
use crate::tasks::{self, Task};
use crate::users::Role;

const MAX_LAST_ACTIVITY_CHARS: usize = 1000;
const MAX_CONTENT_BYTES: usize = 64 * 1024;

#[derive(Serialize, ToSchema)]
pub struct AgentEnvelope {
    pub agent: AgentView,
}

#[derive(Serialize, ToSchema)]
pub struct AgentList {
    pub agents: Vec<AgentView>,
    pub total: usize,
    pub page: usize,
    pub limit: usize,
}

#[derive(Serialize, ToSchema)]
pub struct SuccessBody {
    pub success: bool,
}

/// The path segment `{id}`: an agent id or its exact name.
fn key(req: &Request) -> String {
    req.param::<String>("id").unwrap_or_default()
}

/// Agents with their task counts, from one read snapshot.
async fn views(state: &crate::app::AppState, agents: Vec<super::Agent>) -> AppResult<Vec<AgentView>> {
    let views = state
        .store
        .read(move |tx| {
            agents
                .into_iter()
                .map(|a| Ok(a.view(tasks::store::agent_task_stats(tx, &a.name)?)))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await?;
    Ok(views)
}

async fn one_view(state: &crate::app::AppState, agent: super::Agent) -> AppResult<AgentView> {
    views(state, vec![agent]).await?.pop().ok_or_else(|| AppError::Internal("agent view missing".into()))
}

/// Agents in creation order, filtered by status and role, with their task counts. Viewer.
#[endpoint(
    tags("agents"),
    parameters(
        ("status" = Option<String>, Query, description = "online, offline, busy, idle or error"),
        ("role" = Option<String>, Query, description = "exact role"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
        ("offset" = Option<u32>, Query, description = "default 0"),
    )
)]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentList>> {
    let state = app(depot)?;
    let page = Page::from_query(req, 50, 200)?;
    let status = query_opt::<String>(req, "status", "must be a string")?
        .map(|s| AgentStatus::parse(&s))
        .transpose()
        .map_err(|d| AppError::Validation(vec![d]))?;
    let role = query_opt::<String>(req, "role", "must be a string")?;
    let filter = store::Filter { status, role };
    let (agents, total) = state.store.read(move |tx| store::list(tx, &filter, page.limit, page.offset)).await?;
    let agents = views(&state, agents).await?;
    Ok(Json(AgentList { agents, total, page: page.page(), limit: page.limit }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateAgent {
    pub name: String,
    pub role: String,
    pub session_key: Option<String>,
    pub soul_content: Option<String>,
    /// online, offline (default), busy, idle or error.
    pub status: Option<String>,
    /// A JSON object (model, tools, identity, sandbox, memorySearch, workspace…).
    pub config: Option<Value>,
    /// A built-in template (developer, analyst, qa, researcher) whose defaults are merged into config.
    pub template: Option<String>,
    /// A JSON object merged into config over the other sources.
    pub gateway_config: Option<Value>,
    /// Accepted for compatibility. Spawning the agent through its gateway is not done by this endpoint
    /// yet: the flag is ignored and nothing is sent to a gateway.
    pub write_to_gateway: Option<bool>,
}

/// Register an agent. Operator.
#[endpoint(tags("agents"), request_body = CreateAgent)]
pub async fn create(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: CreateAgent = json_body(req).await?;
    // `write_to_gateway` is deliberately ignored: gateway spawning belongs to the gateways feature and
    // this endpoint must not pretend an agent was spawned.
    let _ = body.write_to_gateway;
    let name = body.name.trim().to_string();
    let role = body.role.trim().to_string();
    let mut checks = Checks::default();
    checks.check(validate_name(&name));
    checks.check(validate_role(&role));
    let status = checks.take(body.status.as_deref().map(AgentStatus::parse).transpose());
    let template = checks.take(match body.template.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => {
            template_defaults(t).map(Some).ok_or_else(|| format!("template: must be one of {}", TEMPLATES.join(", ")))
        }
    });
    let config = checks.take(body.config.map(|c| as_object("config", c)).transpose());
    let gateway_config = checks.take(body.gateway_config.map(|c| as_object("gateway_config", c)).transpose());
    checks.finish()?;
    let config = merge_config(template, config, gateway_config);
    if let Value::Object(map) = &config {
        validate_config(map).map_err(|d| AppError::Validation(vec![d]))?;
    }
    let new = NewAgent {
        name,
        role,
        status: status.unwrap_or(AgentStatus::Offline),
        session_key: non_empty(body.session_key),
        soul_content: body.soul_content.filter(|s| !s.is_empty()),
        config,
    };
    let agent = state.write(move |tx| rules::create(tx, &who, ip, new)).await?;
    Ok(Json(AgentEnvelope { agent: one_view(&state, agent).await? }))
}

/// One agent by id or by exact name. Viewer.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn show(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentEnvelope>> {
    let state = app(depot)?;
    let key = key(req);
    let agent = state.store.read(move |tx| store::resolve(tx, &key)).await?.ok_or_else(rules::not_found)?;
    Ok(Json(AgentEnvelope { agent: one_view(&state, agent).await? }))
}

/// Raw update fields shared by both update routes.
#[derive(Default)]
struct RawChanges {
    name: Option<String>,
    role: Option<String>,
    status: Option<String>,
    config: Option<Value>,
    session_key: Option<String>,
    soul_content: Option<String>,
    last_activity: Option<String>,
}

fn parse_changes(raw: RawChanges) -> AppResult<AgentChanges> {
    let name = raw.name.map(|s| s.trim().to_string());
    let role = raw.role.map(|s| s.trim().to_string());
    let mut checks = Checks::default();
    checks.check(name.as_deref().map_or(Ok(()), validate_name));
    checks.check(role.as_deref().map_or(Ok(()), validate_role));
    let status = checks.take(raw.status.as_deref().map(AgentStatus::parse).transpose());
    let config = checks.take(
        raw.config
            .map(|c| as_object("config", c).and_then(|m| validate_config(&m).map(|()| Value::Object(m))))
            .transpose(),
    );
    if let Some(a) = &raw.last_activity
        && a.chars().count() > MAX_LAST_ACTIVITY_CHARS
    {
        checks.check(Err(format!("last_activity: must be at most {MAX_LAST_ACTIVITY_CHARS} characters")));
    }
    checks.finish()?;
    let changes = AgentChanges {
        name,
        role,
        status,
        config,
        session_key: raw.session_key.map(|k| Some(k.trim().to_string()).filter(|k| !k.is_empty())),
        soul_content: raw.soul_content.map(|s| Some(s).filter(|s| !s.is_empty())),
        last_activity: raw.last_activity,
    };
    if changes.is_empty() {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    Ok(changes)
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateByName {
    /// The agent to update (not a rename).
    pub name: String,
    pub status: Option<String>,
    pub last_activity: Option<String>,
    pub config: Option<Value>,
    /// An empty string clears it.
    pub session_key: Option<String>,
    /// An empty string clears it.
    pub soul_content: Option<String>,
    pub role: Option<String>,
}

/// Update the agent named `name`. Operator.
#[endpoint(tags("agents"), request_body = UpdateByName)]
pub async fn update_by_name(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SuccessBody>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let body: UpdateByName = json_body(req).await?;
    let changes = parse_changes(RawChanges {
        status: body.status,
        last_activity: body.last_activity,
        config: body.config,
        session_key: body.session_key,
        soul_content: body.soul_content,
        role: body.role,
        ..RawChanges::default()
    })?;
    let name = body.name;
    state
        .write(move |tx| {
            let agent = store::find_by_name_w(tx, &name)?.ok_or_else(rules::not_found)?;
            rules::update(tx, &who.username, agent, changes)
        })
        .await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateAgent {
    /// A new name (409 when another agent has it).
    pub name: Option<String>,
    pub role: Option<String>,
    pub status: Option<String>,
    pub config: Option<Value>,
    /// An empty string clears it.
    pub session_key: Option<String>,
    /// An empty string clears it.
    pub soul_content: Option<String>,
}

/// Update an agent by id or name. Operator.
#[endpoint(tags("agents"), request_body = UpdateAgent, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key(req);
    let body: UpdateAgent = json_body(req).await?;
    let changes = parse_changes(RawChanges {
        name: body.name,
        role: body.role,
        status: body.status,
        config: body.config,
        session_key: body.session_key,
        soul_content: body.soul_content,
        last_activity: None,
    })?;
    let agent = state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            rules::update(tx, &who.username, agent, changes)
        })
        .await?;
    Ok(Json(AgentEnvelope { agent: one_view(&state, agent).await? }))
}

/// Delete an agent (its messages stay in the history). Operator.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SuccessBody>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let key = key(req);
    state.write(move |tx| rules::delete(tx, &who, ip, &key)).await?;
    Ok(Json(SuccessBody { success: true }))
}

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
    let key = key(req);
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
    /// Validated; recording and costing it is the tokens feature's part.
    pub token_usage: Option<TokenUsageReport>,
}

/// A heartbeat from the agent (optional body). Sets `last_seen`; an offline agent becomes online.
/// Operator.
#[endpoint(tags("agents"), request_body = HeartbeatReport, parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn heartbeat_report(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SuccessBody>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key(req);
    let body: HeartbeatReport = optional_json_body(req).await?;
    // The shape of token_usage is checked here; the tokens feature records and costs it.
    if let Some(usage) = &body.token_usage
        && usage.model.trim().is_empty()
    {
        return Err(AppError::validation("token_usage.model", "must not be empty"));
    }
    let connection_id = non_empty(body.connection_id);
    state
        .write(move |tx| {
            let agent = rules::require(tx, &key)?;
            if let Some(id) = &connection_id {
                rules::connection_heartbeat(tx, &agent, id)?;
            }
            rules::touch(tx, &who.username, &agent)?;
            Ok::<_, AppError>(())
        })
        .await?;
    Ok(Json(SuccessBody { success: true }))
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
    let key = key(req);
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
    let key = key(req);
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
    let key = key(req);
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
    let key = key(req);
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
pub async fn wake(req: &mut Request, depot: &mut Depot) -> AppResult<Json<SuccessBody>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let key = key(req);
    let body: WakeBody = optional_json_body(req).await?;
    let reason = non_empty(body.reason).unwrap_or_else(|| "Wake requested".into());
    if reason.len() > MAX_CONTENT_BYTES {
        return Err(AppError::validation("reason", "must be at most 65536 bytes"));
    }
    // Asking the agent's gateway to wake it (POST /control) is the gateways feature's part.
    state.write(move |tx| rules::wake(tx, &who.username, &key, &reason)).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize, ToSchema)]
pub struct SendMessage {
    pub from: String,
    /// An agent name (404 when unknown).
    pub to: String,
    pub content: String,
    /// Default `notification`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MessageSent {
    pub success: bool,
    pub id: u64,
}

/// Send a message to an agent; it is delivered by the agent's heartbeat poll. Operator.
#[endpoint(tags("agents"), request_body = SendMessage)]
pub async fn send_message(req: &mut Request, depot: &mut Depot) -> AppResult<Json<MessageSent>> {
    let state = app(depot)?;
    let body: SendMessage = json_body(req).await?;
    let from = body.from.trim().to_string();
    let to = body.to.trim().to_string();
    let kind = body.kind.map(|k| k.trim().to_string()).unwrap_or_else(|| "notification".into());
    let content = body.content;
    let mut checks = Checks::default();
    if from.is_empty() || from.chars().count() > 100 {
        checks.check(Err("from: must be 1-100 characters".into()));
    }
    if to.is_empty() {
        checks.check(Err("to: must not be empty".into()));
    }
    if content.trim().is_empty() {
        checks.check(Err("content: must not be empty".into()));
    } else if content.len() > MAX_CONTENT_BYTES {
        checks.check(Err("content: must be at most 65536 bytes".into()));
    }
    checks.check(validate_message_type(&kind));
    checks.finish()?;
    let message = state.write(move |tx| rules::insert_message(tx, &from, &to, &content, &kind)).await?;
    Ok(Json(MessageSent { success: true, id: message.id }))
}

#[derive(Serialize, ToSchema)]
pub struct Comms {
    pub messages: Vec<AgentMessage>,
}

/// Messages newest first: those from or to `agent`, or all. Viewer.
#[endpoint(
    tags("agents"),
    parameters(
        ("agent" = Option<String>, Query, description = "agent name: messages from or to it"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
    )
)]
pub async fn comms(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Comms>> {
    let state = app(depot)?;
    let limit = query_opt::<usize>(req, "limit", "must be a non-negative integer")?.unwrap_or(50).clamp(1, 200);
    let agent = query_opt::<String>(req, "agent", "must be a string")?;
    let messages = state.store.read(move |tx| store::comms(tx, agent.as_deref(), limit)).await?;
    Ok(Json(Comms { messages }))
}

#[derive(Deserialize, ToSchema)]
pub struct ConnectBody {
    pub tool_name: Option<String>,
    pub tool_version: Option<String>,
    pub agent_name: String,
    /// Role of a newly created agent (default `cli`).
    pub agent_role: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Connected {
    pub connection_id: String,
    pub agent_id: u64,
    pub agent_name: String,
    /// Always `connected`.
    pub status: &'static str,
    pub sse_url: &'static str,
    pub heartbeat_url: String,
    pub token_report_url: &'static str,
}

/// Connect a tool as an agent: finds or creates the agent, sets it online and records the connection.
/// Operator.
#[endpoint(tags("agents"), request_body = ConnectBody)]
pub async fn connect(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Connected>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: ConnectBody = json_body(req).await?;
    let agent_name = body.agent_name.trim().to_string();
    let agent_role = non_empty(body.agent_role).unwrap_or_else(|| "cli".into());
    let short = |field: &str, v: &Option<String>| match v {
        Some(s) if s.chars().count() > 100 => Err(format!("{field}: must be at most 100 characters")),
        _ => Ok(()),
    };
    let tool_name = non_empty(body.tool_name);
    let tool_version = non_empty(body.tool_version);
    let mut checks = Checks::default();
    checks.check(validate_name(&agent_name).map_err(|d| format!("agent_{d}")));
    checks.check(validate_role(&agent_role).map_err(|d| format!("agent_{d}")));
    checks.check(short("tool_name", &tool_name));
    checks.check(short("tool_version", &tool_version));
    checks.finish()?;
    let request = ConnectRequest { agent_name, agent_role, tool_name, tool_version, connection_id: uuid_v4()? };
    let (agent, connection) = state.write(move |tx| rules::connect(tx, &who, ip, request)).await?;
    Ok(Json(Connected {
        connection_id: connection.connection_id,
        agent_id: agent.id,
        agent_name: agent.name,
        status: "connected",
        sse_url: "/api/events",
        heartbeat_url: format!("/api/agents/{}/heartbeat", agent.id),
        token_report_url: "/api/tokens",
    }))
}

fn viewer() -> Router {
    Router::new().hoop(RequireRole(Role::Viewer))
}

fn operator() -> Router {
    Router::new().hoop(RequireRole(Role::Operator))
}

/// `/api/agents/*` and `/api/connect`. Fixed segments (`comms`, `message`) come before `{id}`.
pub fn router() -> Router {
    let agents = Router::with_path("agents")
        .push(viewer().get(list))
        .push(operator().post(create).put(update_by_name))
        .push(Router::with_path("comms").push(viewer().get(comms)))
        .push(Router::with_path("message").push(operator().post(send_message)))
        .push(
            Router::with_path("{id}")
                .push(viewer().get(show))
                .push(operator().put(update).delete(delete))
                .push(
                    Router::with_path("heartbeat")
                        .push(viewer().get(heartbeat_poll))
                        .push(operator().post(heartbeat_report)),
                )
                .push(Router::with_path("soul").push(viewer().get(get_soul)).push(operator().put(put_soul)))
                .push(Router::with_path("memory").push(viewer().get(get_memory)).push(operator().put(put_memory)))
                .push(Router::with_path("wake").push(operator().post(wake))),
        );
    Router::new().push(agents).push(Router::with_path("connect").push(operator().post(connect)))
}
