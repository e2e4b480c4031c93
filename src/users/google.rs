//! Google sign-in: the OAuth 2.0 authorization-code flow with PKCE (S256) and a signed `state`,
//! hand-written over the shared reqwest 0.13 client (the oauth2 crate would bring a second reqwest).
//!
//! 1. `GET /api/auth/google` (no `code`) → 302 to the consent page. The PKCE verifier goes into the
//!    short-lived `svc-google-flow` cookie (HttpOnly, SameSite=Lax so the browser sends it on the
//!    provider's top-level redirect back, Path `/api/auth/google`, 10 min). The `state` is
//!    `b64(nonce ‖ expiry) . b64(HMAC-SHA256(key, nonce ‖ expiry ‖ code_challenge))` with a random
//!    per-process key: it expires after 10 minutes and only verifies together with the verifier cookie
//!    of the browser that started the flow (login-CSRF and code-injection protection, no server storage).
//! 2. The callback (`code&state`) verifies both, exchanges the code at the token URL, reads the
//!    user-info URL with the access token and requires a verified e-mail. A user holding that e-mail
//!    is signed in (302 `/`); anyone else gets a pending access request (302 `/login?pending=1`, or
//!    403 `Access request pending approval` when the callback asks for `Accept: application/json`).

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use salvo::http::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use salvo::http::header;
use salvo::http::uri::Scheme;
use salvo::prelude::*;
use salvo_oapi::endpoint;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::api::start_session;
use super::{NewAccessRequest, store, validate_display_name, validate_email};
use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::config::GoogleConfig;
use crate::error::{AppError, AppResult};
use crate::http::{app, client_ip};
use crate::store::{Tx, now_secs};

/// Cookie holding the PKCE verifier between the redirect and the callback.
pub const FLOW_COOKIE: &str = "svc-google-flow";
const FLOW_PATH: &str = "/api/auth/google";
/// How long a started sign-in stays valid.
pub const STATE_TTL_SECS: i64 = 600;
const SCOPE: &str = "openid email profile";
/// Largest token or user-info answer read.
const MAX_PROVIDER_BODY: usize = 64 * 1024;

/// The per-process key that signs `state` values (a restart only invalidates sign-ins in progress).
pub struct StateKey([u8; 32]);

impl StateKey {
    pub fn random() -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("random source: {e}"))?;
        Ok(Self(key))
    }

    fn mac(&self, payload: &[u8], challenge: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(b"opsdeck-google-state-v1\0");
        mac.update(payload);
        mac.update(challenge.as_bytes());
        mac
    }

    /// A `state` for this nonce, expiry (Unix seconds) and PKCE challenge.
    pub fn sign(&self, nonce: &[u8; 16], expires_at: i64, challenge: &str) -> String {
        let mut payload = nonce.to_vec();
        payload.extend_from_slice(&expires_at.to_be_bytes());
        let tag = self.mac(&payload, challenge).finalize().into_bytes();
        format!("{}.{}", B64.encode(&payload), B64.encode(tag))
    }

    /// Checks the signature (constant time) against the challenge of this browser's verifier, then the expiry.
    pub fn verify(&self, state: &str, challenge: &str, now: i64) -> AppResult<()> {
        let invalid = || AppError::BadRequest("Invalid sign-in state; sign in again".into());
        let (payload, tag) = state.split_once('.').ok_or_else(invalid)?;
        let payload = B64.decode(payload).map_err(|_| invalid())?;
        let tag = B64.decode(tag).map_err(|_| invalid())?;
        if payload.len() != 24 {
            return Err(invalid());
        }
        self.mac(&payload, challenge).verify_slice(&tag).map_err(|_| invalid())?;
        let expiry: [u8; 8] = payload[16..].try_into().map_err(|_| invalid())?;
        if i64::from_be_bytes(expiry) <= now {
            return Err(AppError::BadRequest("Sign-in state expired; sign in again".into()));
        }
        Ok(())
    }
}

/// PKCE S256: base64url(SHA-256(verifier)) without padding.
pub fn pkce_challenge(verifier: &str) -> String {
    B64.encode(Sha256::digest(verifier.as_bytes()))
}

/// A username from an e-mail's local part: characters outside the username rules become `_`,
/// lower-cased, at most 64 characters; `user` when nothing is left.
pub fn username_from_email(email: &str) -> String {
    let local = email.rsplit_once('@').map_or(email, |(l, _)| l);
    let name: String = local
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c.to_ascii_lowercase() } else { '_' })
        .take(64)
        .collect();
    if name.chars().all(|c| c == '_') { "user".into() } else { name }
}

