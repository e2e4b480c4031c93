//! Authentication (session cookie or API key → [`Principal`] in the depot) and the ONE role mechanism:
//! every protected route declares `RequireRole(min)`.

use salvo::http::header;
use salvo::prelude::*;
use subtle::ConstantTimeEq;

use super::{app, guard};
use crate::error::{AppError, AppResult};
use crate::users::{self, Role};

pub const SESSION_COOKIE: &str = "svc-session";
const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);
const MINUTE: std::time::Duration = std::time::Duration::from_secs(60);
const PRINCIPAL: &str = "principal";

/// Who is calling. The API key is the `api` admin with id 0.
#[derive(Debug, Clone)]
pub struct Principal {
    pub id: u64,
    pub username: String,
    pub role: Role,
    /// SHA-256 hex of the session token, for cookie-authenticated requests.
    pub session_hash: Option<String>,
}

impl Principal {
    pub fn api_key() -> Self {
        Self { id: 0, username: "api".into(), role: Role::Admin, session_hash: None }
    }

    pub fn via_api_key(&self) -> bool {
        self.session_hash.is_none()
    }
}

pub fn principal(depot: &Depot) -> Option<&Principal> {
    depot.get::<Principal>(PRINCIPAL).ok()
}

pub fn require_principal(depot: &Depot) -> AppResult<Principal> {
    principal(depot).cloned().ok_or(AppError::Unauthenticated)
}

fn presented_api_key(req: &Request) -> Option<&str> {
    if let Some(key) = req.headers().get("x-api-key").and_then(|v| v.to_str().ok()) {
        return Some(key);
    }
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
}

/// Resolves the principal (a valid session cookie wins over the API key), then applies the CSRF rule,
/// which only API-key requests skip. Requests without valid credentials go on anonymous: the route's
/// `RequireRole` answers 401.
#[handler]
pub async fn authenticate(req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
    let result = async {
        let state = app(depot)?;
        let mut found = None;
        if let Some(token) = req.cookie(SESSION_COOKIE).map(|c| c.value().to_string()) {
            found = users::session_principal(&state, &token).await?;
        }
        if found.is_none()
            && let (Some(expected), Some(given)) = (&state.config.api_key, presented_api_key(req))
        {
            let ip = super::client_ip(depot).to_string();
            if bool::from(expected.as_bytes().ct_eq(given.as_bytes())) {
                found = Some(Principal::api_key());
                let data = serde_json::json!({"ip_address": ip, "path": req.uri().path()});
                crate::webhooks::fire_security(&state, "api_key_used", &ip, HOUR, data).await;
            } else {
                let data = serde_json::json!({"reason": "invalid API key", "ip_address": ip, "path": req.uri().path()});
                crate::webhooks::fire_security(&state, "unauthorized_access", &ip, MINUTE, data).await;
            }
        }
        guard::check_csrf(req, found.as_ref().is_some_and(Principal::via_api_key))?;
        Ok::<_, AppError>(found)
    }
    .await;
    match result {
        Ok(Some(p)) => {
            depot.insert(PRINCIPAL, p);
        }
        Ok(None) => {}
        Err(e) => {
            e.write(req, depot, res).await;
            ctrl.skip_rest();
        }
    }
}

/// The minimum role of a route: 401 without credentials, 403 `Requires <role> role or higher` below it.
pub struct RequireRole(pub Role);

impl RequireRole {
    pub fn check(&self, depot: &Depot) -> AppResult<Principal> {
        let p = require_principal(depot)?;
        if p.role < self.0 {
            return Err(AppError::Forbidden(format!("Requires {} role or higher", self.0.as_str())));
        }
        Ok(p)
    }
}

#[async_trait]
impl Handler for RequireRole {
    async fn handle(&self, req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
        if let Err(e) = self.check(depot) {
            if let (AppError::Forbidden(_), Some(who), Ok(state)) = (&e, principal(depot), app(depot)) {
                let data = serde_json::json!({
                    "reason": "insufficient role", "username": who.username, "role": who.role,
                    "required_role": self.0, "method": req.method().as_str(), "path": req.uri().path(),
                    "ip_address": super::client_ip(depot).to_string(),
                });
                let key = format!("{}:{}", who.username, req.uri().path());
                crate::webhooks::fire_security(&state, "unauthorized_access", &key, MINUTE, data).await;
            }
            e.write(req, depot, res).await;
            ctrl.skip_rest();
        }
    }
}
