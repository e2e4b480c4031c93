//! Repository functions over the agent tables. A record and its indexes change in the caller's write
//! transaction; lists and filters walk indexes and decode only the page they return.

use std::iter::Peekable;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Agent, AgentMessage, AgentStatus, Connection, NewAgent};
use crate::store::schema::{
    AGENT_CONNECTIONS, AGENT_CONNECTIONS_BY_AGENT, AGENT_MEMORY, AGENT_MESSAGES, AGENT_MESSAGES_BY_RECIPIENT,
    AGENT_MESSAGES_BY_SENDER, AGENT_MESSAGES_UNREAD, AGENTS, AGENTS_BY_NAME, AGENTS_BY_ROLE, AGENTS_BY_STATUS,
};
use crate::store::{StoreError, decode, encode, get, next_id, now_secs, put};

type Index = TableDefinition<'static, (&'static str, u64), ()>;

fn id_by_name(table: &impl ReadableTable<&'static str, u64>, name: &str) -> Result<Option<u64>, StoreError> {
    Ok(table.get(name)?.map(|v| v.value()))
}

pub fn get_agent(tx: &ReadTransaction, id: u64) -> Result<Option<Agent>, StoreError> {
    get(&tx.open_table(AGENTS)?, id)
}

pub fn get_agent_w(tx: &WriteTransaction, id: u64) -> Result<Option<Agent>, StoreError> {
    get(&tx.open_table(AGENTS)?, id)
}

/// The agent with exactly this name.
pub fn find_by_name(tx: &ReadTransaction, name: &str) -> Result<Option<Agent>, StoreError> {
    match id_by_name(&tx.open_table(AGENTS_BY_NAME)?, name)? {
        Some(id) => get_agent(tx, id),
        None => Ok(None),
    }
}

/// [`find_by_name`] inside a write transaction.
pub fn find_by_name_w(tx: &WriteTransaction, name: &str) -> Result<Option<Agent>, StoreError> {
    match id_by_name(&tx.open_table(AGENTS_BY_NAME)?, name)? {
        Some(id) => get_agent_w(tx, id),
        None => Ok(None),
    }
}

/// The agent a path segment names: its id when the segment is a number of an existing agent, else its
/// exact name.
pub fn resolve(tx: &ReadTransaction, key: &str) -> Result<Option<Agent>, StoreError> {
    if let Some(agent) = key.parse::<u64>().ok().map(|id| get_agent(tx, id)).transpose()?.flatten() {
        return Ok(Some(agent));
    }
    find_by_name(tx, key)
}

/// [`resolve`] inside a write transaction.
pub fn resolve_w(tx: &WriteTransaction, key: &str) -> Result<Option<Agent>, StoreError> {
    if let Some(agent) = key.parse::<u64>().ok().map(|id| get_agent_w(tx, id)).transpose()?.flatten() {
        return Ok(Some(agent));
    }
    find_by_name_w(tx, key)
}

pub fn name_taken(tx: &WriteTransaction, name: &str) -> Result<bool, StoreError> {
    Ok(id_by_name(&tx.open_table(AGENTS_BY_NAME)?, name)?.is_some())
}

/// Inserts an agent with its indexes; the caller has checked that the name is free.
pub fn insert_agent(tx: &WriteTransaction, new: NewAgent) -> Result<Agent, StoreError> {
    let now = now_secs();
    let agent = Agent {
        id: next_id(tx, "agents")?,
        name: new.name,
        role: new.role,
        status: new.status,
        session_key: new.session_key,
        soul_content: new.soul_content,
        config: new.config,
        last_seen: None,
        last_activity: None,
        created_at: now,
        updated_at: now,
    };
    put(tx, AGENTS, agent.id, &agent)?;
    tx.open_table(AGENTS_BY_NAME)?.insert(agent.name.as_str(), agent.id)?;
    tx.open_table(AGENTS_BY_STATUS)?.insert((agent.status.as_str(), agent.id), ())?;
    tx.open_table(AGENTS_BY_ROLE)?.insert((agent.role.as_str(), agent.id), ())?;
    Ok(agent)
}

