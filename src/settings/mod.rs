//! System settings: the known keys with their defaults, descriptions and categories, value validation,
//! and the typed getters other features (scheduler, retention, webhooks) read them through.
//!
//! A stored value wins over the default. For retention keys the default is the `SVC_RETAIN_*` variable
//! when it is set, else the default of the settings table.

pub mod api;
pub mod store;

use redb::{ReadTransaction, WriteTransaction};
use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::app::AppState;
use crate::config::Config;
use crate::error::AppResult;
use crate::store::StoreError;
use crate::store::schema::SETTINGS;

/// The service's display name: the default of `general.site_name`.
pub const SITE_NAME: &str = "OpsDeck";

/// Every known setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    RetentionActivitiesDays,
    RetentionAuditLogDays,
    RetentionLogsDays,
    RetentionNotificationsDays,
    RetentionPipelineRunsDays,
    RetentionTokenUsageDays,
    GatewayHost,
    GatewayPort,
    SiteName,
    AutoCleanup,
    AutoBackup,
    BackupRetentionCount,
    AgentHeartbeat,
    AgentTimeoutMinutes,
    WebhooksRetryEnabled,
    LocalSessionScan,
}

/// What a value must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Whole days, 0 keeps forever.
    Days,
    /// 1 to 65535.
    Port,
    /// A host name or IP address.
    Host,
    /// Free text of at most 200 characters.
    Text,
    /// true/false, enabled/disabled, 1/0, yes/no, on/off.
    Bool,
    /// A whole number from 1 to 1000.
    Count,
    /// Whole minutes from 1 to 10080 (a week).
    Minutes,
}

/// Retention windows read by the cleanup job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    Activities,
    AuditLog,
    Logs,
    Notifications,
    PipelineRuns,
    TokenUsage,
}

impl Retention {
    pub const ALL: [Retention; 6] =
        [Self::Activities, Self::AuditLog, Self::Logs, Self::Notifications, Self::PipelineRuns, Self::TokenUsage];

    pub fn key(self) -> Key {
        match self {
            Self::Activities => Key::RetentionActivitiesDays,
            Self::AuditLog => Key::RetentionAuditLogDays,
            Self::Logs => Key::RetentionLogsDays,
            Self::Notifications => Key::RetentionNotificationsDays,
            Self::PipelineRuns => Key::RetentionPipelineRunsDays,
            Self::TokenUsage => Key::RetentionTokenUsageDays,
        }
    }

    /// The `SVC_RETAIN_*` value, when the operator set it.
    fn env_value(self, config: &Config) -> Option<u64> {
        let env = &config.retention_env;
        match self {
            Self::Activities => env.activities,
            Self::AuditLog => env.audit,
            Self::Logs => env.logs,
            Self::Notifications => env.notifications,
            Self::PipelineRuns => env.pipeline_runs,
            Self::TokenUsage => env.token_usage,
        }
    }
}

