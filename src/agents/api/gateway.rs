//! The agent endpoints that talk to a gateway: sync, and the gateway side of wake and create.

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::Serialize;
use serde_json::{Value, json};

use super::super::sync::{Described, describe};
use super::super::{AgentChanges, AgentStatus, NewAgent, rules, store};
use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::gateways::{GatewayRecord, client};
use crate::http::Json;
use crate::http::{app, client_ip, require_principal};

/// The gateway an agent's config prefers (`preferred_gateway`, e.g. from `gateway_config`), else the primary.
pub async fn gateway_for(state: &AppState, config: &Value) -> AppResult<Option<GatewayRecord>> {
    let preferred = config
        .get("preferred_gateway")
        .or_else(|| config.pointer("/gateway_config/preferred_gateway"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(state
        .store
        .read(move |tx| {
            if let Some(name) = preferred
                && let Some(g) = crate::gateways::store::find_by_name(tx, &name)?
            {
                return Ok(Some(g));
            }
            crate::gateways::store::primary(tx)
        })
        .await?)
}

/// Asks the agent's gateway to wake it; best effort (the wake message is stored either way).
pub async fn nudge(state: &AppState, config: &Value, session_key: Option<&str>, reason: &str) -> bool {
    let Ok(Some(gateway)) = gateway_for(state, config).await else { return false };
    let body = json!({"action": "wake", "session_key": session_key, "reason": reason});
    match client::control_body(&state.http, &gateway, &body).await {
        Ok(_) => true,
        Err(e) => {
            tracing::info!(gateway = %gateway.name, error = %e, "wake not delivered to the gateway");
            false
        }
    }
}

/// Spawns an agent through its gateway (`write_to_gateway`); errors when no gateway takes it.
pub async fn spawn(state: &AppState, name: &str, config: &Value, session_key: Option<&str>) -> AppResult<Value> {
    let gateway = gateway_for(state, config)
        .await?
        .ok_or_else(|| AppError::validation("write_to_gateway", "no gateway is registered"))?;
    let body = json!({
        "agent": name,
        "task": format!("Register agent {name}"),
        "model": config.get("model").and_then(Value::as_str),
        "session_key": session_key,
    });
    client::spawn(&state.http, &gateway, &body)
        .await
        .map_err(|e| AppError::Upstream(format!("Gateway {} did not spawn the agent: {e}", gateway.name)))
}

#[derive(Serialize, ToSchema)]
pub struct SyncedAgent {
    pub id: u64,
    pub name: String,
    /// `created`, `updated` or `unchanged`.
    pub action: String,
}

#[derive(Serialize, ToSchema)]
pub struct SyncResult {
    pub synced: usize,
    pub created: usize,
    pub updated: usize,
    pub agents: Vec<SyncedAgent>,
    /// `gateway` or `file`.
    pub source: String,
}

/// The agent configuration: the primary gateway's `GET /config`, else the configuration file.
async fn load_config(state: &AppState) -> AppResult<(Value, std::path::PathBuf, &'static str)> {
    let home = state.config.agw_home.clone();
    if let Some(gateway) = state.store.read(crate::gateways::store::primary).await? {
        match client::config(&state.http, &gateway).await {
            Ok(doc) if doc.pointer("/agents/list").is_some() => return Ok((doc, home, "gateway")),
            Ok(_) => tracing::info!(gateway = %gateway.name, "gateway config has no agents.list; reading the file"),
            Err(e) => {
                tracing::info!(gateway = %gateway.name, error = %e, "gateway config unavailable; reading the file")
            }
        }
    }
    let path = state.config.agw_config_path.clone();
    let text = tokio::fs::read_to_string(&path).await.map_err(|e| {
        AppError::Upstream(format!("The gateway is unreachable and {} cannot be read: {e}", path.display()))
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| AppError::Upstream(format!("{} is not valid JSON: {e}", path.display())))?;
    let base = path.parent().map(|p| p.to_path_buf()).unwrap_or(home);
    Ok((doc, base, "file"))
}

/// What changes an existing agent needs to match its description.
fn changes_for(current: &super::super::Agent, d: &Described) -> AgentChanges {
    let mut changes = AgentChanges::default();
    if current.role != d.role {
        changes.role = Some(d.role.clone());
    }
    let mut config = current.config.clone();
    if let (Value::Object(target), Value::Object(source)) = (&mut config, &d.config) {
        for (k, v) in source {
            target.insert(k.clone(), v.clone());
        }
    }
    if config != current.config {
        changes.config = Some(config);
    }
    if let Some(soul) = &d.soul
        && current.soul_content.as_deref() != Some(soul.as_str())
    {
        changes.soul_content = Some(Some(soul.clone()));
    }
    changes
}

/// Create and update agents from the gateway's configuration (file fallback). Operator.
#[endpoint(tags("agents"))]
pub async fn sync(depot: &mut Depot) -> AppResult<Json<SyncResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let (doc, base, source) = load_config(&state).await?;
    let described = tokio::task::spawn_blocking(move || describe(&doc, &base)).await.map_err(AppError::internal)?;
    let agents = state
        .write(move |tx| {
            let mut out = Vec::new();
            for d in described {
                match store::find_by_name_w(tx, &d.name)? {
                    Some(current) => {
                        let changes = changes_for(&current, &d);
                        if changes.is_empty() {
                            out.push(SyncedAgent { id: current.id, name: current.name, action: "unchanged".into() });
                        } else {
                            let after = rules::update(tx, &who.username, current, changes)?;
                            out.push(SyncedAgent { id: after.id, name: after.name, action: "updated".into() });
                        }
                    }
                    None => {
                        let new = NewAgent {
                            name: d.name,
                            role: d.role,
                            status: AgentStatus::Offline,
                            session_key: None,
                            soul_content: d.soul,
                            config: d.config,
                        };
                        let agent = rules::create(tx, &who, ip, new)?;
                        out.push(SyncedAgent { id: agent.id, name: agent.name, action: "created".into() });
                    }
                }
            }
            Ok(out)
        })
        .await?;
    let count = |a: &str| agents.iter().filter(|s| s.action == a).count();
    Ok(Json(SyncResult {
        synced: agents.len(),
        created: count("created"),
        updated: count("updated"),
        agents,
        source: source.into(),
    }))
}
