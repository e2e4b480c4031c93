//! `GET /metrics` in the Prometheus text format, and the one hoop that logs and counts every request.
//!
//! A small hand-written, process-wide registry (counters and fixed-bucket histograms on atomics) instead
//! of `metrics` + `metrics-exporter-prometheus`: a handful of series, no global recorder to install once,
//! no upkeep task, two fewer dependency trees. Gauges (SSE clients, pending webhook attempts, database
//! size) are read when scraped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use salvo::http::HeaderValue;
use salvo::prelude::*;

use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::http::{RequireRole, app};
use crate::users::Role;

/// Upper bounds (seconds) of the request latency histogram.
pub const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Fixed-bucket histogram; bucket counts are not cumulative until rendered.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|le| secs <= *le) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// A labelled family of series; the write lock is taken only to add a new label set.
struct Family<K, V> {
    series: RwLock<BTreeMap<K, Arc<V>>>,
}

impl<K: Ord + Clone, V: Default> Family<K, V> {
    fn new() -> Self {
        Self { series: RwLock::new(BTreeMap::new()) }
    }

    fn get(&self, key: &K) -> Arc<V> {
        if let Some(v) = self.series.read().unwrap_or_else(|p| p.into_inner()).get(key) {
            return v.clone();
        }
        self.series.write().unwrap_or_else(|p| p.into_inner()).entry(key.clone()).or_default().clone()
    }

    fn snapshot(&self) -> Vec<(K, Arc<V>)> {
        self.series.read().unwrap_or_else(|p| p.into_inner()).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

struct Registry {
    started: Instant,
    /// (method, route, status) → requests.
    requests: Family<(&'static str, String, u16), AtomicU64>,
    /// (method, route) → latency.
    latency: Family<(&'static str, String), Histogram>,
    /// outcome → webhook delivery attempts.
    deliveries: Family<&'static str, AtomicU64>,
    /// (job, result) → runs.
    jobs: Family<(String, &'static str), AtomicU64>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        started: Instant::now(),
        requests: Family::new(),
        latency: Family::new(),
        deliveries: Family::new(),
        jobs: Family::new(),
    })
}

/// Starts the uptime clock (called when the app is built).
pub fn init() {
    registry();
}

/// The method as a label: the standard ones, anything else is `OTHER` (bounded cardinality).
fn method_label(method: &salvo::http::Method) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"];
    KNOWN.into_iter().find(|m| *m == method.as_str()).unwrap_or("OTHER")
}

/// Counts one HTTP request under its route template.
pub fn http_request(method: &salvo::http::Method, route: &str, status: u16, elapsed: Duration) {
    let r = registry();
    let method = method_label(method);
    r.requests.get(&(method, route.to_string(), status)).fetch_add(1, Ordering::Relaxed);
    r.latency.get(&(method, route.to_string())).observe(elapsed);
}

/// Outcome label of a webhook delivery attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// A 2xx answer.
    Success,
    /// Any other HTTP status.
    HttpError,
    /// No answer within the timeout.
    Timeout,
    /// Connection refused, DNS, TLS…
    NetworkError,
}

impl DeliveryOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::HttpError => "http_error",
            Self::Timeout => "timeout",
            Self::NetworkError => "network_error",
        }
    }
}

/// Counts one webhook delivery attempt.
pub fn webhook_delivery(outcome: DeliveryOutcome) {
    registry().deliveries.get(&outcome.as_str()).fetch_add(1, Ordering::Relaxed);
}

/// Counts one run of a background job (for the scheduler): `ok` is its result.
pub fn job_run(job: &str, ok: bool) {
    let key = (job.to_string(), if ok { "ok" } else { "error" });
    registry().jobs.get(&key).fetch_add(1, Ordering::Relaxed);
}

/// Escapes a label value (backslash, double quote, newline).
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Values read from the running service when scraped.
pub struct Gauges {
    pub sse_clients: usize,
    pub webhook_pending: u64,
    pub database_bytes: u64,
}

/// The whole exposition, in the Prometheus text format 0.0.4.
pub fn render(g: &Gauges) -> String {
    let r = registry();
    let mut out = String::with_capacity(8192);
    header(&mut out, "opsdeck_build_info", "gauge", "Version of the running binary.");
    let _ = writeln!(out, "opsdeck_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
    header(&mut out, "opsdeck_uptime_seconds", "gauge", "Seconds since the service started.");
    let _ = writeln!(out, "opsdeck_uptime_seconds {:.3}", r.started.elapsed().as_secs_f64());

    header(&mut out, "opsdeck_http_requests_total", "counter", "HTTP requests by method, route template and status.");
    for ((method, route, status), n) in r.requests.snapshot() {
        let route = escape(&route);
        let n = n.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "opsdeck_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
        );
    }
    let name = "opsdeck_http_request_duration_seconds";
    header(&mut out, name, "histogram", "Time to answer an HTTP request (to the response head), by route template.");
    for ((method, route), h) in r.latency.snapshot() {
        let labels = format!("method=\"{method}\",route=\"{}\"", escape(&route));
        let mut cumulative = 0;
        for (le, bucket) in LATENCY_BUCKETS.iter().zip(&h.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let count = h.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum:.9}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }

    header(&mut out, "opsdeck_sse_clients", "gauge", "Clients connected to GET /api/events.");
    let _ = writeln!(out, "opsdeck_sse_clients {}", g.sse_clients);

    let name = "opsdeck_webhook_deliveries_total";
    header(&mut out, name, "counter", "Webhook delivery attempts by outcome.");
    let seen = r.deliveries.snapshot();
    for outcome in
        [DeliveryOutcome::Success, DeliveryOutcome::HttpError, DeliveryOutcome::Timeout, DeliveryOutcome::NetworkError]
    {
        let n = seen.iter().find(|(k, _)| *k == outcome.as_str()).map_or(0, |(_, v)| v.load(Ordering::Relaxed));
        let _ = writeln!(out, "{name}{{outcome=\"{}\"}} {n}", outcome.as_str());
    }
    header(&mut out, "opsdeck_webhook_pending", "gauge", "Webhook attempts waiting in the outbox (new and retries).");
    let _ = writeln!(out, "opsdeck_webhook_pending {}", g.webhook_pending);

    header(&mut out, "opsdeck_job_runs_total", "counter", "Background job runs by job and result (ok or error).");
    for ((job, result), n) in r.jobs.snapshot() {
        let _ = writeln!(
            out,
            "opsdeck_job_runs_total{{job=\"{}\",result=\"{result}\"}} {}",
            escape(&job),
            n.load(Ordering::Relaxed)
        );
    }

    header(&mut out, "opsdeck_database_size_bytes", "gauge", "Size of the database file.");
    let _ = writeln!(out, "opsdeck_database_size_bytes {}", g.database_bytes);
    out
}

