//! `/api/settings` (admin): list with defaults, update several keys at once, reset one key.

use std::collections::BTreeMap;

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Key, Setting, StoredSetting, store, validate};
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::store::now_secs;
use crate::users::Role;

#[derive(Serialize, ToSchema)]
pub struct SettingsList {
    pub settings: Vec<Setting>,
    /// The same settings by category.
    pub grouped: BTreeMap<String, Vec<Setting>>,
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateSettings {
    /// Key → new value. Numbers and booleans are accepted and stored as strings.
    pub settings: BTreeMap<String, Value>,
}

#[derive(Serialize, ToSchema)]
pub struct UpdateResult {
    pub updated: Vec<String>,
    pub count: usize,
}

#[derive(Deserialize, ToSchema)]
pub struct ResetSetting {
    pub key: String,
}

#[derive(Serialize, ToSchema)]
pub struct ResetResult {
    /// The key that was reset.
    pub reset: String,
    pub default_value: String,
}

/// Every known setting with its value in effect, description, category and whether it is the default.
#[endpoint(tags("settings"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<SettingsList>> {
    let state = app(depot)?;
    let stored = state.store.read(store::all).await?;
    let settings: Vec<Setting> =
        Key::ALL.into_iter().map(|k| Setting::new(k, stored.get(k.as_str()), &state.config)).collect();
    let mut grouped: BTreeMap<String, Vec<Setting>> = BTreeMap::new();
    for s in &settings {
        grouped.entry(s.category.clone()).or_default().push(s.clone());
    }
    Ok(Json(SettingsList { settings, grouped }))
}

/// A given value as the string it is stored as: strings, numbers and booleans only.
fn as_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Update settings: `{settings: {key: value}}`. All or nothing; each change is audited with its
/// before and after value.
#[endpoint(tags("settings"), request_body = UpdateSettings)]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<UpdateResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: UpdateSettings = json_body(req).await?;
    if body.settings.is_empty() {
        return Err(AppError::validation("settings", "must name at least one setting"));
    }
    let mut problems = Vec::new();
    let mut changes: Vec<(Key, String)> = Vec::new();
    for (name, value) in &body.settings {
        let Some(key) = Key::parse(name) else {
            problems.push(format!("settings.{name}: unknown setting"));
            continue;
        };
        let Some(text) = as_text(value) else {
            problems.push(format!("settings.{name}: must be a string, number or boolean"));
            continue;
        };
        match validate(key, &text) {
            Ok(v) => changes.push((key, v)),
            Err(problem) => problems.push(format!("settings.{name}: {problem}")),
        }
    }
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let config = state.config.clone();
    let updated = state
        .write(move |tx| {
            let now = now_secs();
            let mut detail = serde_json::Map::new();
            let mut updated = Vec::new();
            for (key, value) in changes {
                let before = super::get_w(tx, &config, key)?;
                let stored = StoredSetting { value: value.clone(), updated_by: who.username.clone(), updated_at: now };
                store::put(tx, key.as_str(), &stored)?;
                detail.insert(key.as_str().into(), json!({"before": before, "after": value}));
                updated.push(key.as_str().to_string());
            }
            audit::record(tx, Entry::by(&who, ip, "settings_update", json!({"changes": detail})))?;
            Ok::<_, AppError>(updated)
        })
        .await?;
    Ok(Json(UpdateResult { count: updated.len(), updated }))
}

/// Reset one setting to its default (`{key}`); 404 for an unknown key.
#[endpoint(tags("settings"), request_body = ResetSetting, responses((status_code = 404, description = "Unknown setting")))]
pub async fn reset(req: &mut Request, depot: &mut Depot) -> AppResult<Json<ResetResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: ResetSetting = json_body(req).await?;
    let key =
        Key::parse(body.key.trim()).ok_or_else(|| AppError::NotFound(format!("Setting not found: {}", body.key)))?;
    let default_value = key.default_value(&state.config);
    let default = default_value.clone();
    state
        .write(move |tx| {
            let old = store::remove(tx, key.as_str())?;
            let detail = json!({"key": key.as_str(), "before": old.map(|s| s.value), "default_value": default});
            audit::record(tx, Entry::by(&who, ip, "settings_reset", detail))?;
            Ok::<_, AppError>(())
        })
        .await?;
    Ok(Json(ResetResult { reset: key.as_str().into(), default_value }))
}

pub fn router() -> Router {
    Router::with_path("settings").hoop(RequireRole(Role::Admin)).get(list).put(update).delete(reset)
}
