//! `/api/auth/*`: login, logout, me, user management and access requests.

use std::net::IpAddr;

use salvo::http::cookie::{Cookie, SameSite as CookieSameSite, time::Duration as CookieDuration};
use salvo::prelude::*;
use salvo_oapi::ToSchema;
use salvo_oapi::endpoint;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    AccessRequest, NewUser, Role, SESSION_TTL_SECS, SessionRecord, User, UserRecord, random_hex, store, token_hash,
    validate_display_name, validate_email, validate_password, validate_username,
};
use crate::activity::{self, NewActivity};
use crate::app::AppState;
use crate::audit::{self, Entry};
use crate::config::SameSite;
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::auth::SESSION_COOKIE;
use crate::http::rate_limit::unix_now;
use crate::http::{IdBody, Success, delete_by_id};
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::store::now_secs;

/// Failed logins per client IP and minute before further attempts get 429.
const LOGIN_FAILURES_PER_MINUTE: u32 = 5;

#[derive(Serialize, ToSchema)]
pub struct UserEnvelope {
    pub user: User,
}

#[derive(Serialize, ToSchema)]
pub struct UserList {
    pub users: Vec<User>,
}

#[derive(Serialize, ToSchema)]
pub struct OkBody {
    pub ok: bool,
}

#[derive(Deserialize, ToSchema)]
pub struct LoginBody {
    pub username: String,
    pub password: String,
}

fn session_cookie(value: String, max_age: i64, secure: bool, same_site: SameSite) -> Cookie<'static> {
    Cookie::build((SESSION_COOKIE, value))
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(match same_site {
            SameSite::Strict => CookieSameSite::Strict,
            SameSite::Lax => CookieSameSite::Lax,
            SameSite::None => CookieSameSite::None,
        })
        .max_age(CookieDuration::seconds(max_age))
        .build()
}

/// Sign in with username and password; sets the `svc-session` cookie.
#[endpoint(tags("auth"), request_body = LoginBody)]
pub async fn login(req: &mut Request, depot: &mut Depot, res: &mut Response) -> AppResult<Json<UserEnvelope>> {
    let state = app(depot)?;
    let ip = client_ip(depot);
    let guard_key = format!("login:{ip}");
    if state.login_failures.count(&guard_key, unix_now()) >= LOGIN_FAILURES_PER_MINUTE {
        let retry_after = state.login_failures.retry_after(&guard_key, unix_now());
        return Err(AppError::TooManyRequests { message: "Too many login attempts", retry_after });
    }
    let body: LoginBody = json_body(req).await?;
    let username = body.username.trim().to_string();
    let lookup = username.clone();
    let user = state.store.read(move |tx| store::find_by_name(tx, &lookup)).await?;
    let hash = user.as_ref().and_then(|u| u.password_hash.clone());
    let verified = state.passwords.verify(body.password, hash).await;

    let Some(user) = user.filter(|_| verified) else {
        state.login_failures.hit(&guard_key, u32::MAX, std::time::Duration::from_secs(60), unix_now());
        let actor: String = username.chars().take(64).collect();
        state
            .write(move |tx| {
                let mut entry = Entry::system("login", json!({"success": false, "username": actor}));
                entry.actor = actor.clone();
                entry.ip_address = Some(ip.to_string());
                audit::record(tx, entry)?;
                let data = json!({"username": actor, "ip_address": ip.to_string()});
                crate::webhooks::fire(tx, "security.login_failed", &data)?;
                Ok::<_, AppError>(())
            })
            .await?;
        return Err(AppError::InvalidCredentials);
    };

    let user = start_session(&state, user.id, ip, json!({"success": true}), res).await?;
    Ok(Json(UserEnvelope { user: User::from(&user) }))
}

