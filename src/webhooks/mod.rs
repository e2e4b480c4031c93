//! Signed outbound webhooks with a durable outbox. A change queues its deliveries in its own write
//! transaction (`fire`); the sender (`delivery.rs`) attempts them after the commit and schedules retries.

pub mod api;
pub mod delivery;
pub mod store;
pub mod target;

use hmac::{Hmac, KeyInit, Mac};
use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::audit::{self, Entry};
use crate::error::AppResult;
use crate::http::Principal;
use crate::store::{StoreError, Tx, now_millis, now_secs};
use crate::tasks::Problems;

const EVENT_FAMILIES: [&str; 5] = ["activity.", "agent.", "notification.", "security.", "test."];

/// Delays before attempts 2..=6 (attempt 1 is immediate), each ±20% jitter.
pub const RETRY_DELAYS_SECS: [u64; 5] = [30, 5 * 60, 30 * 60, 2 * 3600, 8 * 3600];
/// Deliveries kept per webhook.
pub const HISTORY_PER_WEBHOOK: usize = 200;
pub const USER_AGENT: &str = "SvcWebhook/1.0";

/// A webhook as stored (with its full secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebhookRecord {
    pub id: u64,
    pub name: String,
    pub url: String,
    pub secret: String,
    pub events: Vec<String>,
    pub enabled: bool,
    pub consecutive_failures: u32,
    pub circuit_open: bool,
    pub last_fired_at: Option<i64>,
    pub last_status: Option<u16>,
    pub total_deliveries: u64,
    pub successful_deliveries: u64,
    pub failed_deliveries: u64,
    pub created_at: i64,
    pub created_by: String,
}

impl WebhookRecord {
    pub fn subscribes_to(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == "*" || e == event)
    }
}

/// A webhook as the API shows it: the secret masked to its last 4 characters.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "Webhook"))]
pub struct Webhook {
    pub id: u64,
    pub name: String,
    pub url: String,
    pub secret: String,
    pub events: Vec<String>,
    pub enabled: bool,
    pub consecutive_failures: u32,
    pub circuit_open: bool,
    pub last_fired_at: Option<i64>,
    pub last_status: Option<u16>,
    pub total_deliveries: u64,
    pub successful_deliveries: u64,
    pub failed_deliveries: u64,
    pub created_at: i64,
    pub created_by: String,
}

pub fn mask(secret: &str) -> String {
    let n = secret.chars().count();
    if n <= 4 {
        return "*".repeat(n);
    }
    let tail: String = secret.chars().skip(n - 4).collect();
    format!("{}{tail}", "*".repeat(n - 4))
}

impl From<&WebhookRecord> for Webhook {
    fn from(r: &WebhookRecord) -> Self {
        Self {
            id: r.id,
            name: r.name.clone(),
            url: r.url.clone(),
            secret: mask(&r.secret),
            events: r.events.clone(),
            enabled: r.enabled,
            consecutive_failures: r.consecutive_failures,
            circuit_open: r.circuit_open,
            last_fired_at: r.last_fired_at,
            last_status: r.last_status,
            total_deliveries: r.total_deliveries,
            successful_deliveries: r.successful_deliveries,
            failed_deliveries: r.failed_deliveries,
            created_at: r.created_at,
            created_by: r.created_by.clone(),
        }
    }
}

/// One delivery attempt as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Delivery {
    pub id: u64,
    pub webhook_id: u64,
    pub event_type: String,
    pub status_code: Option<u16>,
    pub response_body: String,
    pub error: Option<String>,
    pub duration_ms: f64,
    pub attempt: u32,
    pub is_retry: bool,
    pub next_retry_at: Option<i64>,
    pub created_at: i64,
    /// `pending`, `success` or `failed`.
    pub state: String,
    /// The exact body sent (retries resend it unchanged).
    pub payload: String,
    /// Id of the chain's first delivery: the Standard Webhooks `webhook-id`.
    pub message_id: u64,
    /// When a pending attempt is due (ms): its outbox key.
    pub due_ms: u64,
}

