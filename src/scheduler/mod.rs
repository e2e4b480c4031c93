//! The in-process scheduler: the job registry with each job's schedule (cron expressions through the
//! `cron` crate, seconds field first, UTC), the runner (one tokio task per job sleeping until its next
//! time) and [`run`], the one way a job runs (on schedule or on demand).
//!
//! A job never runs twice at once: a running flag per job; a scheduled tick that finds the job running
//! is skipped, an on-demand run gets 409. `lastRun`, `nextRun`, `running` and `lastResult` are persisted
//! (`store.rs`) and survive a restart; a run cut short by a stop is reported as interrupted at the next
//! start. A job whose setting is off skips its scheduled runs (its `lastResult` says so); on-demand runs
//! always run.

pub mod api;
pub mod jobs;
pub mod store;

use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use salvo_oapi::ToSchema;
use serde::Serialize;
use tokio::sync::watch;

use crate::app::AppState;
use crate::config::Config;
use crate::error::{AppError, AppResult};
use crate::settings::{self, Key};
use crate::store::now_millis;
use store::LastResult;

/// Longest single sleep of a job's task: the wall clock is checked again at least this often, so a
/// clock step or a suspended machine does not delay a run by more than this.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// Every job the scheduler knows, in the order `GET /api/scheduler` lists them: the interface's five,
/// then the extra ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobId {
    AutoBackup,
    AutoCleanup,
    AgentHeartbeat,
    WebhookRetry,
    LocalSessionScan,
    GatewayHealth,
    AlertEvaluation,
}

impl JobId {
    pub const ALL: [JobId; 7] = [
        Self::AutoBackup,
        Self::AutoCleanup,
        Self::AgentHeartbeat,
        Self::WebhookRetry,
        Self::LocalSessionScan,
        Self::GatewayHealth,
        Self::AlertEvaluation,
    ];

    /// The jobs `POST /api/scheduler` runs on demand.
    pub const ON_DEMAND: [JobId; 3] = [Self::AutoBackup, Self::AutoCleanup, Self::AgentHeartbeat];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::AutoBackup => "auto_backup",
            Self::AutoCleanup => "auto_cleanup",
            Self::AgentHeartbeat => "agent_heartbeat",
            Self::WebhookRetry => "webhook_retry",
            Self::LocalSessionScan => "local_session_scan",
            Self::GatewayHealth => "gateway_health",
            Self::AlertEvaluation => "alert_evaluation",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::AutoBackup => "Automatic backup",
            Self::AutoCleanup => "Automatic cleanup",
            Self::AgentHeartbeat => "Agent heartbeat check",
            Self::WebhookRetry => "Webhook retry",
            Self::LocalSessionScan => "Local session scan",
            Self::GatewayHealth => "Gateway health check",
            Self::AlertEvaluation => "Alert evaluation",
        }
    }

    pub fn parse(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|j| j.as_str() == id)
    }

    /// The boolean setting that switches the job's scheduled runs on and off (none: always on).
    pub fn setting(self) -> Option<Key> {
        match self {
            Self::AutoBackup => Some(Key::AutoBackup),
            Self::AutoCleanup => Some(Key::AutoCleanup),
            Self::AgentHeartbeat => Some(Key::AgentHeartbeat),
            Self::WebhookRetry => Some(Key::WebhooksRetryEnabled),
            Self::LocalSessionScan => Some(Key::LocalSessionScan),
            Self::GatewayHealth | Self::AlertEvaluation => None,
        }
    }

    /// When the job runs, as a cron expression (seconds first, UTC); `None` for alert evaluation, whose
    /// period is configured (see [`JobId::schedule`]). Jobs that share a period are some seconds apart so
    /// they do not all start at once.
    pub fn cron(self) -> Option<&'static str> {
        match self {
            Self::AutoBackup => Some("0 0 3 * * *"),
            Self::AutoCleanup => Some("0 0 4 * * *"),
            Self::AgentHeartbeat => Some("0 */5 * * * *"),
            Self::WebhookRetry => Some("0 * * * * *"),
            Self::LocalSessionScan => Some("30 * * * * *"),
            Self::GatewayHealth => Some("15 */5 * * * *"),
            Self::AlertEvaluation => None,
        }
    }

    /// The job's schedule. Alert evaluation runs every `SVC_ALERT_EVAL_INTERVAL` seconds: a cron
    /// expression when the period divides a minute or an hour evenly (the default 300 s is
    /// `45 */5 * * * *`), else a fixed period counted from the end of the previous run.
    pub fn schedule(self, config: &Config) -> Result<Schedule, String> {
        match self.cron() {
            Some(expression) => Schedule::cron(expression),
            None => Ok(Schedule::period(config.alert_eval_interval, 45)),
        }
    }
}

