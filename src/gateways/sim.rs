//! `opsdeck gateway-sim`: a simulated agent gateway speaking the protocol of `client.rs`, with a few
//! agents, live sessions whose token counts grow, a config document, and control/spawn that change its
//! state. Tests run it in-process on a loopback port; `--demo` uses it too.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use salvo::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::GatewaySession;
use crate::http::Json;
use crate::store::now_secs;

struct SimSession {
    session: GatewaySession,
    /// Tokens added per second while active.
    rate: u64,
    /// When the count was last brought up to date.
    counted_at: i64,
}

pub struct Simulator {
    token: Option<String>,
    sessions: Mutex<Vec<SimSession>>,
    workspace_root: String,
}

impl Simulator {
    pub fn new(token: Option<String>) -> Self {
        let now = now_secs();
        let s = |id: &str, agent: &str, kind: &str, model: &str, channel: &str, tokens: u64, age: i64, rate: u64| {
            SimSession {
                session: GatewaySession {
                    id: id.into(),
                    key: id.split(':').nth(1).unwrap_or(id).into(),
                    agent: agent.into(),
                    kind: kind.into(),
                    model: model.into(),
                    channel: channel.into(),
                    status: "active".into(),
                    total_tokens: tokens,
                    context_tokens: Some(200_000),
                    start_time: now - age - 3600,
                    updated_at: now - age,
                    flags: vec![],
                },
                rate,
                counted_at: now,
            }
        };
        let mut cron_old = s("gatekeeper:review", "gatekeeper", "cron", "claude-opus-4-5", "internal", 4_000, 7200, 0);
        cron_old.session.flags = vec!["cron".into()];
        let mut cron_new = s("gatekeeper:review", "gatekeeper", "cron", "claude-opus-4-5", "internal", 9_500, 120, 0);
        cron_new.session.flags = vec!["cron".into()];
        let sessions = vec![
            s("builder:main", "builder", "chat", "anthropic/claude-sonnet-4-20250514", "discord", 12_400, 30, 40),
            s("scout:research", "scout", "chat", "ollama/qwen2.5-coder:14b", "slack", 1_500_000, 5400, 10),
            // Cron runs share their parent's id: the newer entry wins when listed.
            cron_old,
            cron_new,
        ];
        Self { token, sessions: Mutex::new(sessions), workspace_root: "/var/lib/agw/workspaces".into() }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Vec<SimSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Brings token counts up to date: active sessions grow.
    fn snapshot(&self) -> Vec<GatewaySession> {
        let now = now_secs();
        let mut sessions = self.sessions();
        for s in sessions.iter_mut() {
            if s.session.status == "active" && s.rate > 0 && now > s.counted_at {
                s.session.total_tokens += s.rate * (now - s.counted_at) as u64;
                s.session.updated_at = now;
            }
            s.counted_at = now;
        }
        sessions.iter().map(|s| s.session.clone()).collect()
    }

    fn config(&self) -> Value {
        let root = &self.workspace_root;
        json!({
            "version": 1,
            "agents": {"list": [
                {"id": "builder", "name": "builder", "workspace": format!("{root}/builder"),
                 "identity": {"name": "Builder", "theme": "developer", "emoji": "🔨"},
                 "model": {"primary": "anthropic/claude-sonnet-4-20250514"},
                 "tools": {"allow": ["shell", "git", "sessions_send"]}, "sandbox": {"mode": "workspace"},
                 "memorySearch": {"enabled": true}},
                {"id": "scout", "name": "scout", "workspace": format!("{root}/scout"),
                 "identity": {"name": "Scout", "theme": "analyst"},
                 "model": {"primary": "ollama/qwen2.5-coder:14b"}, "tools": {"allow": ["web"]}},
                {"id": "gatekeeper", "identity": {"theme": "qa"}, "model": {"primary": "claude-opus-4-5"}}
            ]}
        })
    }
}

fn authorized(sim: &Simulator, req: &Request) -> bool {
    let Some(token) = &sim.token else { return true };
    req.headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| given == token)
}

#[derive(Deserialize)]
struct Control {
    session: String,
    action: String,
    #[serde(default)]
    session_key: Option<String>,
}

#[derive(Deserialize)]
struct Spawn {
    agent: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
}

struct SimHandler(Arc<Simulator>);