/// A delivery as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "WebhookDelivery"))]
pub struct DeliveryView {
    pub id: u64,
    pub webhook_id: u64,
    pub event_type: String,
    /// null until attempted, and on timeout or network error.
    pub status_code: Option<u16>,
    pub response_body: String,
    pub error: Option<String>,
    pub duration_ms: f64,
    /// 0 = first attempt.
    pub attempt: u32,
    pub is_retry: bool,
    pub next_retry_at: Option<i64>,
    pub created_at: i64,
    /// `pending`, `success` or `failed`.
    pub state: String,
}

impl From<&Delivery> for DeliveryView {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id,
            webhook_id: d.webhook_id,
            event_type: d.event_type.clone(),
            status_code: d.status_code,
            response_body: d.response_body.clone(),
            error: d.error.clone(),
            duration_ms: d.duration_ms,
            attempt: d.attempt,
            is_retry: d.is_retry,
            next_retry_at: d.next_retry_at,
            created_at: d.created_at,
            state: d.state.clone(),
        }
    }
}

/// The JSON body of every delivery.
pub fn payload(event: &str, data: &serde_json::Value) -> String {
    serde_json::json!({"event": event, "timestamp": now_secs(), "data": data}).to_string()
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// `X-SVC-Signature`: `sha256=<hex HMAC-SHA256 of the raw body>`.
pub fn signature(secret: &str, body: &str) -> String {
    format!("sha256={}", hex::encode(hmac(secret.as_bytes(), body.as_bytes())))
}

/// Standard Webhooks `webhook-signature`: `v1,<base64 HMAC of "{id}.{timestamp}.{body}">`. OpsDeck
/// signs with the secret's UTF-8 bytes as the key, i.e. `whsec_<base64(secret)>` for their libraries.
pub fn standard_signature(key: &[u8], msg_id: &str, timestamp: i64, body: &str) -> String {
    use base64::Engine;
    let signed = format!("{msg_id}.{timestamp}.{body}");
    format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(hmac(key, signed.as_bytes())))
}

/// Delay before the attempt after `attempt` (0-based) failed, with ±20% jitter; `None` after the last.
pub fn retry_delay_ms(attempt: u32, jitter_unit: f64) -> Option<u64> {
    let base = *RETRY_DELAYS_SECS.get(attempt as usize)? as f64 * 1000.0;
    let factor = 0.8 + 0.4 * jitter_unit.clamp(0.0, 1.0);
    Some((base * factor) as u64)
}

pub fn jitter_unit() -> f64 {
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    u32::from_le_bytes(b) as f64 / u32::MAX as f64
}

/// Queues `event` for every enabled webhook subscribed to it, in the caller's transaction.
pub fn fire(tx: &mut Tx, event: &str, data: &serde_json::Value) -> Result<(), StoreError> {
    let hooks = store::list_w(tx)?;
    let body = payload(event, data);
    for hook in hooks.iter().filter(|h| h.enabled && h.subscribes_to(event)) {
        store::queue(tx, hook.id, event, &body, 0, None, now_millis().max(0) as u64)?;
        tx.queued_deliveries = true;
    }
    Ok(())
}

/// Fires `security.<action>` in a change of its own, at most once per `once_per` for `key` (so a
/// flood of refused requests cannot flood receivers).
pub async fn fire_security(
    state: &crate::app::AppState,
    action: &str,
    key: &str,
    once_per: std::time::Duration,
    data: serde_json::Value,
) {
    let now = crate::http::rate_limit::unix_now();
    if !state.security_events.hit(&format!("{action}:{key}"), 1, once_per, now).allowed {
        return;
    }
    let event = format!("security.{action}");
    let result = state.write(move |tx| Ok(fire(tx, &event, &data)?)).await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not queue a security webhook event");
    }
}