/// When a job runs.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron expression (seconds first), evaluated in UTC.
    Cron(Box<cron::Schedule>),
    /// A fixed period counted from the end of the previous run (or the start).
    Every(Duration),
}

impl Schedule {
    pub fn cron(expression: &str) -> Result<Self, String> {
        cron::Schedule::from_str(expression)
            .map(|s| Self::Cron(Box::new(s)))
            .map_err(|e| format!("invalid cron expression {expression:?}: {e}"))
    }

    /// Every `secs` seconds: aligned to the clock through a cron expression when `secs` divides a minute
    /// or (as whole minutes) an hour, at second `second` of the minute for minute periods; else a fixed
    /// period.
    pub fn period(secs: u64, second: u32) -> Self {
        let expression = match secs {
            0 => None,
            s if s < 60 && 60 % s == 0 => Some(format!("*/{s} * * * * *")),
            3600 => Some(format!("{} 0 * * * *", second % 60)),
            s if s % 60 == 0 && 3600 % s == 0 => Some(format!("{} */{} * * * *", second % 60, s / 60)),
            _ => None,
        };
        expression.and_then(|e| Self::cron(&e).ok()).unwrap_or_else(|| Self::Every(Duration::from_secs(secs.max(1))))
    }

    /// The first run time strictly after `after`; `None` when the schedule has no further time.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Self::Cron(s) => s.after(&after).next(),
            Self::Every(period) => {
                let period = chrono::Duration::from_std(*period).ok()?;
                after.checked_add_signed(period.max(chrono::Duration::seconds(1)))
            }
        }
    }
}

/// A registered job.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    pub schedule: Schedule,
}

/// What the running process knows of a job beyond its stored state.
#[derive(Debug, Default)]
struct Slot {
    running: AtomicBool,
    /// The time the job's task sleeps until (ms; 0 before the task has planned one).
    next_run: AtomicI64,
}

/// The job registry and the in-memory state of the runner. Dropping it (with the app) stops every
/// background task at once.
pub struct Scheduler {
    jobs: Vec<Job>,
    slots: Vec<Slot>,
    stop: watch::Sender<()>,
}

impl Scheduler {
    pub fn new(config: &Config) -> Result<Self, String> {
        let jobs = JobId::ALL
            .into_iter()
            .map(|id| Ok(Job { id, schedule: id.schedule(config)? }))
            .collect::<Result<Vec<_>, String>>()?;
        let slots = jobs.iter().map(|_| Slot::default()).collect();
        let (stop, _) = watch::channel(());
        Ok(Self { jobs, slots, stop })
    }

    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == id)
    }

    fn slot(&self, id: JobId) -> Option<&Slot> {
        self.jobs.iter().position(|j| j.id == id).and_then(|i| self.slots.get(i))
    }

    /// Resolves (with an error) when the app is dropped: background tasks select on it to stop.
    pub fn stop_signal(&self) -> watch::Receiver<()> {
        self.stop.subscribe()
    }

    /// Whether a run of `id` is in progress in this process.
    pub fn is_running(&self, id: JobId) -> bool {
        self.slot(id).is_some_and(|s| s.running.load(Ordering::Acquire))
    }

    /// The next planned run of `id` (ms): the time its task sleeps until, else the schedule's next time.
    pub fn next_run(&self, id: JobId, now: DateTime<Utc>) -> Option<i64> {
        let planned = self.slot(id).map_or(0, |s| s.next_run.load(Ordering::Acquire));
        if planned > now.timestamp_millis() {
            return Some(planned);
        }
        self.job(id)?.schedule.next_after(now).map(|t| t.timestamp_millis())
    }
}

/// Who asked for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// The job's schedule: skipped while the job's setting is off.
    Schedule,
    /// `POST /api/scheduler` by this user: always runs; audit rows name the caller in `triggered_by`.
    Manual { by: String },
}

/// Clears a job's running flag when the run ends, however it ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Whether the job's setting allows its scheduled runs.
pub async fn enabled(state: &AppState, id: JobId) -> AppResult<bool> {
    match id.setting() {
        Some(key) => settings::enabled(state, key).await,
        None => Ok(true),
    }
}