/// Saves a changed agent and moves its index entries when name, status or role changed. The caller has
/// checked that a new name is free.
pub fn save_agent(tx: &WriteTransaction, before: &Agent, after: &Agent) -> Result<(), StoreError> {
    put(tx, AGENTS, after.id, after)?;
    if before.name != after.name {
        let mut names = tx.open_table(AGENTS_BY_NAME)?;
        names.remove(before.name.as_str())?;
        names.insert(after.name.as_str(), after.id)?;
    }
    if before.status != after.status {
        let mut statuses = tx.open_table(AGENTS_BY_STATUS)?;
        statuses.remove((before.status.as_str(), before.id))?;
        statuses.insert((after.status.as_str(), after.id), ())?;
    }
    if before.role != after.role {
        let mut roles = tx.open_table(AGENTS_BY_ROLE)?;
        roles.remove((before.role.as_str(), before.id))?;
        roles.insert((after.role.as_str(), after.id), ())?;
    }
    Ok(())
}

/// Removes an agent, its indexes, its memory, its connections and its unread-message entries. Its
/// messages stay in the history.
pub fn delete_agent(tx: &WriteTransaction, agent: &Agent) -> Result<(), StoreError> {
    tx.open_table(AGENTS)?.remove(agent.id)?;
    tx.open_table(AGENTS_BY_NAME)?.remove(agent.name.as_str())?;
    tx.open_table(AGENTS_BY_STATUS)?.remove((agent.status.as_str(), agent.id))?;
    tx.open_table(AGENTS_BY_ROLE)?.remove((agent.role.as_str(), agent.id))?;
    tx.open_table(AGENT_MEMORY)?.remove(agent.id)?;
    let connections: Vec<String> = {
        let index = tx.open_table(AGENT_CONNECTIONS_BY_AGENT)?;
        let rows = index.range((agent.id, "")..(agent.id + 1, ""))?;
        rows.map(|r| r.map(|(k, _)| k.value().1.to_string())).collect::<Result<_, _>>()?
    };
    let mut index = tx.open_table(AGENT_CONNECTIONS_BY_AGENT)?;
    let mut table = tx.open_table(AGENT_CONNECTIONS)?;
    for id in &connections {
        table.remove(id.as_str())?;
        index.remove((agent.id, id.as_str()))?;
    }
    let unread = index_ids_asc(tx, AGENT_MESSAGES_UNREAD, &agent.name, usize::MAX)?;
    let mut unread_table = tx.open_table(AGENT_MESSAGES_UNREAD)?;
    for id in unread {
        unread_table.remove((agent.name.as_str(), id))?;
    }
    Ok(())
}

/// Filters of `GET /api/agents`.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub status: Option<AgentStatus>,
    pub role: Option<String>,
}

/// One page of agents in id (creation) order, with the number of agents that match. Walks the status or
/// role index when a filter is given; decodes only the page (and, with both filters, the status
/// matches).
pub fn list(tx: &ReadTransaction, f: &Filter, limit: usize, offset: usize) -> Result<(Vec<Agent>, usize), StoreError> {
    let table = tx.open_table(AGENTS)?;
    let index_range = |def: Index, key: &str| -> Result<Vec<u64>, StoreError> {
        let t = tx.open_table(def)?;
        let rows = t.range((key, 0)..=(key, u64::MAX))?;
        rows.map(|r| r.map(|(k, _)| k.value().1).map_err(StoreError::from)).collect()
    };
    let ids: Vec<u64> = match (&f.status, &f.role) {
        (Some(status), Some(role)) => {
            let mut ids = Vec::new();
            for id in index_range(AGENTS_BY_STATUS, status.as_str())? {
                if get::<Agent>(&table, id)?.is_some_and(|a| a.role == *role) {
                    ids.push(id);
                }
            }
            ids
        }
        (Some(status), None) => index_range(AGENTS_BY_STATUS, status.as_str())?,
        (None, Some(role)) => index_range(AGENTS_BY_ROLE, role)?,
        (None, None) => {
            let total = usize::try_from(table.len()?).unwrap_or(usize::MAX);
            let mut page = Vec::new();
            for row in table.iter()?.skip(offset).take(limit) {
                page.push(decode(row?.1.value())?);
            }
            return Ok((page, total));
        }
    };
    let mut page = Vec::new();
    for id in ids.iter().skip(offset).take(limit) {
        if let Some(agent) = get(&table, *id)? {
            page.push(agent);
        }
    }
    Ok((page, ids.len()))
}

