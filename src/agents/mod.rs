//! Agents: the registry of AI agents, their status, soul and memory, agent-to-agent messages and tool
//! connections. This file holds the types and the validation rules; `rules.rs` the changes that run in
//! one write transaction, `store.rs` the tables, `workspace.rs` the files in an agent's workspace.

pub mod api;
pub mod rules;
pub mod store;
pub mod sync;
pub mod workspace;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::AppError;
use crate::tasks::TaskStats;

pub use rules::insert_message;
pub use store::{find_by_name, find_by_name_w};

/// Largest agent memory, serialized as JSON.
pub const MAX_MEMORY_BYTES: usize = 256 * 1024;
/// Most pending tasks a heartbeat poll returns.
pub const HEARTBEAT_TASK_LIMIT: usize = 20;
/// Most unread messages one heartbeat poll delivers (the rest stay unread for the next poll).
pub const HEARTBEAT_MESSAGE_LIMIT: usize = 100;

const MAX_NAME_CHARS: usize = 100;
const MAX_ROLE_CHARS: usize = 64;
const MAX_TYPE_CHARS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Online,
    Offline,
    Busy,
    Idle,
    Error,
}

impl AgentStatus {
    pub const ALL: [AgentStatus; 5] = [Self::Online, Self::Offline, Self::Busy, Self::Idle, Self::Error];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Online => "online",
            Self::Offline => "offline",
            Self::Busy => "busy",
            Self::Idle => "idle",
            Self::Error => "error",
        }
    }

    /// Parses a status; the error is the `status: ...` validation detail.
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| "status: must be one of online, offline, busy, idle, error".to_string())
    }
}

/// An agent as stored. Its memory lives in its own table (see `store.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: u64,
    pub name: String,
    pub role: String,
    pub status: AgentStatus,
    pub session_key: Option<String>,
    pub soul_content: Option<String>,
    /// Always a JSON object.
    pub config: Value,
    pub last_seen: Option<i64>,
    pub last_activity: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Agent {
    /// The workspace directory named by `config.workspace`, as written (not yet checked).
    pub fn workspace(&self) -> Option<&str> {
        self.config.get("workspace").and_then(Value::as_str).filter(|s| !s.is_empty())
    }

    /// The API shape with the agent's task counts.
    pub fn view(&self, task_stats: TaskStats) -> AgentView {
        AgentView {
            id: self.id,
            name: self.name.clone(),
            role: self.role.clone(),
            status: self.status,
            session_key: self.session_key.clone(),
            soul_content: self.soul_content.clone(),
            config: self.config.clone(),
            last_seen: self.last_seen,
            last_activity: self.last_activity.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            task_stats,
        }
    }
}

/// An agent as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "Agent"))]
pub struct AgentView {
    pub id: u64,
    pub name: String,
    pub role: String,
    pub status: AgentStatus,
    pub session_key: Option<String>,
    pub soul_content: Option<String>,
    /// Keys such as model, tools, identity, sandbox, memorySearch, workspace.
    pub config: Value,
    /// Unix seconds of the last heartbeat.
    pub last_seen: Option<i64>,
    pub last_activity: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(rename = "taskStats")]
    pub task_stats: TaskStats,
}

/// A message from one agent (or `system`, or a user) to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "AgentMessage"))]
pub struct AgentMessage {
    pub id: u64,
    pub from_agent: String,
    pub to_agent: String,
    pub content: String,
    /// e.g. `notification`, `request`, `wake`, `broadcast`.
    #[serde(rename = "type")]
    pub kind: String,
    pub created_at: i64,
    pub read_at: Option<i64>,
}

/// A tool's connection to the service (`POST /api/connect`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    pub connection_id: String,
    pub agent_id: u64,
    pub agent_name: String,
    pub tool_name: Option<String>,
    pub tool_version: Option<String>,
    pub created_at: i64,
    pub last_heartbeat: Option<i64>,
}

/// A validated new agent.
#[derive(Debug, Clone)]
pub struct NewAgent {
    pub name: String,
    pub role: String,
    pub status: AgentStatus,
    pub session_key: Option<String>,
    pub soul_content: Option<String>,
    pub config: Value,
}

