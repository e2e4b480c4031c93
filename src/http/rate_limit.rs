//! In-memory fixed-window rate limits: the general per-IP limit, the login brute-force guard and the
//! narrower per-route limits of the interface's Limits table.
//!
//! Hand-written rather than salvo's rate-limiter: the interface needs `X-RateLimit-Reset` in Unix
//! seconds, a JSON 429 with `Retry-After`, a limiter shared by the login guard (which counts failures,
//! not requests) and no extra cache dependency (moka); the whole mechanism is this file.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use salvo::http::HeaderValue;
use salvo::prelude::*;

use super::{app, client_ip, principal};
use crate::error::AppError;

/// Above this many tracked keys, expired windows are swept on the next hit.
const SWEEP_THRESHOLD: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds at which the window resets.
    pub reset_at: u64,
}

impl Decision {
    pub fn retry_after(&self, now: u64) -> u64 {
        self.reset_at.saturating_sub(now).max(1)
    }
}

#[derive(Default)]
pub struct Limiter {
    windows: Mutex<HashMap<String, (u64, u32)>>,
}

impl Limiter {
    fn windows(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, u32)>> {
        self.windows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one hit for `key` in a window of `period` starting at the key's first hit.
    pub fn hit(&self, key: &str, limit: u32, period: Duration, now: u64) -> Decision {
        let mut windows = self.windows();
        if windows.len() > SWEEP_THRESHOLD {
            windows.retain(|_, (reset_at, _)| *reset_at > now);
        }
        let entry = windows.entry(key.to_string()).or_insert((now + period.as_secs(), 0));
        if entry.0 <= now {
            *entry = (now + period.as_secs(), 0);
        }
        let allowed = entry.1 < limit;
        if allowed {
            entry.1 += 1;
        }
        Decision { allowed, limit, remaining: limit - entry.1, reset_at: entry.0 }
    }

    /// Hits counted so far in the live window of `key`, without counting one.
    pub fn count(&self, key: &str, now: u64) -> u32 {
        match self.windows().get(key) {
            Some((reset_at, count)) if *reset_at > now => *count,
            _ => 0,
        }
    }

    /// Seconds until the window of `key` resets (at least 1).
    pub fn retry_after(&self, key: &str, now: u64) -> u64 {
        self.windows().get(key).map(|(reset_at, _)| reset_at.saturating_sub(now)).unwrap_or(0).max(1)
    }
}

pub fn unix_now() -> u64 {
    crate::store::now_secs().max(0) as u64
}

pub fn set_headers(res: &mut Response, d: &Decision) {
    for (name, value) in [
        ("x-ratelimit-limit", d.limit as u64),
        ("x-ratelimit-remaining", d.remaining as u64),
        ("x-ratelimit-reset", d.reset_at),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value.to_string()) {
            res.headers_mut().insert(name, v);
        }
    }
}

fn too_many(d: &Decision, now: u64) -> AppError {
    AppError::TooManyRequests { message: "Rate limit exceeded", retry_after: d.retry_after(now) }
}

/// The general limit: `SVC_RATE_LIMIT_PER_MINUTE` requests per minute per client IP on `/api`.
#[handler]
pub async fn general_limit(req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
    if !req.uri().path().starts_with("/api") {
        return;
    }
    let Ok(state) = app(depot) else { return };
    let per_minute = state.config.rate_limit_per_minute;
    if state.config.disable_rate_limit || per_minute == 0 {
        return;
    }
    let now = unix_now();
    let key = format!("ip:{}", client_ip(depot));
    let decision = state.limiter.hit(&key, per_minute, Duration::from_secs(60), now);
    set_headers(res, &decision);
    if !decision.allowed {
        too_many(&decision, now).write(req, depot, res).await;
        ctrl.skip_rest();
    }
}

/// Who a narrower limit counts.
#[derive(Debug, Clone, Copy)]
pub enum KeyBy {
    /// The authenticated principal (API key or user), else the client IP.
    Principal,
    /// A path parameter (e.g. one session id).
    PathParam(&'static str),
    /// Everyone together.
    Global,
}

/// A narrower limit declared on a route, e.g. `RouteLimit::new("backup_create", 10, HOUR, KeyBy::Principal)`.
pub struct RouteLimit {
    name: &'static str,
    limit: u32,
    period: Duration,
    key_by: KeyBy,
}

impl RouteLimit {
    pub fn new(name: &'static str, limit: u32, period: Duration, key_by: KeyBy) -> Self {
        Self { name, limit, period, key_by }
    }
}

impl RouteLimit {
    /// Counts this request against the limit: 429 `Rate limit exceeded` over it. Also usable inside a
    /// handler when the limit depends on the body (e.g. `POST /api/alerts` with `action: evaluate`).
    pub fn check(&self, req: &Request, depot: &Depot) -> Result<(), AppError> {
        let Ok(state) = app(depot) else { return Ok(()) };
        if state.config.disable_rate_limit {
            return Ok(());
        }
        let who = match self.key_by {
            KeyBy::Principal => principal(depot)
                .map(|p| format!("user:{}", p.username))
                .unwrap_or_else(|| format!("ip:{}", client_ip(depot))),
            KeyBy::PathParam(name) => req.param::<String>(name).unwrap_or_default(),
            KeyBy::Global => String::new(),
        };
        let now = unix_now();
        let decision = state.limiter.hit(&format!("{}:{who}", self.name), self.limit, self.period, now);
        if decision.allowed { Ok(()) } else { Err(too_many(&decision, now)) }
    }
}

#[async_trait]
impl Handler for RouteLimit {
    async fn handle(&self, req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
        if let Err(e) = self.check(req, depot) {
            e.write(req, depot, res).await;
            ctrl.skip_rest();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_window_counts_and_resets() {
        let l = Limiter::default();
        let p = Duration::from_secs(60);
        let a = l.hit("k", 2, p, 1000);
        assert_eq!((a.allowed, a.remaining, a.reset_at), (true, 1, 1060));
        assert!(l.hit("k", 2, p, 1010).allowed);
        let c = l.hit("k", 2, p, 1020);
        assert_eq!((c.allowed, c.remaining, c.retry_after(1020)), (false, 0, 40));
        assert!(l.hit("other", 2, p, 1020).allowed, "keys are independent");
        assert_eq!(l.count("k", 1020), 2);
        assert!(l.hit("k", 2, p, 1060).allowed, "a new window starts at reset");
        assert_eq!(l.count("k", 1060), 1);
    }
}
