//! The sender: attempts queued deliveries (10 s timeout, no redirects), records the outcome, keeps the
//! webhook's counters and circuit, and schedules the next attempt on the interface's schedule.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;

use super::{Delivery, USER_AGENT, WebhookRecord, jitter_unit, retry_delay_ms, signature, standard_signature, store};
use crate::app::AppState;
use crate::error::AppResult;
use crate::store::{now_millis, now_secs};

pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts taken from the outbox per batch.
pub const BATCH: usize = 50;
/// The retry scheduler's period.
pub const RETRY_PERIOD: Duration = Duration::from_secs(60);
const MAX_RESPONSE_BODY: usize = 4096;

fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(8)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(USER_AGENT)
}

/// The Mozilla root certificates bundled in the binary (webpki-root-certs).
pub fn bundled_roots() -> Vec<reqwest::Certificate> {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().filter_map(|der| reqwest::Certificate::from_der(der).ok()).collect()
}

/// The outbound client (webhooks, gateways). It trusts the system's CA store; on a machine that has
/// none (a `FROM scratch` container, an empty chroot) building fails, and it falls back to the bundled
/// roots so HTTPS webhooks still work.
pub fn http_client() -> Result<reqwest::Client, String> {
    match client_builder().build() {
        Ok(client) => Ok(client),
        Err(system) => {
            let client = client_builder()
                .tls_certs_only(bundled_roots())
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e} (with the system CA store: {system})"))?;
            tracing::info!(reason = %system, "no usable system CA store; trusting the bundled root certificates");
            Ok(client)
        }
    }
}

/// The client with only the bundled roots (what [`http_client`] falls back to).
pub fn http_client_bundled() -> Result<reqwest::Client, String> {
    client_builder().tls_certs_only(bundled_roots()).build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub status_code: Option<u16>,
    pub response_body: String,
    pub error: Option<String>,
    pub duration_ms: f64,
}

const TIMEOUT_ERROR: &str = "Timeout after 10 s";

impl Outcome {
    pub fn success(&self) -> bool {
        self.status_code.is_some_and(|s| (200..300).contains(&s))
    }

    /// The outcome as `opsdeck_webhook_deliveries_total` counts it.
    pub fn metric(&self) -> crate::metrics::DeliveryOutcome {
        use crate::metrics::DeliveryOutcome;
        match (self.success(), self.status_code, self.error.as_deref()) {
            (true, _, _) => DeliveryOutcome::Success,
            (false, Some(_), _) => DeliveryOutcome::HttpError,
            (false, None, Some(TIMEOUT_ERROR)) => DeliveryOutcome::Timeout,
            (false, None, _) => DeliveryOutcome::NetworkError,
        }
    }
}

/// One signed POST of a delivery's body.
pub async fn send(client: &reqwest::Client, hook: &WebhookRecord, d: &Delivery, allow_link_local: bool) -> Outcome {
    let started = Instant::now();
    if !allow_link_local && let Err(error) = super::target::check(&hook.url).await {
        return Outcome { status_code: None, response_body: String::new(), error: Some(error), duration_ms: 0.0 };
    }
    let timestamp = now_secs();
    let msg_id = format!("msg_{}", d.message_id);
    let mut request = client
        .post(&hook.url)
        .header("content-type", "application/json")
        .header("x-svc-event", &d.event_type)
        .header("webhook-id", &msg_id)
        .header("webhook-timestamp", timestamp.to_string());
    if !hook.secret.is_empty() {
        request = request
            .header("x-svc-signature", signature(&hook.secret, &d.payload))
            .header("webhook-signature", standard_signature(hook.secret.as_bytes(), &msg_id, timestamp, &d.payload));
    }
    let result = request.body(d.payload.clone()).send().await;
    let (status_code, response_body, error) = match result {
        Ok(res) => {
            let status = res.status().as_u16();
            let body = res.text().await.unwrap_or_default();
            let body: String = body.chars().take(MAX_RESPONSE_BODY).collect();
            let error = (!(200..300).contains(&status)).then(|| format!("HTTP {status}"));
            (Some(status), body, error)
        }
        Err(e) if e.is_timeout() => (None, String::new(), Some(TIMEOUT_ERROR.to_string())),
        Err(e) => (None, String::new(), Some(format!("Network error: {e}"))),
    };
    let outcome = Outcome { status_code, response_body, error, duration_ms: started.elapsed().as_secs_f64() * 1000.0 };
    crate::metrics::webhook_delivery(outcome.metric());
    outcome
}

/// How an attempt may proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// From the outbox: held while the circuit is open; failures schedule the next attempt.
    Scheduled,
    /// Asked for by an admin (test, retry): sent even with the circuit open, never rescheduled.
    Manual,
}

