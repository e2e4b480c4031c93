//! Agent messages, the comms log and tool connections (`POST /api/connect`).

use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::{Deserialize, Serialize};

use super::MAX_CONTENT_BYTES;
use crate::agents::rules::{self, ConnectRequest};
use crate::agents::{
    AgentMessage, Checks, non_empty, store, uuid_v4, validate_message_type, validate_name, validate_role,
};
use crate::error::AppResult;
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::{app, client_ip, json_body, require_principal};

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
