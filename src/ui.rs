//! The bundled dashboard: `assets/` embedded with rust-embed and served by salvo. Static files live
//! under `/assets/…`; every other non-`/api` GET answers `index.html`, so deep links such as `/tasks`
//! work. Unknown `/api/*` paths never reach this router and stay JSON 404s.

use rust_embed::RustEmbed;
use salvo::http::{HeaderValue, Mime, header};
use salvo::prelude::*;
use salvo::serve_static::render_embedded_file;

#[derive(RustEmbed)]
#[folder = "assets"]
struct Assets;

/// Strict policy for every dashboard response: only OpsDeck's own origin, no inline scripts or styles.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

const INDEX: &str = "index.html";
/// Vendored third-party files carry their version in their path, so they may be cached for long.
const LONG_CACHE: &str = "public, max-age=31536000, immutable";
/// Our own modules have no content hash in their names: the browser revalidates them (ETag → 304).
const REVALIDATE: &str = "no-cache";

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("txt" | "md") | Some("license") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn cache_control(path: &str) -> &'static str {
    if path.starts_with("vendor/") { LONG_CACHE } else { REVALIDATE }
}

fn serve(path: &str, req: &Request, res: &mut Response) -> bool {
    let Some(file) = Assets::get(path) else { return false };
    let mime = content_type(path).parse::<Mime>().ok();
    let headers = res.headers_mut();
    headers.insert("content-security-policy", HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control(path)));
    render_embedded_file(file, req, res, mime);
    true
}

/// `/assets/{**path}`: an embedded file, or 404 (never the SPA page: a missing module must fail loudly).
#[handler]
async fn asset(req: &mut Request, res: &mut Response) {
    let path = req.params().tail().unwrap_or_default().to_string();
    let clean = !path.is_empty() && !path.split('/').any(|s| s.is_empty() || s == "." || s == "..");
    if !(clean && serve(&path, req, res)) {
        res.status_code(StatusCode::NOT_FOUND);
    }
}

/// Any other page path: the single-page app, which routes on the client.
#[handler]
async fn spa(req: &mut Request, res: &mut Response) {
    if !serve(INDEX, req, res) {
        res.status_code(StatusCode::NOT_FOUND);
    }
}

fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// The dashboard routes; mount after the API router.
pub fn router() -> Router {
    Router::new()
        .push(Router::with_path("assets/{**path}").get(asset).head(asset))
        .push(Router::with_path("{**rest}").filter_fn(|req, _| !is_api(req.uri().path())).get(spa).head(spa))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_modules_are_embedded() {
        assert!(Assets::get(INDEX).is_some());
        assert!(Assets::get("app/main.js").is_some());
    }

    #[test]
    fn types_and_caching() {
        assert_eq!(content_type("app/main.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("styles.css"), "text/css; charset=utf-8");
        assert_eq!(cache_control("vendor/x-1.0/x.js"), LONG_CACHE);
        assert_eq!(cache_control("app/main.js"), REVALIDATE);
        assert!(is_api("/api") && is_api("/api/nope") && !is_api("/apiary") && !is_api("/tasks"));
    }
}
