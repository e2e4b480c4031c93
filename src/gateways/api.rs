//! `/api/gateways` (admin): registry CRUD and the health check.

use std::time::Duration;

use futures_util::future::join_all;
use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{DEFAULT_PORT, Gateway, GatewayRecord, STATUSES, client, store, validate_host, validate_name};
use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{IdBody, Success, delete_by_id};
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::store::now_secs;
use crate::tasks::Problems;
use crate::users::Role;

fn not_found() -> AppError {
    AppError::NotFound("Gateway not found".into())
}

fn conflict() -> AppError {
    AppError::Conflict("Gateway name already exists".into())
}

#[derive(Serialize, ToSchema)]
pub struct GatewayList {
    pub gateways: Vec<Gateway>,
}

#[derive(Serialize, ToSchema)]
pub struct GatewayEnvelope {
    pub gateway: Gateway,
}

/// Registered gateways; tokens are never returned.
#[endpoint(tags("gateways"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<GatewayList>> {
    let state = app(depot)?;
    let gateways = state.store.read(store::list).await?;
    Ok(Json(GatewayList { gateways: gateways.iter().map(Gateway::from).collect() }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateGateway {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub token: Option<String>,
    /// Setting true unsets every other primary.
    pub is_primary: Option<bool>,
}

/// Register a gateway.
#[endpoint(tags("gateways"), request_body = CreateGateway)]
pub async fn create(req: &mut Request, depot: &mut Depot) -> AppResult<Json<GatewayEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: CreateGateway = json_body(req).await?;
    let (name, host) = (body.name.trim().to_string(), body.host.trim().to_string());
    let mut p = Problems::default();
    p.check(validate_name(&name).is_ok(), "name", "must be 1-100 characters");
    p.check(validate_host(&host).is_ok(), "host", "must be a hostname or IP address (no scheme, path or spaces)");
    p.check(body.port > 0, "port", "must be between 1 and 65535");
    p.check(body.token.as_ref().is_none_or(|t| t.len() <= 4096), "token", "must be at most 4096 characters");
    p.finish()?;
    let gateway = state
        .write(move |tx| {
            if store::id_by_name(tx, &name)?.is_some() {
                return Err(conflict());
            }
            let now = now_secs();
            let g = GatewayRecord {
                id: store::new_id(tx)?,
                name,
                host,
                port: body.port,
                token: body.token.filter(|t| !t.is_empty()),
                is_primary: body.is_primary.unwrap_or(false),
                status: "unknown".into(),
                last_seen: None,
                latency: None,
                sessions_count: 0,
                agents_count: 0,
                created_at: now,
                updated_at: now,
                consecutive_failures: 0,
            };
            store::save(tx, None, &g)?;
            audit::record(
                tx,
                Entry::by(
                    &who,
                    ip,
                    "gateway_created",
                    json!({"id": g.id, "name": g.name, "host": g.host, "port": g.port}),
                ),
            )?;
            Ok(g)
        })
        .await?;
    Ok(Json(GatewayEnvelope { gateway: Gateway::from(&gateway) }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateGateway {
    pub id: u64,
    pub name: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// An empty string clears the token.
    pub token: Option<String>,
    pub is_primary: Option<bool>,
    pub status: Option<String>,
    pub last_seen: Option<i64>,
    pub latency: Option<u64>,
    pub sessions_count: Option<u64>,
    pub agents_count: Option<u64>,
}

/// Update a gateway.
#[endpoint(tags("gateways"), request_body = UpdateGateway)]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<GatewayEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let b: UpdateGateway = json_body(req).await?;
    let name = b.name.map(|n| n.trim().to_string());
    let host = b.host.map(|h| h.trim().to_string());
    let mut p = Problems::default();
    p.check(name.as_deref().is_none_or(|n| validate_name(n).is_ok()), "name", "must be 1-100 characters");
    p.check(
        host.as_deref().is_none_or(|h| validate_host(h).is_ok()),
        "host",
        "must be a hostname or IP address (no scheme, path or spaces)",
    );
    p.check(b.port.is_none_or(|p| p > 0), "port", "must be between 1 and 65535");
    p.check(
        b.status.as_deref().is_none_or(|s| STATUSES.contains(&s)),
        "status",
        "must be one of online, offline, degraded, unknown",
    );
    p.check(b.token.as_ref().is_none_or(|t| t.len() <= 4096), "token", "must be at most 4096 characters");
    p.finish()?;
    let nothing = name.is_none()
        && host.is_none()
        && b.port.is_none()
        && b.token.is_none()
        && b.is_primary.is_none()
        && b.status.is_none()
        && b.last_seen.is_none()
        && b.latency.is_none()
        && b.sessions_count.is_none()
        && b.agents_count.is_none();
    if nothing {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    let gateway = state
        .write(move |tx| {
            let old = store::get_w(tx, b.id)?.ok_or_else(not_found)?;
            let mut g = old.clone();
            if let Some(n) = name {
                if store::id_by_name(tx, &n)?.is_some_and(|other| other != g.id) {
                    return Err(conflict());
                }
                g.name = n;
            }
            g.host = host.unwrap_or(g.host);
            g.port = b.port.unwrap_or(g.port);
            if let Some(t) = b.token {
                g.token = (!t.is_empty()).then_some(t);
            }
            if let Some(primary) = b.is_primary {
                if !primary && old.is_primary {
                    return Err(AppError::BadRequest(
                        "Make another gateway primary instead of unsetting the primary".into(),
                    ));
                }
                g.is_primary = primary;
            }
            g.status = b.status.unwrap_or(g.status);
            g.last_seen = b.last_seen.or(g.last_seen);
            g.latency = b.latency.or(g.latency);
            g.sessions_count = b.sessions_count.unwrap_or(g.sessions_count);
            g.agents_count = b.agents_count.unwrap_or(g.agents_count);
            g.updated_at = now_secs();
            store::save(tx, Some(&old), &g)?;
            audit::record(tx, Entry::by(&who, ip, "gateway_updated", json!({"id": g.id, "name": g.name})))?;
            Ok(g)
        })
        .await?;
    Ok(Json(GatewayEnvelope { gateway: Gateway::from(&gateway) }))
}

/// Remove a gateway; the primary gateway cannot be deleted.
#[endpoint(tags("gateways"), request_body = IdBody)]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    delete_by_id(req, depot, |tx, id, who, ip| {
        let g = store::get_w(tx, id)?.ok_or_else(not_found)?;
        if g.is_primary {
            return Err(AppError::BadRequest("The primary gateway cannot be deleted".into()));
        }
        store::delete(tx, &g)?;
        audit::record(tx, Entry::by(who, ip, "gateway_deleted", json!({"id": id, "name": g.name})))?;
        Ok(())
    })
    .await
}

#[derive(Serialize, ToSchema)]
pub struct HealthDetail {
    pub id: u64,
    pub name: String,
    pub status: String,
    pub latency: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The gateway's own `/health` body.
    pub response: Value,
}

#[derive(Serialize, ToSchema)]
pub struct HealthReport {
    pub healthy: bool,
    /// Slowest latency among the healthy gateways checked.
    pub latency_ms: Option<u64>,
    pub details: Vec<HealthDetail>,
}

/// Checks one gateway (or all) and records status, last_seen and latency. Callable by a scheduled job.
pub async fn check(state: &AppState, gateway_id: Option<u64>) -> AppResult<HealthReport> {
    let gateways = state.store.read(store::list).await?;
    let targets: Vec<GatewayRecord> = match gateway_id {
        Some(id) => vec![gateways.into_iter().find(|g| g.id == id).ok_or_else(not_found)?],
        None => gateways,
    };
    let results = join_all(targets.iter().map(|g| client::health(&state.http, g))).await;
    let checked: Vec<(u64, Result<u64, String>, Value)> =
        targets.iter().zip(results).map(|(g, (r, details))| (g.id, r, details)).collect();
    let outcomes: Vec<(u64, Result<u64, String>)> = checked.iter().map(|(id, r, _)| (*id, r.clone())).collect();
    let updated = state
        .write(move |tx| {
            let now = now_secs();
            let mut out = Vec::new();
            for (id, result) in outcomes {
                let Some(old) = store::get_w(tx, id)? else { continue };
                let mut g = old.clone();
                g.apply_health(&result, now);
                store::save(tx, Some(&old), &g)?;
                if old.status != g.status {
                    tx.emit(
                        "gateway.status",
                        json!({"id": g.id, "name": g.name, "status": g.status, "previous_status": old.status}),
                    );
                }
                out.push(g);
            }
            Ok(out)
        })
        .await?;
    let details: Vec<HealthDetail> = updated
        .iter()
        .zip(checked)
        .map(|(g, (_, result, response))| HealthDetail {
            id: g.id,
            name: g.name.clone(),
            status: g.status.clone(),
            latency: result.as_ref().ok().copied(),
            error: result.err(),
            response,
        })
        .collect();
    Ok(HealthReport {
        healthy: !details.is_empty() && details.iter().all(|d| d.error.is_none()),
        latency_ms: details.iter().filter_map(|d| d.latency).max(),
        details,
    })
}

#[derive(Deserialize, ToSchema, Default)]
pub struct HealthRequest {
    /// Omit to check every gateway.
    pub gateway_id: Option<u64>,
}

/// Health-check one gateway or all of them now (1 call per 10 s).
#[endpoint(tags("gateways"), request_body = HealthRequest)]
pub async fn health(req: &mut Request, depot: &mut Depot) -> AppResult<Json<HealthReport>> {
    let state = app(depot)?;
    let body: HealthRequest = crate::http::extract::optional_json_body(req).await?;
    Ok(Json(check(&state, body.gateway_id).await?))
}

/// Creates the default primary gateway from configuration when none exists.
pub async fn seed_default(state: &AppState) -> AppResult<()> {
    let cfg = &state.config;
    let (name, host, port, token) =
        (cfg.default_gateway_name.clone(), cfg.gateway_host.clone(), cfg.gateway_port, cfg.gateway_token.clone());
    state
        .write(move |tx| {
            if !store::list_w(tx)?.is_empty() {
                return Ok(());
            }
            let now = now_secs();
            let g = GatewayRecord {
                id: store::new_id(tx)?,
                name,
                host,
                port: if port == 0 { DEFAULT_PORT } else { port },
                token,
                is_primary: true,
                status: "unknown".into(),
                last_seen: None,
                latency: None,
                sessions_count: 0,
                agents_count: 0,
                created_at: now,
                updated_at: now,
                consecutive_failures: 0,
            };
            store::save(tx, None, &g)?;
            Ok(())
        })
        .await
}

pub fn router() -> Router {
    let writes = || RouteLimit::new("gateway_writes", 100, Duration::from_secs(60), KeyBy::Principal);
    Router::with_path("gateways")
        .hoop(RequireRole(Role::Admin))
        .push(Router::new().get(list).delete(delete))
        .push(Router::new().hoop(writes()).post(create).put(update))
        .push(
            Router::with_path("health")
                .hoop(RouteLimit::new("gateway_health", 1, Duration::from_secs(10), KeyBy::Global))
                .post(health),
        )
}
