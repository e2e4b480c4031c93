//! Agent gateways: the registry, the health rule and the outbound protocol (`client.rs`); `sim.rs` is
//! a simulated gateway for tests and the demo.

pub mod api;
pub mod client;
pub mod sim;
pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

/// Consecutive failed health checks after which a gateway is `offline`.
pub const OFFLINE_AFTER_FAILURES: u32 = 3;
pub const DEFAULT_PORT: u16 = 18789;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GatewayRecord {
    pub id: u64,
    pub name: String,
    pub host: String,
    pub port: u16,
    pub token: Option<String>,
    pub is_primary: bool,
    pub status: String,
    pub last_seen: Option<i64>,
    pub latency: Option<u64>,
    pub sessions_count: u64,
    pub agents_count: u64,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default)]
    pub consecutive_failures: u32,
}

impl GatewayRecord {
    pub fn base_url(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }

    /// Applies one health-check result: success → online; 3 consecutive failures → offline; a failure
    /// after success → degraded.
    pub fn apply_health(&mut self, result: &Result<u64, String>, now: i64) {
        match result {
            Ok(latency) => {
                self.status = "online".into();
                self.last_seen = Some(now);
                self.latency = Some(*latency);
                self.consecutive_failures = 0;
            }
            Err(_) => {
                self.consecutive_failures += 1;
                if self.consecutive_failures >= OFFLINE_AFTER_FAILURES {
                    self.status = "offline".into();
                } else if matches!(self.status.as_str(), "online" | "degraded") {
                    self.status = "degraded".into();
                }
            }
        }
        self.updated_at = now;
    }
}

/// A gateway as the API shows it: the token never leaves the server.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "Gateway"))]
pub struct Gateway {
    pub id: u64,
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Always redacted: `********` when set, empty otherwise.
    pub token: String,
    pub token_set: bool,
    pub is_primary: bool,
    /// `online`, `offline`, `degraded` or `unknown`.
    pub status: String,
    pub last_seen: Option<i64>,
    pub latency: Option<u64>,
    pub sessions_count: u64,
    pub agents_count: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&GatewayRecord> for Gateway {
    fn from(g: &GatewayRecord) -> Self {
        let token_set = g.token.as_deref().is_some_and(|t| !t.is_empty());
        Self {
            id: g.id,
            name: g.name.clone(),
            host: g.host.clone(),
            port: g.port,
            token: if token_set { "********".into() } else { String::new() },
            token_set,
            is_primary: g.is_primary,
            status: g.status.clone(),
            last_seen: g.last_seen,
            latency: g.latency,
            sessions_count: g.sessions_count,
            agents_count: g.agents_count,
            created_at: g.created_at,
            updated_at: g.updated_at,
        }
    }
}

/// A hostname or IP literal: no scheme, path, spaces or port.
pub fn validate_host(host: &str) -> Result<(), String> {
    let ok_chars = host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]_".contains(c));
    if host.is_empty() || host.len() > 253 || !ok_chars || host.contains("://") {
        return Err("host: must be a hostname or IP address (no scheme, path or spaces)".into());
    }
    Ok(())
}

pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > 100 {
        return Err("name: must be 1-100 characters".into());
    }
    Ok(())
}

pub const STATUSES: [&str; 4] = ["online", "offline", "degraded", "unknown"];

#[cfg(test)]
mod tests {
    use super::*;

    fn gw(status: &str) -> GatewayRecord {
        GatewayRecord {
            id: 1,
            name: "g".into(),
            host: "127.0.0.1".into(),
            port: 1,
            token: None,
            is_primary: true,
            status: status.into(),
            last_seen: None,
            latency: None,
            sessions_count: 0,
            agents_count: 0,
            created_at: 0,
            updated_at: 0,
            consecutive_failures: 0,
        }
    }

    #[test]
    fn health_transitions() {
        let mut g = gw("unknown");
        g.apply_health(&Ok(12), 100);
        assert_eq!((g.status.as_str(), g.last_seen, g.latency), ("online", Some(100), Some(12)));
        let fail = Err("down".to_string());
        g.apply_health(&fail, 101);
        assert_eq!(g.status, "degraded");
        g.apply_health(&fail, 102);
        assert_eq!(g.status, "degraded");
        g.apply_health(&fail, 103);
        assert_eq!(g.status, "offline");
        assert_eq!(g.last_seen, Some(100), "last_seen is the last success");
        g.apply_health(&Ok(5), 104);
        assert_eq!((g.status.as_str(), g.consecutive_failures), ("online", 0));
        let mut fresh = gw("unknown");
        fresh.apply_health(&fail, 1);
        assert_eq!(fresh.status, "unknown", "never seen: not degraded yet");
    }

    #[test]
    fn host_validation() {
        for ok in ["localhost", "10.0.0.2", "gw-1.lan", "::1", "[::1]"] {
            assert!(validate_host(ok).is_ok(), "{ok}");
        }
        for bad in ["", "http://x", "a b", "x/y", "host:80/path"] {
            assert!(validate_host(bad).is_err(), "{bad}");
        }
    }
}
