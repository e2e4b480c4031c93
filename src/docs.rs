//! `GET /api/docs`: the OpenAPI 3.1 document, generated from the real router so it cannot drift.

use salvo::prelude::*;
use salvo_oapi::endpoint;
use salvo_oapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use salvo_oapi::{OpenApi, Server};

use crate::error::AppResult;
use crate::http::app;

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

/// This OpenAPI document.
#[endpoint(tags("meta"), responses((status_code = 200, description = "OpenAPI 3.1 JSON document")))]
pub async fn serve(depot: &mut Depot, res: &mut Response) -> AppResult<()> {
    let state = app(depot)?;
    res.headers_mut().insert("content-type", salvo::http::HeaderValue::from_static("application/json"));
    res.write_body(state.openapi_json.get().cloned().unwrap_or_default()).ok();
    Ok(())
}
