//! Cross-cutting HTTP: state injection, client IP, security headers, host allowlist, CSRF, auth and
//! roles, rate limits, request parsing, JSON error catcher and the SSE endpoint.

pub mod auth;
pub mod body;
pub mod extract;
pub mod guard;
pub mod rate_limit;
pub mod sse;

use std::net::IpAddr;
use std::sync::Arc;

use salvo::prelude::*;

pub use auth::{Principal, RequireRole, principal, require_principal};
pub use body::{IdBody, Json, Success, delete_by_id};
pub use extract::{Page, json_body, path_id};

use crate::app::AppState;
use crate::error::{AppError, AppResult};

/// Puts the shared state in every request's depot.
pub struct InjectState(pub Arc<AppState>);

#[async_trait]
impl Handler for InjectState {
    async fn handle(&self, _req: &mut Request, depot: &mut Depot, _res: &mut Response, _ctrl: &mut FlowCtrl) {
        depot.insert_typed(self.0.clone());
    }
}

pub fn app(depot: &Depot) -> AppResult<Arc<AppState>> {
    depot
        .get_typed::<Arc<AppState>>()
        .cloned()
        .map_err(|_| AppError::Internal("application state missing from depot".into()))
}

const CLIENT_IP: &str = "client_ip";

/// The client IP as DECISIONS defines it; set by [`guard::client_ip_hoop`].
pub fn client_ip(depot: &Depot) -> IpAddr {
    depot.get::<IpAddr>(CLIENT_IP).copied().unwrap_or(IpAddr::from([0, 0, 0, 0]))
}
