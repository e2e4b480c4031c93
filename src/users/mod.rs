//! Users, roles, passwords, login sessions and access requests: the types and the rules.

pub mod api;
pub mod google;
pub mod store;

use argon2::{Algorithm, Argon2, Params, PasswordHasher, PasswordVerifier, Version};
use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::app::AppState;
use crate::error::{AppError, AppResult};
use crate::http::Principal;
use crate::store::{StoreError, now_secs};

pub const MIN_PASSWORD_LEN: usize = 12;
const MAX_PASSWORD_LEN: usize = 1024;
/// Session lifetime: 7 days.
pub const SESSION_TTL_SECS: i64 = 7 * 24 * 3600;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> AppResult<Self> {
        match s {
            "viewer" => Ok(Self::Viewer),
            "operator" => Ok(Self::Operator),
            "admin" => Ok(Self::Admin),
            _ => Err(AppError::validation("role", "must be one of viewer, operator, admin")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Operator => "operator",
            Self::Admin => "admin",
        }
    }
}

/// A user as stored. The password hash never leaves the server: the API shows [`User`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserRecord {
    pub id: u64,
    pub username: String,
    pub display_name: String,
    pub role: Role,
    pub provider: String,
    pub email: Option<String>,
    pub avatar_url: Option<String>,
    pub workspace_id: u64,
    pub created_at: i64,
    pub last_login_at: Option<i64>,
    /// Argon2id PHC string; `None` for users of an external provider.
    pub password_hash: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "User"))]
pub struct User {
    pub id: u64,
    pub username: String,
    pub display_name: String,
    pub role: Role,
    pub provider: String,
    pub email: Option<String>,
    pub avatar_url: Option<String>,
    pub workspace_id: u64,
    pub created_at: i64,
    pub last_login_at: Option<i64>,
}

impl From<&UserRecord> for User {
    fn from(r: &UserRecord) -> Self {
        Self {
            id: r.id,
            username: r.username.clone(),
            display_name: r.display_name.clone(),
            role: r.role,
            provider: r.provider.clone(),
            email: r.email.clone(),
            avatar_url: r.avatar_url.clone(),
            workspace_id: r.workspace_id,
            created_at: r.created_at,
            last_login_at: r.last_login_at,
        }
    }
}

impl User {
    /// The user shown for the API-key principal.
    pub fn api_principal() -> Self {
        Self {
            id: 0,
            username: "api".into(),
            display_name: "API key".into(),
            role: Role::Admin,
            provider: "api_key".into(),
            email: None,
            avatar_url: None,
            workspace_id: 1,
            created_at: 0,
            last_login_at: None,
        }
    }
}

/// A login session as stored (keyed by the token's SHA-256).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionRecord {
    pub user_id: u64,
    pub created_at: i64,
    pub expires_at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "AccessRequest"))]
pub struct AccessRequest {
    pub id: u64,
    pub username: String,
    pub email: String,
    pub reason: String,
    /// `pending`, `approved` or `rejected`.
    pub status: String,
    pub created_at: i64,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub avatar_url: Option<String>,
}

/// What an external sign-in asks access with.
pub struct NewAccessRequest {
    pub username: String,
    pub email: String,
    pub reason: String,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
}

/// Fields of a new user, validated.
pub struct NewUser {
    pub username: String,
    pub display_name: String,
    pub role: Role,
    pub provider: String,
    pub email: Option<String>,
    pub avatar_url: Option<String>,
    pub password_hash: Option<String>,
}

pub fn validate_username(username: &str) -> Result<(), String> {
    let ok_chars = username.chars().all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c));
    if username.is_empty() || username.len() > 64 || !ok_chars {
        return Err("username: must be 1-64 characters of letters, digits and . _ - @".into());
    }
    Ok(())
}

pub fn validate_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_LEN {
        return Err("password: must be at least 12 characters".into());
    }
    if n > MAX_PASSWORD_LEN {
        return Err("password: must be at most 1024 characters".into());
    }
    Ok(())
}

pub fn validate_email(email: &str) -> Result<(), String> {
    let parts: Vec<&str> = email.split('@').collect();
    if email.len() > 254 || parts.len() != 2 || parts[0].is_empty() || !parts[1].contains('.') {
        return Err("email: must be an e-mail address".into());
    }
    Ok(())
}

pub fn validate_display_name(name: &str) -> Result<(), String> {
    if name.chars().count() > 100 {
        return Err("display_name: must be at most 100 characters".into());
    }
    Ok(())
}

