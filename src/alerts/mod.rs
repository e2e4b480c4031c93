//! Alert rules: which fields of which entities a rule may test, how each operator decides, and the
//! cooldown. Evaluation (`eval.rs`) gathers entities, applies rules and records what triggered.

pub mod api;
pub mod eval;
pub mod store;

use std::net::IpAddr;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::{self, Entry};
use crate::error::AppResult;
use crate::http::Principal;
use crate::store::Tx;
use crate::tasks::Problems;

pub const MAX_COOLDOWN_MINUTES: u64 = 7 * 24 * 60;

pub const ENTITY_TYPES: [&str; 4] = ["agent", "task", "session", "activity"];
pub const OPERATORS: [&str; 8] = [
    "equals",
    "not_equals",
    "greater_than",
    "less_than",
    "contains",
    "count_above",
    "count_below",
    "age_minutes_above",
];

/// Fields a rule may test per entity type (the interface's lists, plus the time field each type has so
/// `age_minutes_above` has something to measure).
pub fn allowed_fields(entity_type: &str) -> &'static [&'static str] {
    match entity_type {
        "agent" => &["status", "role", "name", "last_seen", "last_activity", "created_at"],
        "task" => &["status", "priority", "assigned_to", "title", "created_at", "updated_at"],
        "activity" => &["type", "actor", "entity_type", "created_at"],
        "session" => &["status", "agent", "kind", "model", "channel", "age_minutes", "total_tokens"],
        _ => &[],
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "AlertRule"))]
pub struct Rule {
    pub id: u64,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    /// `agent`, `task`, `session` or `activity`.
    pub entity_type: String,
    pub condition_field: String,
    pub condition_operator: String,
    pub condition_value: String,
    /// `notification`.
    pub action_type: String,
    /// For notifications: `{recipient: username}` (default: the rule's creator).
    pub action_config: Value,
    pub cooldown_minutes: u64,
    pub last_triggered_at: Option<i64>,
    pub trigger_count: u64,
    pub created_by: String,
    pub created_at: i64,
}

impl Rule {
    pub fn in_cooldown(&self, now: i64) -> bool {
        self.last_triggered_at.is_some_and(|t| now < t + self.cooldown_minutes as i64 * 60)
    }

    pub fn recipient(&self) -> String {
        self.action_config
            .get("recipient")
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| self.created_by.clone())
    }
}

/// Adds the problems of a whole rule (name, condition, action, cooldown).
pub fn check_rule(p: &mut Problems, rule: &Rule) {
    p.check(!rule.name.is_empty() && rule.name.chars().count() <= 100, "name", "must be 1-100 characters");
    p.check(rule.description.len() <= 10_000, "description", "must be at most 10000 characters");
    for problem in
        check_condition(&rule.entity_type, &rule.condition_field, &rule.condition_operator, &rule.condition_value)
    {
        let (field, text) = problem.split_once(": ").unwrap_or(("condition", &problem));
        p.check(false, field, text);
    }
    p.check(rule.action_type == "notification", "action_type", "must be notification");
    p.check(rule.action_config.is_object(), "action_config", "must be an object");
    p.check(
        rule.action_config.get("recipient").is_none_or(Value::is_string),
        "action_config",
        "recipient must be a username",
    );
    p.check(rule.cooldown_minutes <= MAX_COOLDOWN_MINUTES, "cooldown_minutes", "must be at most 10080");
}

/// Validates and stores a new rule (its id is allocated here); audit `alert_created`.
pub fn create(tx: &mut Tx, who: &Principal, ip: IpAddr, mut rule: Rule) -> AppResult<Rule> {
    let mut p = Problems::default();
    check_rule(&mut p, &rule);
    p.finish()?;
    rule.id = store::new_id(tx)?;
    store::save(tx, &rule)?;
    audit::record(tx, Entry::by(who, ip, "alert_created", json!({"id": rule.id, "name": rule.name})))?;
    Ok(rule)
}

/// A `count_*` condition: `"<match>:<threshold>"` counts entities whose field equals match; a bare number
/// is a threshold over all entities.
pub fn parse_count(value: &str) -> Option<(Option<String>, f64)> {
    if let Ok(n) = value.trim().parse::<f64>() {
        return Some((None, n));
    }
    let (m, n) = value.rsplit_once(':')?;
    Some((Some(m.trim().to_string()), n.trim().parse().ok()?))
}

/// Checks a rule's condition fields together; returns `field: problem` lines.
pub fn check_condition(entity_type: &str, field: &str, operator: &str, value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !ENTITY_TYPES.contains(&entity_type) {
        problems.push("entity_type: must be one of agent, task, session, activity".to_string());
        return problems;
    }
    if !allowed_fields(entity_type).contains(&field) {
        problems.push(format!(
            "condition_field: for {entity_type} must be one of {}",
            allowed_fields(entity_type).join(", ")
        ));
    }
    if !OPERATORS.contains(&operator) {
        problems.push(format!("condition_operator: must be one of {}", OPERATORS.join(", ")));
    }
    let numeric = value.trim().parse::<f64>().is_ok_and(f64::is_finite);
    match operator {
        "greater_than" | "less_than" | "age_minutes_above" if !numeric => {
            problems.push("condition_value: must be a number for this operator".into())
        }
        "count_above" | "count_below" if parse_count(value).is_none() => {
            problems.push("condition_value: must be a number or <value>:<number> for this operator".into())
        }
        _ => {}
    }
    if value.len() > 1000 {
        problems.push("condition_value: must be at most 1000 characters".into());
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_values() {
        assert_eq!(parse_count("3"), Some((None, 3.0)));
        assert_eq!(parse_count("error:2"), Some((Some("error".into()), 2.0)));
        assert_eq!(parse_count("a:b:5"), Some((Some("a:b".into()), 5.0)));
        assert_eq!(parse_count("nope"), None);
    }

    #[test]
    fn conditions() {
        assert!(check_condition("agent", "status", "equals", "error").is_empty());
        assert_eq!(check_condition("agent", "title", "equals", "x").len(), 1);
        assert_eq!(
            check_condition("planet", "x", "equals", "x"),
            ["entity_type: must be one of agent, task, session, activity"]
        );
        assert_eq!(check_condition("task", "status", "greater_than", "x").len(), 1);
        assert!(check_condition("task", "status", "count_above", "inbox:5").is_empty());
        assert_eq!(check_condition("task", "status", "sounds_like", "x").len(), 1);
    }
}