/// `base`, or `base-2`, `base-3`… when a user already has the name.
fn free_username(tx: &redb::WriteTransaction, base: &str) -> AppResult<String> {
    if !store::name_taken(tx, base)? {
        return Ok(base.to_string());
    }
    for n in 2..1000u32 {
        let suffix = format!("-{n}");
        let stem: String = base.chars().take(64 - suffix.len()).collect();
        let candidate = format!("{stem}{suffix}");
        if !store::name_taken(tx, &candidate)? {
            return Ok(candidate);
        }
    }
    Err(AppError::Conflict("Username already exists".into()))
}

fn valid_host(host: &str) -> bool {
    !host.is_empty() && host.len() <= 255 && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
}

/// The configured redirect URI, else `http(s)://<Host>/api/auth/google`: https when the server itself
/// speaks TLS or a trusted proxy says `X-Forwarded-Proto: https`.
fn redirect_uri(cfg: &GoogleConfig, req: &Request, state: &AppState) -> AppResult<String> {
    if let Some(url) = &cfg.redirect_url {
        return Ok(url.clone());
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| valid_host(h))
        .ok_or_else(|| AppError::BadRequest("Missing or invalid Host header".into()))?;
    let via_trusted_proxy = req.remote_addr().ip().is_some_and(|ip| state.config.trusted_proxies.contains(&ip));
    let forwarded_https = via_trusted_proxy
        && req
            .headers()
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    let scheme = if forwarded_https || *req.scheme() == Scheme::HTTPS { "https" } else { "http" };
    Ok(format!("{scheme}://{host}{FLOW_PATH}"))
}

fn flow_cookie(value: String, max_age: i64, secure: bool) -> Cookie<'static> {
    Cookie::build((FLOW_COOKIE, value))
        .path(FLOW_PATH)
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(max_age))
        .build()
}

fn redirect(res: &mut Response, location: &str) -> AppResult<()> {
    res.render(Redirect::with_status_code(StatusCode::FOUND, location).map_err(AppError::internal)?);
    Ok(())
}

fn random_bytes<const N: usize>() -> AppResult<[u8; N]> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|e| AppError::Internal(format!("random source: {e}")))?;
    Ok(buf)
}

/// Google sign-in. Without `code`: 302 to Google's consent page. With `code&state` (Google's callback):
/// 302 to `/` with the session cookie for a user holding the verified e-mail, else a pending access
/// request and 302 to `/login?pending=1` (403 JSON with `Accept: application/json`).
#[endpoint(
    tags("auth"),
    parameters(
        ("code" = Option<String>, Query, description = "authorization code (Google's callback)"),
        ("state" = Option<String>, Query, description = "the signed state of the redirect (Google's callback)"),
        ("error" = Option<String>, Query, description = "set by Google when the user refused"),
    ),
    responses(
        (status_code = 302, description = "To Google's consent page; after the callback to `/` (signed in, `svc-session` cookie set) or to `/login?pending=1` (access request pending)"),
        (status_code = 400, description = "Invalid or expired state, the browser lacks the flow cookie, the code was refused (`invalid_grant`) or the user refused consent", body = crate::error::ErrorBody),
        (status_code = 403, description = "E-mail not verified, or (with `Accept: application/json`) `Access request pending approval`", body = crate::error::ErrorBody),
        (status_code = 404, description = "Google sign-in is not configured", body = crate::error::ErrorBody),
        (status_code = 502, description = "Google's token or user-info endpoint failed", body = crate::error::ErrorBody),
    )
)]
pub async fn google(req: &mut Request, depot: &mut Depot, res: &mut Response) -> AppResult<()> {
    let state = app(depot)?;
    let cfg =
        state.config.google.clone().ok_or_else(|| AppError::NotFound("Google sign-in is not configured".into()))?;
    let query = |name: &str| req.queries().get(name).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let (code, given_state, refused) = (query("code"), query("state"), query("error"));
    if let Some(error) = refused {
        res.add_cookie(flow_cookie(String::new(), 0, state.config.cookie_secure));
        let error: String = error.chars().filter(|c| c.is_ascii_graphic()).take(64).collect();
        return Err(AppError::BadRequest(format!("Google sign-in was not completed: {error}")));
    }
    let Some(code) = code else { return begin(&state, &cfg, req, res) };

    // The verifier cookie is single-use: cleared whatever the outcome.
    let verifier = req.cookie(FLOW_COOKIE).map(|c| c.value().to_string()).filter(|v| !v.is_empty());
    res.add_cookie(flow_cookie(String::new(), 0, state.config.cookie_secure));
    let given_state = given_state.ok_or_else(|| AppError::BadRequest("Missing sign-in state".into()))?;
    let verifier = verifier.ok_or_else(|| {
        AppError::BadRequest("Sign-in was not started in this browser (no flow cookie); sign in again".into())
    })?;
    state.google_key.verify(&given_state, &pkce_challenge(&verifier), now_secs())?;

    let redirect_to = redirect_uri(&cfg, req, &state)?;
    let access_token = exchange_code(&state.http, &cfg, &code, &redirect_to, &verifier).await?;
    let profile = fetch_profile(&state.http, &cfg, &access_token).await?;
    let ip = client_ip(depot);
    let wants_json =
        req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("application/json"));

    match state.write(move |tx| admit(tx, profile, ip)).await? {
        Admission::Known(user_id) => {
            start_session(&state, user_id, ip, json!({"success": true, "provider": "google"}), res).await?;
            redirect(res, "/")
        }
        Admission::Pending if wants_json => Err(AppError::Forbidden("Access request pending approval".into())),
        Admission::Pending => redirect(res, "/login?pending=1"),
    }
}

