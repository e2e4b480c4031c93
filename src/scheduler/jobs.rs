//! The jobs' bodies. Each returns its result message; audit rows of `auto_backup`, `auto_cleanup` and
//! `heartbeat_check` have actor `scheduler` (with `detail.triggered_by` naming the caller of an on-demand
//! run).

use redb::{ReadTransaction, TableDefinition, WriteTransaction};
use serde_json::{Map, Value, json};

use super::JobId;
use crate::agents::{AgentStatus, rules as agent_rules, store as agent_store};
use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::backups::{BackupActor, create_backup};
use crate::error::AppResult;
use crate::settings::{self, Key, Retention};
use crate::store::schema::{LOGS, TOKEN_USAGE};
use crate::store::{StoreError, Tx, batch_cutoffs, now_millis, now_secs};

/// Rows deleted per write transaction by the cleanup job.
pub const CLEANUP_BATCH: usize = 1000;

const DAY_MS: i64 = 86_400_000;

pub async fn execute(state: &AppState, id: JobId, triggered_by: Option<String>) -> AppResult<String> {
    match id {
        JobId::AutoBackup => backup(state, triggered_by).await,
        JobId::AutoCleanup => cleanup(state, triggered_by).await.map(|r| r.message()),
        JobId::AgentHeartbeat => heartbeat(state, triggered_by).await.map(|names| heartbeat_message(&names)),
        JobId::WebhookRetry => {
            let n = crate::webhooks::delivery::process_due(state).await?;
            Ok(format!("Attempted {n} due webhook deliveries"))
        }
        JobId::LocalSessionScan => {
            let n = crate::sessions::api::local_sessions(state, true).await.len();
            Ok(format!("Found {n} local sessions"))
        }
        JobId::GatewayHealth => {
            let report = crate::gateways::api::check(state, None).await?;
            let online = report.details.iter().filter(|d| d.status == "online").count();
            Ok(format!("Checked {} gateways: {online} online", report.details.len()))
        }
        JobId::AlertEvaluation => {
            let report = crate::alerts::eval::evaluate_all(state).await?;
            Ok(format!("Evaluated {} alert rules: {} triggered", report.evaluated, report.triggered))
        }
    }
}

/// `auto_backup`: an online backup (pruned to `general.backup_retention_count`; the backup writes the
/// `auto_backup` audit row).
async fn backup(state: &AppState, triggered_by: Option<String>) -> AppResult<String> {
    let backup = create_backup(state, BackupActor::Scheduler { triggered_by }).await?;
    Ok(format!("Backup {} created ({} bytes)", backup.name, backup.size))
}

/// What the cleanup job prunes, in the order it reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Activities,
    AuditLog,
    Notifications,
    Logs,
    TokenUsage,
    WebhookDeliveries,
}

impl Kind {
    pub const ALL: [Kind; 6] =
        [Self::Activities, Self::AuditLog, Self::Notifications, Self::Logs, Self::TokenUsage, Self::WebhookDeliveries];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Activities => "activities",
            Self::AuditLog => "audit_log",
            Self::Notifications => "notifications",
            Self::Logs => "logs",
            Self::TokenUsage => "token_usage",
            Self::WebhookDeliveries => "webhook_deliveries",
        }
    }

    /// The retention setting of the kind. Webhook deliveries have none of their own: they follow the
    /// activity feed they report on (and a webhook keeps at most 200 anyway).
    pub fn retention(self) -> Retention {
        match self {
            Self::Activities | Self::WebhookDeliveries => Retention::Activities,
            Self::AuditLog => Retention::AuditLog,
            Self::Notifications => Retention::Notifications,
            Self::Logs => Retention::Logs,
            Self::TokenUsage => Retention::TokenUsage,
        }
    }
}

/// What a cleanup deleted, per kind.
#[derive(Debug, Clone, Default)]
pub struct CleanupReport {
    pub deleted: Vec<(Kind, u64)>,
}

impl CleanupReport {
    pub fn total(&self) -> u64 {
        self.deleted.iter().map(|(_, n)| n).sum()
    }

    pub fn message(&self) -> String {
        let parts: Vec<String> = self.deleted.iter().map(|(k, n)| format!("{} {n}", k.as_str())).collect();
        format!("Deleted {} old records ({})", self.total(), parts.join(", "))
    }
}

/// `auto_cleanup`: deletes the records of every kind older than its retention days (0 keeps forever),
/// a bounded batch per write transaction, then writes the `auto_cleanup` audit row with `total_deleted`
/// and the per-kind counts.
pub async fn cleanup(state: &AppState, triggered_by: Option<String>) -> AppResult<CleanupReport> {
    let now_ms = now_millis();
    let mut report = CleanupReport::default();
    let mut days_by_kind = Map::new();
    for kind in Kind::ALL {
        let days = settings::retention(state, kind.retention()).await?;
        days_by_kind.insert(kind.as_str().into(), json!(days));
        let deleted = match days {
            0 => 0,
            days => {
                prune(
                    state,
                    kind,
                    now_ms.saturating_sub(i64::try_from(days).unwrap_or(i64::MAX).saturating_mul(DAY_MS)),
                )
                .await?
            }
        };
        report.deleted.push((kind, deleted));
    }
    let deleted: Map<String, Value> = report.deleted.iter().map(|(k, n)| (k.as_str().to_string(), json!(n))).collect();
    let mut detail = json!({"total_deleted": report.total(), "deleted": deleted, "retention_days": days_by_kind});
    if let Some(by) = triggered_by {
        detail["triggered_by"] = json!(by);
    }
    state.write(move |tx| Ok(audit::record(tx, scheduler_entry("auto_cleanup", detail))?)).await?;
    Ok(report)
}

