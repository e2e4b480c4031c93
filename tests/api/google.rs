//! Google sign-in end to end against a fake identity provider on loopback (`/token`, `/userinfo`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use reqwest::StatusCode;
use salvo::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::{Auth, Reply, TestApp, spawn_app_with};

const CLIENT_ID: &str = "client-123.apps.googleusercontent.com";
const CLIENT_SECRET: &str = "secret-456";
const GOOD_CODE: &str = "good-code";
const ACCESS_TOKEN: &str = "access-token-789";

/// What the fake provider answers and what it received.
#[derive(Default)]
struct IdpState {
    /// Every form posted to `/token`.
    forms: Vec<HashMap<String, String>>,
    /// `Authorization` headers seen by `/userinfo`.
    userinfo_auth: Vec<String>,
    /// Replaces the token endpoint's answer when set: (status, body).
    token_override: Option<(u16, Value)>,
    /// The user-info answer.
    profile: Value,
}

#[derive(Clone)]
struct Idp {
    base: String,
    state: Arc<Mutex<IdpState>>,
}

struct TokenEndpoint(Arc<Mutex<IdpState>>);

#[async_trait]
impl Handler for TokenEndpoint {
    async fn handle(&self, req: &mut Request, _depot: &mut Depot, res: &mut Response, _ctrl: &mut FlowCtrl) {
        let body = req.payload().await.map(|b| b.to_vec()).unwrap_or_default();
        let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
        let mut st = self.0.lock().unwrap();
        let good = form.get("code").map(String::as_str) == Some(GOOD_CODE)
            && form.get("client_secret").map(String::as_str) == Some(CLIENT_SECRET);
        st.forms.push(form);
        let (status, reply) = match &st.token_override {
            Some(o) => o.clone(),
            None if good => (200, json!({"access_token": ACCESS_TOKEN, "token_type": "Bearer", "expires_in": 3599})),
            None => (400, json!({"error": "invalid_grant", "error_description": "Bad Request"})),
        };
        res.status_code(StatusCode::from_u16(status).unwrap());
        res.render(Json(reply));
    }
}

struct UserinfoEndpoint(Arc<Mutex<IdpState>>);

#[async_trait]
impl Handler for UserinfoEndpoint {
    async fn handle(&self, req: &mut Request, _depot: &mut Depot, res: &mut Response, _ctrl: &mut FlowCtrl) {
        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let mut st = self.0.lock().unwrap();
        st.userinfo_auth.push(auth.clone());
        if auth != format!("Bearer {ACCESS_TOKEN}") {
            res.status_code(StatusCode::UNAUTHORIZED);
            res.render(Json(json!({"error": "invalid_token"})));
            return;
        }
        res.render(Json(st.profile.clone()));
    }
}

impl Idp {
    async fn start() -> Idp {
        let state =
            Arc::new(Mutex::new(IdpState { profile: profile("jane.doe+ops@example.com", true), ..Default::default() }));
        let router = Router::new()
            .push(Router::with_path("token").post(TokenEndpoint(state.clone())))
            .push(Router::with_path("userinfo").get(UserinfoEndpoint(state.clone())));
        let (acceptor, addr) = opsdeck::bind("127.0.0.1", 0).await.unwrap();
        tokio::spawn(Server::new(acceptor).serve(router));
        Idp { base: format!("http://{addr}"), state }
    }

    fn set_profile(&self, profile: Value) {
        self.state.lock().unwrap().profile = profile;
    }

    fn override_token(&self, status: u16, body: Value) {
        self.state.lock().unwrap().token_override = Some((status, body));
    }

    fn forms(&self) -> Vec<HashMap<String, String>> {
        self.state.lock().unwrap().forms.clone()
    }

    fn userinfo_calls(&self) -> usize {
        self.state.lock().unwrap().userinfo_auth.len()
    }

    /// Settings that point the app at this provider.
    fn flags(&self) -> Vec<String> {
        vec![
            "--google-client-id".into(),
            CLIENT_ID.into(),
            "--google-client-secret".into(),
            CLIENT_SECRET.into(),
            "--google-auth-url".into(),
            "https://accounts.example.test/o/oauth2/v2/auth".into(),
            "--google-token-url".into(),
            format!("{}/token", self.base),
            "--google-userinfo-url".into(),
            format!("{}/userinfo", self.base),
        ]
    }
}

