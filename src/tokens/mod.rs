//! Token usage and cost: records, pricing, timeframes and the aggregations behind `GET /api/tokens`.
//!
//! Costs are whole nano-USD internally (see [`pricing::Rate`]) so rollup sums equal a scan exactly; they are
//! shown as USD numbers. `store.rs` keeps the records and the rollups; `api.rs` is the HTTP surface;
//! `export.rs` formats CSV and JSON downloads.

pub mod api;
pub mod export;
pub mod pricing;
pub mod store;

use std::collections::{BTreeMap, BTreeSet};

use salvo_oapi::ToSchema;
use serde::Serialize;

pub use pricing::{Pricing, Rate};
pub use store::{prune_older_than, record_usage, sessions_from_usage};

use crate::tasks::Problems;

pub const HOUR_MS: u64 = 3_600_000;
pub const DAY_MS: u64 = 24 * HOUR_MS;
pub const DEFAULT_OPERATION: &str = "chat_completion";
/// Largest token count of one record (input or output).
pub const MAX_TOKENS: u64 = 1_000_000_000_000;
const MAX_MODEL_CHARS: usize = 200;
const MAX_SESSION_CHARS: usize = 500;
const MAX_OPERATION_CHARS: usize = 100;
/// Imported timestamps must be on or after 2000-01-01 (catches seconds sent as milliseconds).
pub const MIN_TIMESTAMP_MS: u64 = 946_684_800_000;
/// How far in the future a given timestamp may be (clock skew).
pub const MAX_FUTURE_SKEW_MS: u64 = 5 * 60 * 1000;

/// A token usage record as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[salvo(schema(name = "TokenUsageRecord"))]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// `<timestamp>-<sequence>`.
    pub id: String,
    pub model: String,
    pub session_id: String,
    /// The part of `sessionId` before the first colon (`unknown` when empty).
    pub agent_name: String,
    /// Milliseconds.
    pub timestamp: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Estimated USD.
    pub cost: f64,
    pub operation: String,
    /// Milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
}

/// A usage record to store. Its cost is `(input + output) / 1000 × rate`.
#[derive(Debug, Clone)]
pub struct NewUsage {
    pub model: String,
    pub session_id: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `chat_completion` when `None`.
    pub operation: Option<String>,
    /// Milliseconds.
    pub duration_ms: Option<f64>,
    /// Milliseconds; now when `None`.
    pub timestamp_ms: Option<u64>,
    /// From [`Pricing::rate`] of the model.
    pub rate: Rate,
}

/// A session as derived from its usage records (for `GET /api/sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[salvo(schema(name = "UsageSession"))]
#[serde(rename_all = "camelCase")]
pub struct UsageSession {
    pub session_id: String,
    pub agent: String,
    /// Model of the session's latest record.
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub cost: f64,
    pub request_count: u64,
    /// Milliseconds.
    pub first_timestamp: u64,
    /// Milliseconds.
    pub last_timestamp: u64,
}

/// The agent a session belongs to: the part of the session id before the first colon.
pub fn agent_of(session_id: &str) -> &str {
    match session_id.split(':').next() {
        Some(agent) if !agent.is_empty() => agent,
        _ => "unknown",
    }
}

pub fn hour_of(timestamp_ms: u64) -> u64 {
    timestamp_ms - timestamp_ms % HOUR_MS
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    u64::try_from(crate::store::now_millis()).unwrap_or(0)
}

pub fn nanos_to_usd(nanos: u128) -> f64 {
    nanos as f64 / 1e9
}

/// `timeframe` of `GET /api/tokens`: a window ending now (records at or after its start), or everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Timeframe {
    /// The last 60 minutes.
    Hour,
    /// The last 24 hours.
    Day,
    /// The last 7 days.
    Week,
    /// The last 30 days.
    Month,
    All,
}

impl Timeframe {
    pub const NAMES: &str = "hour, day, week, month, all";

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "hour" => Self::Hour,
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            "all" => Self::All,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::All => "all",
        }
    }

    /// The first millisecond inside the window, `None` for `all`.
    pub fn cutoff(self, now_ms: u64) -> Option<u64> {
        let span = match self {
            Self::Hour => HOUR_MS,
            Self::Day => DAY_MS,
            Self::Week => 7 * DAY_MS,
            Self::Month => 30 * DAY_MS,
            Self::All => return None,
        };
        Some(now_ms.saturating_sub(span))
    }
}

/// Sums over a group of records. Total tokens are `input + output`; the cost is nano-USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sums {
    pub count: u64,
    pub input: u64,
    pub output: u64,
    pub cost_nanos: u128,
}