/// Reads the gauges of a running service.
pub async fn gauges(state: &AppState) -> AppResult<Gauges> {
    let webhook_pending = state.store.read(crate::webhooks::store::pending_count).await?;
    let path = state.config.db_path.clone();
    let database_bytes = tokio::fs::metadata(&path).await.map(|m| m.len()).unwrap_or(0);
    Ok(Gauges { sse_clients: state.bus.subscriber_count(), webhook_pending, database_bytes })
}

/// `GET /metrics`: the API key or an admin session, unless `SVC_METRICS_PUBLIC=true`.
#[handler]
pub async fn scrape(req: &mut Request, depot: &mut Depot, res: &mut Response) {
    let result = async {
        let state = app(depot)?;
        if !state.config.metrics_public {
            RequireRole(Role::Admin).check(depot)?;
        }
        Ok::<_, AppError>(render(&gauges(&state).await?))
    }
    .await;
    match result {
        Ok(text) => {
            res.headers_mut()
                .insert("content-type", HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
            res.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));
            let _ = res.write_body(text);
        }
        Err(e) => e.write(req, depot, res).await,
    }
}

/// The route template of a request: `/api/tasks/{id}`, or `unmatched` when no route answered.
pub fn route_of(req: &Request) -> String {
    let matched = req.matched_path();
    if matched.is_empty() && req.uri().path() != "/" { "unmatched".to_string() } else { format!("/{matched}") }
}

/// Wraps every request: one log line (method, route template, status, latency) and the request
/// metrics.
#[handler]
pub async fn observe(req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
    let started = Instant::now();
    ctrl.call_next(req, depot, res).await;
    let elapsed = started.elapsed();
    let status = res.status_code.unwrap_or(StatusCode::OK).as_u16();
    let route = route_of(req);
    http_request(req.method(), &route, status, elapsed);
    tracing::info!(
        target: "opsdeck::http",
        method = %req.method(),
        route = %route,
        status,
        latency_ms = elapsed.as_micros() as f64 / 1000.0,
        "request"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_counts_add_up() {
        let method = salvo::http::Method::GET;
        let route = "/unit-test/histogram";
        http_request(&method, route, 200, Duration::from_micros(300));
        http_request(&method, route, 200, Duration::from_millis(30));
        http_request(&method, route, 500, Duration::from_secs(60));
        let text = render(&Gauges { sse_clients: 2, webhook_pending: 3, database_bytes: 4096 });
        let b = |le: &str| {
            let prefix = format!(
                "opsdeck_http_request_duration_seconds_bucket{{method=\"GET\",route=\"{route}\",le=\"{le}\"}} "
            );
            line(&text, &prefix).and_then(|l| l.rsplit(' ').next()).unwrap().to_string()
        };
        assert_eq!(b("0.0005"), "1");
        assert_eq!(b("0.025"), "1");
        assert_eq!(b("0.05"), "2");
        assert_eq!(b("10"), "2");
        assert_eq!(b("+Inf"), "3");
        let ok = format!("opsdeck_http_requests_total{{method=\"GET\",route=\"{route}\",status=\"200\"}} 2");
        assert!(text.contains(&ok), "{text}");
        assert!(text.contains("opsdeck_sse_clients 2\n"));
        assert!(text.contains("opsdeck_webhook_pending 3\n"));
        assert!(text.contains("opsdeck_database_size_bytes 4096\n"));
    }

    #[test]
    fn labels_are_escaped_and_odd_methods_folded() {
        job_run("weird \"job\"\nname", false);
        let odd = salvo::http::Method::from_bytes(b"BREW").unwrap();
        http_request(&odd, "/unit-test/odd", 404, Duration::from_millis(1));
        let text = render(&Gauges { sse_clients: 0, webhook_pending: 0, database_bytes: 0 });
        assert!(text.contains("opsdeck_job_runs_total{job=\"weird \\\"job\\\"\\nname\",result=\"error\"} 1"), "{text}");
        assert!(
            text.contains("opsdeck_http_requests_total{method=\"OTHER\",route=\"/unit-test/odd\",status=\"404\"} 1")
        );
    }
}