/// Runs a job now and records the outcome. `Ok` carries the result message (also for a skipped
/// scheduled run); 409 when the job is already running; 500 ([`AppError::Failed`]) with the job's
/// message when it fails (a 409 of the job itself, such as a backup already in progress, stays 409).
pub async fn run(state: &AppState, id: JobId, trigger: Trigger) -> AppResult<String> {
    let Some(slot) = state.scheduler.slot(id) else {
        return Err(AppError::BadRequest(format!("Unknown task_id: {}", id.as_str())));
    };
    if slot.running.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Err(AppError::Conflict(format!("Task {} is already running", id.as_str())));
    }
    let _running = Running(&slot.running);
    let started = now_millis();
    if let Err(e) = state.write(move |tx| Ok(store::mark_started(tx, id.as_str(), started)?)).await {
        tracing::warn!(job = id.as_str(), error = %e, "cannot record the start of a scheduled job");
    }
    let outcome = match &trigger {
        Trigger::Schedule => match enabled(state, id).await {
            Ok(true) => execute(state, id, None).await,
            Ok(false) => {
                let key = id.setting().map_or("its setting", Key::as_str);
                Ok(format!("Skipped: {key} is disabled"))
            }
            Err(e) => Err(e),
        },
        Trigger::Manual { by } => execute(state, id, Some(by.clone())).await,
    };
    let finished = Utc::now();
    let result = LastResult {
        ok: outcome.is_ok(),
        message: match &outcome {
            Ok(message) => message.clone(),
            Err(e) => e.to_string(),
        },
        timestamp: finished.timestamp_millis(),
    };
    match &outcome {
        Ok(message) => tracing::debug!(job = id.as_str(), %message, "scheduled job finished"),
        Err(e) => tracing::warn!(job = id.as_str(), error = %e, "scheduled job failed"),
    }
    let next_run = state.scheduler.job(id).and_then(|j| j.schedule.next_after(finished)).map(|t| t.timestamp_millis());
    if let Err(e) = state.write(move |tx| Ok(store::mark_finished(tx, id.as_str(), result, next_run)?)).await {
        tracing::warn!(job = id.as_str(), error = %e, "cannot record the result of a scheduled job");
    }
    outcome.map_err(|e| match e {
        AppError::Conflict(message) => AppError::Conflict(message),
        other => AppError::Failed(other.to_string()),
    })
}

/// The job's body; a panic becomes a failure instead of ending the job's task.
async fn execute(state: &AppState, id: JobId, triggered_by: Option<String>) -> AppResult<String> {
    match AssertUnwindSafe(jobs::execute(state, id, triggered_by)).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => Err(AppError::Internal(format!("the job {} panicked", id.as_str()))),
    }
}

/// A job as `GET /api/scheduler` shows it.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[salvo(schema(name = "SchedulerTask"))]
pub struct TaskStatus {
    /// `auto_backup`, `auto_cleanup`, `agent_heartbeat`, `webhook_retry`, `local_session_scan`, then extra
    /// jobs (`gateway_health`, `alert_evaluation`).
    pub id: String,
    pub name: String,
    /// Whether the job's setting lets its scheduled runs happen.
    pub enabled: bool,
    /// Start of the last run (ms), null before the first.
    #[serde(rename = "lastRun")]
    pub last_run: Option<i64>,
    /// Next scheduled run (ms).
    #[serde(rename = "nextRun")]
    pub next_run: Option<i64>,
    pub running: bool,
    /// Outcome of the last run, null before the first.
    #[serde(rename = "lastResult")]
    pub last_result: Option<LastResult>,
}

/// Every job's status, in registry order.
pub async fn statuses(state: &AppState) -> AppResult<Vec<TaskStatus>> {
    let stored = state.store.read(store::all).await?;
    let now = Utc::now();
    let mut out = Vec::new();
    for job in state.scheduler.jobs() {
        let id = job.id;
        let saved = stored.get(id.as_str()).cloned().unwrap_or_default();
        out.push(TaskStatus {
            id: id.as_str().into(),
            name: id.name().into(),
            enabled: enabled(state, id).await?,
            last_run: saved.last_run,
            next_run: state.scheduler.next_run(id, now),
            running: state.scheduler.is_running(id),
            last_result: saved.last_result,
        });
    }
    Ok(out)
}