impl Sums {
    pub fn one(input: u64, output: u64, cost_nanos: u128) -> Self {
        Self { count: 1, input, output, cost_nanos }
    }

    pub fn add(&mut self, o: &Sums) {
        self.count = self.count.saturating_add(o.count);
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cost_nanos = self.cost_nanos.saturating_add(o.cost_nanos);
    }

    pub fn sub(&mut self, o: &Sums) {
        self.count = self.count.saturating_sub(o.count);
        self.input = self.input.saturating_sub(o.input);
        self.output = self.output.saturating_sub(o.output);
        self.cost_nanos = self.cost_nanos.saturating_sub(o.cost_nanos);
    }

    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    pub fn cost(&self) -> f64 {
        nanos_to_usd(self.cost_nanos)
    }

    pub fn stats(&self) -> TokenStats {
        let total = self.total();
        let (avg_tokens, avg_cost) = match self.count {
            0 => (0, 0.0),
            n => ((total + n / 2) / n, self.cost() / n as f64),
        };
        TokenStats {
            total_tokens: total,
            total_cost: self.cost(),
            request_count: self.count,
            avg_tokens_per_request: avg_tokens,
            avg_cost_per_request: avg_cost,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[salvo(schema(name = "TokenStats"))]
#[serde(rename_all = "camelCase")]
pub struct TokenStats {
    pub total_tokens: u64,
    /// USD.
    pub total_cost: f64,
    pub request_count: u64,
    /// Rounded to the nearest integer.
    pub avg_tokens_per_request: u64,
    /// USD.
    pub avg_cost_per_request: f64,
}

/// One group of the usage data handed to an aggregation: a rollup row or a single record.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// Start of the hour bucket (ms); `None` for all-time rollup rows.
    pub hour: Option<u64>,
    pub model: &'a str,
    pub agent: &'a str,
    pub session: &'a str,
    pub sums: Sums,
}

fn add_to(map: &mut BTreeMap<String, Sums>, key: &str, sums: &Sums) {
    match map.get_mut(key) {
        Some(s) => s.add(sums),
        None => {
            map.insert(key.to_string(), *sums);
        }
    }
}

fn stats_map(map: &BTreeMap<String, Sums>) -> BTreeMap<String, TokenStats> {
    map.iter().map(|(k, v)| (k.clone(), v.stats())).collect()
}

/// Totals by model, session and agent (`action=stats`, export summaries).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Breakdown {
    pub summary: Sums,
    pub models: BTreeMap<String, Sums>,
    pub sessions: BTreeMap<String, Sums>,
    pub agents: BTreeMap<String, Sums>,
}

impl Breakdown {
    pub fn add(&mut self, g: &Group<'_>) {
        self.summary.add(&g.sums);
        add_to(&mut self.models, g.model, &g.sums);
        add_to(&mut self.sessions, g.session, &g.sums);
        add_to(&mut self.agents, g.agent, &g.sums);
    }

    pub fn model_stats(&self) -> BTreeMap<String, TokenStats> {
        stats_map(&self.models)
    }

    pub fn session_stats(&self) -> BTreeMap<String, TokenStats> {
        stats_map(&self.sessions)
    }

