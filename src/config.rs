//! Every setting is a CLI flag with an environment variable and a documented default (`opsdeck --help`).

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use base64::Engine;
use clap::Args;
use clap::builder::BoolishValueParser;

use crate::tokens::Pricing;

/// Settings as the operator gives them. `Config::validate` turns them into a checked [`Config`].
#[derive(Args, Clone)]
pub struct Settings {
    /// TCP port to listen on.
    #[arg(long, env = "PORT", default_value_t = 3005)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, env = "HOSTNAME", default_value = "0.0.0.0")]
    pub hostname: String,
    /// `production` or `development`. Default: unset, which means production.
    #[arg(long = "env", env = "NODE_ENV")]
    pub node_env: Option<String>,
    /// Same as NODE_ENV; wins when both are set. Default: unset.
    #[arg(long, env = "SVC_ENV")]
    pub svc_env: Option<String>,
    /// Directory for the database and backups.
    #[arg(long, env = "SVC_DATA_DIR", default_value = ".data")]
    pub data_dir: PathBuf,
    /// Database file. Default: <SVC_DATA_DIR>/svc.db.
    #[arg(long, env = "SVC_DB_PATH")]
    pub db_path: Option<PathBuf>,
    /// Username of the first admin, created only when no user exists.
    #[arg(long, env = "AUTH_USER", default_value = "admin")]
    pub auth_user: String,
    /// Password of the first admin (at least 12 characters). Default: unset, then one is generated and
    /// printed once.
    #[arg(long, env = "AUTH_PASS", hide_env_values = true)]
    pub auth_pass: Option<String>,
    /// Base64 of the first admin's password; overrides AUTH_PASS. Default: unset.
    #[arg(long, env = "AUTH_PASS_B64", hide_env_values = true)]
    pub auth_pass_b64: Option<String>,
    /// Accepted for compatibility and not used (sessions are random tokens). Default: unset.
    #[arg(long, env = "AUTH_SECRET", hide_env_values = true)]
    pub auth_secret: Option<String>,
    /// API key: `x-api-key` or `Authorization: Bearer` grants the `api` admin principal. Default: unset
    /// (disabled).
    #[arg(long, env = "API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Hosts allowed in production: exact names, `*.domain` and prefix wildcards such as `100.*`.
    #[arg(long, env = "SVC_ALLOWED_HOSTS", default_value = "localhost,127.0.0.1")]
    pub allowed_hosts: String,
    /// Allow any Host header, also in production.
    #[arg(long, env = "SVC_ALLOW_ANY_HOST", default_value = "false", action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub allow_any_host: bool,
    /// Secure cookie attribute. Default: true in production, false in development.
    #[arg(long, env = "SVC_COOKIE_SECURE", value_parser = BoolishValueParser::new())]
    pub cookie_secure: Option<bool>,
    /// SameSite attribute of the session cookie: strict, lax or none.
    #[arg(long, env = "SVC_COOKIE_SAMESITE", default_value = "strict")]
    pub cookie_samesite: String,
    /// General requests per minute per client IP (0 disables).
    #[arg(long, env = "SVC_RATE_LIMIT_PER_MINUTE", default_value_t = 100)]
    pub rate_limit_per_minute: u32,
    /// Switch off every rate limit except the login brute-force guard.
    #[arg(long, env = "SVC_DISABLE_RATE_LIMIT", default_value = "false", action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub disable_rate_limit: bool,
    /// Comma-separated proxy IPs whose X-Forwarded-For / X-Real-IP are honoured.
    #[arg(long, env = "SVC_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Host of the default gateway created on first run.
    #[arg(long, env = "AGW_GATEWAY_HOST", default_value = "127.0.0.1")]
    pub gateway_host: String,
    /// Port of the default gateway created on first run.
    #[arg(long, env = "AGW_GATEWAY_PORT", default_value_t = 18789)]
    pub gateway_port: u16,
    /// Bearer token of the default gateway. Default: unset (no token).
    #[arg(long, env = "AGW_GATEWAY_TOKEN", hide_env_values = true)]
    pub gateway_token: Option<String>,
    /// Name of the default gateway created on first run.
    #[arg(long, env = "SVC_DEFAULT_GATEWAY_NAME", default_value = "primary")]
    pub default_gateway_name: String,
    /// The agent gateway's home directory. Default: ~/.openclaw.
    #[arg(long, env = "AGW_HOME")]
    pub agw_home: Option<PathBuf>,
    /// The gateway's agent configuration file read by agent sync when the gateway is unreachable.
    /// Default: <AGW_HOME>/openclaw.json.
    #[arg(long, env = "AGW_CONFIG_PATH")]
    pub agw_config_path: Option<PathBuf>,
    /// Folder of Claude-Code-style session transcripts. Default: ~/.claude/projects.
    #[arg(long, env = "SVC_LOCAL_SESSIONS_DIR")]
    pub local_sessions_dir: Option<PathBuf>,
    /// Let webhooks reach link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254).
    #[arg(long, env = "SVC_WEBHOOK_ALLOW_LINK_LOCAL", default_value = "false", action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub webhook_allow_link_local: bool,
    /// Consecutive failed deliveries after which a webhook's circuit opens.
    #[arg(long, env = "SVC_WEBHOOK_MAX_RETRIES", default_value_t = 5)]
    pub webhook_max_retries: u32,
    /// Seconds between scheduled evaluations of the enabled alert rules.
    #[arg(long, env = "SVC_ALERT_EVAL_INTERVAL", default_value_t = 300)]
    pub alert_eval_interval: u64,
    /// Reviewer whose approval lets a task move to `done`.
    #[arg(long, env = "SVC_QUALITY_REVIEWER", default_value = "aegis")]
    pub quality_reviewer: String,
    /// Argon2id memory cost in KiB for password hashes.
    #[arg(long, env = "SVC_ARGON2_MEMORY_KIB", default_value_t = 19456)]
    pub argon2_memory_kib: u32,
    /// Argon2id iterations for password hashes.
    #[arg(long, env = "SVC_ARGON2_ITERATIONS", default_value_t = 2)]
    pub argon2_iterations: u32,
    /// Directory of the gateway's log files shown by `GET /api/logs`. Default: <AGW_HOME>/logs.
    #[arg(long, env = "AGW_LOG_DIR")]
    pub agw_log_dir: Option<PathBuf>,
    /// Days to keep activities when the `retention.activities_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_ACTIVITIES_DAYS")]
    pub retain_activities_days: Option<u64>,
    /// Days to keep audit rows when the `retention.audit_log_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_AUDIT_DAYS")]
    pub retain_audit_days: Option<u64>,
    /// Days to keep stored log entries when the `retention.logs_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_LOGS_DAYS")]
    pub retain_logs_days: Option<u64>,
    /// Days to keep notifications when the `retention.notifications_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_NOTIFICATIONS_DAYS")]
    pub retain_notifications_days: Option<u64>,
    /// Days to keep pipeline runs when the `retention.pipeline_runs_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_PIPELINE_RUNS_DAYS")]
    pub retain_pipeline_runs_days: Option<u64>,
    /// Days to keep token usage when the `retention.token_usage_days` setting is not stored (0 keeps forever). Default: unset.
    #[arg(long, env = "SVC_RETAIN_TOKEN_USAGE_DAYS")]
    pub retain_token_usage_days: Option<u64>,
    /// JSON file overriding and extending the model pricing table: an object of model name → USD per
    /// 1,000 tokens (`provider/*` keys are wildcards, `*` sets the default rate). Read at start. Default:
    /// unset (the built-in table).
    #[arg(long, env = "SVC_PRICING_PATH")]
    pub pricing_path: Option<PathBuf>,
    /// OAuth client id for Google sign-in (with GOOGLE_CLIENT_SECRET). Default: unset (Google sign-in off).
    #[arg(long, env = "GOOGLE_CLIENT_ID")]
    pub google_client_id: Option<String>,
    /// OAuth client secret for Google sign-in. Default: unset.
    #[arg(long, env = "GOOGLE_CLIENT_SECRET")]
    pub google_client_secret: Option<String>,
    /// The browser-side Google client id; used as the client id when GOOGLE_CLIENT_ID is unset. Default: unset.
    #[arg(long, env = "NEXT_PUBLIC_GOOGLE_CLIENT_ID")]
    pub next_public_google_client_id: Option<String>,
    /// Redirect URI registered with Google. Default: http(s)://<request Host>/api/auth/google.
    #[arg(long, env = "SVC_GOOGLE_REDIRECT_URL")]
    pub google_redirect_url: Option<String>,
    /// Google's consent page.
    #[arg(long, env = "SVC_GOOGLE_AUTH_URL", default_value = "https://accounts.google.com/o/oauth2/v2/auth")]
    pub google_auth_url: String,
    /// Google's token endpoint (the code exchange).
    #[arg(long, env = "SVC_GOOGLE_TOKEN_URL", default_value = "https://oauth2.googleapis.com/token")]
    pub google_token_url: String,
    /// Google's user-info endpoint.
    #[arg(long, env = "SVC_GOOGLE_USERINFO_URL", default_value = "https://openidconnect.googleapis.com/v1/userinfo")]
    pub google_userinfo_url: String,
    /// Serve `GET /metrics` without credentials (otherwise it needs the API key or an admin session).
    #[arg(long, env = "SVC_METRICS_PUBLIC", default_value = "false", action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub metrics_public: bool,
    /// Log format: `human` (one readable line per event) or `json` (one JSON object per line).
    #[arg(long, env = "SVC_LOG_FORMAT", default_value = "human")]
    pub log_format: String,
    /// Which logs to write, as a tracing filter (`info`, `debug`, `info,opsdeck::http=warn`…).
    #[arg(long = "log", env = "RUST_LOG", default_value = DEFAULT_LOG_FILTER)]
    pub log_filter: String,
    /// Seconds a shutdown (SIGTERM, Ctrl-C) waits for in-flight requests, then for background work
    /// such as webhook attempts, before it stops them.
    #[arg(long, env = "SVC_SHUTDOWN_TIMEOUT_SECS", default_value_t = 10)]
    pub shutdown_timeout_secs: u64,
}

