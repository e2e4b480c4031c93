//! Request and response bodies shared by many routes.

use std::net::IpAddr;

use salvo::http::header::CONTENT_TYPE;
use salvo::http::{HeaderValue, ResBody, StatusCode};
use salvo::prelude::*;
use salvo_oapi::{Components, EndpointOutRegister, Operation, ToSchema};
use serde::{Deserialize, Serialize};

use super::Principal;
use crate::error::AppResult;
use crate::store::Tx;

/// `{id}`: the body of the delete-by-id (and test/retry-by-id) routes.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IdBody {
    pub id: u64,
}

/// The delete-by-id routes: reads `{id}`, runs `remove` (which deletes and audits, or fails with a 404) in
/// one write transaction with the caller and their IP, answers `{success: true}`.
pub async fn delete_by_id<F>(req: &mut Request, depot: &Depot, remove: F) -> AppResult<Json<Success>>
where
    F: FnOnce(&mut Tx, u64, &Principal, IpAddr) -> AppResult<()> + Send + 'static,
{
    let state = super::app(depot)?;
    let who = super::require_principal(depot)?;
    let ip = super::client_ip(depot);
    let IdBody { id } = super::json_body(req).await?;
    state.write(move |tx| remove(tx, id, &who, ip)).await?;
    Ok(Json(Success::ok()))
}

/// `{success: true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Success {
    pub success: bool,
}

impl Success {
    pub fn ok() -> Self {
        Self { success: true }
    }
}

/// A JSON response, encoded in one pass into one buffer and sent as one body. Every handler uses this one
/// rather than salvo's `Json`, whose chunking writer took ~10% of the CPU of `GET /api/tasks` in a profile
/// and could split a body into several writes.
pub struct Json<T>(pub T);

impl<T: Serialize + Send> Scribe for Json<T> {
    fn render(self, res: &mut Response) {
        let bytes = serde_json::to_vec(&self.0).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot encode a JSON response");
            res.status_code(StatusCode::INTERNAL_SERVER_ERROR);
            br#"{"error":"Internal server error"}"#.to_vec()
        });
        res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
        res.body(ResBody::Once(bytes.into()));
    }
}

impl<T: ToSchema> EndpointOutRegister for Json<T> {
    #[allow(clippy::disallowed_types, reason = "the same OpenAPI response as salvo's Json")]
    fn register(components: &mut Components, operation: &mut Operation) {
        <salvo::writing::Json<T> as EndpointOutRegister>::register(components, operation);
    }
}
