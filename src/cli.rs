//! What the `opsdeck` verbs do, so `main.rs` only parses and dispatches: logging set-up, one-line
//! start-up errors, the health probe, the OpenAPI printer, the offline password reset and the signal
//! that starts a graceful shutdown.

use std::time::Duration;

use serde_json::json;

use crate::config::{Config, LogFormat};
use crate::store::{Store, StoreError};
use crate::users::{self, Passwords};

/// Turns a command-line or environment error into one line: what was wrong, and for a value from the
/// environment, which variable it came from.
pub fn clap_error_line(cmd: &clap::Command, err: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let rendered = err.to_string();
    let first = rendered.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
    let mut line = first.trim_start_matches("error: ").to_string();
    if let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) {
        let long = arg.trim_start_matches("--").split([' ', '=']).next().unwrap_or_default();
        let env = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .and_then(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned());
        if let Some(env) = env {
            line.push_str(&format!(" (flag --{long} or environment variable {env})"));
        }
    }
    line
}

/// Installs the global log subscriber: human lines or JSON lines on stderr, filtered by `filter`.
pub fn init_logging(format: LogFormat, filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).map_err(|e| format!("RUST_LOG: {e}"))?;
    use std::io::IsTerminal;
    // Colours only on a terminal (not in journald, files or pipes) and never with NO_COLOR.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let installed = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
    };
    installed.map_err(|e| format!("cannot set up logging: {e}"))
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// The Host header `opsdeck healthcheck` sends: the first exact name of `SVC_ALLOWED_HOSTS`, so the
/// probe passes the production host allowlist whatever it lists.
pub fn healthcheck_host(config: &Config) -> Option<String> {
    config.allowed_hosts.iter().find(|h| !h.contains('*') && !h.is_empty()).cloned()
}

/// `opsdeck healthcheck`: a minimal HTTP/1.1 `GET /healthz` over a plain TCP socket (no client
/// library, no CA store needed), with `host` as the Host header (default: the URL's authority). `Ok`
/// when it answers 200 within 5 s.
pub async fn healthcheck(base: &str, host: Option<&str>) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = base.strip_prefix("http://").ok_or("only http:// URLs are supported")?;
    let authority = rest.split('/').next().unwrap_or(rest).to_string();
    let host = host.map(str::to_string).unwrap_or_else(|| authority.clone());
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(&authority).await?;
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&response).into_owned())
    };
    match tokio::time::timeout(Duration::from_secs(5), attempt).await {
        Ok(Ok(text)) if text.starts_with("HTTP/1.1 200") => Ok(()),
        Ok(Ok(text)) => Err(format!("unhealthy: {}", text.lines().next().unwrap_or(""))),
        Ok(Err(e)) => Err(format!("{authority}: {e}")),
        Err(_) => Err("timed out".into()),
    }
}

/// `opsdeck openapi`: the document, generated from the routes alone (no database is opened).
pub fn openapi() -> String {
    crate::docs::openapi_json().to_string()
}

/// What `opsdeck user reset-password` did.
#[derive(Debug)]
pub struct PasswordReset {
    pub username: String,
    /// The new password when it was generated (to print once).
    pub generated: Option<String>,
    pub sessions_destroyed: usize,
}

/// `opsdeck user reset-password NAME` (service stopped): sets a new password (given, or generated),
/// signs the user out everywhere and writes an audit row `user_password_reset` with actor `cli`.
pub async fn reset_password(
    config: &Config,
    username: &str,
    password: Option<String>,
) -> Result<PasswordReset, String> {
    if !config.db_path.is_file() {
        return Err(format!("no database at {} (set SVC_DATA_DIR or SVC_DB_PATH)", config.db_path.display()));
    }
    let generated = match &password {
        Some(_) => None,
        None => Some(users::random_hex(12).map_err(|e| e.to_string())?),
    };
    let password = password.or_else(|| generated.clone()).unwrap_or_default();
    users::validate_password(&password)?;
    let store = Store::open(&config.db_path).map_err(|e| match e {
        StoreError::Db(redb::Error::DatabaseAlreadyOpen) => {
            format!("the database {} is in use; stop the service first", config.db_path.display())
        }
        e => format!("cannot open the database {}: {e}", config.db_path.display()),
    })?;
    let name = username.to_string();
    let user = store
        .read(move |tx| users::store::find_by_name(tx, &name))
        .await
        .map_err(|e| format!("cannot read users: {e}"))?
        .ok_or_else(|| format!("no user named '{username}'"))?;
    let passwords = Passwords::new(config.argon2_memory_kib, config.argon2_iterations)?;
    let hash = passwords.hash(password).await.map_err(|e| e.to_string())?;
    let id = user.id;
    let with_generated = generated.is_some();
    let (result, _) = store
        .write(move |tx| {
            let mut user = users::store::get_user_w(tx, id)?
                .ok_or_else(|| crate::error::AppError::NotFound(format!("user {id} vanished")))?;
            user.password_hash = Some(hash);
            users::store::save_user(tx, &user)?;
            let destroyed = users::store::delete_sessions_of(tx, id, None)?;
            crate::audit::record(
                tx,
                crate::audit::Entry {
                    action: "user_password_reset",
                    actor: "cli".into(),
                    actor_id: None,
                    detail: json!({
                        "user_id": id, "username": user.username, "sessions_destroyed": destroyed,
                        "generated": with_generated,
                    }),
                    ip_address: None,
                },
            )?;
            Ok::<_, crate::error::AppError>((user.username, destroyed))
        })
        .await
        .map_err(|e| format!("cannot save the new password: {e}"))?;
    Ok(PasswordReset { username: result.0, generated, sessions_destroyed: result.1 })
}