fn reply(res: &mut Response, status: StatusCode, body: Value) {
    res.status_code(status);
    res.render(Json(body));
}

#[async_trait]
impl Handler for SimHandler {
    async fn handle(&self, req: &mut Request, _depot: &mut Depot, res: &mut Response, _ctrl: &mut FlowCtrl) {
        let sim = &self.0;
        if !authorized(sim, req) {
            return reply(res, StatusCode::UNAUTHORIZED, json!({"error": "unauthorized"}));
        }
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        match (method.as_str(), path.as_str()) {
            ("GET", "/health") => {
                let sessions = sim.snapshot();
                let active = sessions.iter().filter(|s| s.status == "active").count();
                reply(
                    res,
                    StatusCode::OK,
                    json!({"status": "ok", "simulated": true, "sessions": sessions.len(), "active": active}),
                )
            }
            ("GET", "/sessions") => reply(res, StatusCode::OK, json!({"sessions": sim.snapshot()})),
            ("GET", "/config") => reply(res, StatusCode::OK, sim.config()),
            ("POST", "/control") => {
                let Ok(c) = req.parse_json::<Control>().await else {
                    return reply(res, StatusCode::BAD_REQUEST, json!({"error": "expected {session, action}"}));
                };
                if c.action == "wake" {
                    let target = c.session_key.unwrap_or(c.session);
                    return reply(res, StatusCode::OK, json!({"ok": true, "woke": target}));
                }
                let status = match c.action.as_str() {
                    "pause" => "paused",
                    "resume" => "active",
                    "kill" => "completed",
                    _ => return reply(res, StatusCode::BAD_REQUEST, json!({"error": "unknown action"})),
                };
                sim.snapshot();
                let mut sessions = sim.sessions();
                let mut found = false;
                for s in sessions.iter_mut().filter(|s| s.session.id == c.session || s.session.key == c.session) {
                    s.session.status = status.into();
                    s.session.updated_at = now_secs();
                    found = true;
                }
                if found {
                    reply(res, StatusCode::OK, json!({"ok": true, "status": status}))
                } else {
                    reply(res, StatusCode::NOT_FOUND, json!({"error": "no such session"}))
                }
            }
            ("POST", "/spawn") => {
                let Ok(s) = req.parse_json::<Spawn>().await else {
                    return reply(res, StatusCode::BAD_REQUEST, json!({"error": "expected {agent, task}"}));
                };
                let now = now_secs();
                let key = s.session_key.unwrap_or_else(|| format!("spawn-{now}"));
                let session = GatewaySession {
                    id: format!("{}:{key}", s.agent),
                    key,
                    agent: s.agent,
                    kind: "spawn".into(),
                    model: s.model.unwrap_or_else(|| "claude-sonnet-4".into()),
                    channel: "internal".into(),
                    status: "active".into(),
                    total_tokens: 0,
                    context_tokens: Some(200_000),
                    start_time: now,
                    updated_at: now,
                    flags: if s.task.is_empty() { vec![] } else { vec!["task".into()] },
                };
                sim.sessions().push(SimSession { session: session.clone(), rate: 25, counted_at: now });
                reply(res, StatusCode::OK, json!({"ok": true, "session": session}))
            }
            _ => reply(res, StatusCode::NOT_FOUND, json!({"error": "not found"})),
        }
    }
}

pub fn router(sim: Arc<Simulator>) -> Router {
    Router::with_path("{**rest}").goal(SimHandler(sim))
}

/// Starts a simulator on `host:port` (port 0 picks one) in the background; returns its address.
pub async fn start(host: &str, port: u16, token: Option<String>) -> std::io::Result<SocketAddr> {
    let (acceptor, addr) = crate::bind(host, port).await?;
    let sim = Arc::new(Simulator::new(token));
    tokio::spawn(Server::new(acceptor).serve(router(sim)));
    Ok(addr)
}

/// Runs a simulator in the foreground (`opsdeck gateway-sim`).
pub async fn run(host: &str, port: u16, token: Option<String>) -> std::io::Result<()> {
    let (acceptor, addr) = crate::bind(host, port).await?;
    println!(
        "Simulated agent gateway on http://{addr} ({})",
        if token.is_some() { "bearer token required" } else { "no token" }
    );
    Server::new(acceptor).serve(router(Arc::new(Simulator::new(token)))).await;
    Ok(())
}