    pub fn agent_stats(&self) -> BTreeMap<String, TokenStats> {
        stats_map(&self.agents)
    }
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct AgentTotals {
    pub sums: Sums,
    pub models: BTreeMap<String, Sums>,
    pub sessions: BTreeSet<String>,
    /// UTC day number (days since the epoch) → sums.
    pub days: BTreeMap<u64, Sums>,
}

/// Per-agent totals with models, sessions and a daily timeline (`action=agent-costs`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AgentCosts {
    pub agents: BTreeMap<String, AgentTotals>,
    pub record_count: u64,
}

impl AgentCosts {
    /// Needs hourly groups (`hour` set) for the timeline.
    pub fn add(&mut self, g: &Group<'_>) {
        self.record_count += g.sums.count;
        let agent = match self.agents.get_mut(g.agent) {
            Some(a) => a,
            None => self.agents.entry(g.agent.to_string()).or_default(),
        };
        agent.sums.add(&g.sums);
        add_to(&mut agent.models, g.model, &g.sums);
        if !agent.sessions.contains(g.session) {
            agent.sessions.insert(g.session.to_string());
        }
        if let Some(hour) = g.hour {
            agent.days.entry(hour / DAY_MS).or_default().add(&g.sums);
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`; the number itself when out of chrono's range.
pub fn iso_millis(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| ms.to_string())
}

/// `YYYY-MM-DD` (UTC) of a day number.
pub fn date_of_day(day: u64) -> String {
    iso_millis(day.saturating_mul(DAY_MS)).chars().take(10).collect()
}

/// The validated fields of a usage report (from `POST /api/tokens` or a heartbeat), `prefix` names the
/// object they came in (`""` or `"token_usage."`).
pub fn check_usage(p: &mut Problems, prefix: &str, model: &str, input: Option<u64>, output: Option<u64>) {
    p.check(!model.is_empty(), &format!("{prefix}model"), "must not be empty");
    p.check(
        model.chars().count() <= MAX_MODEL_CHARS,
        &format!("{prefix}model"),
        &format!("must be at most {MAX_MODEL_CHARS} characters"),
    );
    for (field, value) in [("inputTokens", input), ("outputTokens", output)] {
        if let Some(v) = value {
            p.check(v <= MAX_TOKENS, &format!("{prefix}{field}"), "must be at most 1000000000000");
        }
    }
}

/// Checks of the fields only `POST /api/tokens` has.
pub fn check_record_fields(
    p: &mut Problems,
    session_id: &str,
    operation: Option<&str>,
    duration: Option<f64>,
    timestamp: Option<u64>,
    now_ms: u64,
) {
    p.check(!session_id.is_empty(), "sessionId", "must not be empty");
    p.check(
        session_id.chars().count() <= MAX_SESSION_CHARS,
        "sessionId",
        &format!("must be at most {MAX_SESSION_CHARS} characters"),
    );
    if let Some(op) = operation {
        p.check(!op.is_empty(), "operation", "must not be empty");
        p.check(
            op.chars().count() <= MAX_OPERATION_CHARS,
            "operation",
            &format!("must be at most {MAX_OPERATION_CHARS} characters"),
        );
    }
    if let Some(d) = duration {
        p.check(d.is_finite() && d >= 0.0, "duration", "must be a non-negative number of milliseconds");
    }
    if let Some(t) = timestamp {
        p.check(t >= MIN_TIMESTAMP_MS, "timestamp", "must be a Unix time in milliseconds on or after 2000-01-01");
        p.check(t <= now_ms + MAX_FUTURE_SKEW_MS, "timestamp", "must not be more than 5 minutes in the future");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Csv,
}

impl ExportFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "json" => Some(Self::Json),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Csv => "csv",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_is_the_part_before_the_first_colon() {
        assert_eq!(agent_of("alice:chat:1"), "alice");
        assert_eq!(agent_of("solo"), "solo");
        assert_eq!(agent_of(":x"), "unknown");
        assert_eq!(agent_of(""), "unknown");
    }

    #[test]
    fn timeframes_are_windows_ending_now() {
        let now = 100 * DAY_MS + 1234;
        assert_eq!(Timeframe::Hour.cutoff(now), Some(now - HOUR_MS));
        assert_eq!(Timeframe::Day.cutoff(now), Some(now - DAY_MS));
        assert_eq!(Timeframe::Week.cutoff(now), Some(now - 7 * DAY_MS));
        assert_eq!(Timeframe::Month.cutoff(now), Some(now - 30 * DAY_MS));
        assert_eq!(Timeframe::All.cutoff(now), None);
        assert_eq!(Timeframe::Month.cutoff(5), Some(0));
        for name in ["hour", "day", "week", "month", "all"] {
            assert_eq!(Timeframe::parse(name).unwrap().as_str(), name);
        }
        assert_eq!(Timeframe::parse("year"), None);
        assert_eq!(Timeframe::parse("Hour"), None);
    }

    #[test]
    fn stats_round_the_average_and_divide_the_cost() {
        let s = Sums { count: 3, input: 5, output: 5, cost_nanos: 30_000_000 };
        let st = s.stats();
        assert_eq!(st.total_tokens, 10);
        assert_eq!(st.avg_tokens_per_request, 3); // 3.33 → 3
        assert_eq!(Sums { count: 2, input: 3, output: 0, cost_nanos: 0 }.stats().avg_tokens_per_request, 2);
        assert_eq!(st.total_cost, 0.03);
        assert_eq!(st.avg_cost_per_request, 0.01);
        assert_eq!(Sums::default().stats().avg_cost_per_request, 0.0);
    }

    #[test]
    fn times_format_as_iso_8601() {
        assert_eq!(iso_millis(1_763_700_000_123), "2025-11-21T04:40:00.123Z");
        assert_eq!(date_of_day(1_763_700_000_123 / DAY_MS), "2025-11-21");
        assert_eq!(iso_millis(u64::MAX), u64::MAX.to_string());
        assert_eq!(hour_of(1_763_700_000_123), 1_763_697_600_000);
    }
}
