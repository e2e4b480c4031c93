//! The test harness: the real server on 127.0.0.1:0 with a temp data dir and light Argon2 parameters.

use std::net::SocketAddr;
use std::sync::Arc;

use opsdeck::app::AppState;
use opsdeck::config::Settings;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;

pub const ADMIN_USER: &str = "admin";
pub const ADMIN_PASS: &str = "admin-password-123";
pub const API_KEY: &str = "test-api-key-0123456789";

/// How a request authenticates.
#[derive(Clone, Debug)]
pub enum Auth {
    None,
    ApiKey,
    Bearer,
    /// Value of the `svc-session` cookie.
    Session(String),
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub state: Arc<AppState>,
    pub client: reqwest::Client,
    pub _dir: TempDir,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or_default()
    }

    /// The `svc-session` Set-Cookie header, if any.
    pub fn session_cookie(&self) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("svc-session="))
            .map(str::to_string)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Default test settings; `extra` flags are appended and win.
pub async fn spawn_app_with(extra: &[&str]) -> TestApp {
    try_spawn_app_with(extra).await.expect("app builds")
}

/// Like [`spawn_app_with`], but a database that cannot be opened (still held by a stopping app) is an error.
pub async fn try_spawn_app_with(extra: &[&str]) -> Result<TestApp, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_string_lossy().to_string();
    // Never the developer's real ~/.openclaw: a gateway home that does not exist unless a test says so.
    let agw_home = dir.path().join("agw-home").to_string_lossy().to_string();
    let defaults = [
        ("--env", "development"),
        ("--data-dir", data.as_str()),
        ("--auth-user", ADMIN_USER),
        ("--auth-pass", ADMIN_PASS),
        ("--api-key", API_KEY),
        ("--argon2-memory-kib", "8"),
        ("--argon2-iterations", "1"),
        ("--disable-rate-limit", "true"),
        ("--cookie-secure", "false"),
        ("--trusted-proxies", ""),
        ("--allowed-hosts", "localhost,127.0.0.1"),
        // No real gateway or transcripts of the machine running the tests: port 1 is always closed.
        ("--gateway-port", "1"),
        ("--local-sessions-dir", "/nonexistent/opsdeck-test-sessions"),
        ("--agw-home", agw_home.as_str()),
        // No scheduled alert evaluation in the middle of a test (a test evaluates when it means to).
        ("--alert-eval-interval", "86400"),
    ];
    // `extra` is flag/value pairs; a flag given there replaces its default.
    let overrides: Vec<(&str, &str)> = extra.chunks(2).map(|p| (p[0], p[1])).collect();
    let mut args: Vec<String> = Vec::new();
    for (flag, value) in defaults.iter().filter(|(f, _)| !overrides.iter().any(|(o, _)| o == f)).chain(overrides.iter())
    {
        args.push(flag.to_string());
        args.push(value.to_string());
    }
    let config = Settings::from_args(args).expect("settings").validate().expect("valid config");
    let app = opsdeck::build(config).await?;
    let state = app.state.clone();
    let (acceptor, addr) = opsdeck::bind("127.0.0.1", 0).await.expect("bind");
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(opsdeck::serve(app, acceptor, async move {
        let _ = rx.await;
    }));
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    Ok(TestApp { addr, state, client, _dir: dir, shutdown: Some(tx) })
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(&[]).await
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn request(&self, method: Method, path: &str, auth: &Auth) -> reqwest::RequestBuilder {
        let rb = self.client.request(method, self.url(path));
        match auth {
            Auth::None => rb,
            Auth::ApiKey => rb.header("x-api-key", API_KEY),
            Auth::Bearer => rb.header("authorization", format!("Bearer {API_KEY}")),
            Auth::Session(token) => rb.header("cookie", format!("svc-session={token}")),
        }
    }

    pub async fn send(&self, rb: reqwest::RequestBuilder) -> Reply {
        let res = rb.send().await.expect("request sent");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply { status, headers, body, text }
    }

    pub async fn call(&self, method: Method, path: &str, auth: &Auth, body: Option<Value>) -> Reply {
        let mut rb = self.request(method, path, auth);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        self.send(rb).await
    }

    pub async fn get(&self, path: &str, auth: &Auth) -> Reply {
        self.call(Method::GET, path, auth, None).await
    }

    pub async fn post(&self, path: &str, auth: &Auth, body: Value) -> Reply {
        self.call(Method::POST, path, auth, Some(body)).await
    }

    pub async fn put(&self, path: &str, auth: &Auth, body: Value) -> Reply {
        self.call(Method::PUT, path, auth, Some(body)).await
    }

    pub async fn delete(&self, path: &str, auth: &Auth, body: Value) -> Reply {
        self.call(Method::DELETE, path, auth, Some(body)).await
    }

    /// Sends a raw body with a JSON content type.
    pub async fn raw(&self, method: Method, path: &str, auth: &Auth, body: impl Into<reqwest::Body>) -> Reply {
        let rb = self.request(method, path, auth).header("content-type", "application/json").body(body);
        self.send(rb).await
    }

    pub async fn login_reply(&self, username: &str, password: &str) -> Reply {
        self.post("/api/auth/login", &Auth::None, json!({"username": username, "password": password})).await
    }

    /// Logs in and returns the session token.
    pub async fn login(&self, username: &str, password: &str) -> String {
        let reply = self.login_reply(username, password).await;
        assert_eq!(reply.status, StatusCode::OK, "login of {username}: {}", reply.text);
        let cookie = reply.session_cookie().expect("session cookie set");
        cookie.split(';').next().unwrap().trim_start_matches("svc-session=").to_string()
    }

    pub async fn admin(&self) -> Auth {
        Auth::Session(self.login(ADMIN_USER, ADMIN_PASS).await)
    }

    /// Creates a user with `role` through the API and returns its id and a signed-in session.
    pub async fn user_with_role(&self, username: &str, role: &str) -> (u64, Auth) {
        let password = format!("{username}-password-1");
        let reply = self
            .post("/api/auth/users", &Auth::ApiKey, json!({"username": username, "password": password, "role": role}))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text);
        let id = reply.body["user"]["id"].as_u64().unwrap();
        (id, Auth::Session(self.login(username, &password).await))
    }

    /// Sessions for every role: (none, viewer, operator, admin, api key).
    pub async fn role_sessions(&self) -> RoleSessions {
        RoleSessions {
            viewer: self.user_with_role("role-viewer", "viewer").await.1,
            operator: self.user_with_role("role-operator", "operator").await.1,
            admin: self.user_with_role("role-admin", "admin").await.1,
        }
    }

    pub async fn audit(&self, query: &str) -> Vec<Value> {
        let reply = self.get(&format!("/api/audit?{query}"), &Auth::ApiKey).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        reply.body["events"].as_array().cloned().unwrap_or_default()
    }
}