/// Marks runs cut short by the previous stop as interrupted, then starts one task per job. Called once
/// from `build()`; the tasks hold only a `Weak` of the state and end when the app is dropped.
pub async fn start(state: &Arc<AppState>) -> AppResult<()> {
    let now = Utc::now();
    let plans: Vec<(String, Option<i64>)> = state
        .scheduler
        .jobs()
        .iter()
        .map(|j| (j.id.as_str().to_string(), j.schedule.next_after(now).map(|t| t.timestamp_millis())))
        .collect();
    let at = now.timestamp_millis();
    state.write(move |tx| Ok(store::recover(tx, &plans, at)?)).await?;
    for job in state.scheduler.jobs() {
        tokio::spawn(job_task(Arc::downgrade(state), job.clone(), state.scheduler.stop_signal()));
    }
    Ok(())
}

/// One job's task: sleeps until the next time of its schedule, runs it, repeats; ends when the app is
/// dropped. A run that overlaps the next time skips that time (never two runs at once).
async fn job_task(weak: Weak<AppState>, job: Job, mut stop: watch::Receiver<()>) {
    loop {
        let Some(next) = job.schedule.next_after(Utc::now()) else { return };
        {
            let Some(state) = weak.upgrade() else { return };
            if let Some(slot) = state.scheduler.slot(job.id) {
                slot.next_run.store(next.timestamp_millis(), Ordering::Release);
            }
        }
        loop {
            let left = (next - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            if left.is_zero() {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(left.min(MAX_SLEEP)) => {}
                _ = stop.changed() => return,
            }
        }
        let Some(state) = weak.upgrade() else { return };
        match run(&state, job.id, Trigger::Schedule).await {
            Ok(_) | Err(AppError::Failed(_)) => {}
            Err(e) => tracing::debug!(job = job.id.as_str(), error = %e, "scheduled run skipped"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    fn next(id: JobId, after: DateTime<Utc>) -> DateTime<Utc> {
        Schedule::cron(id.cron().unwrap()).unwrap().next_after(after).unwrap()
    }

    #[test]
    fn daily_jobs_run_at_their_utc_hour() {
        assert_eq!(next(JobId::AutoBackup, at(2026, 3, 1, 2, 59, 59)), at(2026, 3, 1, 3, 0, 0));
        assert_eq!(next(JobId::AutoBackup, at(2026, 3, 1, 3, 0, 0)), at(2026, 3, 2, 3, 0, 0), "strictly after");
        assert_eq!(next(JobId::AutoBackup, at(2026, 3, 1, 12, 0, 0)), at(2026, 3, 2, 3, 0, 0));
        assert_eq!(next(JobId::AutoCleanup, at(2026, 3, 1, 3, 0, 0)), at(2026, 3, 1, 4, 0, 0));
        assert_eq!(next(JobId::AutoCleanup, at(2026, 12, 31, 4, 0, 1)), at(2027, 1, 1, 4, 0, 0), "year boundary");
        assert_eq!(next(JobId::AutoCleanup, at(2028, 2, 28, 5, 0, 0)), at(2028, 2, 29, 4, 0, 0), "leap day");
    }

    #[test]
    fn periodic_jobs_keep_their_period() {
        assert_eq!(next(JobId::AgentHeartbeat, at(2026, 3, 1, 10, 0, 0)), at(2026, 3, 1, 10, 5, 0));
        assert_eq!(next(JobId::AgentHeartbeat, at(2026, 3, 1, 10, 4, 59)), at(2026, 3, 1, 10, 5, 0));
        assert_eq!(next(JobId::AgentHeartbeat, at(2026, 3, 1, 23, 57, 0)), at(2026, 3, 2, 0, 0, 0));
        assert_eq!(next(JobId::WebhookRetry, at(2026, 3, 1, 10, 0, 0)), at(2026, 3, 1, 10, 1, 0));
        assert_eq!(next(JobId::WebhookRetry, at(2026, 3, 1, 10, 0, 30)), at(2026, 3, 1, 10, 1, 0));
        assert_eq!(next(JobId::LocalSessionScan, at(2026, 3, 1, 10, 0, 30)), at(2026, 3, 1, 10, 1, 30));
        assert_eq!(next(JobId::GatewayHealth, at(2026, 3, 1, 10, 0, 15)), at(2026, 3, 1, 10, 5, 15));
        // Consecutive times of every periodic job are exactly its period apart.
        for (id, period) in [
            (JobId::AgentHeartbeat, 300),
            (JobId::WebhookRetry, 60),
            (JobId::LocalSessionScan, 60),
            (JobId::GatewayHealth, 300),
        ] {
            let schedule = Schedule::cron(id.cron().unwrap()).unwrap();
            let mut t = schedule.next_after(at(2026, 6, 30, 23, 51, 7)).unwrap();
            for _ in 0..30 {
                let n = schedule.next_after(t).unwrap();
                assert_eq!((n - t).num_seconds(), period, "{}", id.as_str());
                t = n;
            }
        }
    }

    #[test]
    fn fixed_periods_and_bad_expressions() {
        let every = Schedule::Every(Duration::from_secs(300));
        assert_eq!(every.next_after(at(2026, 3, 1, 10, 0, 7)), Some(at(2026, 3, 1, 10, 5, 7)));
        let zero = Schedule::Every(Duration::ZERO);
        assert_eq!(zero.next_after(at(2026, 3, 1, 10, 0, 7)), Some(at(2026, 3, 1, 10, 0, 8)), "never a busy loop");
        assert!(Schedule::cron("not cron").is_err());
        assert!(Schedule::cron("0 0 25 * * *").is_err(), "hour out of range");
    }

    #[test]
    fn configured_periods_align_to_the_clock_when_they_can() {
        let t = at(2026, 3, 1, 10, 2, 50);
        let every = |secs: u64| Schedule::period(secs, 45);
        assert!(matches!(every(300), Schedule::Cron(_)));
        assert_eq!(every(300).next_after(t), Some(at(2026, 3, 1, 10, 5, 45)));
        assert_eq!(every(300).next_after(at(2026, 3, 1, 10, 5, 45)), Some(at(2026, 3, 1, 10, 10, 45)));
        assert_eq!(every(60).next_after(t), Some(at(2026, 3, 1, 10, 3, 45)));
        assert_eq!(every(3600).next_after(t), Some(at(2026, 3, 1, 11, 0, 45)));
        assert_eq!(every(15).next_after(t), Some(at(2026, 3, 1, 10, 3, 0)));
        assert_eq!(every(1).next_after(t), Some(at(2026, 3, 1, 10, 2, 51)));
        // Periods that do not divide a minute or an hour count from the end of the previous run.
        for secs in [7, 90, 420, 7200, 86_400] {
            assert!(matches!(every(secs), Schedule::Every(_)), "{secs}");
            assert_eq!(every(secs).next_after(t), Some(t + chrono::Duration::seconds(secs as i64)), "{secs}");
        }
        assert_eq!(every(0).next_after(t), Some(at(2026, 3, 1, 10, 2, 51)), "never a busy loop");
    }

    #[test]
    fn registry_order_ids_and_settings() {
        let ids: Vec<&str> = JobId::ALL.iter().map(|j| j.as_str()).collect();
        assert_eq!(
            ids,
            [
                "auto_backup",
                "auto_cleanup",
                "agent_heartbeat",
                "webhook_retry",
                "local_session_scan",
                "gateway_health",
                "alert_evaluation"
            ]
        );
        let config = |interval: &str| {
            let args = ["--agw-home", "/nonexistent", "--alert-eval-interval", interval];
            crate::config::Settings::from_args(args).unwrap().validate().unwrap()
        };
        let default = config("300");
        for id in JobId::ALL {
            assert_eq!(JobId::parse(id.as_str()), Some(id));
            assert!(id.schedule(&default).is_ok(), "{}", id.as_str());
        }
        assert_eq!(JobId::parse("nope"), None);
        assert_eq!(JobId::AgentHeartbeat.setting(), Some(Key::AgentHeartbeat));
        assert_eq!(JobId::WebhookRetry.setting(), Some(Key::WebhooksRetryEnabled));
        assert_eq!(JobId::GatewayHealth.setting(), None);
        assert_eq!(JobId::AlertEvaluation.setting(), None);
        let t = at(2026, 3, 1, 10, 2, 50);
        let alert = |interval: &str| JobId::AlertEvaluation.schedule(&config(interval)).unwrap().next_after(t);
        assert_eq!(alert("300"), Some(at(2026, 3, 1, 10, 5, 45)));
        assert_eq!(alert("120"), Some(at(2026, 3, 1, 10, 4, 45)));
        assert_eq!(alert("45"), Some(t + chrono::Duration::seconds(45)));
        let zero = crate::config::Settings::from_args(["--agw-home", "/x", "--alert-eval-interval", "0"]).unwrap();
        assert!(zero.validate().is_err(), "a zero interval is refused at start");
        let scheduler = Scheduler::new(&default).unwrap();
        assert_eq!(scheduler.jobs().iter().map(|j| j.id).collect::<Vec<_>>(), JobId::ALL);
    }
}
