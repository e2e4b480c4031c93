//! `GET /api/events`: the live stream. Frames are `id: <n>` + `data: {"type","data","timestamp"}`;
//! the first frame is `connected`; a `: keepalive` comment every 25 s; `Last-Event-ID` replays what a
//! reconnecting client missed while it is still in the bus's buffer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use salvo::prelude::*;
use salvo::sse::{SseEvent, SseKeepAlive};
use salvo_oapi::endpoint;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::{app, require_principal};
use crate::error::AppResult;
use crate::events::Event;

const KEEPALIVE: Duration = Duration::from_secs(25);

fn frame(event: &Event) -> SseEvent {
    SseEvent::default().id(event.id.to_string()).text(event.json())
}

fn control_frame(kind: &str, data: serde_json::Value) -> SseEvent {
    let body = serde_json::json!({"type": kind, "data": data, "timestamp": crate::store::now_millis()});
    SseEvent::default().text(body.to_string())
}

/// Live event stream (Server-Sent Events). Viewer or above.
#[endpoint(tags("events"), responses((status_code = 200, description = "text/event-stream of {type, data, timestamp} frames")))]
pub async fn events(req: &mut Request, depot: &mut Depot, res: &mut Response) -> AppResult<()> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let last_id =
        req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let (replay, receiver) = state.bus.subscribe_after(last_id);
    let connected = control_frame("connected", serde_json::json!({"user": who.username, "replayed": replay.len()}));
    let replayed = replay.into_iter().map(|e: Arc<Event>| frame(&e));
    let live = BroadcastStream::new(receiver).map(|item| match item {
        Ok(event) => frame(&event),
        // A slow client lost events: tell it to refetch over REST instead of silently skipping.
        Err(BroadcastStreamRecvError::Lagged(n)) => control_frame("resync", serde_json::json!({"missed": n})),
    });
    // The stream ends when the service shuts down, so an open dashboard does not hold up the drain.
    let all = stream::iter(std::iter::once(connected).chain(replayed))
        .chain(live)
        .take_until(state.background.stopped())
        .map(Ok::<_, Infallible>);
    res.headers_mut().insert("x-accel-buffering", salvo::http::HeaderValue::from_static("no"));
    SseKeepAlive::new(all).max_interval(KEEPALIVE).comment("keepalive").stream(res);
    Ok(())
}