fn scheduler_entry(action: &'static str, detail: Value) -> Entry {
    Entry { action, actor: "scheduler".into(), actor_id: None, detail, ip_address: None }
}

/// Deletes the records of `kind` created before `cutoff_ms`; returns how many.
async fn prune(state: &AppState, kind: Kind, cutoff_ms: i64) -> AppResult<u64> {
    let secs = cutoff_ms.div_euclid(1000);
    let ms = u64::try_from(cutoff_ms).unwrap_or(0);
    match kind {
        Kind::Activities => {
            prune_ids(state, move |tx| crate::activity::store::expired(tx, secs), crate::activity::store::delete).await
        }
        Kind::AuditLog => {
            prune_ids(state, move |tx| crate::audit::store::expired(tx, secs), crate::audit::store::delete).await
        }
        Kind::Notifications => {
            prune_ids(
                state,
                move |tx| crate::notifications::store::expired(tx, secs),
                |tx, ids| crate::notifications::store::delete(tx, ids).map(|n| n as u64),
            )
            .await
        }
        Kind::WebhookDeliveries => {
            prune_ids(
                state,
                move |tx| crate::webhooks::store::expired_deliveries(tx, secs),
                crate::webhooks::store::delete_deliveries,
            )
            .await
        }
        Kind::Logs => {
            prune_timed(state, LOGS, ms, |tx, before| crate::logs::store::prune_before(tx, before as i64)).await
        }
        Kind::TokenUsage => prune_timed(state, TOKEN_USAGE, ms, crate::tokens::prune_older_than).await,
    }
}

/// Finds expired ids in one read snapshot, then deletes them [`CLEANUP_BATCH`] per write transaction.
async fn prune_ids<F>(
    state: &AppState,
    expired: F,
    delete: fn(&WriteTransaction, &[u64]) -> Result<u64, StoreError>,
) -> AppResult<u64>
where
    F: FnOnce(&ReadTransaction) -> Result<Vec<u64>, StoreError> + Send + 'static,
{
    let ids = state.store.read(expired).await?;
    let mut deleted = 0;
    for chunk in ids.chunks(CLEANUP_BATCH) {
        let chunk = chunk.to_vec();
        deleted += state.write(move |tx| Ok(delete(tx, &chunk)?)).await?;
    }
    Ok(deleted)
}

/// Prunes a `(timestamp ms, sequence)`-keyed table before `cutoff_ms` with the feature's own prune
/// function, moving the cutoff up about [`CLEANUP_BATCH`] rows per write transaction.
async fn prune_timed(
    state: &AppState,
    table: TableDefinition<'static, (u64, u64), &'static [u8]>,
    cutoff_ms: u64,
    prune_before: fn(&mut Tx, u64) -> Result<u64, StoreError>,
) -> AppResult<u64> {
    let points = state.store.read(move |tx| batch_cutoffs(&tx.open_table(table)?, cutoff_ms, CLEANUP_BATCH)).await?;
    let mut deleted = 0;
    for point in points {
        deleted += state.write(move |tx| Ok(prune_before(tx, point)?)).await?;
    }
    Ok(deleted)
}

/// `agent_heartbeat`: online, busy and idle agents silent for longer than `general.agent_timeout_minutes`
/// (counted from `last_seen`, or `created_at` when it never sent one) become offline, each with its
/// `agent.status` event, activity row and `agent.status_change` webhook. The `heartbeat_check` audit row
/// (detail `marked_offline`: the names) is written when an agent was marked offline, and always for an
/// on-demand run. Returns the names.
pub async fn heartbeat(state: &AppState, triggered_by: Option<String>) -> AppResult<Vec<String>> {
    let minutes = settings::number(state, Key::AgentTimeoutMinutes).await?.max(1);
    let timeout_secs = i64::try_from(minutes).unwrap_or(i64::MAX).saturating_mul(60);
    state
        .write(move |tx| {
            let cutoff = now_secs().saturating_sub(timeout_secs);
            let mut marked = Vec::new();
            for status in [AgentStatus::Online, AgentStatus::Busy, AgentStatus::Idle] {
                for id in agent_store::ids_with_status(tx, status)? {
                    let Some(before) = agent_store::get_agent_w(tx, id)? else { continue };
                    if before.last_seen.unwrap_or(before.created_at) >= cutoff {
                        continue;
                    }
                    let mut after = before.clone();
                    after.status = AgentStatus::Offline;
                    agent_rules::save(tx, "scheduler", &before, &mut after)?;
                    marked.push(after.name);
                }
            }
            if !marked.is_empty() || triggered_by.is_some() {
                let mut detail = json!({"marked_offline": marked, "timeout_minutes": minutes});
                if let Some(by) = &triggered_by {
                    detail["triggered_by"] = json!(by);
                }
                audit::record(tx, scheduler_entry("heartbeat_check", detail))?;
            }
            Ok(marked)
        })
        .await
}

fn heartbeat_message(names: &[String]) -> String {
    match names.len() {
        0 => "No agent timed out".into(),
        n => format!("Marked {n} agents offline: {}", names.join(", ")),
    }
}