pub struct RoleSessions {
    pub viewer: Auth,
    pub operator: Auth,
    pub admin: Auth,
}

/// Asserts a route's role requirement: 401 without credentials, 403 `Requires <min> role or higher` below
/// `min`, and neither 401 nor 403 at or above it (the API key counts as admin).
pub async fn assert_min_role(
    app: &TestApp,
    roles: &RoleSessions,
    method: Method,
    path: &str,
    body: Option<Value>,
    min: &str,
) {
    let reply = app.call(method.clone(), path, &Auth::None, body.clone()).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{method} {path} without credentials: {}", reply.text);
    assert_eq!(reply.error(), "Authentication required");
    let rank = |r: &str| ["viewer", "operator", "admin"].iter().position(|x| *x == r).unwrap();
    for (name, auth) in
        [("viewer", &roles.viewer), ("operator", &roles.operator), ("admin", &roles.admin), ("admin", &Auth::ApiKey)]
    {
        let reply = app.call(method.clone(), path, auth, body.clone()).await;
        if rank(name) < rank(min) {
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{method} {path} as {name}: {}", reply.text);
            assert_eq!(reply.error(), format!("Requires {min} role or higher"));
        } else {
            assert!(
                reply.status != StatusCode::UNAUTHORIZED && reply.status != StatusCode::FORBIDDEN,
                "{method} {path} as {name} should be allowed, got {}: {}",
                reply.status,
                reply.text
            );
        }
    }
}