/// The default log filter: our info lines, salvo's warnings.
pub const DEFAULT_LOG_FILTER: &str = "info,salvo_core=warn";

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Human,
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "human" | "text" | "pretty" | "" => Ok(Self::Human),
            "json" => Ok(Self::Json),
            other => Err(format!("SVC_LOG_FORMAT: '{other}' is not human or json")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Production,
    Development,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    Strict,
    Lax,
    None,
}

/// The validated configuration the service runs with.
#[derive(Clone)]
pub struct Config {
    pub port: u16,
    pub hostname: String,
    pub mode: Mode,
    pub data_dir: PathBuf,
    pub db_path: PathBuf,
    pub admin_user: String,
    pub admin_pass: Option<String>,
    pub api_key: Option<String>,
    pub allowed_hosts: Vec<String>,
    pub allow_any_host: bool,
    pub cookie_secure: bool,
    pub cookie_samesite: SameSite,
    pub rate_limit_per_minute: u32,
    pub disable_rate_limit: bool,
    pub trusted_proxies: Vec<IpAddr>,
    pub argon2_memory_kib: u32,
    pub argon2_iterations: u32,
    pub quality_reviewer: String,
    pub webhook_max_retries: u32,
    /// Seconds between scheduled alert evaluations (at least 1).
    pub alert_eval_interval: u64,
    pub webhook_allow_link_local: bool,
    pub gateway_host: String,
    pub gateway_port: u16,
    pub gateway_token: Option<String>,
    pub default_gateway_name: String,
    pub local_sessions_dir: PathBuf,
    /// The agent gateway's home directory (`AGW_HOME`, default `~/.openclaw`).
    pub agw_home: PathBuf,
    pub agw_config_path: PathBuf,
    /// Where gateway log files are read from (`AGW_LOG_DIR`, default `<AGW_HOME>/logs`).
    pub agw_log_dir: PathBuf,
    /// `SVC_RETAIN_*` values given by the operator (unset ones are `None`).
    pub retention_env: RetentionEnv,
    /// Model pricing: the built-in table, overridden by `SVC_PRICING_PATH` when set.
    pub pricing: Pricing,
    /// Google sign-in; `None` when no client id and secret are configured.
    pub google: Option<GoogleConfig>,
    pub metrics_public: bool,
    pub log_format: LogFormat,
    pub log_filter: String,
    /// How long a shutdown waits for in-flight requests, then for background work.
    pub shutdown_timeout: std::time::Duration,
}