/// A validated change to an agent; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct AgentChanges {
    pub name: Option<String>,
    pub role: Option<String>,
    pub status: Option<AgentStatus>,
    pub config: Option<Value>,
    /// `Some(None)` clears the session key.
    pub session_key: Option<Option<String>>,
    pub soul_content: Option<Option<String>>,
    pub last_activity: Option<String>,
}

impl AgentChanges {
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.role.is_none()
            && self.status.is_none()
            && self.config.is_none()
            && self.session_key.is_none()
            && self.soul_content.is_none()
            && self.last_activity.is_none()
    }

    pub fn apply(self, agent: &mut Agent) {
        if let Some(name) = self.name {
            agent.name = name;
        }
        if let Some(role) = self.role {
            agent.role = role;
        }
        if let Some(status) = self.status {
            agent.status = status;
        }
        if let Some(config) = self.config {
            agent.config = config;
        }
        if let Some(key) = self.session_key {
            agent.session_key = key;
        }
        if let Some(soul) = self.soul_content {
            agent.soul_content = soul;
        }
        if let Some(activity) = self.last_activity {
            agent.last_activity = Some(activity);
        }
    }
}

/// Collects `field: problem` lines into one 400 `Validation failed`.
#[derive(Debug, Default)]
pub struct Checks(Vec<String>);

impl Checks {
    pub fn check(&mut self, result: Result<(), String>) {
        if let Err(detail) = result {
            self.0.push(detail);
        }
    }

    /// The parsed value, or (when the problem is recorded) a default that `finish` never lets escape.
    pub fn take<T: Default>(&mut self, result: Result<T, String>) -> T {
        result.unwrap_or_else(|detail| {
            self.0.push(detail);
            T::default()
        })
    }

    pub fn finish(self) -> Result<(), AppError> {
        if self.0.is_empty() { Ok(()) } else { Err(AppError::Validation(self.0)) }
    }
}

/// An agent name: 1-100 characters after trimming, no control characters and no `/` (names appear in
/// paths such as `/api/agents/<name>`).
pub fn validate_name(name: &str) -> Result<(), String> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME_CHARS {
        return Err(format!("name: must be 1-{MAX_NAME_CHARS} characters"));
    }
    if name.chars().any(|c| c.is_control() || c == '/') {
        return Err("name: must not contain control characters or /".into());
    }
    Ok(())
}

/// An agent role (free text such as developer, analyst, qa): 1-64 characters, no control characters.
pub fn validate_role(role: &str) -> Result<(), String> {
    let n = role.chars().count();
    if n == 0 || n > MAX_ROLE_CHARS {
        return Err(format!("role: must be 1-{MAX_ROLE_CHARS} characters"));
    }
    if role.chars().any(char::is_control) {
        return Err("role: must not contain control characters".into());
    }
    Ok(())
}

/// A message type: 1-64 characters of letters, digits, `_`, `-` and `.`.
pub fn validate_message_type(kind: &str) -> Result<(), String> {
    let ok = kind.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if kind.is_empty() || kind.len() > MAX_TYPE_CHARS || !ok {
        return Err(format!("type: must be 1-{MAX_TYPE_CHARS} characters of letters, digits, _ - ."));
    }
    Ok(())
}

/// A JSON object field (`config`, `gateway_config`, `memory`).
pub fn as_object(field: &str, value: Value) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{field}: must be a JSON object")),
    }
}

/// The `workspace` key of a config, when present, must be a string.
pub fn validate_config(config: &Map<String, Value>) -> Result<(), String> {
    match config.get("workspace") {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
        Some(_) => Err("config.workspace: must be a string".into()),
    }
}

