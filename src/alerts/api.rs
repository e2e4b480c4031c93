//! `/api/alerts`: rules CRUD and evaluation. `POST` creates a rule (operator) or, with
//! `{action: "evaluate"}`, evaluates every enabled rule now (viewer, 1 per 10 s).

use std::time::Duration;

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::eval::{Report, evaluate_all};
use super::{Rule, check_rule, store};
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::parse_object;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{IdBody, Success, delete_by_id};
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::store::now_secs;
use crate::tasks::Problems;
use crate::users::Role;

fn writes() -> RouteLimit {
    RouteLimit::new("alert_writes", 100, Duration::from_secs(60), KeyBy::Principal)
}

fn not_found() -> AppError {
    AppError::NotFound("Alert rule not found".into())
}

#[derive(Serialize, ToSchema)]
pub struct RuleList {
    pub rules: Vec<Rule>,
}

#[derive(Serialize, ToSchema)]
pub struct RuleEnvelope {
    pub rule: Rule,
}

/// Alert rules.
#[endpoint(tags("alerts"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<RuleList>> {
    let state = app(depot)?;
    Ok(Json(RuleList { rules: state.store.read(store::list).await? }))
}

/// A condition value may be given as a string or a number.
fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[derive(Deserialize, ToSchema)]
pub struct CreateRule {
    /// `evaluate` runs every enabled rule instead of creating one (viewer or above).
    pub action: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub entity_type: Option<String>,
    pub condition_field: Option<String>,
    pub condition_operator: Option<String>,
    /// A string (numbers are accepted and stringified).
    #[salvo(schema(value_type = String))]
    pub condition_value: Option<Value>,
    /// `notification` (default).
    pub action_type: Option<String>,
    /// `{recipient: username}`.
    pub action_config: Option<Value>,
    pub cooldown_minutes: Option<u64>,
    pub enabled: Option<bool>,
}

#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum CreateOrEvaluate {
    Created(Box<RuleEnvelope>),
    Evaluated(Report),
}

/// Create an alert rule (operator), or evaluate every enabled rule with `{action: "evaluate"}` (viewer).
#[endpoint(tags("alerts"), request_body = CreateRule)]
pub async fn create_or_evaluate(req: &mut Request, depot: &mut Depot) -> AppResult<Json<CreateOrEvaluate>> {
    let state = app(depot)?;
    let body: CreateRule = json_body(req).await?;
    match body.action.as_deref() {
        Some("evaluate") => {
            RouteLimit::new("alert_evaluate", 1, Duration::from_secs(10), KeyBy::Global).check(req, depot)?;
            return Ok(Json(CreateOrEvaluate::Evaluated(evaluate_all(&state).await?)));
        }
        Some(other) => return Err(AppError::validation("action", &format!("unknown action {other} (only evaluate)"))),
        None => {}
    }
    let who = RequireRole(Role::Operator).check(depot)?;
    writes().check(req, depot)?;
    let ip = client_ip(depot);
    let mut p = Problems::default();
    for (name, given) in [
        ("name", body.name.is_some()),
        ("entity_type", body.entity_type.is_some()),
        ("condition_field", body.condition_field.is_some()),
        ("condition_operator", body.condition_operator.is_some()),
        ("condition_value", body.condition_value.is_some()),
    ] {
        p.check(given, name, "is required");
    }
    let condition_value = body.condition_value.as_ref().map(value_text);
    p.check(!matches!(condition_value, Some(None)), "condition_value", "must be a string or a number");
    p.finish()?;
    let rule = Rule {
        id: 0,
        name: body.name.unwrap_or_default().trim().to_string(),
        description: body.description.unwrap_or_default(),
        enabled: body.enabled.unwrap_or(true),
        entity_type: body.entity_type.unwrap_or_default(),
        condition_field: body.condition_field.unwrap_or_default(),
        condition_operator: body.condition_operator.unwrap_or_default(),
        condition_value: condition_value.flatten().unwrap_or_default(),
        action_type: body.action_type.unwrap_or_else(|| "notification".into()),
        action_config: body.action_config.unwrap_or_else(|| json!({})),
        cooldown_minutes: body.cooldown_minutes.unwrap_or(60),
        last_triggered_at: None,
        trigger_count: 0,
        created_by: who.username.clone(),
        created_at: now_secs(),
    };
    let rule = state.write(move |tx| super::create(tx, &who, ip, rule)).await?;
    Ok(Json(CreateOrEvaluate::Created(Box::new(RuleEnvelope { rule }))))
}

/// Update a rule: any rule field, or `enabled`. Operator.
#[endpoint(tags("alerts"), request_body = CreateRule)]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<RuleEnvelope>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let raw: Value = json_body(req).await?;
    let id = raw
        .get("id")
        .and_then(Value::as_u64)
        .ok_or_else(|| AppError::validation("id", "is required and must be a positive integer"))?;
    let body: CreateRule = parse_object(raw.to_string().as_bytes())?;
    let condition_value = body.condition_value.as_ref().map(value_text);
    if matches!(condition_value, Some(None)) {
        return Err(AppError::validation("condition_value", "must be a string or a number"));
    }
    let nothing = body.name.is_none()
        && body.description.is_none()
        && body.entity_type.is_none()
        && body.condition_field.is_none()
        && body.condition_operator.is_none()
        && condition_value.is_none()
        && body.action_type.is_none()
        && body.action_config.is_none()
        && body.cooldown_minutes.is_none()
        && body.enabled.is_none();
    if nothing {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    let rule = state
        .write(move |tx| {
            let mut rule = store::get_w(tx, id)?.ok_or_else(not_found)?;
            if let Some(n) = body.name {
                rule.name = n.trim().to_string();
            }
            rule.description = body.description.unwrap_or(rule.description);
            rule.entity_type = body.entity_type.unwrap_or(rule.entity_type);
            rule.condition_field = body.condition_field.unwrap_or(rule.condition_field);
            rule.condition_operator = body.condition_operator.unwrap_or(rule.condition_operator);
            rule.condition_value = condition_value.flatten().unwrap_or(rule.condition_value);
            rule.action_type = body.action_type.unwrap_or(rule.action_type);
            rule.action_config = body.action_config.unwrap_or(rule.action_config);
            rule.cooldown_minutes = body.cooldown_minutes.unwrap_or(rule.cooldown_minutes);
            rule.enabled = body.enabled.unwrap_or(rule.enabled);
            let mut p = Problems::default();
            check_rule(&mut p, &rule);
            p.finish()?;
            store::save(tx, &rule)?;
            audit::record(tx, Entry::by(&who, ip, "alert_updated", json!({"id": rule.id, "name": rule.name})))?;
            Ok(rule)
        })
        .await?;
    Ok(Json(RuleEnvelope { rule }))
}

/// Delete a rule. Admin.
#[endpoint(tags("alerts"), request_body = IdBody)]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    delete_by_id(req, depot, |tx, id, who, ip| {
        if !store::delete(tx, id)? {
            return Err(not_found());
        }
        audit::record(tx, Entry::by(who, ip, "alert_deleted", json!({"id": id})))?;
        Ok(())
    })
    .await
}

pub fn router() -> Router {
    Router::with_path("alerts")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list).post(create_or_evaluate))
        .push(Router::new().hoop(RequireRole(Role::Operator)).hoop(writes()).put(update))
        .push(Router::new().hoop(RequireRole(Role::Admin)).delete(delete))
}
