//! `/api/tokens`: usage records, statistics, per-agent costs, trends, exports and the pricing table
//! (`GET`, viewer) and recording usage (`POST`, operator).

use std::collections::BTreeMap;

use salvo::http::HeaderValue;
use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::export::{self, CSV_HEADER, JSON_END};
use super::{
    DAY_MS, ExportFormat, HOUR_MS, NewUsage, Timeframe, TokenStats, UsageRecord, check_record_fields, check_usage,
    date_of_day, hour_of, iso_millis, now_ms, store,
};
use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::{Page, RequireRole, app, json_body};
use crate::store::StoreError;
use crate::tasks::Problems;
use crate::users::Role;

/// Records per page of `action=list` (default and maximum).
const LIST_LIMIT: usize = 100;
/// Hours of `action=trends`.
const TREND_HOURS: usize = 24;
/// Export chunks are flushed at this size.
const CHUNK_BYTES: usize = 64 * 1024;

#[derive(Serialize, ToSchema)]
pub struct UsageList {
    /// Newest first, at most 100.
    pub usage: Vec<UsageRecord>,
    /// Records in the timeframe.
    pub total: u64,
    pub timeframe: Timeframe,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsReply {
    pub summary: TokenStats,
    pub models: BTreeMap<String, TokenStats>,
    pub sessions: BTreeMap<String, TokenStats>,
    pub agents: BTreeMap<String, TokenStats>,
    pub timeframe: Timeframe,
    pub record_count: u64,
}

#[derive(Serialize, ToSchema)]
pub struct TimelinePoint {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// USD.
    pub cost: f64,
    pub tokens: u64,
}

#[derive(Serialize, ToSchema)]
pub struct AgentCost {
    pub stats: TokenStats,
    pub models: BTreeMap<String, TokenStats>,
    /// Session ids, sorted.
    pub sessions: Vec<String>,
    /// One entry per UTC day with usage, oldest first.
    pub timeline: Vec<TimelinePoint>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCostsReply {
    pub agents: BTreeMap<String, AgentCost>,
    pub timeframe: Timeframe,
    pub record_count: u64,
}

#[derive(Serialize, ToSchema)]
pub struct TrendPoint {
    /// Start of the hour, ISO 8601 (`2026-11-21T05:00:00.000Z`).
    pub timestamp: String,
    pub tokens: u64,
    /// USD.
    pub cost: f64,
    pub requests: u64,
}

#[derive(Serialize, ToSchema)]
pub struct TrendsReply {
    /// The 24 clock hours ending with the current one, oldest first (hours without usage are zeros).
    pub trends: Vec<TrendPoint>,
    /// The `timeframe` asked for; trends always cover the last 24 hours.
    pub timeframe: Timeframe,
}

#[derive(Serialize, ToSchema)]
pub struct PricingReply {
    /// Model name (lower case; `provider/*` is a wildcard) → USD per 1,000 tokens.
    pub pricing: BTreeMap<String, f64>,
    /// USD per 1,000 tokens for models that match no entry.
    pub default_rate: f64,
}

/// The body of `GET /api/tokens`, by action (`export` answers with a file instead).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum TokensReply {
    List(UsageList),
    Stats(StatsReply),
    AgentCosts(AgentCostsReply),
    Trends(TrendsReply),
    Pricing(PricingReply),
}

enum Action {
    List,
    Stats,
    AgentCosts,
    Export,
    Trends,
    Pricing,
}

impl Action {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "list" => Self::List,
            "stats" => Self::Stats,
            "agent-costs" => Self::AgentCosts,
            "export" => Self::Export,
            "trends" => Self::Trends,
            "pricing" => Self::Pricing,
            _ => return None,
        })
    }
}

/// A query parameter parsed by `parse`; absent or empty gives `default`, anything else unknown is a 400.
fn choice<T>(req: &Request, name: &str, default: T, parse: fn(&str) -> Option<T>, allowed: &str) -> AppResult<T> {
    match req.queries().get(name).map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => Ok(default),
        Some(s) => parse(s).ok_or_else(|| AppError::validation(name, &format!("must be one of {allowed}"))),
    }
}

