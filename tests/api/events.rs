use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::*;

/// An open SSE stream, read frame by frame.
struct Stream {
    res: reqwest::Response,
    buf: String,
}

/// One SSE frame: its `id:` (if any) and the JSON of its `data:` line.
#[derive(Debug)]
struct Frame {
    id: Option<u64>,
    data: Value,
}

impl Stream {
    async fn open(app: &TestApp, auth: &Auth, last_event_id: Option<u64>) -> Stream {
        let mut rb = app.request(Method::GET, "/api/events", auth);
        if let Some(id) = last_event_id {
            rb = rb.header("last-event-id", id.to_string());
        }
        let res = rb.send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Stream { res, buf: String::new() }
    }

    async fn next(&mut self) -> Frame {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let raw: String = self.buf.drain(..end + 2).collect();
                let mut frame = Frame { id: None, data: Value::Null };
                for line in raw.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        frame.id = id.trim().parse().ok();
                    } else if let Some(data) = line.strip_prefix("data:") {
                        frame.data = serde_json::from_str(data.trim()).unwrap();
                    }
                }
                if frame.data.is_null() {
                    continue; // a comment (keepalive)
                }
                return frame;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.res.chunk())
                .await
                .expect("an SSE frame within 5 s")
                .unwrap()
                .expect("stream still open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[tokio::test]
async fn events_need_a_viewer() {
    let app = spawn_app().await;
    let reply = app.get("/api/events", &Auth::None).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.error(), "Authentication required");
}

#[tokio::test]
async fn stream_starts_with_connected_then_carries_events_with_ids() {
    let app = spawn_app().await;
    let (_, viewer) = app.user_with_role("watcher", "viewer").await;
    let mut stream = Stream::open(&app, &viewer, None).await;
    let first = stream.next().await;
    assert_eq!(first.data["type"], "connected");
    assert!(first.id.is_none());

    app.login(ADMIN_USER, ADMIN_PASS).await;
    let frame = stream.next().await;
    assert_eq!(frame.data["type"], "activity.created");
    assert_eq!(frame.data["data"]["type"], "user_login");
    assert_eq!(frame.data["data"]["actor"], "admin");
    assert!(frame.data["timestamp"].as_i64().unwrap() > 1_700_000_000_000, "milliseconds");
    let id = frame.id.expect("events carry an id");

    app.login(ADMIN_USER, ADMIN_PASS).await;
    let next = stream.next().await;
    assert_eq!(next.id, Some(id + 1));
}

#[tokio::test]
async fn last_event_id_replays_missed_events() {
    let app = spawn_app().await;
    // Three logins: the viewer's own plus two admin ones, each an activity event.
    let (_, viewer) = app.user_with_role("replayer", "viewer").await;
    app.login(ADMIN_USER, ADMIN_PASS).await;
    app.login(ADMIN_USER, ADMIN_PASS).await;
    let mut stream = Stream::open(&app, &viewer, Some(1)).await;
    assert_eq!(stream.next().await.data["type"], "connected");
    let a = stream.next().await;
    let b = stream.next().await;
    assert_eq!((a.id, b.id), (Some(2), Some(3)), "only events after id 1");
    assert_eq!(b.data["data"]["actor"], "admin");
}