fn profile(email: &str, verified: bool) -> Value {
    json!({
        "sub": "1234567890",
        "email": email,
        "email_verified": verified,
        "name": "Jane Doe",
        "picture": "https://lh3.example.test/jane.png",
    })
}

/// An app pointed at `idp`; `extra` flag/value pairs replace the provider flags of the same name.
async fn app_with(idp: &Idp, extra: &[&str]) -> TestApp {
    let base = idp.flags();
    let mut flags: Vec<&str> = Vec::new();
    for pair in base.chunks(2) {
        if !extra.chunks(2).any(|e| e[0] == pair[0]) {
            flags.extend([pair[0].as_str(), pair[1].as_str()]);
        }
    }
    flags.extend_from_slice(extra);
    spawn_app_with(&flags).await
}

/// A started sign-in: the consent-page URL's parameters and the verifier cookie.
struct Started {
    location: reqwest::Url,
    params: HashMap<String, String>,
    /// `svc-google-flow=<verifier>` as a Cookie header value.
    cookie: String,
    set_cookie: String,
}

async fn begin(app: &TestApp) -> Started {
    let reply = app.get("/api/auth/google", &Auth::None).await;
    assert_eq!(reply.status, StatusCode::FOUND, "{}", reply.text);
    let location = reqwest::Url::parse(reply.header("location").expect("a Location")).unwrap();
    let params = location.query_pairs().into_owned().collect();
    let set_cookie = reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("svc-google-flow="))
        .expect("flow cookie set")
        .to_string();
    let cookie = set_cookie.split(';').next().unwrap().to_string();
    Started { location, params, cookie, set_cookie }
}

/// Google's redirect back to the callback, from the browser that holds `cookie`.
async fn callback(app: &TestApp, query: &str, cookie: Option<&str>, accept_json: bool) -> Reply {
    let mut rb = app.request(reqwest::Method::GET, &format!("/api/auth/google?{query}"), &Auth::None);
    if let Some(c) = cookie {
        rb = rb.header("cookie", c);
    }
    if accept_json {
        rb = rb.header("accept", "application/json");
    }
    app.send(rb).await
}

fn q(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A whole sign-in with `code`: redirect, then the callback.
async fn sign_in(app: &TestApp, code: &str) -> Reply {
    let started = begin(app).await;
    let query = format!("code={}&state={}", q(code), q(&started.params["state"]));
    callback(app, &query, Some(&started.cookie), false).await
}

fn session_token(reply: &Reply) -> Option<String> {
    reply.session_cookie().map(|c| c.split(';').next().unwrap().trim_start_matches("svc-session=").to_string())
}

async fn requests(app: &TestApp) -> Vec<Value> {
    let list = app.get("/api/auth/access-requests", &Auth::ApiKey).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    list.body["requests"].as_array().cloned().unwrap()
}

#[tokio::test]
async fn google_redirect_carries_every_parameter_and_a_signed_state() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;
    let started = begin(&app).await;
    let p = &started.params;
    assert_eq!(started.location.host_str(), Some("accounts.example.test"));
    assert_eq!(started.location.path(), "/o/oauth2/v2/auth");
    assert_eq!(p["client_id"], CLIENT_ID);
    assert_eq!(p["redirect_uri"], app.url("/api/auth/google"));
    assert_eq!(p["response_type"], "code");
    assert_eq!(p["scope"], "openid email profile");
    assert_eq!(p["code_challenge_method"], "S256");
    // The challenge is S256 of the verifier held in the cookie.
    let verifier = started.cookie.trim_start_matches("svc-google-flow=");
    assert!(verifier.len() >= 43, "verifier {verifier}");
    let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    assert_eq!(p["code_challenge"], expected);
    let set = started.set_cookie.to_ascii_lowercase();
    for attr in ["httponly", "samesite=lax", "path=/api/auth/google", "max-age=600"] {
        assert!(set.contains(attr), "{attr} missing in {set}");
    }
    // The state is signed (`payload.mac`; refusals are in google_bad_state_…) and accepted as given.
    let state = &p["state"];
    assert!(state.contains('.'), "{state}");
    let again = begin(&app).await;
    assert_ne!(again.params["state"], *state, "a fresh state per sign-in");
    assert_ne!(again.cookie, started.cookie, "a fresh verifier per sign-in");
    let ok = sign_in(&app, GOOD_CODE).await;
    assert_eq!(ok.status, StatusCode::FOUND, "{}", ok.text);

    // A configured redirect URL wins over the Host-derived one.
    let fixed = app_with(&idp, &["--google-redirect-url", "https://ops.example.org/api/auth/google"]).await;
    assert_eq!(begin(&fixed).await.params["redirect_uri"], "https://ops.example.org/api/auth/google");
}