/// Token usage, by `action`:
/// - `list` (default): `{usage, total, timeframe}`, newest first, `limit` ≤ 100 and `offset`;
/// - `stats`: `{summary, models, sessions, agents, timeframe, recordCount}`;
/// - `agent-costs`: `{agents: {name: {stats, models, sessions, timeline}}, timeframe, recordCount}`;
/// - `export`: a download, `format=json` (records, summary, model and session stats) or `format=csv`;
/// - `trends`: `{trends: [{timestamp, tokens, cost, requests}], timeframe}` for the last 24 hours;
/// - `pricing`: `{pricing: {model: rate}, default_rate}` in USD per 1,000 tokens.
///
/// `timeframe`: `hour`, `day`, `week`, `month` (the last 60 minutes, 24 hours, 7 or 30 days) or `all`
/// (default). Viewer.
#[endpoint(
    tags("tokens"),
    parameters(
        ("action" = Option<String>, Query, description = "list (default), stats, agent-costs, export, trends, pricing"),
        ("timeframe" = Option<String>, Query, description = "hour, day, week, month, all (default)"),
        ("format" = Option<String>, Query, description = "export only: json (default) or csv"),
        ("limit" = Option<u32>, Query, description = "list only: default 100, max 100"),
        ("offset" = Option<u32>, Query, description = "list only: default 0"),
    ),
    responses((status_code = 200, description = "The action's JSON body, or the export file (application/json or text/csv, Content-Disposition attachment)", body = TokensReply))
)]
pub async fn get(req: &mut Request, depot: &mut Depot, res: &mut Response) -> AppResult<()> {
    let state = app(depot)?;
    let action =
        choice(req, "action", Action::List, Action::parse, "list, stats, agent-costs, export, trends, pricing")?;
    let timeframe = choice(req, "timeframe", Timeframe::All, Timeframe::parse, Timeframe::NAMES)?;
    let format = choice(req, "format", ExportFormat::Json, ExportFormat::parse, "json, csv")?;
    let now = now_ms();
    let cutoff = timeframe.cutoff(now);
    let reply = match action {
        Action::List => {
            let page = Page::from_query(req, LIST_LIMIT, LIST_LIMIT)?;
            let (usage, total) = state
                .store
                .read(move |tx| {
                    Ok::<_, StoreError>((store::list(tx, cutoff, page.limit, page.offset)?, store::count(tx, cutoff)?))
                })
                .await?;
            TokensReply::List(UsageList { usage, total, timeframe })
        }
        Action::Stats => {
            let b = state.store.read(move |tx| store::breakdown(tx, cutoff)).await?;
            TokensReply::Stats(StatsReply {
                summary: b.summary.stats(),
                models: b.model_stats(),
                sessions: b.session_stats(),
                agents: b.agent_stats(),
                timeframe,
                record_count: b.summary.count,
            })
        }
        Action::AgentCosts => {
            let costs = state.store.read(move |tx| store::agent_costs(tx, cutoff)).await?;
            let agents = costs
                .agents
                .into_iter()
                .map(|(name, a)| {
                    let timeline = a
                        .days
                        .iter()
                        .map(|(day, s)| TimelinePoint { date: date_of_day(*day), cost: s.cost(), tokens: s.total() })
                        .collect();
                    let models = a.models.iter().map(|(m, s)| (m.clone(), s.stats())).collect();
                    let cost = AgentCost {
                        stats: a.sums.stats(),
                        models,
                        sessions: a.sessions.into_iter().collect(),
                        timeline,
                    };
                    (name, cost)
                })
                .collect();
            TokensReply::AgentCosts(AgentCostsReply { agents, timeframe, record_count: costs.record_count })
        }
        Action::Trends => {
            let from = hour_of(now).saturating_sub((TREND_HOURS as u64 - 1) * HOUR_MS);
            let hours = state.store.read(move |tx| store::hourly_sums(tx, from, TREND_HOURS)).await?;
            let trends = hours
                .iter()
                .enumerate()
                .map(|(i, s)| TrendPoint {
                    timestamp: iso_millis(from + i as u64 * HOUR_MS),
                    tokens: s.total(),
                    cost: s.cost(),
                    requests: s.count,
                })
                .collect();
            TokensReply::Trends(TrendsReply { trends, timeframe })
        }
        Action::Pricing => TokensReply::Pricing(PricingReply {
            pricing: state.config.pricing.table(),
            default_rate: state.config.pricing.default_rate(),
        }),
        Action::Export => return export(&state, res, timeframe, format, now),
    };
    res.render(Json(reply));
    Ok(())
}