enum Admission {
    /// A user holds the e-mail.
    Known(u64),
    /// The access request is pending.
    Pending,
}

/// The user holding the verified e-mail, else a pending access request (audited as `access_requested`).
fn admit(tx: &mut Tx, profile: Profile, ip: IpAddr) -> AppResult<Admission> {
    if let Some(user) = store::find_by_email(tx, &profile.email)? {
        return Ok(Admission::Known(user.id));
    }
    // Used for a new request only: an existing one keeps its username.
    let username = free_username(tx, &username_from_email(&profile.email))?;
    let new = NewAccessRequest {
        username,
        email: profile.email,
        reason: "Signed in with Google".into(),
        display_name: profile.name,
        avatar_url: profile.picture,
    };
    let request = store::upsert_access_request(tx, new)?;
    let detail = json!({"id": request.id, "email": request.email, "username": request.username, "provider": "google"});
    let mut entry = Entry::system("access_requested", detail);
    entry.actor = request.username;
    entry.ip_address = Some(ip.to_string());
    audit::record(tx, entry)?;
    Ok(Admission::Pending)
}

/// Step 1: the consent-page redirect with a fresh verifier cookie and signed state.
fn begin(state: &AppState, cfg: &GoogleConfig, req: &Request, res: &mut Response) -> AppResult<()> {
    let verifier = B64.encode(random_bytes::<32>()?);
    let challenge = pkce_challenge(&verifier);
    let signed = state.google_key.sign(&random_bytes::<16>()?, now_secs() + STATE_TTL_SECS, &challenge);
    let redirect_to = redirect_uri(cfg, req, state)?;
    let url = reqwest::Url::parse_with_params(
        &cfg.auth_url,
        [
            ("client_id", cfg.client_id.as_str()),
            ("redirect_uri", redirect_to.as_str()),
            ("response_type", "code"),
            ("scope", SCOPE),
            ("state", signed.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ],
    )
    .map_err(AppError::internal)?;
    res.add_cookie(flow_cookie(verifier, STATE_TTL_SECS, state.config.cookie_secure));
    redirect(res, url.as_str())
}

#[derive(Deserialize)]
struct TokenReply {
    access_token: Option<String>,
    error: Option<String>,
}

async fn read_body(res: reqwest::Response, what: &str) -> AppResult<(reqwest::StatusCode, Vec<u8>)> {
    let status = res.status();
    let body = res.bytes().await.map_err(|e| AppError::Upstream(format!("Google {what} endpoint: {e}")))?;
    if body.len() > MAX_PROVIDER_BODY {
        return Err(AppError::Upstream(format!("Google {what} endpoint answered too much data")));
    }
    Ok((status, body.to_vec()))
}

/// Step 2: the code for an access token (form POST with the client credentials and the PKCE verifier).
/// A refused code (`invalid_grant`: expired, used or forged) is 400; any other failure 502.
async fn exchange_code(
    http: &reqwest::Client,
    cfg: &GoogleConfig,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> AppResult<String> {
    let form = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", cfg.client_id.as_str()),
            ("client_secret", cfg.client_secret.as_str()),
            ("code_verifier", verifier),
        ])
        .finish();
    let res = http
        .post(&cfg.token_url)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(form)
        .send()
        .await
        .map_err(|e| AppError::Upstream(format!("Google token endpoint unreachable: {e}")))?;
    let (status, body) = read_body(res, "token").await?;
    let reply: Option<TokenReply> = serde_json::from_slice(&body).ok();
    match reply {
        Some(TokenReply { access_token: Some(token), .. }) if status.is_success() && !token.is_empty() => Ok(token),
        Some(TokenReply { error: Some(e), .. }) if e == "invalid_grant" => Err(AppError::BadRequest(
            "Google sign-in failed: the authorization code was refused (invalid_grant); sign in again".into(),
        )),
        Some(TokenReply { error: Some(e), .. }) => {
            let e: String = e.chars().filter(|c| c.is_ascii_graphic()).take(64).collect();
            Err(AppError::Upstream(format!("Google token exchange failed: {e}")))
        }
        _ => Err(AppError::Upstream(format!(
            "Google token endpoint answered {} without an access token",
            status.as_u16()
        ))),
    }
}