impl Key {
    pub const ALL: [Key; 16] = [
        Self::RetentionActivitiesDays,
        Self::RetentionAuditLogDays,
        Self::RetentionLogsDays,
        Self::RetentionNotificationsDays,
        Self::RetentionPipelineRunsDays,
        Self::RetentionTokenUsageDays,
        Self::GatewayHost,
        Self::GatewayPort,
        Self::SiteName,
        Self::AutoCleanup,
        Self::AutoBackup,
        Self::BackupRetentionCount,
        Self::AgentHeartbeat,
        Self::AgentTimeoutMinutes,
        Self::WebhooksRetryEnabled,
        Self::LocalSessionScan,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RetentionActivitiesDays => "retention.activities_days",
            Self::RetentionAuditLogDays => "retention.audit_log_days",
            Self::RetentionLogsDays => "retention.logs_days",
            Self::RetentionNotificationsDays => "retention.notifications_days",
            Self::RetentionPipelineRunsDays => "retention.pipeline_runs_days",
            Self::RetentionTokenUsageDays => "retention.token_usage_days",
            Self::GatewayHost => "gateway.host",
            Self::GatewayPort => "gateway.port",
            Self::SiteName => "general.site_name",
            Self::AutoCleanup => "general.auto_cleanup",
            Self::AutoBackup => "general.auto_backup",
            Self::BackupRetentionCount => "general.backup_retention_count",
            Self::AgentHeartbeat => "general.agent_heartbeat",
            Self::AgentTimeoutMinutes => "general.agent_timeout_minutes",
            Self::WebhooksRetryEnabled => "webhooks.retry_enabled",
            Self::LocalSessionScan => "general.local_session_scan",
        }
    }

    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == key)
    }

    /// `retention`, `gateway` or `general` (the interface's three categories).
    pub fn category(self) -> &'static str {
        match self {
            Self::RetentionActivitiesDays
            | Self::RetentionAuditLogDays
            | Self::RetentionLogsDays
            | Self::RetentionNotificationsDays
            | Self::RetentionPipelineRunsDays
            | Self::RetentionTokenUsageDays => "retention",
            Self::GatewayHost | Self::GatewayPort => "gateway",
            _ => "general",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Self::RetentionActivitiesDays => "Days to keep activity records (0 keeps forever)",
            Self::RetentionAuditLogDays => "Days to keep audit log entries (0 keeps forever)",
            Self::RetentionLogsDays => "Days to keep log entries added through the API (0 keeps forever)",
            Self::RetentionNotificationsDays => "Days to keep notifications (0 keeps forever)",
            Self::RetentionPipelineRunsDays => "Days to keep pipeline runs (0 keeps forever)",
            Self::RetentionTokenUsageDays => "Days to keep token usage records (0 keeps forever)",
            Self::GatewayHost => "Host name or IP address of the agent gateway",
            Self::GatewayPort => "Port of the agent gateway",
            Self::SiteName => "Display name of this service",
            Self::AutoCleanup => "Prune old records daily at 04:00 UTC according to the retention settings",
            Self::AutoBackup => "Back up the database daily at 03:00 UTC",
            Self::BackupRetentionCount => "Number of backup files to keep (older ones are deleted)",
            Self::AgentHeartbeat => "Mark agents offline when they miss heartbeats (checked every 5 minutes)",
            Self::AgentTimeoutMinutes => "Minutes without a heartbeat before an agent is marked offline",
            Self::WebhooksRetryEnabled => "Retry failed webhook deliveries with backoff",
            Self::LocalSessionScan => "Scan local agent session transcripts every 60 seconds",
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Self::RetentionActivitiesDays
            | Self::RetentionAuditLogDays
            | Self::RetentionLogsDays
            | Self::RetentionNotificationsDays
            | Self::RetentionPipelineRunsDays
            | Self::RetentionTokenUsageDays => Kind::Days,
            Self::GatewayHost => Kind::Host,
            Self::GatewayPort => Kind::Port,
            Self::SiteName => Kind::Text,
            Self::AutoCleanup
            | Self::AutoBackup
            | Self::AgentHeartbeat
            | Self::WebhooksRetryEnabled
            | Self::LocalSessionScan => Kind::Bool,
            Self::BackupRetentionCount => Kind::Count,
            Self::AgentTimeoutMinutes => Kind::Minutes,
        }
    }

    fn retention(self) -> Option<Retention> {
        Retention::ALL.into_iter().find(|r| r.key() == self)
    }

    /// The value in effect when nothing is stored.
    pub fn default_value(self, config: &Config) -> String {
        if let Some(days) = self.retention().and_then(|r| r.env_value(config)) {
            return days.to_string();
        }
        match self {
            Self::RetentionActivitiesDays => "90".into(),
            Self::RetentionAuditLogDays => "180".into(),
            Self::RetentionLogsDays => "30".into(),
            Self::RetentionNotificationsDays => "30".into(),
            Self::RetentionPipelineRunsDays => "90".into(),
            Self::RetentionTokenUsageDays => "90".into(),
            Self::GatewayHost => config.gateway_host.clone(),
            Self::GatewayPort => config.gateway_port.to_string(),
            Self::SiteName => SITE_NAME.into(),
            Self::AutoCleanup | Self::AutoBackup => "false".into(),
            Self::BackupRetentionCount => "10".into(),
            Self::AgentHeartbeat | Self::WebhooksRetryEnabled | Self::LocalSessionScan => "enabled".into(),
            Self::AgentTimeoutMinutes => "10".into(),
        }
    }
}

/// A stored override.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredSetting {
    pub value: String,
    pub updated_by: String,
    pub updated_at: i64,
}