#[tokio::test]
async fn google_new_person_is_pending_until_an_admin_approves() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;

    let started = begin(&app).await;
    let query = format!("code={GOOD_CODE}&state={}", q(&started.params["state"]));
    let reply = callback(&app, &query, Some(&started.cookie), false).await;
    assert_eq!(reply.status, StatusCode::FOUND, "{}", reply.text);
    assert_eq!(reply.header("location"), Some("/login?pending=1"));
    assert!(reply.session_cookie().is_none(), "no session before approval");

    // The code exchange sent everything the token endpoint needs, including the PKCE verifier.
    let forms = idp.forms();
    assert_eq!(forms.len(), 1);
    let form = &forms[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], GOOD_CODE);
    assert_eq!(form["client_id"], CLIENT_ID);
    assert_eq!(form["client_secret"], CLIENT_SECRET);
    assert_eq!(form["redirect_uri"], started.params["redirect_uri"]);
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
    assert_eq!(challenge, started.params["code_challenge"]);

    let list = requests(&app).await;
    assert_eq!(list.len(), 1);
    let request = &list[0];
    assert_eq!(request["status"], "pending");
    assert_eq!(request["email"], "jane.doe+ops@example.com");
    assert_eq!(request["username"], "jane.doe_ops");
    assert_eq!(request["reason"], "Signed in with Google");
    assert_eq!(request["display_name"], "Jane Doe");
    assert_eq!(request["avatar_url"], "https://lh3.example.test/jane.png");

    // Signing in again while pending: 403 for a JSON client, still one request.
    let started = begin(&app).await;
    let query = format!("code={GOOD_CODE}&state={}", q(&started.params["state"]));
    let pending = callback(&app, &query, Some(&started.cookie), true).await;
    assert_eq!(pending.status, StatusCode::FORBIDDEN, "{}", pending.text);
    assert_eq!(pending.body, json!({"error": "Access request pending approval"}));
    assert!(pending.session_cookie().is_none());
    assert_eq!(requests(&app).await.len(), 1);

    let approved = app
        .post(
            "/api/auth/access-requests",
            &Auth::ApiKey,
            json!({"id": request["id"], "action": "approve", "role": "operator"}),
        )
        .await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.text);

    let reply = sign_in(&app, GOOD_CODE).await;
    assert_eq!(reply.status, StatusCode::FOUND, "{}", reply.text);
    assert_eq!(reply.header("location"), Some("/"));
    let set = reply.session_cookie().expect("session cookie");
    assert!(set.to_ascii_lowercase().contains("httponly") && set.contains("Path=/"), "{set}");
    let token = session_token(&reply).unwrap();
    assert_eq!(token.len(), 64);
    let me = app.get("/api/auth/me", &Auth::Session(token)).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    assert_eq!(me.body["user"]["username"], "jane.doe_ops");
    assert_eq!(me.body["user"]["provider"], "google");
    assert_eq!(me.body["user"]["role"], "operator");
    assert_eq!(me.body["user"]["email"], "jane.doe+ops@example.com");
    assert!(me.body["user"]["last_login_at"].is_i64());

    let logins = app.audit("action=login").await;
    assert_eq!(logins[0]["actor"], "jane.doe_ops");
    assert_eq!(logins[0]["detail"], json!({"success": true, "provider": "google"}));
    let asked = app.audit("action=access_requested").await;
    assert_eq!(asked.len(), 2, "one per sign-in while pending");
}

