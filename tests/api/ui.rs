//! The bundled dashboard: the SPA page for `/` and deep links, static modules with their types and
//! cache headers, and `/api/*` that never falls back to the page.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

fn assert_csp(reply: &Reply, path: &str) {
    let csp = reply.header("content-security-policy").unwrap_or_else(|| panic!("{path}: no CSP"));
    assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{path}: {csp}");
}

#[tokio::test]
async fn root_and_deep_links_serve_the_page_with_a_strict_policy() {
    let app = spawn_app().await;
    for path in ["/", "/tasks", "/agents", "/login?next=%2Ftasks", "/some/deep/link"] {
        let reply = app.get(path, &Auth::None).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(reply.header("content-type").unwrap_or_default().starts_with("text/html"), "{path}");
        assert!(reply.text.contains("<script type=\"module\" src=\"/assets/app/main.js\">"), "{path}");
        assert_eq!(reply.header("cache-control"), Some("no-cache"), "{path}");
        assert_eq!(reply.header("x-frame-options"), Some("DENY"), "{path}");
        assert_csp(&reply, path);
    }
}

#[tokio::test]
async fn static_files_have_their_types_and_validators() {
    let app = spawn_app().await;
    let js = app.get("/assets/app/main.js", &Auth::None).await;
    assert_eq!(js.status, StatusCode::OK);
    assert_eq!(js.header("content-type"), Some("text/javascript; charset=utf-8"));
    assert_eq!(js.header("cache-control"), Some("no-cache"));
    assert_csp(&js, "main.js");
    let etag = js.header("etag").expect("etag").to_string();
    let again =
        app.send(app.request(Method::GET, "/assets/app/main.js", &Auth::None).header("if-none-match", etag)).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);

    let css = app.get("/assets/styles.css", &Auth::None).await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(css.header("content-type").unwrap_or_default().starts_with("text/css"));
    let page = app.get("/assets/app/pages/tasks.js", &Auth::None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("export default"));
}

#[tokio::test]
async fn missing_assets_and_unknown_api_paths_are_json_404s() {
    let app = spawn_app().await;
    for path in ["/assets/app/nope.js", "/assets/vendor/missing-1.0/x.js", "/assets/"] {
        let reply = app.get(path, &Auth::None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}: {}", reply.text);
        assert!(!reply.text.contains("<html"), "{path}");
    }
    for path in ["/api/nope", "/api", "/api/tasks/1/nope/deeper"] {
        let reply = app.get(path, &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}: {}", reply.text);
        assert_eq!(reply.body, json!({"error": "Not found"}), "{path}");
    }
    // The API's own answers are untouched by the dashboard routes.
    assert_eq!(app.get("/api/auth/me", &Auth::None).await.status, StatusCode::UNAUTHORIZED);
    let method = app.call(Method::PATCH, "/api/auth/login", &Auth::None, Some(json!({}))).await;
    assert_eq!(method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(app.get("/healthz", &Auth::None).await.status, StatusCode::OK);
}
