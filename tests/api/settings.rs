use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use opsdeck::settings::{Key, Retention};

const KEYS: [&str; 16] = [
    "retention.activities_days",
    "retention.audit_log_days",
    "retention.logs_days",
    "retention.notifications_days",
    "retention.pipeline_runs_days",
    "retention.token_usage_days",
    "gateway.host",
    "gateway.port",
    "general.site_name",
    "general.auto_cleanup",
    "general.auto_backup",
    "general.backup_retention_count",
    "general.agent_heartbeat",
    "general.agent_timeout_minutes",
    "webhooks.retry_enabled",
    "general.local_session_scan",
];

async fn settings(app: &TestApp) -> Value {
    let reply = app.get("/api/settings", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body
}

fn setting<'a>(body: &'a Value, key: &str) -> &'a Value {
    body["settings"].as_array().unwrap().iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("no {key}"))
}

async fn effective(app: &TestApp, key: Key) -> String {
    let config = app.state.config.clone();
    app.state.store.read(move |tx| opsdeck::settings::get(tx, &config, key)).await.unwrap()
}

#[tokio::test]
async fn settings_routes_are_admin_only() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/settings", None, "admin").await;
    let body = json!({"settings": {"general.site_name": "Roles"}});
    assert_min_role(&app, &roles, Method::PUT, "/api/settings", Some(body), "admin").await;
    assert_min_role(&app, &roles, Method::DELETE, "/api/settings", Some(json!({"key": "general.site_name"})), "admin")
        .await;
}

#[tokio::test]
async fn every_known_setting_is_listed_with_its_default() {
    // The interface's default gateway port (the test default points at a closed port).
    let app = spawn_app_with(&["--gateway-port", "18789"]).await;
    let body = settings(&app).await;
    let list = body["settings"].as_array().unwrap();
    let keys: Vec<&str> = list.iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, KEYS);
    for s in list {
        assert!(s["value"].is_string() && s["description"].as_str().is_some_and(|d| !d.is_empty()), "{s}");
        assert_eq!(s["is_default"], true);
        assert!(s["updated_by"].is_null() && s["updated_at"].is_null());
        assert!(["retention", "gateway", "general"].contains(&s["category"].as_str().unwrap()), "{s}");
    }
    let defaults = [
        ("retention.activities_days", "90"),
        ("retention.audit_log_days", "180"),
        ("retention.logs_days", "30"),
        ("retention.notifications_days", "30"),
        ("retention.pipeline_runs_days", "90"),
        ("retention.token_usage_days", "90"),
        ("gateway.host", "127.0.0.1"),
        ("gateway.port", "18789"),
        ("general.site_name", "OpsDeck"),
        ("general.auto_cleanup", "false"),
        ("general.auto_backup", "false"),
        ("general.backup_retention_count", "10"),
        ("general.agent_heartbeat", "enabled"),
        ("general.agent_timeout_minutes", "10"),
        ("webhooks.retry_enabled", "enabled"),
        ("general.local_session_scan", "enabled"),
    ];
    for (key, value) in defaults {
        assert_eq!(setting(&body, key)["value"], value, "{key}");
    }
    assert_eq!(setting(&body, "retention.logs_days")["category"], "retention");
    assert_eq!(setting(&body, "gateway.port")["category"], "gateway");
    let grouped = body["grouped"].as_object().unwrap();
    assert_eq!(grouped.keys().collect::<Vec<_>>(), ["gateway", "general", "retention"]);
    assert_eq!(grouped["retention"].as_array().unwrap().len(), 6);
    assert_eq!(grouped["gateway"].as_array().unwrap().len(), 2);
    assert_eq!(grouped["general"].as_array().unwrap().len(), 8);
    assert_eq!(grouped["gateway"][1], *setting(&body, "gateway.port"));
}

