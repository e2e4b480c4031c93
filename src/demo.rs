//! `opsdeck serve --demo`: a gateway simulator in-process, the primary gateway pointed at it, and — into
//! an empty database only — a small, realistic fleet created through the same rule functions the API
//! uses (so every row has its activity, audit, notification and event rows): agents in every status,
//! tasks in every column (one approved through the quality review and done), a comment, messages, a
//! week of token usage, alert rules, a webhook and notifications.
//!
//! Seeding runs in ONE write transaction that first checks the database is empty, so it is all or
//! nothing and never runs twice. A marker in the `meta` table remembers that the database holds demo
//! data: only then does a later `--demo` start re-point the primary gateway at its new simulator.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use redb::{ReadableTable, ReadableTableMetadata, WriteTransaction};
use serde_json::json;

use crate::agents::{AgentChanges, AgentStatus, NewAgent};
use crate::alerts::Rule;
use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::http::Principal;
use crate::notifications::{NewNotification, notify};
use crate::store::schema::{AGENTS, ALERT_RULES, META, TASKS, TOKEN_USAGE, WEBHOOKS};
use crate::store::{StoreError, Tx, now_secs};
use crate::tasks::Task;
use crate::tasks::rules::{self as task_rules, Actor, ReviewInput};
use crate::tokens::{HOUR_MS, NewUsage};
use crate::users::Role;

const MARKER_KEY: &str = "demo";
/// Where the demo webhook points: the discard port on loopback, where nothing listens.
pub const DEMO_WEBHOOK_URL: &str = "http://127.0.0.1:9/opsdeck-demo-receiver";

/// What `--demo` did.
#[derive(Debug, Clone)]
pub struct DemoReport {
    pub simulator: SocketAddr,
    /// What was seeded; `None` when the database already held data and was left alone.
    pub seeded: Option<Seeded>,
    /// Whether the primary gateway now points at the simulator.
    pub gateway_pointed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seeded {
    pub agents: usize,
    pub tasks: usize,
    pub token_records: usize,
    pub alert_rules: usize,
    pub webhooks: usize,
    pub messages: usize,
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Demo mode: simulated agent gateway on http://{}", self.simulator)?;
        match &self.seeded {
            Some(s) => {
                writeln!(
                    f,
                    "  seeded {} agents, {} tasks, {} messages, {} token usage records (the past 7 days), {} alert rules, {} webhook",
                    s.agents, s.tasks, s.messages, s.token_records, s.alert_rules, s.webhooks
                )?;
                writeln!(
                    f,
                    "  the demo webhook points at {DEMO_WEBHOOK_URL}, where nothing listens: its deliveries fail, retry and open the circuit"
                )?;
            }
            None if self.gateway_pointed => writeln!(f, "  demo data already present; not seeded again")?,
            None => writeln!(
                f,
                "  the database already holds data, so nothing was seeded and the gateways were left alone (add the simulator as a gateway to use it)"
            )?,
        }
        if self.gateway_pointed {
            write!(f, "  the primary gateway points at the simulator")?;
        }
        Ok(())
    }
}

/// Starts the simulator on a free loopback port and prepares the database for the demo.
pub async fn start(state: &AppState) -> Result<DemoReport, String> {
    let simulator = crate::gateways::sim::start("127.0.0.1", 0, None)
        .await
        .map_err(|e| format!("demo: cannot start the gateway simulator: {e}"))?;
    prepare(state, simulator).await.map_err(|e| format!("demo: {e}"))
}

