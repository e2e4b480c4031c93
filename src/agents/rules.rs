//! Agent changes, each inside the caller's ONE write transaction together with what it implies: index
//! entries, audit and activity rows, and the SSE events published after the commit.
//!
//! Events: `agent.created`, `agent.deleted`, `agent.status` (data: id, name, status, previous_status) on
//! every status change, and `agent.updated` when any other shown field changes. A heartbeat that only
//! moves `last_seen` emits nothing.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::{Agent, AgentChanges, AgentMessage, AgentStatus, Connection, NewAgent, store};
use crate::activity::{self, NewActivity};
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Principal;
use crate::store::{StoreError, Tx, now_secs};

pub fn not_found() -> AppError {
    AppError::NotFound("Agent not found".into())
}

fn name_conflict() -> AppError {
    AppError::Conflict("Agent name already exists".into())
}

/// The agent an id-or-name path segment names, or 404 `Agent not found`.
pub fn require(tx: &Tx, key: &str) -> AppResult<Agent> {
    store::resolve_w(tx, key)?.ok_or_else(not_found)
}

fn event_data(agent: &Agent) -> Value {
    serde_json::to_value(agent).unwrap_or_default()
}

/// Creates an agent: 409 `Agent name already exists` when the name is taken. Audit and activity
/// `agent_created`, SSE `agent.created`.
pub fn create(tx: &mut Tx, who: &Principal, ip: IpAddr, new: NewAgent) -> AppResult<Agent> {
    if store::name_taken(tx, &new.name)? {
        return Err(name_conflict());
    }
    let agent = store::insert_agent(tx, new)?;
    audit::record(
        tx,
        Entry::by(who, ip, "agent_created", json!({"id": agent.id, "name": agent.name, "role": agent.role})),
    )?;
    activity::record(
        tx,
        NewActivity {
            kind: "agent_created",
            entity_type: "agent",
            entity_id: Some(agent.id),
            actor: &who.username,
            description: format!("Agent {} created", agent.name),
            data: json!({"name": agent.name, "role": agent.role, "status": agent.status}),
        },
    )?;
    tx.emit("agent.created", event_data(&agent));
    Ok(agent)
}

/// Applies validated changes; a rename to a name another agent has is 409.
pub fn update(tx: &mut Tx, actor: &str, before: Agent, changes: AgentChanges) -> AppResult<Agent> {
    if let Some(name) = changes.name.as_deref()
        && name != before.name
        && store::name_taken(tx, name)?
    {
        return Err(name_conflict());
    }
    let mut after = before.clone();
    changes.apply(&mut after);
    save(tx, actor, &before, &mut after)?;
    Ok(after)
}

fn shown_fields_changed(a: &Agent, b: &Agent) -> bool {
    a.name != b.name
        || a.role != b.role
        || a.session_key != b.session_key
        || a.soul_content != b.soul_content
        || a.config != b.config
        || a.last_activity != b.last_activity
}

/// Saves `after` (with its indexes) and emits what changed: `agent.status` plus an activity row for a
/// new status, `agent.updated` for other shown fields. `updated_at` moves only with such changes.
pub fn save(tx: &mut Tx, actor: &str, before: &Agent, after: &mut Agent) -> Result<(), StoreError> {
    let status_changed = before.status != after.status;
    let fields_changed = shown_fields_changed(before, after);
    if status_changed || fields_changed {
        after.updated_at = now_secs();
    }
    store::save_agent(tx, before, after)?;
    if status_changed {
        let (status, previous) = (after.status.as_str(), before.status.as_str());
        let data = json!({"id": after.id, "name": after.name, "status": status, "previous_status": previous});
        crate::webhooks::fire(tx, "agent.status_change", &data)?;
        if status == "error" {
            crate::webhooks::fire(tx, "agent.error", &data)?;
        }
        tx.emit("agent.status", data);
        activity::record(
            tx,
            NewActivity {
                kind: "agent_status_changed",
                entity_type: "agent",
                entity_id: Some(after.id),
                actor,
                description: format!("Agent {} is now {status} (was {previous})", after.name),
                data: json!({"status": status, "previous_status": previous}),
            },
        )?;
    }
    if fields_changed {
        tx.emit("agent.updated", event_data(after));
    }
    Ok(())
}