/// The verified identity from the user-info endpoint.
struct Profile {
    email: String,
    name: Option<String>,
    picture: Option<String>,
}

#[derive(Deserialize)]
struct UserInfo {
    email: Option<String>,
    /// A boolean; some Google endpoints send the string `"true"`.
    email_verified: Option<serde_json::Value>,
    name: Option<String>,
    picture: Option<String>,
}

/// Step 3: the user-info endpoint with the access token; only a verified, well-formed e-mail passes.
async fn fetch_profile(http: &reqwest::Client, cfg: &GoogleConfig, access_token: &str) -> AppResult<Profile> {
    let res = http
        .get(&cfg.userinfo_url)
        .bearer_auth(access_token)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| AppError::Upstream(format!("Google user-info endpoint unreachable: {e}")))?;
    let (status, body) = read_body(res, "user-info").await?;
    if !status.is_success() {
        return Err(AppError::Upstream(format!("Google user-info endpoint answered {}", status.as_u16())));
    }
    let info: UserInfo = serde_json::from_slice(&body)
        .map_err(|_| AppError::Upstream("Google user-info endpoint answered an unreadable body".into()))?;
    let verified = matches!(&info.email_verified, Some(serde_json::Value::Bool(true)))
        || matches!(&info.email_verified, Some(serde_json::Value::String(s)) if s == "true");
    let email = info.email.map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
    let Some(email) = email.filter(|_| verified) else {
        return Err(AppError::Forbidden("Google account has no verified e-mail address".into()));
    };
    validate_email(&email).map_err(|_| AppError::Upstream("Google returned an unusable e-mail address".into()))?;
    let name = info.name.map(|n| n.trim().chars().take(100).collect::<String>()).filter(|n| !n.is_empty());
    let name = name.filter(|n| validate_display_name(n).is_ok());
    let picture = info.picture.filter(|p| p.len() <= 2048 && (p.starts_with("https://") || p.starts_with("http://")));
    Ok(Profile { email, name, picture })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StateKey {
        StateKey([7u8; 32])
    }

    #[test]
    fn state_round_trip_and_expiry() {
        let k = key();
        let s = k.sign(&[1; 16], 1_000, "challenge");
        assert!(k.verify(&s, "challenge", 999).is_ok());
        let expired = k.verify(&s, "challenge", 1_000).unwrap_err();
        assert_eq!(expired.to_string(), "Sign-in state expired; sign in again");
    }

    #[test]
    fn state_is_bound_to_challenge_and_key() {
        let k = key();
        let s = k.sign(&[1; 16], 1_000, "challenge");
        assert!(k.verify(&s, "other", 0).is_err());
        assert!(StateKey([8u8; 32]).verify(&s, "challenge", 0).is_err());
        // A moved expiry breaks the signature.
        let (payload, tag) = s.split_once('.').unwrap();
        let mut bytes = B64.decode(payload).unwrap();
        bytes[23] ^= 1;
        assert!(k.verify(&format!("{}.{tag}", B64.encode(bytes)), "challenge", 0).is_err());
        for garbage in ["", ".", "abc", "a.b", "!!.!!", &s[..s.len() - 2]] {
            assert!(k.verify(garbage, "challenge", 0).is_err(), "{garbage}");
        }
    }

    #[test]
    fn pkce_matches_rfc7636_example() {
        // RFC 7636 appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn usernames_follow_the_rules() {
        assert_eq!(username_from_email("Jane.Doe+ops@example.com"), "jane.doe_ops");
        assert_eq!(username_from_email("josé@example.com"), "jos_");
        assert_eq!(username_from_email("+++@example.com"), "user");
        assert_eq!(username_from_email(&format!("{}@example.com", "a".repeat(80))).len(), 64);
        for email in ["Jane.Doe+ops@example.com", "josé@example.com", "+@x.io"] {
            assert!(super::super::validate_username(&username_from_email(email)).is_ok());
        }
    }

    #[test]
    fn hosts() {
        assert!(valid_host("127.0.0.1:3005"));
        assert!(valid_host("[::1]:80"));
        assert!(!valid_host("evil.com/x"));
        assert!(!valid_host("a b"));
        assert!(!valid_host(""));
    }
}