/// A setting as the API shows it. `updated_by`/`updated_at` are null while the default is in effect.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[salvo(schema(name = "Setting"))]
pub struct Setting {
    pub key: String,
    /// Always a string.
    pub value: String,
    pub description: String,
    /// `retention`, `gateway` or `general`.
    pub category: String,
    pub updated_by: Option<String>,
    pub updated_at: Option<i64>,
    pub is_default: bool,
}

impl Setting {
    pub fn new(key: Key, stored: Option<&StoredSetting>, config: &Config) -> Self {
        Self {
            key: key.as_str().into(),
            value: stored.map(|s| s.value.clone()).unwrap_or_else(|| key.default_value(config)),
            description: key.description().into(),
            category: key.category().into(),
            updated_by: stored.map(|s| s.updated_by.clone()),
            updated_at: stored.map(|s| s.updated_at),
            is_default: stored.is_none(),
        }
    }
}

/// Reads a boolean setting value: true/enabled/1/yes/on are true, false/disabled/0/no/off false.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "enabled" | "1" | "yes" | "on" => Some(true),
        "false" | "disabled" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Checks a value given for `key` and returns it as it is stored (trimmed; booleans lower-cased).
pub fn validate(key: Key, value: &str) -> Result<String, String> {
    let value = value.trim();
    let whole = |min: u64, max: u64, what: &str| match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n.to_string()),
        _ => Err(what.to_string()),
    };
    match key.kind() {
        Kind::Days => whole(0, 36_500, "must be a whole number of days from 0 (keep forever) to 36500"),
        Kind::Port => whole(1, 65_535, "must be a port number from 1 to 65535"),
        Kind::Count => whole(1, 1_000, "must be a whole number from 1 to 1000"),
        Kind::Minutes => whole(1, 10_080, "must be a whole number of minutes from 1 to 10080"),
        Kind::Bool => match parse_bool(value) {
            Some(_) => Ok(value.to_ascii_lowercase()),
            None => Err("must be true or false (or enabled/disabled)".into()),
        },
        Kind::Host => {
            let ok = !value.is_empty()
                && value.len() <= 253
                && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
            if ok { Ok(value.to_string()) } else { Err("must be a host name or IP address".into()) }
        }
        Kind::Text => {
            if value.is_empty() {
                Err("must not be empty".into())
            } else if value.chars().count() > 200 {
                Err("must be at most 200 characters".into())
            } else if value.chars().any(char::is_control) {
                Err("must not contain control characters".into())
            } else {
                Ok(value.to_string())
            }
        }
    }
}

/// The value in effect for `key`: the stored one, else the default.
pub fn get(tx: &ReadTransaction, config: &Config, key: Key) -> Result<String, StoreError> {
    let stored = store::get(&tx.open_table(SETTINGS)?, key.as_str())?;
    Ok(stored.map(|s| s.value).unwrap_or_else(|| key.default_value(config)))
}

/// [`get`] inside a write transaction.
pub fn get_w(tx: &WriteTransaction, config: &Config, key: Key) -> Result<String, StoreError> {
    let stored = store::get(&tx.open_table(SETTINGS)?, key.as_str())?;
    Ok(stored.map(|s| s.value).unwrap_or_else(|| key.default_value(config)))
}

/// A boolean setting; a stored value that does not read as a boolean falls back to the default.
pub fn get_bool(tx: &ReadTransaction, config: &Config, key: Key) -> Result<bool, StoreError> {
    Ok(as_bool(key, &get(tx, config, key)?, config))
}

/// A numeric setting; a stored value that is not a whole number falls back to the default.
pub fn get_u64(tx: &ReadTransaction, config: &Config, key: Key) -> Result<u64, StoreError> {
    Ok(as_u64(key, &get(tx, config, key)?, config))
}

fn as_bool(key: Key, value: &str, config: &Config) -> bool {
    parse_bool(value).or_else(|| parse_bool(&key.default_value(config))).unwrap_or(false)
}

fn as_u64(key: Key, value: &str, config: &Config) -> u64 {
    value.trim().parse().ok().or_else(|| key.default_value(config).parse().ok()).unwrap_or(0)
}

/// Days to keep records of `what` (0 keeps forever): a stored setting wins, else the `SVC_RETAIN_*`
/// variable when set, else the settings default.
pub fn retention_days(tx: &ReadTransaction, config: &Config, what: Retention) -> Result<u64, StoreError> {
    get_u64(tx, config, what.key())
}