/// Signs a user in: purges expired sessions, stores a new one, records `last_login_at`, the `login`
/// audit row (with `detail`), the `security.login_success` webhook and the `user_login` activity, and
/// sets the `svc-session` cookie. Shared by password and Google sign-in.
pub async fn start_session(
    state: &AppState,
    user_id: u64,
    ip: IpAddr,
    detail: Value,
    res: &mut Response,
) -> AppResult<UserRecord> {
    let token = random_hex(32)?;
    let hash = token_hash(&token);
    let now = now_secs();
    let user = state
        .write(move |tx| {
            // Re-read inside the transaction: a user deleted meanwhile gets no session.
            let mut user = store::get_user_w(tx, user_id)?.ok_or(AppError::InvalidCredentials)?;
            store::purge_expired_sessions(tx, now)?;
            let session = SessionRecord { user_id: user.id, created_at: now, expires_at: now + SESSION_TTL_SECS };
            store::create_session(tx, &hash, &session)?;
            user.last_login_at = Some(now);
            store::save_user(tx, &user)?;
            audit::record(
                tx,
                Entry {
                    action: "login",
                    actor: user.username.clone(),
                    actor_id: Some(user.id),
                    detail,
                    ip_address: Some(ip.to_string()),
                },
            )?;
            let data = json!({"user_id": user.id, "username": user.username, "ip_address": ip.to_string()});
            crate::webhooks::fire(tx, "security.login_success", &data)?;
            activity::record(
                tx,
                NewActivity {
                    kind: "user_login",
                    entity_type: "user",
                    entity_id: Some(user.id),
                    actor: &user.username,
                    description: format!("{} signed in", user.username),
                    data: json!({}),
                },
            )?;
            Ok::<_, AppError>(user)
        })
        .await?;
    let cfg = &state.config;
    res.add_cookie(session_cookie(token, SESSION_TTL_SECS, cfg.cookie_secure, cfg.cookie_samesite));
    Ok(user)
}

/// Sign out: destroys the session and clears the cookie.
#[endpoint(tags("auth"))]
pub async fn logout(depot: &mut Depot, res: &mut Response) -> AppResult<Json<OkBody>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    state
        .write(move |tx| {
            if let Some(hash) = &who.session_hash {
                store::delete_session(tx, hash)?;
            }
            audit::record(tx, Entry::by(&who, ip, "logout", json!({})))?;
            Ok::<_, AppError>(())
        })
        .await?;
    let cfg = &state.config;
    res.add_cookie(session_cookie(String::new(), 0, cfg.cookie_secure, cfg.cookie_samesite));
    Ok(Json(OkBody { ok: true }))
}

/// The signed-in user (the API key shows as the `api` admin).
#[endpoint(tags("auth"))]
pub async fn me(depot: &mut Depot) -> AppResult<Json<UserEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    if who.via_api_key() {
        return Ok(Json(UserEnvelope { user: User::api_principal() }));
    }
    let user = state.store.read(move |tx| store::get_user(tx, who.id)).await?.ok_or(AppError::Unauthenticated)?;
    Ok(Json(UserEnvelope { user: User::from(&user) }))
}

