//! `GET /api/docs`: the OpenAPI 3.1 document, generated from the real router so it cannot drift.

use salvo::prelude::*;
use salvo_oapi::endpoint;
use salvo_oapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use salvo_oapi::{OpenApi, Server};

use crate::error::{AppError, AppResult};

pub const API_VERSION: &str = "1.2.0";

pub fn document(router: &Router) -> OpenApi {
    // Schema names are the type names ("User"), not module paths.
    static NAMER: std::sync::Once = std::sync::Once::new();
    NAMER.call_once(|| salvo_oapi::naming::set_namer(salvo_oapi::naming::FlexNamer::new().short_mode(true)));
    let no_scopes = Vec::<String>::new;
    OpenApi::new("OpsDeck API", API_VERSION)
        .add_server(Server::new("/"))
        .add_security_scheme("cookieAuth", SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new("svc-session"))))
        .add_security_scheme("apiKeyHeader", SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))))
        .add_security_scheme("bearerApiKey", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)))
        .security([
            SecurityRequirement::new("cookieAuth", no_scopes()),
            SecurityRequirement::new("apiKeyHeader", no_scopes()),
            SecurityRequirement::new("bearerApiKey", no_scopes()),
        ])
        .merge_router(router)
}

/// The document as JSON, generated once per process from [`crate::app::documented_routes`] (it depends on
/// the code only, not on any state).
pub fn openapi_json() -> &'static str {
    static JSON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    JSON.get_or_init(|| {
        document(&crate::app::documented_routes()).to_json().unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot serialize the OpenAPI document");
            "{}".into()
        })
    })
}

/// This OpenAPI document.
#[endpoint(tags("meta"), responses((status_code = 200, description = "OpenAPI 3.1 JSON document")))]
pub async fn serve(res: &mut Response) -> AppResult<()> {
    let json = tokio::task::spawn_blocking(openapi_json).await.map_err(|e| AppError::Failed(e.to_string()))?;
    res.headers_mut().insert("content-type", salvo::http::HeaderValue::from_static("application/json"));
    res.write_body(json).ok();
    Ok(())
}
