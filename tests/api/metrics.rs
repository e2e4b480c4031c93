//! `GET /metrics`: who may read it, and that its series move with what the service does. Counters are
//! process-wide (tests run in parallel in one process), so request and delivery counters are compared
//! before and after with "at least"; per-app gauges are exact.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;
use crate::receiver::Receiver;

/// The value of the series whose line starts with `series` (name and labels), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn scrape(app: &TestApp) -> String {
    let reply = app.get("/metrics", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.text
}

#[tokio::test]
async fn metrics_need_the_api_key_or_an_admin_session() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;

    let anonymous = app.get("/metrics", &Auth::None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.error(), "Authentication required");
    for who in [&roles.viewer, &roles.operator] {
        let reply = app.get("/metrics", who).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text);
        assert_eq!(reply.error(), "Requires admin role or higher");
    }
    for who in [&roles.admin, &Auth::ApiKey, &Auth::Bearer] {
        let reply = app.get("/metrics", who).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        assert_eq!(reply.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
        assert!(reply.text.contains("# TYPE opsdeck_http_requests_total counter"));
    }
    let wrong_key =
        app.send(app.request(reqwest::Method::GET, "/metrics", &Auth::None).header("x-api-key", "nope")).await;
    assert_eq!(wrong_key.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn metrics_can_be_made_public() {
    let app = spawn_app_with(&["--metrics-public", "true"]).await;
    let reply = app.get("/metrics", &Auth::None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert!(reply.text.contains("opsdeck_database_size_bytes "));
}

#[tokio::test]
async fn requests_are_counted_by_route_template_with_latency() {
    let app = spawn_app().await;
    let series = r#"opsdeck_http_requests_total{method="GET",route="/api/tasks/{id}",status="404"}"#;
    let histogram = r#"opsdeck_http_request_duration_seconds_count{method="GET",route="/api/tasks/{id}"}"#;
    let inf = r#"opsdeck_http_request_duration_seconds_bucket{method="GET",route="/api/tasks/{id}",le="+Inf"}"#;
    let before = scrape(&app).await;
    for id in [910_001, 910_002, 910_003] {
        let reply = app.get(&format!("/api/tasks/{id}"), &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND);
    }
    let unmatched = app.get("/api/no-such-route-for-metrics", &Auth::ApiKey).await;
    assert_eq!(unmatched.status, StatusCode::NOT_FOUND);
    let after = scrape(&app).await;

    let moved = value(&after, series).unwrap_or(0.0) - value(&before, series).unwrap_or(0.0);
    assert!(moved >= 3.0, "3 requests counted under the template, got {moved}:\n{after}");
    let observed = value(&after, histogram).unwrap_or(0.0) - value(&before, histogram).unwrap_or(0.0);
    assert!(observed >= 3.0, "latency observed for each request, got {observed}");
    assert_eq!(value(&after, histogram), value(&after, inf), "+Inf bucket equals the count");
    assert!(!after.contains("910001"), "ids never become labels");
    assert!(!after.contains("no-such-route-for-metrics"), "unknown paths never become labels");
    assert!(after.contains(r#"route="unmatched",status="404""#), "{after}");
}

#[tokio::test]
async fn sse_clients_are_a_gauge() {
    let app = spawn_app().await;
    assert_eq!(value(&scrape(&app).await, "opsdeck_sse_clients"), Some(0.0));
    let open = || async {
        let mut res = app.request(reqwest::Method::GET, "/api/events", &Auth::ApiKey).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        res.chunk().await.unwrap().expect("the connected frame");
        res
    };
    let first = open().await;
    let second = open().await;
    assert_eq!(value(&scrape(&app).await, "opsdeck_sse_clients"), Some(2.0));
    drop(first);
    drop(second);
    for _ in 0..100 {
        if value(&scrape(&app).await, "opsdeck_sse_clients") == Some(0.0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the gauge did not go back to 0 after the clients left");
}

#[tokio::test]
async fn webhook_deliveries_by_outcome_and_pending_retries() {
    let app = spawn_app().await;
    let ok = r#"opsdeck_webhook_deliveries_total{outcome="success"}"#;
    let refused = r#"opsdeck_webhook_deliveries_total{outcome="network_error"}"#;
    let before = scrape(&app).await;
    assert_eq!(value(&before, "opsdeck_webhook_pending"), Some(0.0));

    let receiver = Receiver::start().await;
    let good = app
        .post(
            "/api/webhooks",
            &Auth::ApiKey,
            json!({"name": "good", "url": receiver.url, "events": ["agent.status_change"]}),
        )
        .await;
    assert_eq!(good.status, StatusCode::OK, "{}", good.text);
    // Port 1 on loopback is closed: the attempt fails and a retry is queued.
    let bad = app
        .post(
            "/api/webhooks",
            &Auth::ApiKey,
            json!({"name": "bad", "url": "http://127.0.0.1:1/hook", "events": ["agent.status_change"]}),
        )
        .await;
    assert_eq!(bad.status, StatusCode::OK, "{}", bad.text);
    let agent = app.post("/api/agents", &Auth::ApiKey, json!({"name": "metered", "role": "dev"})).await;
    assert_eq!(agent.status, StatusCode::OK, "{}", agent.text);
    let id = agent.body["agent"]["id"].as_u64().unwrap();
    let moved = app.put(&format!("/api/agents/{id}"), &Auth::ApiKey, json!({"status": "online"})).await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text);
    receiver.wait_for(1).await;

    let mut after = String::new();
    for _ in 0..100 {
        after = scrape(&app).await;
        if value(&after, "opsdeck_webhook_pending") == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(value(&after, "opsdeck_webhook_pending"), Some(1.0), "the failed attempt's retry waits:\n{after}");
    assert!(value(&after, ok).unwrap() - value(&before, ok).unwrap() >= 1.0);
    assert!(value(&after, refused).unwrap() - value(&before, refused).unwrap() >= 1.0);
}

#[tokio::test]
async fn job_runs_and_database_size() {
    let app = spawn_app().await;
    opsdeck::metrics::job_run("metrics_test_job", true);
    opsdeck::metrics::job_run("metrics_test_job", true);
    opsdeck::metrics::job_run("metrics_test_job", false);
    let text = scrape(&app).await;
    assert_eq!(value(&text, r#"opsdeck_job_runs_total{job="metrics_test_job",result="ok"}"#), Some(2.0));
    assert_eq!(value(&text, r#"opsdeck_job_runs_total{job="metrics_test_job",result="error"}"#), Some(1.0));
    let size = std::fs::metadata(&app.state.config.db_path).unwrap().len() as f64;
    let reported = value(&text, "opsdeck_database_size_bytes").unwrap();
    assert!(reported > 0.0 && (reported - size).abs() <= size, "reported {reported}, file {size}");
}