/// Google sign-in (authorization-code flow) settings. Every URL is an absolute http(s) URL.
#[derive(Clone)]
pub struct GoogleConfig {
    pub client_id: String,
    pub client_secret: String,
    /// `None`: derived from the request's Host.
    pub redirect_url: Option<String>,
    pub auth_url: String,
    pub token_url: String,
    pub userinfo_url: String,
}

impl fmt::Debug for GoogleConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("redirect_url", &self.redirect_url)
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("userinfo_url", &self.userinfo_url)
            .finish()
    }
}

/// Retention days from the `SVC_RETAIN_*` environment variables; `None` when a variable is not set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionEnv {
    pub activities: Option<u64>,
    pub audit: Option<u64>,
    pub logs: Option<u64>,
    pub notifications: Option<u64>,
    pub pipeline_runs: Option<u64>,
    pub token_usage: Option<u64>,
}

/// `~/<rest>` under $HOME (or the working directory when HOME is unset, e.g. a bare container).
pub fn home_path(rest: &str) -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(rest)
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("Config")
            .field("port", &self.port)
            .field("hostname", &self.hostname)
            .field("mode", &self.mode)
            .field("db_path", &self.db_path)
            .field("admin_user", &self.admin_user)
            .field("admin_pass", &redact(&self.admin_pass))
            .field("api_key", &redact(&self.api_key))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cookie_secure", &self.cookie_secure)
            .field("agw_log_dir", &self.agw_log_dir)
            .field("google", &self.google)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Checks every value and resolves the defaults that depend on others.
    pub fn validate(self) -> Result<Config, String> {
        let mode_name = self.svc_env.or(self.node_env).unwrap_or_else(|| "production".into());
        let mode = match mode_name.to_ascii_lowercase().as_str() {
            "production" => Mode::Production,
            "development" | "dev" | "test" => Mode::Development,
            other => return Err(format!("NODE_ENV: unknown mode '{other}' (use production or development)")),
        };
        let cookie_samesite = match self.cookie_samesite.to_ascii_lowercase().as_str() {
            "strict" => SameSite::Strict,
            "lax" => SameSite::Lax,
            "none" => SameSite::None,
            other => return Err(format!("SVC_COOKIE_SAMESITE: '{other}' is not strict, lax or none")),
        };
        let admin_pass = match self.auth_pass_b64.filter(|s| !s.is_empty()) {
            Some(b64) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map_err(|e| format!("AUTH_PASS_B64: not valid base64 ({e})"))?;
                Some(String::from_utf8(bytes).map_err(|_| "AUTH_PASS_B64: not UTF-8 text".to_string())?)
            }
            None => self.auth_pass.filter(|s| !s.is_empty()),
        };
        if let Some(pass) = &admin_pass
            && pass.chars().count() < crate::users::MIN_PASSWORD_LEN
        {
            return Err("AUTH_PASS: the password must be at least 12 characters".into());
        }
        let trusted_proxies = split_list(&self.trusted_proxies)
            .map(|s| s.parse::<IpAddr>().map_err(|_| format!("SVC_TRUSTED_PROXIES: '{s}' is not an IP address")))
            .collect::<Result<Vec<_>, _>>()?;
        if self.argon2_memory_kib < 8 || self.argon2_iterations == 0 {
            return Err("SVC_ARGON2_MEMORY_KIB must be at least 8 and SVC_ARGON2_ITERATIONS at least 1".into());
        }
        crate::gateways::validate_host(&self.gateway_host).map_err(|e| format!("AGW_GATEWAY_{}", e.to_uppercase()))?;
        crate::gateways::validate_name(&self.default_gateway_name)
            .map_err(|e| format!("SVC_DEFAULT_GATEWAY_NAME: {e}"))?;
        let agw_home = self.agw_home.filter(|p| !p.as_os_str().is_empty()).unwrap_or_else(|| home_path(".openclaw"));
        let agw_config_path = self
            .agw_config_path
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| agw_home.join("openclaw.json"));
        let pricing = match self.pricing_path.filter(|p| !p.as_os_str().is_empty()) {
            Some(path) => Pricing::from_file(&path)?,
            None => Pricing::default(),
        };
        let db_path = self.db_path.unwrap_or_else(|| self.data_dir.join("svc.db"));
        let agw_log_dir =
            self.agw_log_dir.filter(|p| !p.as_os_str().is_empty()).unwrap_or_else(|| agw_home.join("logs"));
        let log_format = LogFormat::parse(&self.log_format)?;
        if self.data_dir.as_os_str().is_empty() {
            return Err("SVC_DATA_DIR: must not be empty".into());
        }
        if self.gateway_port == 0 {
            return Err("AGW_GATEWAY_PORT: must be between 1 and 65535".into());
        }
        let google = google_config(
            self.google_client_id,
            self.google_client_secret,
            self.next_public_google_client_id,
            self.google_redirect_url,
            [self.google_auth_url, self.google_token_url, self.google_userinfo_url],
        )?;
        if self.alert_eval_interval == 0 {
            return Err("SVC_ALERT_EVAL_INTERVAL: must be at least 1 second".into());
        }
        Ok(Config {
            port: self.port,
            hostname: self.hostname,
            mode,
            data_dir: self.data_dir,
            db_path,
            admin_user: self.auth_user,
            admin_pass,
            api_key: self.api_key.filter(|k| !k.is_empty()),
            allowed_hosts: split_list(&self.allowed_hosts).map(|s| s.to_ascii_lowercase()).collect(),
            allow_any_host: self.allow_any_host,
            cookie_secure: self.cookie_secure.unwrap_or(mode == Mode::Production),
            cookie_samesite,
            rate_limit_per_minute: self.rate_limit_per_minute,
            disable_rate_limit: self.disable_rate_limit,
            trusted_proxies,
            argon2_memory_kib: self.argon2_memory_kib,
            argon2_iterations: self.argon2_iterations,
            quality_reviewer: self.quality_reviewer,
            webhook_max_retries: self.webhook_max_retries.max(1),
            alert_eval_interval: self.alert_eval_interval,
            webhook_allow_link_local: self.webhook_allow_link_local,
            gateway_host: self.gateway_host,
            gateway_port: self.gateway_port,
            gateway_token: self.gateway_token.filter(|t| !t.is_empty()),
            default_gateway_name: self.default_gateway_name,
            local_sessions_dir: self.local_sessions_dir.unwrap_or_else(|| home_path(".claude/projects")),
            agw_home,
            agw_config_path,
            agw_log_dir,
            retention_env: RetentionEnv {
                activities: self.retain_activities_days,
                audit: self.retain_audit_days,
                logs: self.retain_logs_days,
                notifications: self.retain_notifications_days,
                pipeline_runs: self.retain_pipeline_runs_days,
                token_usage: self.retain_token_usage_days,
            },
            pricing,
            google,
            metrics_public: self.metrics_public,
            log_format,
            log_filter: self.log_filter,
            shutdown_timeout: std::time::Duration::from_secs(self.shutdown_timeout_secs),
        })
    }
}