/// Memory must be a JSON object of at most [`MAX_MEMORY_BYTES`] when serialized.
pub fn validate_memory(memory: &Value) -> Result<(), AppError> {
    if !memory.is_object() {
        return Err(AppError::validation("memory", "must be a JSON object"));
    }
    let size = serde_json::to_vec(memory).map(|v| v.len()).map_err(AppError::internal)?;
    if size > MAX_MEMORY_BYTES {
        return Err(AppError::validation("memory", "must be at most 262144 bytes (256 KiB) when serialized"));
    }
    Ok(())
}

/// Built-in templates whose defaults `POST /api/agents {template}` merges into the config.
pub const TEMPLATES: [&str; 4] = ["developer", "analyst", "qa", "researcher"];

/// The default config of a built-in template, or `None` for an unknown name.
pub fn template_defaults(name: &str) -> Option<Map<String, Value>> {
    let (model, tools): (&str, &[&str]) = match name {
        "developer" => {
            ("anthropic/claude-sonnet-4-20250514", &["read", "write", "edit", "exec", "process", "web_fetch"])
        }
        "analyst" => ("anthropic/claude-sonnet-4-20250514", &["read", "web_search", "web_fetch", "exec"]),
        "qa" => ("anthropic/claude-sonnet-4-20250514", &["read", "exec", "process", "web_fetch"]),
        "researcher" => ("anthropic/claude-opus-4-5", &["read", "web_search", "web_fetch"]),
        _ => return None,
    };
    let mut map = Map::new();
    map.insert("model".into(), Value::from(model));
    map.insert("tools".into(), Value::from(tools.to_vec()));
    map.insert("template".into(), Value::from(name));
    Some(map)
}

/// Builds a new agent's config: template defaults, then `config`, then `gateway_config`, each later
/// source overriding top-level keys of the earlier ones.
pub fn merge_config(
    template: Option<Map<String, Value>>,
    config: Option<Map<String, Value>>,
    gateway_config: Option<Map<String, Value>>,
) -> Value {
    let mut merged = template.unwrap_or_default();
    for source in [config, gateway_config].into_iter().flatten() {
        merged.extend(source);
    }
    Value::Object(merged)
}

/// Trims an optional text field; empty means absent.
pub fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// A random (version 4) UUID in its canonical text form.
pub fn uuid_v4() -> Result<String, AppError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| AppError::Internal(format!("random source: {e}")))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    Ok(format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_parse_and_print() {
        for s in AgentStatus::ALL {
            assert_eq!(AgentStatus::parse(s.as_str()).unwrap(), s);
        }
        assert!(AgentStatus::parse("sleeping").is_err());
        assert!(AgentStatus::parse("Online").is_err());
    }

    #[test]
    fn names_and_roles() {
        assert!(validate_name("Aegis the Guardian").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a/b").is_err());
        assert!(validate_name("a\nb").is_err());
        assert!(validate_name(&"x".repeat(101)).is_err());
        assert!(validate_role("developer").is_ok());
        assert!(validate_role("").is_err());
        assert!(validate_role("dev\u{7}").is_err());
    }

    #[test]
    fn merge_order_is_template_then_config_then_gateway_config() {
        let merged = merge_config(
            template_defaults("developer"),
            Some(json!({"model": "mine", "workspace": "/w"}).as_object().cloned().unwrap()),
            Some(json!({"workspace": "/gw"}).as_object().cloned().unwrap()),
        );
        assert_eq!(merged["model"], "mine");
        assert_eq!(merged["workspace"], "/gw");
        assert!(merged["tools"].as_array().unwrap().contains(&json!("exec")));
        assert!(template_defaults("wizard").is_none());
    }

    #[test]
    fn memory_limits() {
        assert!(validate_memory(&json!({"a": 1})).is_ok());
        assert!(validate_memory(&json!([1])).is_err());
        let big = "x".repeat(MAX_MEMORY_BYTES);
        assert!(validate_memory(&json!({ "a": big })).is_err());
    }

    #[test]
    fn uuids_are_version_4() {
        let u = uuid_v4().unwrap();
        assert_eq!(u.len(), 36);
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert!(parts[2].starts_with('4'));
        assert!("89ab".contains(&parts[3][..1]));
        assert_ne!(u, uuid_v4().unwrap());
    }
}
