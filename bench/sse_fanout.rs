//! SSE fan-out (DESIGN target: 1,000 concurrent clients; an event reaches all of them in < 50 ms p99).
//!
//! ```sh
//! cargo bench --bench sse_fanout -- <port> [clients=1000] [rounds=20]   # against a running server
//! ```
//!
//! Opens `clients` streams on `GET /api/events` of the server on 127.0.0.1:<port> (API key `bench-key`),
//! waits for every `connected` frame, then `rounds` times adds a log line (`POST /api/logs`, a durable write
//! that publishes `log.added`) and times, per client, from just before the POST is written to the moment that
//! client has read the frame. The latency therefore includes the durable write and its fsync. The client is
//! one single-threaded tokio runtime, so it takes as little of the 2 cores as possible from the server.
//! It reports numbers; it asserts nothing.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const KEY: &str = "bench-key";
const MARKER: &str = "fanout-round-";

/// One stream: reports `connected`, then the round number of every marker it reads.
async fn client(port: u16, ready: mpsc::UnboundedSender<()>, seen: mpsc::UnboundedSender<(usize, Instant)>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let request =
        format!("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: {KEY}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("subscribe");
    let mut lines = BufReader::new(stream).lines();
    let mut connected = false;
    while let Ok(Some(line)) = lines.next_line().await {
        if !connected && line.contains("\"connected\"") {
            connected = true;
            let _ = ready.send(());
        }
        if let Some(at) = line.find(MARKER) {
            let digits: String = line[at + MARKER.len()..].chars().take_while(char::is_ascii_digit).collect();
            if let Ok(round) = digits.parse() {
                let _ = seen.send((round, Instant::now()));
            }
        }
    }
}

/// `POST /api/logs` on a fresh connection; returns once the answer's head has arrived.
async fn add_log(port: u16, message: &str) {
    let body = format!(r#"{{"action":"add","level":"info","message":"{message}"}}"#);
    let request = format!(
        "POST /api/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: {KEY}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("post");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("answer");
    assert!(answer.starts_with(b"HTTP/1.1 200"), "POST /api/logs: {}", String::from_utf8_lossy(&answer));
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let port: u16 = args.first().and_then(|p| p.parse().ok()).expect("usage: sse_fanout <port> [clients] [rounds]");
    let clients: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let (ready_tx, mut ready) = mpsc::unbounded_channel();
        let (seen_tx, mut seen) = mpsc::unbounded_channel();
        for _ in 0..clients {
            tokio::spawn(client(port, ready_tx.clone(), seen_tx.clone()));
        }
        for _ in 0..clients {
            tokio::time::timeout(Duration::from_secs(30), ready.recv()).await.expect("all clients connected");
        }
        let mut all = Vec::with_capacity(clients * rounds);
        let mut last = Vec::with_capacity(rounds);
        for round in 0..rounds {
            let sent = Instant::now();
            add_log(port, &format!("{MARKER}{round}")).await;
            let mut arrivals = 0;
            let mut slowest = 0.0f64;
            while arrivals < clients {
                let (r, at) = tokio::time::timeout(Duration::from_secs(30), seen.recv())
                    .await
                    .expect("every client receives the event")
                    .expect("clients alive");
                if r != round {
                    continue;
                }
                let ms = at.duration_since(sent).as_secs_f64() * 1000.0;
                all.push(ms);
                slowest = slowest.max(ms);
                arrivals += 1;
            }
            last.push(slowest);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        all.sort_by(f64::total_cmp);
        last.sort_by(f64::total_cmp);
        println!(
            "RESULT clients={clients} rounds={rounds} p50_ms={:.2} p99_ms={:.2} max_ms={:.2} last_client_p50_ms={:.2}",
            percentile(&all, 0.5),
            percentile(&all, 0.99),
            all[all.len() - 1],
            percentile(&last, 0.5),
        );
    });
}