/// All users. Admin.
#[endpoint(tags("users"))]
pub async fn list_users(depot: &mut Depot) -> AppResult<Json<UserList>> {
    let state = app(depot)?;
    let users = state.store.read(store::list_users).await?;
    Ok(Json(UserList { users: users.iter().map(User::from).collect() }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateUser {
    pub username: String,
    pub password: String,
    pub display_name: Option<String>,
    pub role: Option<String>,
    pub email: Option<String>,
}

fn collect(checks: impl IntoIterator<Item = Result<(), String>>) -> AppResult<()> {
    let details: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    if details.is_empty() { Ok(()) } else { Err(AppError::Validation(details)) }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Create a local user (password at least 12 characters). Admin.
#[endpoint(tags("users"), request_body = CreateUser, responses((status_code = 201, description = "Created", body = UserEnvelope)))]
pub async fn create_user(req: &mut Request, depot: &mut Depot, res: &mut Response) -> AppResult<Json<UserEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: CreateUser = json_body(req).await?;
    let username = body.username.trim().to_string();
    let display_name = non_empty(body.display_name).unwrap_or_else(|| username.clone());
    let email = non_empty(body.email);
    let role = match body.role.as_deref() {
        None => Ok(Role::Viewer),
        Some(r) => Role::parse(r).map_err(|_| "role: must be one of viewer, operator, admin".to_string()),
    };
    collect([
        validate_username(&username),
        validate_password(&body.password),
        validate_display_name(&display_name),
        email.as_deref().map_or(Ok(()), validate_email),
        role.clone().map(|_| ()),
    ])?;
    let role = role.map_err(|d| AppError::Validation(vec![d]))?;
    let password_hash = state.passwords.hash(body.password).await?;
    let new = NewUser {
        username,
        display_name,
        role,
        provider: "local".into(),
        email,
        avatar_url: None,
        password_hash: Some(password_hash),
    };
    let user = state
        .write(move |tx| {
            if store::name_taken(tx, &new.username)? {
                return Err(AppError::Conflict("Username already exists".into()));
            }
            let user = store::insert_user(tx, new)?;
            let detail = json!({"id": user.id, "username": user.username, "role": user.role});
            audit::record(tx, Entry::by(&who, ip, "user_created", detail))?;
            Ok(user)
        })
        .await?;
    res.status_code(StatusCode::CREATED);
    Ok(Json(UserEnvelope { user: User::from(&user) }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateUser {
    pub id: u64,
    pub display_name: Option<String>,
    pub role: Option<String>,
    pub password: Option<String>,
    /// An empty string clears the e-mail.
    pub email: Option<String>,
}

/// Change a user's display name, role, password or e-mail. Admin.
#[endpoint(tags("users"), request_body = UpdateUser)]
pub async fn update_user(req: &mut Request, depot: &mut Depot) -> AppResult<Json<UserEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: UpdateUser = json_body(req).await?;
    if body.display_name.is_none() && body.role.is_none() && body.password.is_none() && body.email.is_none() {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    let role = body.role.as_deref().map(Role::parse).transpose()?;
    let display_name = body.display_name.map(|s| s.trim().to_string());
    let email = body.email.map(|s| s.trim().to_string());
    collect([
        display_name.as_deref().map_or(Ok(()), |d| {
            if d.is_empty() { Err("display_name: must not be empty".into()) } else { validate_display_name(d) }
        }),
        email.as_deref().filter(|e| !e.is_empty()).map_or(Ok(()), validate_email),
        body.password.as_deref().map_or(Ok(()), validate_password),
    ])?;
    let password_hash = match body.password {
        Some(p) => Some(state.passwords.hash(p).await?),
        None => None,
    };
    let id = body.id;
    let user = state
        .write(move |tx| {
            let mut user = store::get_user_w(tx, id)?.ok_or_else(|| AppError::NotFound("User not found".into()))?;
            let mut changed = Vec::new();
            if let Some(role) = role.filter(|r| *r != user.role) {
                if who.id == user.id {
                    return Err(AppError::BadRequest("Cannot change your own role".into()));
                }
                if user.role == Role::Admin && store::count_admins(tx)? <= 1 {
                    return Err(AppError::BadRequest("Cannot remove the last admin".into()));
                }
                changed.push(json!({"field": "role", "before": user.role, "after": role}));
                let data = json!({"user_id": user.id, "username": user.username, "previous_role": user.role,
                                  "role": role, "changed_by": who.username});
                crate::webhooks::fire(tx, "security.role_changed", &data)?;
                user.role = role;
            }
            if let Some(name) = display_name {
                changed.push(json!({"field": "display_name", "before": user.display_name, "after": name}));
                user.display_name = name;
            }
            if let Some(email) = email {
                let email = (!email.is_empty()).then_some(email);
                changed.push(json!({"field": "email", "before": user.email, "after": email}));
                user.email = email;
            }
            if let Some(hash) = password_hash {
                user.password_hash = Some(hash);
                changed.push(json!({"field": "password"}));
                // A new password signs the user out everywhere but the caller's own session.
                store::delete_sessions_of(tx, user.id, who.session_hash.as_deref())?;
            }
            store::save_user(tx, &user)?;
            let detail = json!({"id": user.id, "username": user.username, "changes": changed});
            audit::record(tx, Entry::by(&who, ip, "user_updated", detail))?;
            Ok(user)
        })
        .await?;
    Ok(Json(UserEnvelope { user: User::from(&user) }))
}

/// Delete a user; their sessions end at once. Admin.
#[endpoint(tags("users"), request_body = IdBody)]
pub async fn delete_user(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    delete_by_id(req, depot, |tx, id, who, ip| {
        if id == who.id {
            return Err(AppError::BadRequest("Cannot delete your own account".into()));
        }
        let user = store::get_user_w(tx, id)?.ok_or_else(|| AppError::NotFound("User not found".into()))?;
        if user.role == Role::Admin && store::count_admins(tx)? <= 1 {
            return Err(AppError::BadRequest("Cannot remove the last admin".into()));
        }
        store::delete_user(tx, &user)?;
        audit::record(tx, Entry::by(who, ip, "user_deleted", json!({"id": user.id, "username": user.username})))?;
        Ok(())
    })
    .await
}

#[derive(Serialize, ToSchema)]
pub struct AccessRequestList {
    pub requests: Vec<AccessRequest>,
}

/// Access requests from external sign-in, newest first. Admin.
#[endpoint(tags("users"))]
pub async fn list_access_requests(depot: &mut Depot) -> AppResult<Json<AccessRequestList>> {
    let state = app(depot)?;
    let requests = state.store.read(store::list_access_requests).await?;
    Ok(Json(AccessRequestList { requests }))
}

#[derive(Deserialize, ToSchema)]
pub struct AccessDecision {
    pub id: u64,
    /// `approve` or `reject`.
    pub action: String,
    /// Role for an approved user (default viewer).
    pub role: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct AccessDecisionResult {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<User>,
}

/// Approve (with a role) or reject an access request. Admin.
#[endpoint(tags("users"), request_body = AccessDecision)]
pub async fn decide_access_request(req: &mut Request, depot: &mut Depot) -> AppResult<Json<AccessDecisionResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: AccessDecision = json_body(req).await?;
    let approve = match body.action.as_str() {
        "approve" => true,
        "reject" => false,
        _ => return Err(AppError::validation("action", "must be approve or reject")),
    };
    let role = body.role.as_deref().map(Role::parse).transpose()?.unwrap_or(Role::Viewer);
    let id = body.id;
    let user = state
        .write(move |tx| {
            let mut request = store::get_access_request(tx, id)?
                .ok_or_else(|| AppError::NotFound("Access request not found".into()))?;
            if !approve {
                request.status = "rejected".into();
                store::save_access_request(tx, &request)?;
                audit::record(
                    tx,
                    Entry::by(&who, ip, "access_request_rejected", json!({"id": id, "email": request.email})),
                )?;
                return Ok(None);
            }
            let user = match store::find_by_email(tx, &request.email)? {
                Some(mut user) => {
                    user.role = role;
                    store::save_user(tx, &user)?;
                    user
                }
                None => {
                    if store::name_taken(tx, &request.username)? {
                        return Err(AppError::Conflict("Username already exists".into()));
                    }
                    store::insert_user(
                        tx,
                        NewUser {
                            username: request.username.clone(),
                            display_name: request.display_name.clone().unwrap_or_else(|| request.username.clone()),
                            role,
                            provider: "google".into(),
                            email: Some(request.email.clone()),
                            avatar_url: request.avatar_url.clone(),
                            password_hash: None,
                        },
                    )?
                }
            };
            request.status = "approved".into();
            store::save_access_request(tx, &request)?;
            let detail = json!({"id": id, "email": request.email, "user_id": user.id, "role": role});
            audit::record(tx, Entry::by(&who, ip, "access_request_approved", detail))?;
            Ok(Some(user))
        })
        .await?;
    Ok(Json(AccessDecisionResult { ok: true, user: user.as_ref().map(User::from) }))
}

pub fn router() -> Router {
    Router::with_path("auth")
        .push(Router::with_path("login").post(login))
        .push(Router::with_path("google").get(super::google::google))
        .push(Router::with_path("logout").hoop(RequireRole(Role::Viewer)).post(logout))
        .push(Router::with_path("me").hoop(RequireRole(Role::Viewer)).get(me))
        .push(
            Router::with_path("users")
                .hoop(RequireRole(Role::Admin))
                .get(list_users)
                .post(create_user)
                .put(update_user)
                .delete(delete_user),
        )
        .push(
            Router::with_path("access-requests")
                .hoop(RequireRole(Role::Admin))
                .get(list_access_requests)
                .post(decide_access_request),
        )
}