/// [`get`] from async code.
pub async fn value(state: &AppState, key: Key) -> AppResult<String> {
    let default = key.default_value(&state.config);
    let stored = state.store.read(move |tx| store::get(&tx.open_table(SETTINGS)?, key.as_str())).await?;
    Ok(stored.map(|s| s.value).unwrap_or(default))
}

/// [`get_bool`] from async code.
pub async fn enabled(state: &AppState, key: Key) -> AppResult<bool> {
    Ok(as_bool(key, &value(state, key).await?, &state.config))
}

/// [`get_u64`] from async code.
pub async fn number(state: &AppState, key: Key) -> AppResult<u64> {
    Ok(as_u64(key, &value(state, key).await?, &state.config))
}

/// [`retention_days`] from async code.
pub async fn retention(state: &AppState, what: Retention) -> AppResult<u64> {
    number(state, what.key()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    fn config(args: &[&str]) -> Config {
        let mut all = vec!["--agw-home", "/nonexistent"];
        all.extend_from_slice(args);
        Settings::from_args(all).unwrap().validate().unwrap()
    }

    #[test]
    fn every_key_round_trips_and_has_a_valid_default() {
        let c = config(&[]);
        for key in Key::ALL {
            assert_eq!(Key::parse(key.as_str()), Some(key));
            let default = key.default_value(&c);
            assert_eq!(validate(key, &default).as_deref(), Ok(default.as_str()), "{}", key.as_str());
            assert!(["retention", "gateway", "general"].contains(&key.category()));
        }
        assert_eq!(Key::parse("general.nope"), None);
    }

    #[test]
    fn defaults_follow_the_interface_and_configuration() {
        let c = config(&[]);
        assert_eq!(Key::RetentionAuditLogDays.default_value(&c), "180");
        assert_eq!(Key::RetentionNotificationsDays.default_value(&c), "30");
        assert_eq!(Key::SiteName.default_value(&c), "OpsDeck");
        assert_eq!(Key::GatewayHost.default_value(&c), "127.0.0.1");
        assert_eq!(Key::GatewayPort.default_value(&c), "18789");
        assert_eq!(Key::AgentHeartbeat.default_value(&c), "enabled");
        let c = config(&["--retain-audit-days", "365", "--gateway-host", "gw.lan", "--gateway-port", "9000"]);
        assert_eq!(Key::RetentionAuditLogDays.default_value(&c), "365");
        assert_eq!(Key::RetentionLogsDays.default_value(&c), "30", "unset variables keep the settings default");
        assert_eq!(Key::GatewayHost.default_value(&c), "gw.lan");
        assert_eq!(Key::GatewayPort.default_value(&c), "9000");
    }

    #[test]
    fn values_are_checked_per_kind() {
        assert_eq!(validate(Key::RetentionLogsDays, " 0 ").as_deref(), Ok("0"));
        assert!(validate(Key::RetentionLogsDays, "-1").is_err());
        assert!(validate(Key::RetentionLogsDays, "1.5").is_err());
        assert!(validate(Key::GatewayPort, "0").is_err());
        assert!(validate(Key::GatewayPort, "65536").is_err());
        assert!(validate(Key::GatewayHost, "bad host").is_err());
        assert_eq!(validate(Key::AutoBackup, "Enabled").as_deref(), Ok("enabled"));
        assert!(validate(Key::AutoBackup, "maybe").is_err());
        assert!(validate(Key::BackupRetentionCount, "0").is_err());
        assert!(validate(Key::SiteName, "  ").is_err());
        assert!(validate(Key::SiteName, &"x".repeat(201)).is_err());
        assert!(validate(Key::SiteName, "a\u{7}b").is_err());
    }

    #[test]
    fn booleans_read_loosely_and_bad_values_fall_back() {
        assert_eq!(parse_bool("enabled"), Some(true));
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("disabled"), Some(false));
        assert_eq!(parse_bool("x"), None);
        let c = config(&[]);
        assert!(as_bool(Key::AgentHeartbeat, "garbage", &c));
        assert!(!as_bool(Key::AutoBackup, "garbage", &c));
        assert_eq!(as_u64(Key::BackupRetentionCount, "garbage", &c), 10);
        assert_eq!(as_u64(Key::BackupRetentionCount, "3", &c), 3);
    }
}