/// Attempts one queued delivery. `None` when it was not sent (webhook gone, or held).
pub async fn attempt(state: &AppState, delivery_id: u64, mode: Mode) -> AppResult<Option<(Delivery, Outcome)>> {
    let loaded = state
        .store
        .read(move |tx| {
            let Some(d) = store::get_delivery_r(tx, delivery_id)? else { return Ok(None) };
            Ok::<_, crate::store::StoreError>(Some((store::get_hook_r(tx, d.webhook_id)?, d)))
        })
        .await?;
    let Some((hook, delivery)) = loaded else { return Ok(None) };
    if delivery.state != "pending" {
        return Ok(None);
    }
    let Some(hook) = hook else {
        state.write(move |tx| Ok(store::finish(tx, &delivery)?)).await?;
        return Ok(None);
    };
    if mode == Mode::Scheduled && (!hook.enabled || hook.circuit_open) {
        state.write(move |tx| Ok(store::hold(tx, &delivery)?)).await?;
        return Ok(None);
    }
    let outcome = send(&state.http, &hook, &delivery, state.config.webhook_allow_link_local).await;
    let max_failures = state.config.webhook_max_retries;
    let retry_enabled = mode == Mode::Scheduled && crate::webhooks::api::retry_enabled(state).await;
    let result = outcome.clone();
    let done = state
        .write(move |tx| {
            let mut d = delivery;
            d.status_code = outcome.status_code;
            d.response_body = outcome.response_body.clone();
            d.error = outcome.error.clone();
            d.duration_ms = outcome.duration_ms;
            d.state = if outcome.success() { "success" } else { "failed" }.into();
            if !outcome.success()
                && retry_enabled
                && let Some(delay) = retry_delay_ms(d.attempt, jitter_unit())
            {
                let due = now_millis().max(0) as u64 + delay;
                store::queue(tx, d.webhook_id, &d.event_type, &d.payload, d.attempt + 1, Some(d.message_id), due)?;
                d.next_retry_at = Some((due / 1000) as i64);
            }
            store::finish(tx, &d)?;
            if let Some(mut hook) = store::get_hook(tx, d.webhook_id)? {
                hook.total_deliveries += 1;
                hook.last_fired_at = Some(now_secs());
                hook.last_status = outcome.status_code;
                if outcome.success() {
                    hook.successful_deliveries += 1;
                    hook.consecutive_failures = 0;
                } else {
                    hook.failed_deliveries += 1;
                    hook.consecutive_failures += 1;
                    if hook.consecutive_failures >= max_failures && !hook.circuit_open {
                        hook.circuit_open = true;
                        hook.enabled = false;
                        tx.emit(
                            "webhook.circuit_opened",
                            json!({"id": hook.id, "name": hook.name, "consecutive_failures": hook.consecutive_failures}),
                        );
                    }
                }
                store::save_hook(tx, &hook)?;
            }
            Ok(d)
        })
        .await?;
    Ok(Some((done, result)))
}

/// Attempts every due delivery, `BATCH` at a time, a few in parallel. Returns how many were attempted.
/// One pass at a time (the wake-up worker and the scheduler's `webhook_retry` job share it), so an attempt
/// is never sent twice.
pub async fn process_due(state: &AppState) -> AppResult<usize> {
    let _one_pass = state.webhook_sending.lock().await;
    let mut attempted = 0;
    loop {
        let now = now_millis().max(0) as u64;
        let ids = state.store.read(move |tx| store::due(tx, now, BATCH)).await?;
        if ids.is_empty() {
            return Ok(attempted);
        }
        let n = ids.len();
        let results: Vec<AppResult<_>> = futures_util::stream::iter(ids)
            .map(|id| attempt(state, id, Mode::Scheduled))
            .buffer_unordered(8)
            .collect()
            .await;
        for r in results {
            if let Err(e) = r {
                tracing::warn!(error = %e, "webhook delivery attempt failed to record");
            }
        }
        attempted += n;
        if n < BATCH || state.background.is_stopping() {
            return Ok(attempted);
        }
    }
}

/// Runs the sender until shutdown (or until the app is dropped): once at start (attempts queued before a
/// restart: the outbox is durable) and immediately whenever a change queues deliveries, so first attempts
/// never wait. Due retries are the scheduler's `webhook_retry` job, every `RETRY_PERIOD`. At shutdown the
/// batch in flight finishes (each attempt is bounded by `TIMEOUT`); what is still queued is sent after
/// the next start.
pub fn spawn_worker(state: &Arc<AppState>) {
    let weak: Weak<AppState> = Arc::downgrade(state);
    let wake = state.webhook_wake.clone();
    let mut stop = state.scheduler.stop_signal();
    let stopped = state.background.stopped();
    state.background.spawn("webhook-sender", async move {
        tokio::pin!(stopped);
        loop {
            let Some(state) = weak.upgrade() else { return };
            if state.background.is_stopping() {
                return;
            }
            if let Err(e) = process_due(&state).await {
                tracing::warn!(error = %e, "webhook sender");
            }
            drop(state);
            tokio::select! {
                _ = &mut stopped => return,
                _ = wake.notified() => {}
                _ = stop.changed() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_roots_make_a_client() {
        assert!(bundled_roots().len() > 100, "the Mozilla root set has well over 100 certificates");
        assert!(http_client_bundled().is_ok());
        assert!(http_client().is_ok());
    }
}