/// Seeds an empty database and points the primary gateway at `simulator` (when the database is empty
/// or holds demo data), then checks the gateways' health once so the dashboard shows them online.
pub async fn prepare(state: &AppState, simulator: SocketAddr) -> AppResult<DemoReport> {
    let reviewer = state.config.quality_reviewer.clone();
    let admin = state.config.admin_user.clone();
    let pricing = state.config.pricing.clone();
    let (seeded, is_demo) = state
        .write(move |tx| {
            let marked = tx.open_table(META)?.get(MARKER_KEY)?.is_some();
            if marked {
                return Ok((None, true));
            }
            if !is_empty(tx)? {
                return Ok((None, false));
            }
            let seeded = seed(tx, &reviewer, &admin, &pricing)?;
            tx.open_table(META)?.insert(MARKER_KEY, b"seeded".as_slice())?;
            Ok::<_, AppError>((Some(seeded), true))
        })
        .await?;
    if is_demo {
        point_primary_gateway(state, simulator).await?;
        crate::gateways::api::check(state, None).await?;
    }
    Ok(DemoReport { simulator, seeded, gateway_pointed: is_demo })
}

/// No agents, tasks, token usage, webhooks or alert rules (users and the default gateway exist from
/// the first start).
fn is_empty(tx: &WriteTransaction) -> Result<bool, StoreError> {
    Ok(tx.open_table(AGENTS)?.is_empty()?
        && tx.open_table(TASKS)?.is_empty()?
        && tx.open_table(TOKEN_USAGE)?.is_empty()?
        && tx.open_table(WEBHOOKS)?.is_empty()?
        && tx.open_table(ALERT_RULES)?.is_empty()?)
}

async fn point_primary_gateway(state: &AppState, simulator: SocketAddr) -> AppResult<()> {
    state
        .write(move |tx| {
            let gateways = crate::gateways::store::list_w(tx)?;
            let Some(old) = gateways.iter().find(|g| g.is_primary).or(gateways.first()).cloned() else {
                return Ok(());
            };
            let mut g = old.clone();
            g.host = simulator.ip().to_string();
            g.port = simulator.port();
            g.token = None;
            g.is_primary = true;
            g.status = "unknown".into();
            g.consecutive_failures = 0;
            g.updated_at = now_secs();
            crate::gateways::store::save(tx, Some(&old), &g)?;
            Ok::<_, AppError>(())
        })
        .await
}

fn demo_principal() -> Principal {
    Principal { id: 0, username: "demo".into(), role: Role::Admin, session_hash: None }
}

/// A small deterministic generator, so every demo looks alike.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