/// Argon2id hashing with configurable cost (tests use light parameters). Runs on blocking threads.
#[derive(Clone)]
pub struct Passwords {
    params: Params,
    /// Hash verified when the username is unknown, so both failures cost the same.
    dummy_hash: String,
}

impl Passwords {
    pub fn new(memory_kib: u32, iterations: u32) -> Result<Self, String> {
        let params = Params::new(memory_kib, iterations, 1, None).map_err(|e| format!("argon2 parameters: {e}"))?;
        // A well-formed PHC string with the same cost: verifying against it does the full Argon2 work
        // without hashing anything at start-up (which would delay the first answer).
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
        let dummy_hash = format!(
            "$argon2id$v=19$m={memory_kib},t={iterations},p=1${}${}",
            b64.encode(b"opsdeck-dummy-salt"),
            b64.encode([0x5a_u8; 32])
        );
        Ok(Self { params, dummy_hash })
    }

    fn argon(&self) -> Argon2<'static> {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, self.params.clone())
    }

    fn hash_now(&self, password: &str) -> Result<String, String> {
        self.argon()
            .hash_password(password.as_bytes())
            .map(|h| h.to_string())
            .map_err(|e| format!("password hashing failed: {e}"))
    }

    pub async fn hash(&self, password: String) -> AppResult<String> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.hash_now(&password))
            .await
            .map_err(AppError::internal)?
            .map_err(AppError::Internal)
    }

    /// Constant-time verification; `None` verifies against a dummy hash and fails.
    pub async fn verify(&self, password: String, hash: Option<String>) -> bool {
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let target = hash.as_deref().unwrap_or(&me.dummy_hash);
            let ok = me.argon().verify_password(password.as_bytes(), target).is_ok();
            ok && hash.is_some()
        })
        .await
        .unwrap_or(false)
    }
}

pub fn random_hex(bytes: usize) -> AppResult<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| AppError::Internal(format!("random source: {e}")))?;
    Ok(hex::encode(buf))
}

pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The principal of a session cookie, when the session exists, has not expired and its user exists.
pub async fn session_principal(state: &AppState, token: &str) -> AppResult<Option<Principal>> {
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let hash = token_hash(token);
    state
        .store
        .read_now(|tx| {
            let Some(session) = store::find_session(tx, &hash)? else { return Ok(None) };
            if session.expires_at <= now_secs() {
                return Ok(None);
            }
            Ok::<_, StoreError>(store::get_user(tx, session.user_id)?.map(|u| Principal {
                id: u.id,
                username: u.username,
                role: u.role,
                session_hash: Some(hash),
            }))
        })
        .map_err(AppError::from)
}

/// Creates the first admin when no user exists. Returns the generated password when none was configured.
pub async fn seed_first_admin(state: &AppState) -> AppResult<Option<String>> {
    // Checked before hashing so a restart does not spend an Argon2 hash (~50 ms) on a password it drops.
    if state.store.read(|tx| Ok::<_, AppError>(store::any_user_read(tx)?)).await? {
        return Ok(None);
    }
    let configured = state.config.admin_pass.clone();
    let generated = match &configured {
        Some(_) => None,
        None => Some(random_hex(12)?),
    };
    let password = configured.or_else(|| generated.clone()).unwrap_or_default();
    validate_username(&state.config.admin_user).map_err(|d| AppError::Validation(vec![format!("AUTH_USER {d}")]))?;
    let password_hash = state.passwords.hash(password).await?;
    let new = NewUser {
        username: state.config.admin_user.clone(),
        display_name: state.config.admin_user.clone(),
        role: Role::Admin,
        provider: "local".into(),
        email: None,
        avatar_url: None,
        password_hash: Some(password_hash),
    };
    let created = state
        .write(move |tx| {
            if store::any_user(tx)? {
                return Ok(false);
            }
            let user = store::insert_user(tx, new)?;
            crate::audit::record(
                tx,
                crate::audit::Entry::system(
                    "user_created",
                    serde_json::json!({"username": user.username, "role": "admin", "seeded": true}),
                ),
            )?;
            Ok::<_, AppError>(true)
        })
        .await?;
    Ok(if created { generated } else { None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dummy_hash_is_a_real_phc_string_of_the_same_cost() {
        let p = Passwords::new(4096, 2).unwrap();
        let parsed = argon2::PasswordHash::new(&p.dummy_hash).expect("parses");
        assert_eq!(parsed.algorithm.as_str(), "argon2id");
        // A wrong password against it is a mismatch (work done), not a format error.
        let err = p.argon().verify_password(b"x", p.dummy_hash.as_str()).unwrap_err();
        assert_eq!(err, argon2::password_hash::Error::PasswordInvalid, "{err:?}");
    }
}