#[tokio::test]
async fn google_rejected_person_becomes_pending_again_and_names_stay_unique() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;
    // A local user already has the name the e-mail would give.
    app.user_with_role("jane.doe_ops", "viewer").await;
    assert_eq!(sign_in(&app, GOOD_CODE).await.header("location"), Some("/login?pending=1"));
    let request = requests(&app).await[0].clone();
    assert_eq!(request["username"], "jane.doe_ops-2");
    let rejected =
        app.post("/api/auth/access-requests", &Auth::ApiKey, json!({"id": request["id"], "action": "reject"})).await;
    assert_eq!(rejected.status, StatusCode::OK);
    assert_eq!(requests(&app).await[0]["status"], "rejected");

    let again = sign_in(&app, GOOD_CODE).await;
    assert_eq!(again.header("location"), Some("/login?pending=1"));
    assert!(again.session_cookie().is_none());
    let list = requests(&app).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["status"], "pending");
    assert_eq!(list[0]["id"], request["id"]);
}

#[tokio::test]
async fn google_signs_in_an_existing_user_with_that_email() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;
    let (id, _) = app.user_with_role("jane", "admin").await;
    let put = app.put("/api/auth/users", &Auth::ApiKey, json!({"id": id, "email": "Jane.Doe+ops@Example.com"})).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.text);
    let reply = sign_in(&app, GOOD_CODE).await;
    assert_eq!(reply.header("location"), Some("/"), "{}", reply.text);
    let me = app.get("/api/auth/me", &Auth::Session(session_token(&reply).unwrap())).await;
    assert_eq!(me.body["user"]["id"], id);
    assert!(requests(&app).await.is_empty(), "no access request for a known user");
}

#[tokio::test]
async fn google_bad_state_is_refused_before_the_code_is_exchanged() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;
    let started = begin(&app).await;
    let state = started.params["state"].clone();
    let other = begin(&app).await;

    let mut tampered = state.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let cases = [
        (format!("code={GOOD_CODE}&state={}", q(&tampered)), Some(started.cookie.as_str()), "Invalid sign-in state"),
        (format!("code={GOOD_CODE}&state=garbage"), Some(started.cookie.as_str()), "Invalid sign-in state"),
        (format!("code={GOOD_CODE}"), Some(started.cookie.as_str()), "Missing sign-in state"),
        // Another browser's verifier does not match this state (login CSRF / code injection).
        (format!("code={GOOD_CODE}&state={}", q(&state)), Some(other.cookie.as_str()), "Invalid sign-in state"),
        (format!("code={GOOD_CODE}&state={}", q(&state)), None, "Sign-in was not started in this browser"),
    ];
    for (query, cookie, error) in cases {
        let reply = callback(&app, &query, cookie, false).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}: {}", reply.text);
        assert!(reply.error().starts_with(error), "{query}: {}", reply.text);
        assert!(reply.session_cookie().is_none());
    }
    assert!(idp.forms().is_empty(), "the token endpoint was never called");
    assert!(requests(&app).await.is_empty());

    // The user refusing consent comes back with `error`.
    let refused = callback(&app, "error=access_denied&state=x", Some(&started.cookie), false).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.error(), "Google sign-in was not completed: access_denied");

    // The untouched state with its own cookie still works.
    let ok = callback(&app, &format!("code={GOOD_CODE}&state={}", q(&state)), Some(&started.cookie), false).await;
    assert_eq!(ok.status, StatusCode::FOUND, "{}", ok.text);
}

#[tokio::test]
async fn google_unverified_email_is_refused() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;
    idp.set_profile(profile("mallory@example.com", false));
    let reply = sign_in(&app, GOOD_CODE).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text);
    assert_eq!(reply.error(), "Google account has no verified e-mail address");
    assert!(reply.session_cookie().is_none());

    idp.set_profile(json!({"sub": "1", "email_verified": true}));
    let no_email = sign_in(&app, GOOD_CODE).await;
    assert_eq!(no_email.status, StatusCode::FORBIDDEN, "{}", no_email.text);
    assert!(requests(&app).await.is_empty());

    // The string form Google sometimes sends counts as verified.
    idp.set_profile(json!({"email": "str@example.com", "email_verified": "true"}));
    assert_eq!(sign_in(&app, GOOD_CODE).await.header("location"), Some("/login?pending=1"));
    assert_eq!(idp.userinfo_calls(), 3);
}

