//! `/api/webhooks` (admin): CRUD, deliveries, manual retry and test.

use std::time::Duration;

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::delivery::{self, Mode};
use super::{DeliveryView, NewWebhook, Webhook, check_events, check_name, check_url, generate_secret, payload, store};
use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{IdBody, Success, delete_by_id};
use crate::http::{Page, RequireRole, app, client_ip, json_body, require_principal};
use crate::store::now_millis;
use crate::tasks::Problems;
use crate::users::Role;

/// Whether failed deliveries are retried (setting `webhooks.retry_enabled`).
pub async fn retry_enabled(state: &AppState) -> bool {
    crate::settings::enabled(state, crate::settings::Key::WebhooksRetryEnabled).await.unwrap_or(true)
}

fn not_found() -> AppError {
    AppError::NotFound("Webhook not found".into())
}

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
}

/// Webhooks with their delivery counters; secrets masked.
#[endpoint(tags("webhooks"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<WebhookList>> {
    let state = app(depot)?;
    let hooks = state.store.read(store::list).await?;
    Ok(Json(WebhookList { webhooks: hooks.iter().map(Webhook::from).collect() }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateWebhook {
    pub name: String,
    pub url: String,
    /// Default `["*"]`.
    pub events: Option<Vec<String>>,
    /// Default true; false sends unsigned deliveries.
    pub generate_secret: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedWebhook {
    pub id: u64,
    pub name: String,
    pub url: String,
    /// Shown in full only here (and when regenerated).
    pub secret: String,
    pub events: Vec<String>,
    pub enabled: bool,
    pub message: String,
}

/// Create a webhook; its 64-hex secret is shown once.
#[endpoint(tags("webhooks"), request_body = CreateWebhook)]
pub async fn create(req: &mut Request, depot: &mut Depot) -> AppResult<Json<CreatedWebhook>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: CreateWebhook = json_body(req).await?;
    let name = body.name.trim().to_string();
    let url = body.url.trim().to_string();
    let events = body.events.unwrap_or_else(|| vec!["*".into()]);
    let mut p = Problems::default();
    check_name(&mut p, &name);
    check_url(&mut p, &url, state.config.webhook_allow_link_local);
    check_events(&mut p, &events);
    p.finish()?;
    let secret = if body.generate_secret.unwrap_or(true) { generate_secret()? } else { String::new() };
    let hook = state.write(move |tx| super::create(tx, &who, ip, NewWebhook { name, url, secret, events })).await?;
    Ok(Json(CreatedWebhook {
        id: hook.id,
        name: hook.name,
        url: hook.url,
        secret: hook.secret,
        events: hook.events,
        enabled: hook.enabled,
        message: "Webhook created. Store the secret now: it is shown only once.".into(),
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateWebhook {
    pub id: u64,
    pub name: Option<String>,
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// true also closes an open circuit.
    pub enabled: Option<bool>,
    pub regenerate_secret: Option<bool>,
    /// Re-enables the webhook, zeroes consecutive failures and resumes held retries.
    pub reset_circuit: Option<bool>,
}

/// Update a webhook; the response includes the new secret in full when it was regenerated.
#[endpoint(tags("webhooks"), request_body = UpdateWebhook)]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Webhook>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: UpdateWebhook = json_body(req).await?;
    let name = body.name.map(|n| n.trim().to_string());
    let url = body.url.map(|u| u.trim().to_string());
    let mut p = Problems::default();
    if let Some(n) = &name {
        check_name(&mut p, n);
    }
    if let Some(u) = &url {
        check_url(&mut p, u, state.config.webhook_allow_link_local);
    }
    if let Some(e) = &body.events {
        check_events(&mut p, e);
    }
    p.finish()?;
    let regenerate = body.regenerate_secret.unwrap_or(false);
    let reset = body.reset_circuit.unwrap_or(false) || body.enabled == Some(true);
    if name.is_none() && url.is_none() && body.events.is_none() && body.enabled.is_none() && !regenerate && !reset {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    let new_secret = if regenerate { Some(generate_secret()?) } else { None };
    let id = body.id;
    let (hook, regenerated) = state
        .write(move |tx| {
            let mut hook = store::get_hook(tx, id)?.ok_or_else(not_found)?;
            let mut changed = Vec::new();
            if let Some(n) = name {
                hook.name = n;
                changed.push("name");
            }
            if let Some(u) = url {
                hook.url = u;
                changed.push("url");
            }
            if let Some(e) = body.events {
                hook.events = e;
                changed.push("events");
            }
            if let Some(enabled) = body.enabled {
                hook.enabled = enabled;
                changed.push("enabled");
            }
            if let Some(s) = &new_secret {
                hook.secret = s.clone();
                changed.push("secret");
            }
            if reset {
                hook.enabled = true;
                hook.circuit_open = false;
                hook.consecutive_failures = 0;
                store::release_held(tx, hook.id, now_millis().max(0) as u64)?;
                tx.queued_deliveries = true;
                changed.push("circuit");
            }
            store::save_hook(tx, &hook)?;
            audit::record(tx, Entry::by(&who, ip, "webhook_updated", json!({"id": hook.id, "changed": changed})))?;
            Ok((hook, new_secret.is_some()))
        })
        .await?;
    let mut view = Webhook::from(&hook);
    if regenerated {
        view.secret = hook.secret;
    }
    Ok(Json(view))
}

/// Delete a webhook and its deliveries.
#[endpoint(tags("webhooks"), request_body = IdBody)]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    delete_by_id(req, depot, |tx, id, who, ip| {
        let hook = store::get_hook(tx, id)?.ok_or_else(not_found)?;
        store::delete_hook(tx, id)?;
        audit::record(tx, Entry::by(who, ip, "webhook_deleted", json!({"id": id, "name": hook.name})))?;
        Ok(())
    })
    .await
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryPage {
    pub deliveries: Vec<DeliveryView>,
    pub total: usize,
}

/// Delivery history, newest first.
#[endpoint(
    tags("webhooks"),
    parameters(
        ("webhook_id" = Option<u64>, Query, description = "one webhook"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
        ("offset" = Option<u32>, Query, description = "default 0"),
    )
)]
pub async fn deliveries(req: &mut Request, depot: &mut Depot) -> AppResult<Json<DeliveryPage>> {
    let state = app(depot)?;
    let page = Page::from_query(req, 50, 200)?;
    let webhook_id = query_opt::<u64>(req, "webhook_id", "must be a positive integer")?;
    let (rows, total) = state.store.read(move |tx| store::deliveries(tx, webhook_id, page.limit, page.offset)).await?;
    Ok(Json(DeliveryPage { deliveries: rows.iter().map(DeliveryView::from).collect(), total }))
}

#[derive(Deserialize, ToSchema)]
pub struct RetryBody {
    pub delivery_id: u64,
}

#[derive(Serialize, ToSchema)]
pub struct RetryResult {
    pub success: bool,
    pub status_code: Option<u16>,
    pub response_time_ms: f64,
}

/// Send a delivery's payload again now, as a new attempt.
#[endpoint(tags("webhooks"), request_body = RetryBody)]
pub async fn retry(req: &mut Request, depot: &mut Depot) -> AppResult<Json<RetryResult>> {
    let state = app(depot)?;
    let RetryBody { delivery_id } = json_body(req).await?;
    let queued = state
        .write(move |tx| {
            let old =
                store::get_delivery(tx, delivery_id)?.ok_or_else(|| AppError::NotFound("Delivery not found".into()))?;
            store::get_hook(tx, old.webhook_id)?.ok_or_else(not_found)?;
            let now = now_millis().max(0) as u64;
            Ok(store::queue(
                tx,
                old.webhook_id,
                &old.event_type,
                &old.payload,
                old.attempt + 1,
                Some(old.message_id),
                now,
            )?)
        })
        .await?;
    let (_, outcome) = delivery::attempt(&state, queued.id, Mode::Manual).await?.ok_or_else(not_found)?;
    Ok(Json(RetryResult {
        success: outcome.success(),
        status_code: outcome.status_code,
        response_time_ms: outcome.duration_ms,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct TestResult {
    pub success: bool,
    pub status_code: Option<u16>,
    pub response_body: String,
    pub error: Option<String>,
    pub duration_ms: f64,
    pub delivery_id: u64,
}

/// Send a `test.ping` to a webhook now.
#[endpoint(tags("webhooks"), request_body = IdBody)]
pub async fn test(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TestResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let IdBody { id } = json_body(req).await?;
    let queued = state
        .write(move |tx| {
            let hook = store::get_hook(tx, id)?.ok_or_else(not_found)?;
            let data = json!({
                "message": "Test delivery from OpsDeck",
                "webhook_id": hook.id,
                "webhook_name": hook.name,
                "triggered_by": who.username,
            });
            let body = payload("test.ping", &data);
            Ok(store::queue(tx, hook.id, "test.ping", &body, 0, None, now_millis().max(0) as u64)?)
        })
        .await?;
    let (d, outcome) = delivery::attempt(&state, queued.id, Mode::Manual).await?.ok_or_else(not_found)?;
    Ok(Json(TestResult {
        success: outcome.success(),
        status_code: outcome.status_code,
        response_body: outcome.response_body,
        error: outcome.error,
        duration_ms: outcome.duration_ms,
        delivery_id: d.id,
    }))
}

pub fn router() -> Router {
    let writes = || RouteLimit::new("webhook_writes", 100, Duration::from_secs(60), KeyBy::Principal);
    Router::with_path("webhooks")
        .hoop(RequireRole(Role::Admin))
        .push(Router::new().get(list).delete(delete))
        .push(Router::new().hoop(writes()).post(create).put(update))
        .push(Router::with_path("deliveries").get(deliveries))
        .push(Router::with_path("retry").post(retry))
        .push(Router::with_path("test").post(test))
}