/// Ids of the agents with `status`, in id order (the status index; for the heartbeat check).
pub fn ids_with_status(tx: &WriteTransaction, status: AgentStatus) -> Result<Vec<u64>, StoreError> {
    let index = tx.open_table(AGENTS_BY_STATUS)?;
    let key = status.as_str();
    let rows = index.range((key, 0)..=(key, u64::MAX))?;
    Ok(rows.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<_, _>>()?)
}

/// Memory as stored: the JSON text of an object.
#[derive(Serialize, Deserialize)]
struct MemoryRecord {
    json: String,
    updated_at: i64,
}

/// An agent's memory; an empty object when none was stored.
pub fn get_memory(tx: &ReadTransaction, agent_id: u64) -> Result<Value, StoreError> {
    let table = tx.open_table(AGENT_MEMORY)?;
    match table.get(agent_id)? {
        Some(v) => {
            let record: MemoryRecord = decode(v.value())?;
            serde_json::from_str(&record.json).map_err(|e| StoreError::Codec(e.to_string()))
        }
        None => Ok(Value::Object(Default::default())),
    }
}

pub fn set_memory(tx: &WriteTransaction, agent_id: u64, memory: &Value) -> Result<(), StoreError> {
    let json = serde_json::to_string(memory).map_err(|e| StoreError::Codec(e.to_string()))?;
    let bytes = encode(&MemoryRecord { json, updated_at: now_secs() })?;
    tx.open_table(AGENT_MEMORY)?.insert(agent_id, bytes.as_slice())?;
    Ok(())
}

/// Stores a message with its sender, recipient and unread index entries.
pub fn put_message(
    tx: &WriteTransaction,
    from: &str,
    to: &str,
    content: &str,
    kind: &str,
) -> Result<AgentMessage, StoreError> {
    let message = AgentMessage {
        id: next_id(tx, "agent_messages")?,
        from_agent: from.to_string(),
        to_agent: to.to_string(),
        content: content.to_string(),
        kind: kind.to_string(),
        created_at: now_secs(),
        read_at: None,
    };
    put(tx, AGENT_MESSAGES, message.id, &message)?;
    tx.open_table(AGENT_MESSAGES_BY_RECIPIENT)?.insert((to, message.id), ())?;
    tx.open_table(AGENT_MESSAGES_BY_SENDER)?.insert((from, message.id), ())?;
    tx.open_table(AGENT_MESSAGES_UNREAD)?.insert((to, message.id), ())?;
    Ok(message)
}

/// Up to `limit` ids under one key of a `(key, id)` index, oldest first.
fn index_ids_asc(tx: &WriteTransaction, def: Index, key: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
    let table = tx.open_table(def)?;
    let rows = table.range((key, 0)..=(key, u64::MAX))?;
    rows.take(limit).map(|r| r.map(|(k, _)| k.value().1).map_err(StoreError::from)).collect()
}