/// Google sign-in is on when a client id (GOOGLE_CLIENT_ID, else NEXT_PUBLIC_GOOGLE_CLIENT_ID) and
/// GOOGLE_CLIENT_SECRET are set. A server-side id or a secret alone is a configuration error; the
/// browser-side id alone just leaves Google sign-in off.
fn google_config(
    client_id: Option<String>,
    client_secret: Option<String>,
    public_client_id: Option<String>,
    redirect_url: Option<String>,
    [auth_url, token_url, userinfo_url]: [String; 3],
) -> Result<Option<GoogleConfig>, String> {
    let set = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let (server_id, secret) = (set(client_id), set(client_secret));
    let client_id = match (server_id.is_some(), secret.is_some()) {
        (true, false) => return Err("GOOGLE_CLIENT_SECRET: required when GOOGLE_CLIENT_ID is set".into()),
        (_, true) => server_id.or(set(public_client_id)).ok_or_else(|| {
            "GOOGLE_CLIENT_ID: required when GOOGLE_CLIENT_SECRET is set (or NEXT_PUBLIC_GOOGLE_CLIENT_ID)".to_string()
        })?,
        (false, false) => return Ok(None),
    };
    let checked = |name: &str, url: String| -> Result<String, String> {
        match reqwest::Url::parse(url.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(url.trim().to_string()),
            _ => Err(format!("{name}: '{url}' is not an absolute http(s) URL")),
        }
    };
    Ok(Some(GoogleConfig {
        client_id,
        client_secret: secret.unwrap_or_default(),
        redirect_url: set(redirect_url).map(|u| checked("SVC_GOOGLE_REDIRECT_URL", u)).transpose()?,
        auth_url: checked("SVC_GOOGLE_AUTH_URL", auth_url)?,
        token_url: checked("SVC_GOOGLE_TOKEN_URL", token_url)?,
        userinfo_url: checked("SVC_GOOGLE_USERINFO_URL", userinfo_url)?,
    }))
}

