//! Application state, router assembly and first-run seeding.

use std::sync::Arc;

use salvo::catch_panic::CatchPanic;
use salvo::catcher::Catcher;
use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::Serialize;

use crate::config::Config;
use crate::error::{AppResult, ErrorBody, write_error};
use crate::events::EventBus;
use crate::http::Json;
use crate::http::rate_limit::{Limiter, general_limit};
use crate::http::{InjectState, RequireRole, auth, guard, sse};
use crate::store::{Store, Tx};
use crate::users::{Passwords, Role};

pub struct AppState {
    pub config: Config,
    pub store: Store,
    pub bus: EventBus,
    /// General and per-route request limits.
    pub limiter: Limiter,
    /// Failed logins per client IP (the brute-force guard; never disabled).
    pub login_failures: Limiter,
    pub passwords: Passwords,
    /// Outbound HTTP (webhooks, gateways): 10 s timeout, no redirects.
    pub http: reqwest::Client,
    /// Wakes the webhook sender after a commit that queued deliveries.
    pub webhook_wake: Arc<tokio::sync::Notify>,
    /// (action, client) → last time a rate-limited security event was fired.
    pub security_events: Limiter,
    /// The last local session scan and when it ran.
    pub local_sessions: tokio::sync::Mutex<Option<(std::time::Instant, Vec<crate::sessions::local::LocalSession>)>>,
    /// Held while a backup runs: backups are single-flight.
    pub backup_lock: tokio::sync::Mutex<()>,
    /// Signs the `state` of Google sign-in (random per process).
    pub google_key: crate::users::google::StateKey,
    /// Held while due webhook deliveries are attempted: one pass at a time.
    pub webhook_sending: tokio::sync::Mutex<()>,
    /// The scheduled jobs: definitions, running flags and the stop signal of the background tasks.
    pub scheduler: crate::scheduler::Scheduler,
    /// Background tasks, stopped and awaited at shutdown.
    pub background: crate::background::Background,
}

impl AppState {
    /// Runs a change in one write transaction; its events reach the bus only after the commit.
    pub async fn write<T, F>(&self, f: F) -> AppResult<T>
    where
        F: FnOnce(&mut Tx) -> AppResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let (value, committed) = self.store.write(f).await?;
        self.bus.publish_all(committed.events);
        if committed.queued_deliveries {
            self.webhook_wake.notify_one();
        }
        Ok(value)
    }
}

pub struct App {
    pub state: Arc<AppState>,
    pub router: Arc<Router>,
    /// Set when the first admin was created with a generated password (printed once at start).
    pub generated_admin_password: Option<String>,
}

impl App {
    pub fn service(&self) -> Service {
        Service::new(self.router.clone())
            .catcher(Catcher::default().hoop(json_errors))
            .hoop(crate::metrics::observe)
            .hoop(CatchPanic::new())
            .hoop(InjectState(self.state.clone()))
            .hoop(guard::security_headers)
            .hoop(guard::client_ip_hoop)
            .hoop(guard::host_allowlist)
            .hoop(general_limit)
    }
}

/// Opens the database, seeds the first admin and assembles the routes.
pub async fn build(config: Config) -> Result<App, String> {
    crate::config::prepare_dirs(&config)?;
    crate::metrics::init();
    let store = Store::open(&config.db_path).map_err(|e| match e {
        crate::store::StoreError::Db(redb::Error::DatabaseAlreadyOpen) => format!(
            "the database {} is in use by another process (is OpsDeck already running?)",
            config.db_path.display()
        ),
        e => format!("cannot open database {}: {e}", config.db_path.display()),
    })?;
    let passwords = Passwords::new(config.argon2_memory_kib, config.argon2_iterations)?;
    let scheduler = crate::scheduler::Scheduler::new(&config)?;
    let state = Arc::new(AppState {
        config,
        store,
        bus: EventBus::new(),
        limiter: Limiter::default(),
        login_failures: Limiter::default(),
        passwords,
        http: crate::webhooks::delivery::http_client()?,
        webhook_wake: Arc::new(tokio::sync::Notify::new()),
        security_events: Limiter::default(),
        local_sessions: tokio::sync::Mutex::new(None),
        backup_lock: tokio::sync::Mutex::new(()),
        google_key: crate::users::google::StateKey::random()?,
        webhook_sending: tokio::sync::Mutex::new(()),
        scheduler,
        background: crate::background::Background::new(),
    });
    crate::gateways::api::seed_default(&state).await.map_err(|e| format!("cannot create the default gateway: {e}"))?;
    crate::webhooks::delivery::spawn_worker(&state);
    crate::scheduler::start(&state).await.map_err(|e| format!("cannot start the scheduler: {e}"))?;
    let generated_admin_password =
        crate::users::seed_first_admin(&state).await.map_err(|e| format!("cannot create the first admin: {e}"))?;
    // Metrics and the dashboard come after the API (and stay out of the OpenAPI document).
    let router = documented_routes()
        .push(Router::with_path("metrics").hoop(auth::authenticate).get(crate::metrics::scrape))
        .push(crate::ui::router());
    // The OpenAPI document takes ~35 ms to generate: build it beside start-up, not before the first request.
    tokio::task::spawn_blocking(crate::docs::openapi_json);
    Ok(App { state, router: Arc::new(router), generated_admin_password })
}

/// `/healthz` and the API: the routes the OpenAPI document describes.
pub fn documented_routes() -> Router {
    Router::new().push(Router::with_path("healthz").get(healthz)).push(api_router())
}

fn api_router() -> Router {
    Router::with_path("api")
        .hoop(auth::authenticate)
        .push(crate::users::api::router())
        .push(crate::audit::api::router())
        .push(crate::tasks::api::router())
        .push(crate::tasks::quality::router())
        .push(crate::notifications::api::router())
        .push(crate::webhooks::api::router())
        .push(crate::gateways::api::router())
        .push(crate::alerts::api::router())
        .push(crate::sessions::api::router())
        .push(crate::agents::api::router())
        .push(crate::logs::api::router())
        .push(crate::settings::api::router())
        .push(crate::backups::api::router())
        .push(crate::scheduler::api::router())
        .push(crate::tokens::api::router())
        .push(Router::with_path("events").hoop(RequireRole(Role::Viewer)).get(sse::events))
        .push(Router::with_path("docs").get(crate::docs::serve))
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
    pub version: &'static str,
}

/// Liveness probe; no authentication.
#[endpoint(tags("meta"))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok", version: env!("CARGO_PKG_VERSION") })
}

/// Turns every error response that has no body yet (unknown route, wrong method, panic…) into the
/// JSON error shape.
#[handler]
async fn json_errors(res: &mut Response, ctrl: &mut FlowCtrl) {
    let status = res.status_code.unwrap_or(StatusCode::NOT_FOUND);
    let message = match status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::METHOD_NOT_ALLOWED => "Method not allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "Request body too large",
        StatusCode::INTERNAL_SERVER_ERROR => "Internal server error",
        other => other.canonical_reason().unwrap_or("Error"),
    };
    write_error(res, status, &ErrorBody::new(message));
    ctrl.skip_rest();
}