/// Deletes an agent with its indexes, memory and connections. Audit and activity `agent_deleted`, SSE
/// `agent.deleted`.
pub fn delete(tx: &mut Tx, who: &Principal, ip: IpAddr, key: &str) -> AppResult<Agent> {
    let agent = require(tx, key)?;
    store::delete_agent(tx, &agent)?;
    audit::record(tx, Entry::by(who, ip, "agent_deleted", json!({"id": agent.id, "name": agent.name})))?;
    activity::record(
        tx,
        NewActivity {
            kind: "agent_deleted",
            entity_type: "agent",
            entity_id: Some(agent.id),
            actor: &who.username,
            description: format!("Agent {} deleted", agent.name),
            data: json!({"name": agent.name}),
        },
    )?;
    tx.emit("agent.deleted", json!({"id": agent.id, "name": agent.name}));
    Ok(agent)
}

/// A sign of life: `last_seen = now`, and an `offline` agent becomes `online`.
pub fn touch(tx: &mut Tx, actor: &str, agent: &Agent) -> Result<Agent, StoreError> {
    let mut after = agent.clone();
    after.last_seen = Some(now_secs());
    if after.status == AgentStatus::Offline {
        after.status = AgentStatus::Online;
    }
    save(tx, actor, agent, &mut after)?;
    Ok(after)
}

/// Stores a message for the agent named `to` (404 `Agent not found` when there is none). The message is
/// delivered, and marked read, by the agent's next heartbeat poll.
pub fn insert_message(tx: &mut Tx, from: &str, to: &str, content: &str, kind: &str) -> Result<AgentMessage, AppError> {
    let recipient = store::find_by_name_w(tx, to)?.ok_or_else(not_found)?;
    Ok(store::put_message(tx, from, &recipient.name, content, kind)?)
}

/// Wake: a `wake` message from `system` carrying the reason, and `offline` → `idle`.
pub fn wake(tx: &mut Tx, actor: &str, key: &str, reason: &str) -> AppResult<(Agent, AgentMessage)> {
    let agent = require(tx, key)?;
    let message = store::put_message(tx, "system", &agent.name, reason, "wake")?;
    let mut after = agent.clone();
    if after.status == AgentStatus::Offline {
        after.status = AgentStatus::Idle;
    }
    save(tx, actor, &agent, &mut after)?;
    Ok((after, message))
}

/// A tool connection (`POST /api/connect`) as requested.
pub struct ConnectRequest {
    pub agent_name: String,
    pub agent_role: String,
    pub tool_name: Option<String>,
    pub tool_version: Option<String>,
    pub connection_id: String,
}

/// Finds the agent by name or creates it, sets it `online` (and `last_seen`), and records the
/// connection. Activity `connection_created`.
pub fn connect(tx: &mut Tx, who: &Principal, ip: IpAddr, req: ConnectRequest) -> AppResult<(Agent, Connection)> {
    let now = now_secs();
    let agent = match store::find_by_name_w(tx, &req.agent_name)? {
        Some(agent) => {
            let mut after = agent.clone();
            after.status = AgentStatus::Online;
            after.last_seen = Some(now);
            save(tx, &who.username, &agent, &mut after)?;
            after
        }
        None => {
            let new = NewAgent {
                name: req.agent_name.clone(),
                role: req.agent_role.clone(),
                status: AgentStatus::Online,
                session_key: None,
                soul_content: None,
                config: Value::Object(Default::default()),
            };
            let created = create(tx, who, ip, new)?;
            let mut after = created.clone();
            after.last_seen = Some(now);
            store::save_agent(tx, &created, &after)?;
            after
        }
    };
    let connection = Connection {
        connection_id: req.connection_id,
        agent_id: agent.id,
        agent_name: agent.name.clone(),
        tool_name: req.tool_name,
        tool_version: req.tool_version,
        created_at: now,
        last_heartbeat: None,
    };
    store::insert_connection(tx, &connection)?;
    activity::record(
        tx,
        NewActivity {
            kind: "connection_created",
            entity_type: "agent",
            entity_id: Some(agent.id),
            actor: &who.username,
            description: format!(
                "{} connected as agent {}",
                connection.tool_name.as_deref().unwrap_or("A tool"),
                agent.name
            ),
            data: json!({
                "connection_id": connection.connection_id,
                "agent_name": agent.name,
                "tool_name": connection.tool_name,
                "tool_version": connection.tool_version,
            }),
        },
    )?;
    Ok((agent, connection))
}

/// Records a heartbeat on a connection of this agent: 404 `Connection not found` when the id is unknown
/// or belongs to another agent.
pub fn connection_heartbeat(tx: &mut Tx, agent: &Agent, connection_id: &str) -> AppResult<()> {
    let mut connection = store::get_connection(tx, connection_id)?
        .filter(|c| c.agent_id == agent.id)
        .ok_or_else(|| AppError::NotFound("Connection not found".into()))?;
    connection.last_heartbeat = Some(now_secs());
    store::save_connection(tx, &connection)?;
    Ok(())
}