/// Creates the data directory (and the database's, when elsewhere) if missing and checks that a file
/// can be written there, so a bad directory stops the start with one clear line.
pub fn prepare_dirs(config: &Config) -> Result<(), String> {
    let mut dirs = vec![("SVC_DATA_DIR", config.data_dir.clone())];
    if let Some(parent) = config.db_path.parent().filter(|p| !p.as_os_str().is_empty())
        && parent != config.data_dir
    {
        dirs.push(("SVC_DB_PATH", parent.to_path_buf()));
    }
    for (var, dir) in dirs {
        if dir.exists() && !dir.is_dir() {
            return Err(format!("{var}: {} is not a directory", dir.display()));
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{var}: cannot create {}: {e}", dir.display()))?;
        let probe = dir.join(format!(".opsdeck-write-check-{}", std::process::id()));
        std::fs::write(&probe, b"ok").map_err(|e| format!("{var}: {} is not writable: {e}", dir.display()))?;
        let _ = std::fs::remove_file(&probe);
    }
    if config.db_path.is_dir() {
        return Err(format!("SVC_DB_PATH: {} is a directory, not a database file", config.db_path.display()));
    }
    Ok(())
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty())
}

#[derive(clap::Parser)]
#[command(name = "opsdeck")]
struct SettingsOnly {
    #[command(flatten)]
    settings: Settings,
}

impl Settings {
    /// Parses settings from explicit arguments (flags win over environment variables), e.g. for tests.
    pub fn from_args<I, T>(args: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        let argv = std::iter::once(std::ffi::OsString::from("opsdeck")).chain(args.into_iter().map(Into::into));
        SettingsOnly::try_parse_from(argv).map(|s| s.settings).map_err(|e| e.to_string())
    }
}