/// Streams the export: one read snapshot, summaries first (JSON), then the records oldest first.
fn export(state: &AppState, res: &mut Response, timeframe: Timeframe, format: ExportFormat, now: u64) -> AppResult<()> {
    let today = date_of_day(now / DAY_MS);
    let name = export::filename(timeframe.as_str(), &today, format.extension());
    let content_type = match format {
        ExportFormat::Json => "application/json",
        ExportFormat::Csv => "text/csv; charset=utf-8",
    };
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")).map_err(AppError::internal)?;
    res.headers_mut().insert("content-type", HeaderValue::from_static(content_type));
    res.headers_mut().insert("content-disposition", disposition);
    res.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));

    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let store = state.store.clone();
    let cutoff = timeframe.cutoff(now);
    tokio::spawn(async move {
        let chunks = sender.clone();
        let result = store
            .read(move |tx| {
                let mut out = Chunks { buf: String::with_capacity(CHUNK_BYTES * 2), sender: chunks, open: true };
                match format {
                    ExportFormat::Csv => {
                        out.buf.push_str(CSV_HEADER);
                        store::for_each_record(tx, cutoff, |r| {
                            export::csv_row(&mut out.buf, &r);
                            out.flush_if_full()
                        })?;
                    }
                    ExportFormat::Json => {
                        let b = store::breakdown(tx, cutoff)?;
                        let head = export::json_start(timeframe.as_str(), &iso_millis(now), &b)
                            .map_err(|e| StoreError::Codec(e.to_string()))?;
                        out.buf.push_str(&head);
                        let mut first = true;
                        store::for_each_record(tx, cutoff, |r| {
                            if !std::mem::take(&mut first) {
                                out.buf.push(',');
                            }
                            // A record always serializes; an error here would only truncate the file.
                            out.buf.push_str(&serde_json::to_string(&r).unwrap_or_default());
                            out.flush_if_full()
                        })?;
                        out.buf.push_str(JSON_END);
                    }
                }
                out.flush();
                Ok::<_, StoreError>(())
            })
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "token usage export failed");
            let _ = sender.send(Err(std::io::Error::other("export failed"))).await;
        }
    });
    res.stream(tokio_stream::wrappers::ReceiverStream::new(receiver));
    Ok(())
}

/// Export output buffered into chunks for the response stream.
struct Chunks {
    buf: String,
    sender: tokio::sync::mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
    /// False once the client went away: stop producing.
    open: bool,
}

impl Chunks {
    fn flush(&mut self) {
        if self.open && !self.buf.is_empty() {
            let chunk = std::mem::replace(&mut self.buf, String::with_capacity(CHUNK_BYTES * 2));
            self.open = self.sender.blocking_send(Ok(chunk.into_bytes())).is_ok();
        }
    }

    /// Flushes a full buffer; `false` once nobody reads any more.
    fn flush_if_full(&mut self) -> bool {
        if self.buf.len() >= CHUNK_BYTES {
            self.flush();
        }
        self.open
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordUsageBody {
    pub model: String,
    /// `<agent>:<session>`; the agent name is the part before the first colon.
    pub session_id: String,
    /// Non-negative integer.
    #[salvo(schema(value_type = u64))]
    pub input_tokens: serde_json::Number,
    /// Non-negative integer.
    #[salvo(schema(value_type = u64))]
    pub output_tokens: serde_json::Number,
    /// Default `chat_completion`.
    pub operation: Option<String>,
    /// Milliseconds, at least 0.
    pub duration: Option<f64>,
    /// Milliseconds since the epoch, for imports (default now; at most 5 minutes ahead).
    #[salvo(schema(value_type = Option<u64>))]
    pub timestamp: Option<serde_json::Number>,
}

#[derive(Serialize, ToSchema)]
pub struct RecordUsageReply {
    pub success: bool,
    pub record: UsageRecord,
}

/// A non-negative integer field, or a problem naming it.
fn integer(p: &mut Problems, field: &str, n: Option<&serde_json::Number>) -> Option<u64> {
    let value = n?.as_u64();
    p.check(value.is_some(), field, "must be a non-negative integer");
    value
}

/// Record token usage; the cost comes from the pricing table. Operator.
#[endpoint(tags("tokens"), request_body = RecordUsageBody)]
pub async fn add(req: &mut Request, depot: &mut Depot) -> AppResult<Json<RecordUsageReply>> {
    let state = app(depot)?;
    let body: RecordUsageBody = json_body(req).await?;
    let now = now_ms();
    let model = body.model.trim().to_string();
    let session_id = body.session_id.trim().to_string();
    let operation = body.operation.map(|o| o.trim().to_string());
    let mut p = Problems::default();
    let input = integer(&mut p, "inputTokens", Some(&body.input_tokens));
    let output = integer(&mut p, "outputTokens", Some(&body.output_tokens));
    let timestamp = integer(&mut p, "timestamp", body.timestamp.as_ref());
    check_usage(&mut p, "", &model, input, output);
    check_record_fields(&mut p, &session_id, operation.as_deref(), body.duration, timestamp, now);
    p.finish()?;
    let new = NewUsage {
        rate: state.config.pricing.rate(&model),
        model,
        session_id,
        input_tokens: input.unwrap_or_default(),
        output_tokens: output.unwrap_or_default(),
        operation,
        duration_ms: body.duration,
        timestamp_ms: Some(timestamp.unwrap_or(now)),
    };
    let record = state.write(move |tx| Ok::<_, AppError>(store::record_usage(tx, new)?)).await?;
    Ok(Json(RecordUsageReply { success: true, record }))
}

pub fn router() -> Router {
    Router::with_path("tokens")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(get))
        .push(Router::new().hoop(RequireRole(Role::Operator)).post(add))
}