fn seed(tx: &mut Tx, reviewer: &str, admin: &str, pricing: &crate::tokens::Pricing) -> AppResult<Seeded> {
    let who = demo_principal();
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let actor = Actor { principal: who.clone(), ip };
    let mut seeded = Seeded::default();

    // Agents: every status; the sim's agents (builder, scout, gatekeeper) plus the quality reviewer.
    let agents: [(&str, &str, AgentStatus, &str, Option<&str>); 6] = [
        (
            "builder",
            "developer",
            AgentStatus::Busy,
            "anthropic/claude-sonnet-4-20250514",
            Some("Refactoring the webhook retry backoff"),
        ),
        (
            "scout",
            "researcher",
            AgentStatus::Online,
            "ollama/qwen2.5-coder:14b",
            Some("Reading the Postgres 17 release notes"),
        ),
        ("gatekeeper", "qa", AgentStatus::Idle, "claude-opus-4-5", Some("Waiting for work")),
        (reviewer, "qa", AgentStatus::Online, "claude-opus-4-5", Some("Reviewing the rate-limit change")),
        ("herald", "analyst", AgentStatus::Offline, "claude-3-5-haiku", None),
        (
            "patch",
            "developer",
            AgentStatus::Error,
            "groq/llama-3.3-70b-versatile",
            Some("Crashed: context window exceeded"),
        ),
    ];
    for (name, role, status, model, activity) in agents {
        crate::agents::validate_name(name).map_err(|d| AppError::Validation(vec![d]))?;
        crate::agents::validate_role(role).map_err(|d| AppError::Validation(vec![d]))?;
        let new = NewAgent {
            name: name.to_string(),
            role: role.to_string(),
            status: AgentStatus::Offline,
            session_key: Some(format!("{name}:main")),
            soul_content: Some(format!("You are {name}, a {role} agent of the OpsDeck demo fleet.")),
            config: json!({"model": {"primary": model}, "template": role, "preferred_gateway": "primary"}),
        };
        let agent = crate::agents::rules::create(tx, &who, ip, new)?;
        // Signs of life and the status, through the same rules as heartbeats and updates.
        let agent =
            if status == AgentStatus::Offline { agent } else { crate::agents::rules::touch(tx, "demo", &agent)? };
        let changes = AgentChanges {
            status: Some(status),
            last_activity: activity.map(str::to_string),
            ..AgentChanges::default()
        };
        crate::agents::rules::update(tx, "demo", agent, changes)?;
        seeded.agents += 1;
    }

    // Tasks: every column.
    let now = now_secs();
    let task =
        |title: &str, description: &str, status: &str, priority: &str, assignee: Option<&str>, tags: &[&str]| Task {
            id: 0,
            title: title.to_string(),
            description: description.to_string(),
            status: status.to_string(),
            priority: priority.to_string(),
            assigned_to: assignee.map(str::to_string),
            created_by: admin.to_string(),
            due_date: None,
            estimated_hours: None,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            metadata: json!({"demo": true}),
            created_at: now,
            updated_at: now,
        };
    let tasks = [
        task(
            "Triage the flaky payments integration test",
            "Fails about one run in twenty on CI; collect logs first.",
            "inbox",
            "high",
            None,
            &["ci", "payments"],
        ),
        task(
            "Evaluate a vector store for agent memory",
            "Compare three options on recall and cost.",
            "inbox",
            "low",
            None,
            &["research"],
        ),
        task(
            "Draft the v2.4 release notes",
            "Summarise merged changes since v2.3 for operators.",
            "assigned",
            "medium",
            Some("scout"),
            &["docs"],
        ),
        task(
            "Refactor the webhook retry backoff",
            "Move to full jitter and cap at 8 hours.",
            "in_progress",
            "critical",
            Some("builder"),
            &["webhooks"],
        ),
        task(
            "Summarise last week's token spend",
            "Per agent and model, with the three biggest sessions.",
            "in_progress",
            "medium",
            Some("herald"),
            &["costs"],
        ),
        task(
            "Add rate limiting to the public API",
            "100 requests per minute per client, 429 with Retry-After.",
            "quality_review",
            "high",
            Some("builder"),
            &["api", "security"],
        ),
        task(
            "Write the onboarding guide for new agents",
            "Heartbeats, task flow and the quality gate.",
            "quality_review",
            "medium",
            Some("scout"),
            &["docs"],
        ),
    ];
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(task_rules::create(tx, &actor, t)?.id);
        seeded.tasks += 1;
    }
    // The onboarding guide passes the quality review and is done.
    let guide = ids[6];
    let approval = ReviewInput {
        task_id: guide,
        reviewer: reviewer.to_string(),
        status: "approved".into(),
        notes: "Clear and complete. Approved.".into(),
    };
    task_rules::review(tx, &actor, reviewer, approval)?;
    // The rate-limit change is sent back once, then waits for another review.
    let rejection = ReviewInput {
        task_id: ids[5],
        reviewer: reviewer.to_string(),
        status: "rejected".into(),
        notes: "Missing the Retry-After header on 429.".into(),
    };
    task_rules::review(tx, &actor, reviewer, rejection)?;
    task_rules::add_comment(
        tx,
        &actor,
        ids[3],
        reviewer,
        "@builder please keep the old schedule behind a setting until the migration is done.",
    )?;

    // Messages between agents.
    for (from, to, content) in [
        ("builder", "scout", "Can you find how other services cap their retry delays?"),
        ("scout", "builder", "Most cap at 6-12 hours with full jitter; links in the task."),
        (reviewer, "builder", "Rate limiting: 429 needs Retry-After, see my review."),
    ] {
        crate::agents::insert_message(tx, from, to, content, "direct")?;
        seeded.messages += 1;
    }

    // A week of token usage: one record per agent about every 3 hours, across models.
    let sessions = [
        ("builder:main", "anthropic/claude-sonnet-4-20250514"),
        ("scout:research", "ollama/qwen2.5-coder:14b"),
        ("gatekeeper:review", "claude-opus-4-5"),
        ("herald:reports", "claude-3-5-haiku"),
        ("patch:main", "groq/llama-3.3-70b-versatile"),
    ];
    let now_ms = crate::tokens::now_ms();
    let mut rng = Lcg(0x0005_EED0_DECC);
    for hours_ago in (1..7 * 24).step_by(3) {
        for (session, model) in sessions {
            let jitter = rng.next(HOUR_MS);
            let timestamp = now_ms - hours_ago as u64 * HOUR_MS - jitter / 2;
            let input = 300 + rng.next(2_500);
            let output = 80 + rng.next(900);
            crate::tokens::record_usage(
                tx,
                NewUsage {
                    model: model.to_string(),
                    session_id: session.to_string(),
                    input_tokens: input,
                    output_tokens: output,
                    operation: None,
                    duration_ms: Some(400.0 + rng.next(9_000) as f64),
                    timestamp_ms: Some(timestamp),
                    rate: pricing.rate(model),
                },
            )?;
            seeded.token_records += 1;
        }
    }

    // Alert rules: an agent in error (triggers on the first evaluation) and a growing inbox.
    let rule = |name: &str, entity: &str, field: &str, operator: &str, value: &str, description: &str| Rule {
        id: 0,
        name: name.to_string(),
        description: description.to_string(),
        enabled: true,
        entity_type: entity.to_string(),
        condition_field: field.to_string(),
        condition_operator: operator.to_string(),
        condition_value: value.to_string(),
        action_type: "notification".into(),
        action_config: json!({"recipient": admin}),
        cooldown_minutes: 60,
        last_triggered_at: None,
        trigger_count: 0,
        created_by: who.username.clone(),
        created_at: now,
    };
    crate::alerts::create(
        tx,
        &who,
        ip,
        rule("Agent in error", "agent", "status", "equals", "error", "Any agent reports an error."),
    )?;
    crate::alerts::create(
        tx,
        &who,
        ip,
        rule("Inbox piling up", "task", "status", "count_above", "inbox:5", "More than five tasks wait in the inbox."),
    )?;
    seeded.alert_rules = 2;

    // Notifications for the admin.
    notify(
        tx,
        NewNotification {
            recipient: admin,
            kind: "info",
            title: "Welcome to the OpsDeck demo".into(),
            message: "A simulated gateway, six agents and a week of token usage. Nothing here is real.".into(),
            source_type: None,
            source_id: None,
        },
    )?;
    notify(
        tx,
        NewNotification {
            recipient: admin,
            kind: "alert",
            title: "Agent patch is in error".into(),
            message: "patch stopped: context window exceeded.".into(),
            source_type: Some("agent"),
            source_id: None,
        },
    )?;

    // Last, so the seeding itself queues nothing for it.
    let webhook = crate::webhooks::NewWebhook {
        name: "Demo receiver (nothing listens)".into(),
        url: DEMO_WEBHOOK_URL.into(),
        secret: crate::webhooks::generate_secret()?,
        events: vec!["agent.status_change".into(), "agent.error".into(), "notification.alert".into()],
    };
    crate::webhooks::create(tx, &who, ip, webhook)?;
    seeded.webhooks = 1;
    Ok(seeded)
}

#[cfg(test)]
mod tests {
    use super::Lcg;

    #[test]
    fn generator_stays_below_its_bound() {
        let mut rng = Lcg(7);
        assert!((0..1000).all(|_| rng.next(10) < 10));
        assert_eq!(Lcg(1).next(0), 0);
    }
}