/// Takes up to `limit` unread messages of `agent`, oldest first, and marks them read at `now`.
pub fn take_unread(
    tx: &WriteTransaction,
    agent: &str,
    limit: usize,
    now: i64,
) -> Result<Vec<AgentMessage>, StoreError> {
    let ids = index_ids_asc(tx, AGENT_MESSAGES_UNREAD, agent, limit)?;
    let mut unread = tx.open_table(AGENT_MESSAGES_UNREAD)?;
    let mut table = tx.open_table(AGENT_MESSAGES)?;
    let mut messages = Vec::with_capacity(ids.len());
    for id in ids {
        unread.remove((agent, id))?;
        let Some(mut message) = get::<AgentMessage>(&table, id)? else { continue };
        message.read_at = Some(now);
        table.insert(id, encode(&message)?.as_slice())?;
        messages.push(message);
    }
    Ok(messages)
}

/// Ids under one key of a `(key, id)` index, newest first, read lazily.
fn ids_desc<'t>(
    table: &'t redb::ReadOnlyTable<(&'static str, u64), ()>,
    key: &str,
) -> Result<impl Iterator<Item = Result<u64, StoreError>> + 't, StoreError> {
    let rows = table.range((key, 0)..=(key, u64::MAX))?;
    Ok(rows.rev().map(|r| r.map(|(k, _)| k.value().1).map_err(StoreError::from)))
}

/// Merges two newest-first id streams into one, without duplicates.
fn merge_desc<A, B>(mut a: Peekable<A>, mut b: Peekable<B>, limit: usize) -> Result<Vec<u64>, StoreError>
where
    A: Iterator<Item = Result<u64, StoreError>>,
    B: Iterator<Item = Result<u64, StoreError>>,
{
    let mut out: Vec<u64> = Vec::new();
    while out.len() < limit {
        let next = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(Err(_)), _) | (Some(Ok(_)), None) => a.next(),
            (_, Some(Err(_))) | (None, Some(Ok(_))) => b.next(),
            (Some(Ok(x)), Some(Ok(y))) => {
                if x >= y {
                    a.next()
                } else {
                    b.next()
                }
            }
        };
        let Some(id) = next.transpose()? else { break };
        if out.last() != Some(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Messages newest first: those sent or received by `agent`, or all when `agent` is `None`.
pub fn comms(tx: &ReadTransaction, agent: Option<&str>, limit: usize) -> Result<Vec<AgentMessage>, StoreError> {
    let table = tx.open_table(AGENT_MESSAGES)?;
    let Some(agent) = agent else {
        return table.iter()?.rev().take(limit).map(|r| decode(r?.1.value())).collect();
    };
    let received = tx.open_table(AGENT_MESSAGES_BY_RECIPIENT)?;
    let sent = tx.open_table(AGENT_MESSAGES_BY_SENDER)?;
    let ids = merge_desc(ids_desc(&received, agent)?.peekable(), ids_desc(&sent, agent)?.peekable(), limit)?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(message) = get(&table, id)? {
            out.push(message);
        }
    }
    Ok(out)
}

pub fn insert_connection(tx: &WriteTransaction, connection: &Connection) -> Result<(), StoreError> {
    let bytes = encode(connection)?;
    let id = connection.connection_id.as_str();
    tx.open_table(AGENT_CONNECTIONS)?.insert(id, bytes.as_slice())?;
    tx.open_table(AGENT_CONNECTIONS_BY_AGENT)?.insert((connection.agent_id, id), ())?;
    Ok(())
}

pub fn get_connection(tx: &WriteTransaction, connection_id: &str) -> Result<Option<Connection>, StoreError> {
    match tx.open_table(AGENT_CONNECTIONS)?.get(connection_id)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// Saves a connection whose agent has not changed.
pub fn save_connection(tx: &WriteTransaction, connection: &Connection) -> Result<(), StoreError> {
    let bytes = encode(connection)?;
    tx.open_table(AGENT_CONNECTIONS)?.insert(connection.connection_id.as_str(), bytes.as_slice())?;
    Ok(())
}
