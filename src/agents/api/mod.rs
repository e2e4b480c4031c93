//! `/api/agents/*` and `/api/connect`: thin handlers that parse, call the rules and store, and shape the
//! interface's responses. This file: the registry (list, create, show, update, delete) and the router;
//! `runtime.rs`: heartbeat, soul, memory and wake; `messaging.rs`: messages, comms and tool connections.

pub mod gateway;
pub mod messaging;
pub mod runtime;

use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rules;
use super::{
    AgentChanges, AgentStatus, AgentView, Checks, NewAgent, TEMPLATES, as_object, merge_config, non_empty, store,
    template_defaults, validate_config, validate_name, validate_role,
};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::Success;
use crate::http::extract::query_opt;
use crate::http::{Page, RequireRole, app, client_ip, json_body, require_principal};
use crate::store::StoreError;
use crate::tasks;
use crate::users::Role;

const MAX_LAST_ACTIVITY_CHARS: usize = 1000;
/// Largest message content or wake reason (bytes).
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

/// The path segment `{id}`: an agent id or its exact name.
pub(super) fn key_of(req: &Request) -> String {
    req.param::<String>("id").unwrap_or_default()
}

/// Agents with their task counts, from one read snapshot.
pub(super) async fn views(state: &crate::app::AppState, agents: Vec<super::Agent>) -> AppResult<Vec<AgentView>> {
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

pub(super) async fn one_view(state: &crate::app::AppState, agent: super::Agent) -> AppResult<AgentView> {
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
    let (agents, total) = state.store.read_now(|tx| store::list(tx, &filter, page.limit, page.offset))?;
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
    /// Also spawn the agent through its preferred gateway (else the primary); 502 when it refuses.
    pub write_to_gateway: Option<bool>,
}

/// Register an agent. Operator.
#[endpoint(tags("agents"), request_body = CreateAgent)]
pub async fn create(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: CreateAgent = json_body(req).await?;
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
    if body.write_to_gateway.unwrap_or(false) {
        let name = new.name.clone();
        if state.store.read(move |tx| store::find_by_name(tx, &name)).await?.is_some() {
            return Err(AppError::Conflict("Agent name already exists".into()));
        }
        gateway::spawn(&state, &new.name, &new.config, new.session_key.as_deref()).await?;
    }
    let agent = state.write(move |tx| rules::create(tx, &who, ip, new)).await?;
    Ok(Json(AgentEnvelope { agent: one_view(&state, agent).await? }))
}

/// One agent by id or by exact name. Viewer.
#[endpoint(tags("agents"), parameters(("id" = String, Path, description = "agent id or name")))]
pub async fn show(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AgentEnvelope>> {
    let state = app(depot)?;
    let key = key_of(req);
    let agent = state.store.read_now(|tx| store::resolve(tx, &key))?.ok_or_else(rules::not_found)?;
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
pub async fn update_by_name(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
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
    Ok(Json(Success::ok()))
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
    let key = key_of(req);
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
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let key = key_of(req);
    state.write(move |tx| rules::delete(tx, &who, ip, &key)).await?;
    Ok(Json(Success::ok()))
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
        .push(Router::with_path("comms").push(viewer().get(messaging::comms)))
        .push(Router::with_path("message").push(operator().post(messaging::send_message)))
        .push(Router::with_path("sync").push(operator().post(gateway::sync)))
        .push(
            Router::with_path("{id}")
                .push(viewer().get(show))
                .push(operator().put(update).delete(delete))
                .push(
                    Router::with_path("heartbeat")
                        .push(viewer().get(runtime::heartbeat_poll))
                        .push(operator().post(runtime::heartbeat_report)),
                )
                .push(
                    Router::with_path("soul")
                        .push(viewer().get(runtime::get_soul))
                        .push(operator().put(runtime::put_soul)),
                )
                .push(
                    Router::with_path("memory")
                        .push(viewer().get(runtime::get_memory))
                        .push(operator().put(runtime::put_memory)),
                )
                .push(Router::with_path("wake").push(operator().post(runtime::wake))),
        );
    Router::new().push(agents).push(Router::with_path("connect").push(operator().post(messaging::connect)))
}