#[tokio::test]
async fn google_token_endpoint_errors_give_no_session() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &[]).await;

    let bad_code = sign_in(&app, "forged-code").await;
    assert_eq!(bad_code.status, StatusCode::BAD_REQUEST, "{}", bad_code.text);
    assert!(bad_code.error().contains("invalid_grant"), "{}", bad_code.text);
    assert!(bad_code.session_cookie().is_none());

    idp.override_token(401, json!({"error": "invalid_client"}));
    let bad_client = sign_in(&app, GOOD_CODE).await;
    assert_eq!(bad_client.status, StatusCode::BAD_GATEWAY, "{}", bad_client.text);
    assert_eq!(bad_client.error(), "Google token exchange failed: invalid_client");

    idp.override_token(500, json!("boom"));
    let down = sign_in(&app, GOOD_CODE).await;
    assert_eq!(down.status, StatusCode::BAD_GATEWAY, "{}", down.text);
    assert_eq!(down.error(), "Google token endpoint answered 500 without an access token");

    assert_eq!(idp.userinfo_calls(), 0, "no user-info call without a token");
    assert!(requests(&app).await.is_empty());

    // An unreachable token endpoint (port 1 is closed).
    let unreachable = app_with(&idp, &["--google-token-url", "http://127.0.0.1:1/token"]).await;
    let reply = sign_in(&unreachable, GOOD_CODE).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text);
    assert!(reply.error().starts_with("Google token endpoint unreachable"), "{}", reply.text);
    assert!(reply.session_cookie().is_none());
}

#[tokio::test]
async fn google_not_configured_is_404() {
    let app = spawn_app_with(&[]).await;
    for path in ["/api/auth/google", "/api/auth/google?code=x&state=y"] {
        let reply = app.get(path, &Auth::None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.body, json!({"error": "Google sign-in is not configured"}));
    }
    // The browser-side id alone does not enable it.
    let public_only = spawn_app_with(&["--next-public-google-client-id", CLIENT_ID]).await;
    assert_eq!(public_only.get("/api/auth/google", &Auth::None).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn google_config_is_checked_at_start() {
    use opsdeck::config::Settings;
    let check = |args: &[&str]| Settings::from_args(args.iter().copied()).unwrap().validate().map(|c| c.google);
    let err = check(&["--google-client-id", "id"]).err().unwrap();
    assert_eq!(err, "GOOGLE_CLIENT_SECRET: required when GOOGLE_CLIENT_ID is set");
    assert!(check(&["--google-client-secret", "s"]).err().unwrap().starts_with("GOOGLE_CLIENT_ID: required"));
    let err = check(&["--google-client-id", "id", "--google-client-secret", "s", "--google-token-url", "nope"]);
    assert_eq!(err.err().unwrap(), "SVC_GOOGLE_TOKEN_URL: 'nope' is not an absolute http(s) URL");
    // NEXT_PUBLIC_GOOGLE_CLIENT_ID serves as the client id when GOOGLE_CLIENT_ID is unset.
    let cfg = check(&["--next-public-google-client-id", "public", "--google-client-secret", "s"]).unwrap().unwrap();
    assert_eq!(cfg.client_id, "public");
    assert_eq!(cfg.token_url, "https://oauth2.googleapis.com/token");
    assert_eq!(cfg.userinfo_url, "https://openidconnect.googleapis.com/v1/userinfo");
    assert_eq!(cfg.auth_url, "https://accounts.google.com/o/oauth2/v2/auth");
    assert!(check(&[]).unwrap().is_none());
}

#[tokio::test]
async fn google_redirect_uses_the_public_client_id_and_the_docs_list_the_route() {
    let idp = Idp::start().await;
    let app = app_with(&idp, &["--google-client-id", "", "--next-public-google-client-id", "browser-id"]).await;
    assert_eq!(begin(&app).await.params["client_id"], "browser-id");
    let both = app_with(&idp, &["--next-public-google-client-id", "browser-id"]).await;
    assert_eq!(begin(&both).await.params["client_id"], CLIENT_ID, "GOOGLE_CLIENT_ID wins");

    let docs = app.get("/api/docs", &Auth::None).await;
    let op = &docs.body["paths"]["/api/auth/google"]["get"];
    for code in ["302", "400", "403", "404", "502"] {
        assert!(op["responses"][code].is_object(), "{code} not documented: {op}");
    }
    assert_eq!(op["tags"], json!(["auth"]));
}
