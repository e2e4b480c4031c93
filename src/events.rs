//! The live event bus behind `GET /api/events`: sequence-numbered events fanned out with a tokio
//! broadcast channel, plus a replay ring so a reconnecting client (Last-Event-ID) misses nothing recent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::store::PendingEvent;

const REPLAY_CAPACITY: usize = 1024;
const CHANNEL_CAPACITY: usize = 1024;

#[derive(Debug, Clone, Serialize)]
pub struct Event {
    #[serde(skip)]
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: serde_json::Value,
    /// Milliseconds.
    pub timestamp: i64,
    /// The JSON frame body, encoded once and shared by every subscriber (1,000 clients, one encoding).
    #[serde(skip)]
    json: std::sync::OnceLock<String>,
}

impl Event {
    pub fn new(id: u64, kind: String, data: serde_json::Value, timestamp: i64) -> Self {
        Self { id, kind, data, timestamp, json: Default::default() }
    }

    /// `{"type","data","timestamp"}` as the stream sends it.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| serde_json::to_string(self).unwrap_or_else(|_| "{}".into()))
    }
}

struct Ring {
    next_id: u64,
    recent: VecDeque<Arc<Event>>,
}

#[derive(Clone)]
pub struct EventBus {
    sender: broadcast::Sender<Arc<Event>>,
    ring: Arc<Mutex<Ring>>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            sender,
            ring: Arc::new(Mutex::new(Ring { next_id: 1, recent: VecDeque::with_capacity(REPLAY_CAPACITY) })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn publish(&self, kind: impl Into<String>, data: serde_json::Value) {
        let mut ring = self.lock();
        let event = Arc::new(Event::new(ring.next_id, kind.into(), data, crate::store::now_millis()));
        ring.next_id += 1;
        if ring.recent.len() == REPLAY_CAPACITY {
            ring.recent.pop_front();
        }
        ring.recent.push_back(event.clone());
        // Sent under the lock so ids reach subscribers in order; no receiver is not an error.
        let _ = self.sender.send(event);
    }

    pub fn publish_all(&self, events: Vec<PendingEvent>) {
        for e in events {
            self.publish(e.kind, e.data);
        }
    }

    /// Subscribes and returns the buffered events newer than `last_id`, atomically with respect to
    /// publishing, so nothing is missed or delivered twice.
    pub fn subscribe_after(&self, last_id: Option<u64>) -> (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>) {
        let ring = self.lock();
        let receiver = self.sender.subscribe();
        let replay = match last_id {
            Some(last) => ring.recent.iter().filter(|e| e.id > last).cloned().collect(),
            None => Vec::new(),
        };
        (replay, receiver)
    }

    pub fn subscriber_count(&self) -> usize {
        self.sender.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replays_only_missed_events_then_streams_live() {
        let bus = EventBus::new();
        bus.publish("a", serde_json::json!({}));
        bus.publish("b", serde_json::json!({}));
        let (replay, mut rx) = bus.subscribe_after(Some(1));
        assert_eq!(replay.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["b"]);
        bus.publish("c", serde_json::json!({"x": 1}));
        let live = rx.recv().await.unwrap();
        assert_eq!((live.id, live.kind.as_str()), (3, "c"));
    }
}