pub fn check_name(p: &mut Problems, name: &str) {
    p.check(!name.is_empty() && name.chars().count() <= 100, "name", "must be 1-100 characters");
}

pub fn check_url(p: &mut Problems, url: &str, allow_link_local: bool) {
    let ok = reqwest::Url::parse(url)
        .map(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
        .unwrap_or(false);
    p.check(ok && url.len() <= 2048, "url", "must be an http or https URL");
    p.check(allow_link_local || !target::literal_blocked(url), "url", target::REFUSED);
}

pub fn check_events(p: &mut Problems, events: &[String]) {
    p.check(!events.is_empty(), "events", "must not be empty");
    p.check(events.len() <= 100, "events", "at most 100 entries");
    let known = |e: &String| e == "*" || EVENT_FAMILIES.iter().any(|f| e.starts_with(f) && e.len() > f.len());
    p.check(events.iter().all(known), "events", "each must be * or an event type such as activity.task_created");
}

/// A webhook about to be created (its secret generated or empty).
pub struct NewWebhook {
    pub name: String,
    pub url: String,
    pub secret: String,
    pub events: Vec<String>,
}

/// Validates and stores a new, enabled webhook; audit `webhook_created`.
pub fn create(tx: &mut Tx, who: &Principal, ip: std::net::IpAddr, new: NewWebhook) -> AppResult<WebhookRecord> {
    let mut p = Problems::default();
    check_name(&mut p, &new.name);
    // The link-local rule needs the configuration: the API checks it before calling this.
    check_url(&mut p, &new.url, true);
    check_events(&mut p, &new.events);
    p.finish()?;
    let hook = WebhookRecord {
        id: store::new_hook_id(tx)?,
        name: new.name,
        url: new.url,
        secret: new.secret,
        events: new.events,
        enabled: true,
        consecutive_failures: 0,
        circuit_open: false,
        last_fired_at: None,
        last_status: None,
        total_deliveries: 0,
        successful_deliveries: 0,
        failed_deliveries: 0,
        created_at: now_secs(),
        created_by: who.username.clone(),
    };
    store::save_hook(tx, &hook)?;
    let detail = serde_json::json!({"id": hook.id, "name": hook.name, "url": hook.url, "events": hook.events});
    audit::record(tx, Entry::by(who, ip, "webhook_created", detail))?;
    Ok(hook)
}

pub fn generate_secret() -> Result<String, crate::error::AppError> {
    crate::users::random_hex(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn signature_matches_a_known_vector() {
        // HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog")
        assert_eq!(
            signature("key", "The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }

    #[test]
    fn standard_webhooks_signature_matches_the_spec_vector() {
        // The Standard Webhooks reference vector (secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw).
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let sig = standard_signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, "{\"test\": 2432232314}");
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn masks_all_but_the_last_four() {
        assert_eq!(mask("0123456789abcdef"), "************cdef");
        assert_eq!(mask("abc"), "***");
    }

    #[test]
    fn retry_schedule_has_six_attempts_with_jitter() {
        assert_eq!(retry_delay_ms(0, 0.5), Some(30_000));
        assert_eq!(retry_delay_ms(0, 0.0), Some(24_000));
        assert_eq!(retry_delay_ms(0, 1.0), Some(36_000));
        assert_eq!(retry_delay_ms(4, 0.5), Some(8 * 3600 * 1000));
        assert_eq!(retry_delay_ms(5, 0.5), None, "attempt 6 is the last");
    }

    proptest! {
        #[test]
        fn signatures_verify_and_differ_by_body(secret in "[a-f0-9]{64}", body in ".*", other in ".*") {
            let sig = signature(&secret, &body);
            prop_assert_eq!(&sig, &signature(&secret, &body));
            if body != other {
                prop_assert_ne!(sig, signature(&secret, &other));
            }
        }
    }
}
