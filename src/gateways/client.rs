//! The outbound gateway protocol (JSON over HTTP, `Authorization: Bearer <token>` when set):
//! `GET /health`, `GET /sessions`, `POST /control`, `POST /spawn`, `GET /config`. Every call is bounded by
//! the shared client's 10 s timeout; garbage answers are errors, never panics.

use std::time::Instant;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::GatewayRecord;

/// A session as a gateway reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct GatewaySession {
    pub id: String,
    pub key: String,
    pub agent: String,
    pub kind: String,
    pub model: String,
    pub channel: String,
    /// `active`, `paused` or `completed`.
    pub status: String,
    pub total_tokens: u64,
    pub context_tokens: Option<u64>,
    /// Seconds.
    pub start_time: i64,
    /// Seconds.
    pub updated_at: i64,
    pub flags: Vec<String>,
}

async fn call(
    client: &reqwest::Client,
    gw: &GatewayRecord,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    let mut request = client.request(method, format!("{}{path}", gw.base_url()));
    if let Some(token) = gw.token.as_deref().filter(|t| !t.is_empty()) {
        request = request.bearer_auth(token);
    }
    if let Some(b) = body {
        request = request.json(b);
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() { "gateway timed out".to_string() } else { format!("gateway unreachable: {e}") }
    })?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("gateway response unreadable: {e}"))?;
    if !status.is_success() {
        return Err(format!("gateway answered HTTP {}", status.as_u16()));
    }
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text).map_err(|_| "gateway answered with invalid JSON".to_string())
}

/// `GET /health`: 2xx is healthy; returns the latency (ms) and the body as details.
pub async fn health(client: &reqwest::Client, gw: &GatewayRecord) -> (Result<u64, String>, Value) {
    let started = Instant::now();
    let mut request = client.get(format!("{}/health", gw.base_url()));
    if let Some(token) = gw.token.as_deref().filter(|t| !t.is_empty()) {
        request = request.bearer_auth(token);
    }
    match request.send().await {
        Ok(res) if res.status().is_success() => {
            let latency = started.elapsed().as_millis() as u64;
            let details = res.json::<Value>().await.unwrap_or(Value::Null);
            (Ok(latency), details)
        }
        Ok(res) => (Err(format!("gateway answered HTTP {}", res.status().as_u16())), Value::Null),
        Err(e) if e.is_timeout() => (Err("gateway timed out".into()), Value::Null),
        Err(e) => (Err(format!("gateway unreachable: {e}")), Value::Null),
    }
}

pub async fn sessions(client: &reqwest::Client, gw: &GatewayRecord) -> Result<Vec<GatewaySession>, String> {
    let body = call(client, gw, Method::GET, "/sessions", None).await?;
    let list = body.get("sessions").cloned().unwrap_or(body);
    serde_json::from_value(list).map_err(|_| "gateway sessions are not in the expected shape".to_string())
}

pub async fn control(client: &reqwest::Client, gw: &GatewayRecord, session: &str, action: &str) -> Result<(), String> {
    let body = serde_json::json!({"session": session, "action": action});
    call(client, gw, Method::POST, "/control", Some(&body)).await.map(|_| ())
}

pub async fn control_body(client: &reqwest::Client, gw: &GatewayRecord, body: &Value) -> Result<Value, String> {
    call(client, gw, Method::POST, "/control", Some(body)).await
}

pub async fn spawn(client: &reqwest::Client, gw: &GatewayRecord, body: &Value) -> Result<Value, String> {
    call(client, gw, Method::POST, "/spawn", Some(body)).await
}

pub async fn config(client: &reqwest::Client, gw: &GatewayRecord) -> Result<Value, String> {
    call(client, gw, Method::GET, "/config", None).await
}
