//! Token stats latency over a large usage table (DESIGN target: `GET /api/tokens?action=stats&timeframe=all`
//! over 1,000,000 records < 50 ms).
//!
//! ```sh
//! cargo bench --bench tokens_stats                 # 1,000,000 records
//! TOKENS_BENCH_RECORDS=100000 cargo bench --bench tokens_stats
//! ```
//!
//! Inserts the records through `tokens::store::record_usage` (10,000 per write transaction) into a fresh
//! database, then times the aggregations straight on the store and through the real HTTP server. The data
//! set: 30 days, one record every ~2.6 s, 20 agents, a new session per agent every 4 hours (3,600
//! sessions), 2 of 6 models per agent. It reports numbers; it asserts nothing.

use std::time::{Duration, Instant};

use opsdeck::store::{Store, Tx};
use opsdeck::tokens::{self, NewUsage, Pricing, Timeframe};
use redb::{ReadableDatabase, ReadableTableMetadata};

const MODELS: &[&str] = &[
    "claude-sonnet-4",
    "anthropic/claude-opus-4-5",
    "claude-3-5-haiku",
    "groq/llama-3.3-70b-versatile",
    "ollama/llama3.1:8b",
    "minimax/minimax-m2.1",
];
const AGENTS: u64 = 20;
const BATCH: u64 = 10_000;
const API_KEY: &str = "bench-api-key-0123456789";
const RUNS: usize = 30;

fn main() {
    let records: u64 = std::env::var("TOKENS_BENCH_RECORDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("svc.db");
    let now = u64::try_from(chrono::Utc::now().timestamp_millis()).expect("clock after 1970");
    let span = 30 * tokens::DAY_MS;
    let start = now - span;
    let step = span / records.max(1);

    let store = Store::open(&db_path).expect("open database");
    let pricing = Pricing::default();
    let begin = Instant::now();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut i = 0;
    while i < records {
        let txn = store.database().begin_write().expect("write transaction");
        let mut tx = Tx { txn, events: Vec::new(), queued_deliveries: false };
        for _ in 0..BATCH.min(records - i) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let ts = start + i * step;
            let agent = i % AGENTS;
            let model = MODELS[((agent + (seed >> 60) % 2) % MODELS.len() as u64) as usize];
            let new = NewUsage {
                model: model.to_string(),
                session_id: format!("agent-{agent}:s{}", ts / (4 * tokens::HOUR_MS)),
                input_tokens: 200 + (seed >> 8) % 4000,
                output_tokens: 50 + (seed >> 24) % 1500,
                operation: None,
                duration_ms: Some(((seed >> 40) % 20_000) as f64),
                timestamp_ms: Some(ts),
                rate: pricing.rate(model),
            };
            tokens::record_usage(&mut tx, new).expect("insert");
            i += 1;
        }
        tx.txn.commit().expect("commit");
    }
    let insert = begin.elapsed();
    println!(
        "inserted {records} records in {:.1} s ({:.0} records/s, {BATCH} per transaction)",
        insert.as_secs_f64(),
        records as f64 / insert.as_secs_f64()
    );
    {
        use opsdeck::store::schema::{TOKEN_ROLLUP_HOURLY, TOKEN_ROLLUP_TOTAL, TOKEN_SESSIONS_BY_LAST};
        let tx = store.database().begin_read().expect("read");
        let rows = |n: u64, what: &str| println!("  {n:>9} {what}");
        rows(tx.open_table(TOKEN_ROLLUP_HOURLY).unwrap().len().unwrap(), "hourly rollup rows");
        rows(tx.open_table(TOKEN_ROLLUP_TOTAL).unwrap().len().unwrap(), "all-time rollup rows");
        rows(tx.open_table(TOKEN_SESSIONS_BY_LAST).unwrap().len().unwrap(), "sessions");
    }

    println!("\nstore (one read transaction per call, {RUNS} runs): median / p95 / max");
    for timeframe in [Timeframe::All, Timeframe::Month, Timeframe::Week, Timeframe::Day, Timeframe::Hour] {
        let cutoff = timeframe.cutoff(now + 1);
        let times = time(|| {
            let tx = store.database().begin_read().expect("read");
            let b = tokens::store::breakdown(&tx, cutoff).expect("breakdown");
            std::hint::black_box(b.summary.count);
        });
        println!("  stats {:<6} {}", timeframe.as_str(), report(&times));
    }
    let times = time(|| {
        let tx = store.database().begin_read().expect("read");
        std::hint::black_box(tokens::store::agent_costs(&tx, None).expect("agent costs").record_count);
    });
    println!("  agent-costs all {}", report(&times));
    let times = time(|| {
        let tx = store.database().begin_read().expect("read");
        std::hint::black_box(tokens::sessions_from_usage(&tx, 50).expect("sessions").len());
    });
    println!("  sessions_from_usage(50) {}", report(&times));
    drop(store);

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(http(dir.path(), &db_path));
}

async fn http(data_dir: &std::path::Path, db_path: &std::path::Path) {
    let args = [
        ("--env", "development"),
        ("--data-dir", data_dir.to_str().unwrap()),
        ("--db-path", db_path.to_str().unwrap()),
        ("--api-key", API_KEY),
        ("--auth-pass", "bench-password-123"),
        ("--argon2-memory-kib", "8"),
        ("--argon2-iterations", "1"),
        ("--disable-rate-limit", "true"),
    ];
    let settings = opsdeck::config::Settings::from_args(args.iter().flat_map(|(k, v)| [*k, *v])).expect("settings");
    let app = opsdeck::build(settings.validate().expect("config")).await.expect("app");
    let (acceptor, addr) = opsdeck::bind("127.0.0.1", 0).await.expect("bind");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(opsdeck::serve(app, acceptor, async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    println!("\nHTTP GET on 127.0.0.1 (sequential, {RUNS} runs after 3 warm-ups): median / p95 / max");
    for query in [
        "action=stats&timeframe=all",
        "action=stats&timeframe=month",
        "action=stats&timeframe=day",
        "action=list&timeframe=all",
        "action=trends",
        "action=agent-costs&timeframe=week",
    ] {
        let url = format!("http://{addr}/api/tokens?{query}");
        let mut times = Vec::new();
        for run in 0..RUNS + 3 {
            let begin = Instant::now();
            let res = client.get(&url).header("x-api-key", API_KEY).send().await.expect("request");
            assert!(res.status().is_success(), "{query}: {}", res.status());
            let body = res.bytes().await.expect("body");
            if run >= 3 {
                times.push(begin.elapsed());
            }
            std::hint::black_box(body.len());
        }
        println!("  {query:<36} {}", report(&times));
    }
    let _ = stop.send(());
}

fn time(mut f: impl FnMut()) -> Vec<Duration> {
    f(); // warm the page cache
    (0..RUNS)
        .map(|_| {
            let begin = Instant::now();
            f();
            begin.elapsed()
        })
        .collect()
}

fn report(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!("{:8.2} ms {:8.2} ms {:8.2} ms", ms(at(0.5)), ms(at(0.95)), ms(sorted[sorted.len() - 1]))
}
