//! Rule evaluation: gather the entities of a rule's type, decide, and record what triggered (the
//! notification, its SSE event and `notification.alert` webhook event, in one transaction).

use redb::ReadableTable;
use salvo_oapi::ToSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Rule, parse_count, store};
use crate::activity::{self, Activity, NewActivity};
use crate::app::AppState;
use crate::error::AppResult;
use crate::notifications::{NewNotification, notify};
use crate::store::{decode, now_secs};

/// `count_above` and every other rule on activities look at the last hour.
const ACTIVITY_WINDOW_SECS: i64 = 3600;

type Entity = Map<String, Value>;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleResult {
    pub rule_id: u64,
    pub rule_name: String,
    pub triggered: bool,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Report {
    pub evaluated: usize,
    pub triggered: usize,
    pub results: Vec<RuleResult>,
}

fn object(v: Value) -> Entity {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The entities of one type, as field maps.
async fn entities(state: &AppState, entity_type: &str, now: i64) -> AppResult<Vec<Entity>> {
    Ok(match entity_type {
        "agent" => {
            let (agents, _) = state
                .store
                .read(|tx| crate::agents::store::list(tx, &crate::agents::store::Filter::default(), usize::MAX, 0))
                .await?;
            agents.into_iter().map(|a| object(serde_json::to_value(a).unwrap_or_default())).collect()
        }
        "task" => {
            let (tasks, _) = state
                .store
                .read(|tx| crate::tasks::store::list(tx, &crate::tasks::store::Filter::default(), usize::MAX, 0))
                .await?;
            tasks.into_iter().map(|t| object(serde_json::to_value(t).unwrap_or_default())).collect()
        }
        "activity" => {
            let since = now - ACTIVITY_WINDOW_SECS;
            let recent: Vec<Activity> = state
                .store
                .read(move |tx| {
                    let table = tx.open_table(crate::store::schema::ACTIVITIES)?;
                    let mut out = Vec::new();
                    for row in table.iter()?.rev() {
                        let a: Activity = decode(row?.1.value())?;
                        if a.created_at < since {
                            break;
                        }
                        out.push(a);
                    }
                    Ok::<_, crate::store::StoreError>(out)
                })
                .await?;
            recent.into_iter().map(|a| object(serde_json::to_value(a).unwrap_or_default())).collect()
        }
        "session" => crate::sessions::api::collect(state)
            .await?
            .into_iter()
            .map(|s| {
                object(json!({
                    "status": s.status, "agent": s.agent, "kind": s.kind, "model": s.model, "channel": s.channel,
                    "age_minutes": (now - s.last_activity).max(0) / 60, "total_tokens": s.total_tokens,
                }))
            })
            .collect(),
        _ => Vec::new(),
    })
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Whether a rule's condition holds over `items`, and why (or why not).
pub fn decide(rule: &Rule, items: &[Entity], now: i64) -> (bool, String) {
    let field = rule.condition_field.as_str();
    let value = rule.condition_value.trim();
    let kind = &rule.entity_type;
    let matching = |pred: &dyn Fn(&Entity) -> bool| items.iter().filter(|e| pred(e)).count();
    let any = |n: usize, what: &str| {
        if n > 0 {
            (true, format!("{n} {kind}(s) with {field} {what}"))
        } else {
            (false, format!("No {kind} with {field} {what}"))
        }
    };
    match rule.condition_operator.as_str() {
        "equals" => any(matching(&|e| text(e.get(field)).eq_ignore_ascii_case(value)), &format!("equal to {value}")),
        "not_equals" => {
            any(matching(&|e| !text(e.get(field)).eq_ignore_ascii_case(value)), &format!("not equal to {value}"))
        }
        "contains" => {
            let needle = value.to_lowercase();
            any(matching(&|e| text(e.get(field)).to_lowercase().contains(&needle)), &format!("containing {value}"))
        }
        "greater_than" | "less_than" => {
            let Ok(limit) = value.parse::<f64>() else { return (false, "Condition value is not a number".into()) };
            let above = rule.condition_operator == "greater_than";
            let n = matching(&|e| number(e.get(field)).is_some_and(|x| if above { x > limit } else { x < limit }));
            any(n, &format!("{} {value}", if above { "above" } else { "below" }))
        }
        "count_above" | "count_below" => {
            let Some((matcher, threshold)) = parse_count(value) else {
                return (false, "Condition value is not a count".into());
            };
            let count = match &matcher {
                Some(m) => matching(&|e| text(e.get(field)).eq_ignore_ascii_case(m)),
                None => items.len(),
            } as f64;
            let above = rule.condition_operator == "count_above";
            let hit = if above { count > threshold } else { count < threshold };
            let scope = matcher.map(|m| format!(" with {field} {m}")).unwrap_or_default();
            let window = if kind == "activity" { " in the last hour" } else { "" };
            let relation = if above { "above" } else { "below" };
            let reason =
                format!("{count} {kind}(s){scope}{window}; {}{relation} {threshold}", if hit { "" } else { "not " });
            (hit, reason)
        }
        "age_minutes_above" => {
            let Ok(minutes) = value.parse::<f64>() else { return (false, "Condition value is not a number".into()) };
            let n = matching(&|e| {
                let ts = number(e.get(field))
                    .or_else(|| if field == "last_seen" { number(e.get("created_at")) } else { None });
                ts.is_some_and(|t| (now as f64 - t) / 60.0 > minutes)
            });
            any(n, &format!("older than {value} minutes"))
        }
        other => (false, format!("Unknown operator {other}")),
    }
}

/// Marks a rule triggered and notifies its recipient, unless it changed or cooled down meanwhile.
async fn record_trigger(state: &AppState, rule: &Rule, reason: String, now: i64) -> AppResult<bool> {
    let id = rule.id;
    state
        .write(move |tx| {
            let Some(mut rule) = store::get_w(tx, id)? else { return Ok(false) };
            if !rule.enabled || rule.in_cooldown(now) {
                return Ok(false);
            }
            rule.last_triggered_at = Some(now);
            rule.trigger_count += 1;
            store::save(tx, &rule)?;
            let recipient = rule.recipient();
            notify(
                tx,
                NewNotification {
                    recipient: &recipient,
                    kind: "alert",
                    title: format!("Alert: {}", rule.name),
                    message: format!("Alert rule \"{}\" triggered: {reason}", rule.name),
                    source_type: Some("alert_rule"),
                    source_id: Some(rule.id),
                },
            )?;
            activity::record(
                tx,
                NewActivity {
                    kind: "alert_triggered",
                    entity_type: "alert_rule",
                    entity_id: Some(rule.id),
                    actor: "system",
                    description: format!("Alert \"{}\" triggered", rule.name),
                    data: json!({"reason": reason, "recipient": recipient}),
                },
            )?;
            tx.emit("alert.triggered", json!({"rule_id": rule.id, "rule_name": rule.name, "reason": reason}));
            Ok(true)
        })
        .await
}

/// Evaluates every enabled rule now (the scheduled job and `POST /api/alerts {action: "evaluate"}`).
pub async fn evaluate_all(state: &AppState) -> AppResult<Report> {
    let rules: Vec<Rule> = state.store.read(store::list).await?.into_iter().filter(|r| r.enabled).collect();
    let now = now_secs();
    let mut cache: Map<String, Value> = Map::new();
    let mut results = Vec::new();
    for rule in &rules {
        if rule.in_cooldown(now) {
            results.push(RuleResult {
                rule_id: rule.id,
                rule_name: rule.name.clone(),
                triggered: false,
                reason: "In cooldown".into(),
            });
            continue;
        }
        if !cache.contains_key(&rule.entity_type) {
            let items = entities(state, &rule.entity_type, now).await?;
            cache.insert(rule.entity_type.clone(), Value::Array(items.into_iter().map(Value::Object).collect()));
        }
        let items: Vec<Entity> = cache[&rule.entity_type]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_object().cloned()).collect())
            .unwrap_or_default();
        let (hit, reason) = decide(rule, &items, now);
        let triggered = hit && record_trigger(state, rule, reason.clone(), now).await?;
        results.push(RuleResult { rule_id: rule.id, rule_name: rule.name.clone(), triggered, reason });
    }
    Ok(Report { evaluated: rules.len(), triggered: results.iter().filter(|r| r.triggered).count(), results })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(field: &str, op: &str, value: &str, kind: &str) -> Rule {
        Rule {
            id: 1,
            name: "r".into(),
            description: String::new(),
            enabled: true,
            entity_type: kind.into(),
            condition_field: field.into(),
            condition_operator: op.into(),
            condition_value: value.into(),
            action_type: "notification".into(),
            action_config: json!({}),
            cooldown_minutes: 60,
            last_triggered_at: None,
            trigger_count: 0,
            created_by: "admin".into(),
            created_at: 0,
        }
    }

    fn items(v: Value) -> Vec<Entity> {
        v.as_array().unwrap().iter().map(|e| e.as_object().unwrap().clone()).collect()
    }

    #[test]
    fn operators_decide() {
        let agents = items(json!([
            {"status": "error", "name": "Builder", "last_seen": 1000, "created_at": 0},
            {"status": "online", "name": "scout", "last_seen": null, "created_at": 9000},
        ]));
        let now = 10_000;
        assert!(decide(&rule("status", "equals", "ERROR", "agent"), &agents, now).0);
        assert!(!decide(&rule("status", "equals", "busy", "agent"), &agents, now).0);
        assert!(decide(&rule("status", "not_equals", "online", "agent"), &agents, now).0);
        assert!(decide(&rule("name", "contains", "uild", "agent"), &agents, now).0);
        assert!(decide(&rule("last_seen", "greater_than", "999", "agent"), &agents, now).0);
        assert!(!decide(&rule("last_seen", "less_than", "999", "agent"), &agents, now).0);
        assert!(decide(&rule("status", "count_above", "1", "agent"), &agents, now).0);
        assert!(!decide(&rule("status", "count_above", "error:1", "agent"), &agents, now).0);
        assert!(decide(&rule("status", "count_below", "busy:1", "agent"), &agents, now).0);
        // last_seen 1000 is 150 minutes old; the agent never seen counts from created_at (16 minutes).
        let (hit, reason) = decide(&rule("last_seen", "age_minutes_above", "100", "agent"), &agents, now);
        assert!(hit, "{reason}");
        assert!(reason.starts_with("1 agent(s)"), "{reason}");
        assert!(!decide(&rule("last_seen", "age_minutes_above", "200", "agent"), &agents, now).0);
        assert!(decide(&rule("last_seen", "age_minutes_above", "10", "agent"), &agents, now).0);
    }

    #[test]
    fn cooldown() {
        let mut r = rule("status", "equals", "x", "agent");
        r.last_triggered_at = Some(1000);
        assert!(r.in_cooldown(1000 + 59 * 60));
        assert!(!r.in_cooldown(1000 + 60 * 60));
    }
}