#[tokio::test]
async fn configuration_supplies_gateway_and_retention_defaults() {
    let app = spawn_app_with(&[
        "--gateway-host",
        "gw.internal",
        "--gateway-port",
        "19000",
        "--retain-audit-days",
        "365",
        "--retain-logs-days",
        "0",
    ])
    .await;
    let body = settings(&app).await;
    assert_eq!(setting(&body, "gateway.host")["value"], "gw.internal");
    assert_eq!(setting(&body, "gateway.port")["value"], "19000");
    assert_eq!(setting(&body, "retention.audit_log_days")["value"], "365");
    assert_eq!(setting(&body, "retention.audit_log_days")["is_default"], true);
    assert_eq!(setting(&body, "retention.logs_days")["value"], "0");
    assert_eq!(setting(&body, "retention.notifications_days")["value"], "30", "unset variable: settings default");

    // A stored setting wins over the variable; resetting falls back to the variable.
    let days = |app: &TestApp| {
        let config = app.state.config.clone();
        let store = app.state.store.clone();
        async move {
            store.read(move |tx| opsdeck::settings::retention_days(tx, &config, Retention::AuditLog)).await.unwrap()
        }
    };
    assert_eq!(days(&app).await, 365);
    let reply = app.put("/api/settings", &Auth::ApiKey, json!({"settings": {"retention.audit_log_days": 45}})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(days(&app).await, 45);
    assert_eq!(opsdeck::settings::retention(&app.state, Retention::AuditLog).await.unwrap(), 45);
    let reply = app.delete("/api/settings", &Auth::ApiKey, json!({"key": "retention.audit_log_days"})).await;
    assert_eq!(reply.body, json!({"reset": "retention.audit_log_days", "default_value": "365"}));
    assert_eq!(days(&app).await, 365);
    assert_eq!(opsdeck::settings::retention(&app.state, Retention::Logs).await.unwrap(), 0);
}

#[tokio::test]
async fn update_stores_values_as_strings_and_audits_changes() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let reply = app
        .put(
            "/api/settings",
            &admin,
            json!({"settings": {"general.site_name": "  Ops Lab ", "retention.logs_days": 7, "general.auto_backup": true,
                                "general.agent_heartbeat": "Disabled"}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["count"], 4);
    let mut updated: Vec<&str> =
        reply.body["updated"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    updated.sort();
    assert_eq!(updated, ["general.agent_heartbeat", "general.auto_backup", "general.site_name", "retention.logs_days"]);

    let body = settings(&app).await;
    let site = setting(&body, "general.site_name");
    assert_eq!(site["value"], "Ops Lab");
    assert_eq!(site["is_default"], false);
    assert_eq!(site["updated_by"], ADMIN_USER);
    assert!(site["updated_at"].as_i64().unwrap() > 0);
    assert_eq!(setting(&body, "retention.logs_days")["value"], "7");
    assert_eq!(setting(&body, "general.auto_backup")["value"], "true");
    assert_eq!(setting(&body, "general.agent_heartbeat")["value"], "disabled");
    assert_eq!(setting(&body, "general.auto_cleanup")["is_default"], true);
    assert_eq!(
        body["grouped"]["general"].as_array().unwrap().iter().find(|s| s["key"] == "general.site_name"),
        Some(site)
    );

    // The typed getters other features use see the change.
    assert!(opsdeck::settings::enabled(&app.state, Key::AutoBackup).await.unwrap());
    assert!(!opsdeck::settings::enabled(&app.state, Key::AgentHeartbeat).await.unwrap());
    assert_eq!(opsdeck::settings::number(&app.state, Key::RetentionLogsDays).await.unwrap(), 7);
    assert_eq!(effective(&app, Key::SiteName).await, "Ops Lab");

    let audit = app.audit("action=settings_update").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], ADMIN_USER);
    let changes = &audit[0]["detail"]["changes"];
    assert_eq!(changes["general.site_name"], json!({"before": "OpsDeck", "after": "Ops Lab"}));
    assert_eq!(changes["retention.logs_days"], json!({"before": "30", "after": "7"}));
    assert_eq!(changes["general.auto_backup"], json!({"before": "false", "after": "true"}));

    // A second update records the stored value as "before".
    app.put("/api/settings", &Auth::ApiKey, json!({"settings": {"general.site_name": "Ops Lab 2"}})).await;
    let audit = app.audit("action=settings_update").await;
    assert_eq!(audit[0]["detail"]["changes"]["general.site_name"], json!({"before": "Ops Lab", "after": "Ops Lab 2"}));
    assert_eq!(setting(&settings(&app).await, "general.site_name")["updated_by"], "api");
}

#[tokio::test]
async fn bad_updates_are_400_and_change_nothing() {
    let app = spawn_app().await;
    for (settings_value, detail) in [
        (json!({"general.site_name": {"a": 1}}), "settings.general.site_name: must be a string, number or boolean"),
        (json!({"general.site_name": ["x"]}), "settings.general.site_name: must be a string, number or boolean"),
        (json!({"general.site_name": null}), "settings.general.site_name: must be a string, number or boolean"),
        (json!({"general.unknown": "x"}), "settings.general.unknown: unknown setting"),
        (
            json!({"retention.logs_days": "thirty"}),
            "settings.retention.logs_days: must be a whole number of days from 0 (keep forever) to 36500",
        ),
        (
            json!({"retention.logs_days": -1}),
            "settings.retention.logs_days: must be a whole number of days from 0 (keep forever) to 36500",
        ),
        (json!({"gateway.port": 70000}), "settings.gateway.port: must be a port number from 1 to 65535"),
        (
            json!({"general.auto_backup": "sometimes"}),
            "settings.general.auto_backup: must be true or false (or enabled/disabled)",
        ),
        (
            json!({"general.backup_retention_count": 0}),
            "settings.general.backup_retention_count: must be a whole number from 1 to 1000",
        ),
        (json!({"general.site_name": ""}), "settings.general.site_name: must not be empty"),
        (json!({}), "settings: must name at least one setting"),
    ] {
        let reply = app.put("/api/settings", &Auth::ApiKey, json!({"settings": settings_value})).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{settings_value}: {}", reply.text);
        assert_eq!(reply.error(), "Validation failed");
        assert_eq!(reply.body["details"], json!([detail]), "{settings_value}");
    }
    // One bad key rejects the whole batch.
    let reply = app
        .put("/api/settings", &Auth::ApiKey, json!({"settings": {"general.site_name": "Fine", "nope.key": "x"}}))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    for body in [json!({}), json!({"settings": "general.site_name=x"}), json!({"settings": [1]})] {
        let reply = app.put("/api/settings", &Auth::ApiKey, body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
    }
    assert_eq!(effective(&app, Key::SiteName).await, "OpsDeck");
    assert!(settings(&app).await["settings"].as_array().unwrap().iter().all(|s| s["is_default"] == true));
    assert!(app.audit("action=settings_update").await.is_empty());
}

#[tokio::test]
async fn reset_restores_the_default_and_audits() {
    let app = spawn_app().await;
    app.put("/api/settings", &Auth::ApiKey, json!({"settings": {"general.backup_retention_count": "3"}})).await;
    assert_eq!(effective(&app, Key::BackupRetentionCount).await, "3");
    let reply = app.delete("/api/settings", &Auth::ApiKey, json!({"key": "general.backup_retention_count"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body, json!({"reset": "general.backup_retention_count", "default_value": "10"}));
    assert_eq!(effective(&app, Key::BackupRetentionCount).await, "10");
    assert_eq!(setting(&settings(&app).await, "general.backup_retention_count")["is_default"], true);
    let audit = app.audit("action=settings_reset").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(
        audit[0]["detail"],
        json!({"key": "general.backup_retention_count", "before": "3", "default_value": "10"})
    );

    // Resetting a key that holds its default is fine; unknown keys are 404; a missing key is 400.
    let again = app.delete("/api/settings", &Auth::ApiKey, json!({"key": "general.backup_retention_count"})).await;
    assert_eq!(again.status, StatusCode::OK);
    let unknown = app.delete("/api/settings", &Auth::ApiKey, json!({"key": "general.nope"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error(), "Setting not found: general.nope");
    let missing = app.delete("/api/settings", &Auth::ApiKey, json!({})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.body["details"], json!(["key: is required"]));
}
