//! Sessions from every source — gateways first, then local transcripts, then token usage — in one
//! shape, with the interface's `age` and `tokens` formats and duplicate ids collapsed.

pub mod api;
pub mod local;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

/// Context size assumed when a source gives none.
pub const DEFAULT_CONTEXT: u64 = 200_000;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[salvo(schema(name = "Session"))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub key: String,
    pub agent: String,
    pub kind: String,
    /// `<n>m`, `<n>h` or `<n>d` since the last activity.
    pub age: String,
    pub model: String,
    /// `used/context (percent%)`, e.g. `12k/200k (6%)`.
    pub tokens: String,
    pub channel: String,
    pub flags: Vec<String>,
    pub active: bool,
    /// `active`, `paused` or `completed`.
    pub status: String,
    pub start_time: i64,
    pub last_activity: i64,
    /// `gateway`, `local` or `tokens`.
    pub source: String,
    pub total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant_messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_uses: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_user_prompt: Option<String>,
    /// Gateway that owns the session (for control), not shown.
    #[serde(skip)]
    pub gateway_id: Option<u64>,
}

/// Control state kept for sessions no gateway owns (local and token-derived).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlState {
    pub status: String,
    pub updated_at: i64,
}

/// `<n>m` under an hour, `<n>h` under a day, `<n>d` otherwise.
pub fn format_age(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 86_400 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

/// Under 1000 exact, thousands as `12k`, millions as `1.5m`.
pub fn format_count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{}k", (n as f64 / 1000.0).round() as u64)
    } else {
        let m = format!("{:.1}", n as f64 / 1_000_000.0);
        format!("{}m", m.trim_end_matches(".0"))
    }
}

/// `used/context (percent%)`.
pub fn format_tokens(used: u64, context: Option<u64>) -> String {
    let context = context.filter(|c| *c > 0).unwrap_or(DEFAULT_CONTEXT);
    let percent = (used as f64 / context as f64 * 100.0).round() as u64;
    format!("{}/{} ({percent}%)", format_count(used), format_count(context))
}

/// Keeps one entry per id — the most recently active — in first-seen order of the sources.
pub fn collapse(sessions: Vec<Session>) -> Vec<Session> {
    let mut out: Vec<Session> = Vec::with_capacity(sessions.len());
    for s in sessions {
        match out.iter_mut().find(|o| o.id == s.id) {
            Some(existing) if s.last_activity > existing.last_activity => *existing = s,
            Some(_) => {}
            None => out.push(s),
        }
    }
    out
}

/// Sessions no other source knows, derived from token usage records (the most recently active 500).
pub async fn from_token_usage(state: &crate::app::AppState, now: i64) -> crate::error::AppResult<Vec<Session>> {
    let usage = state.store.read(|tx| crate::tokens::sessions_from_usage(tx, 500)).await?;
    Ok(usage
        .into_iter()
        .map(|u| {
            let last = (u.last_timestamp / 1000) as i64;
            let key = u.session_id.split_once(':').map(|(_, k)| k.to_string()).unwrap_or_else(|| u.session_id.clone());
            Session {
                id: u.session_id.clone(),
                key,
                agent: u.agent,
                kind: "tokens".into(),
                age: format_age(now - last),
                model: u.model,
                tokens: format_tokens(u.total_tokens, None),
                channel: "internal".into(),
                flags: vec![],
                active: now - last < 30 * 60,
                status: "active".into(),
                start_time: (u.first_timestamp / 1000) as i64,
                last_activity: last,
                source: "tokens".into(),
                total_tokens: u.total_tokens,
                user_messages: None,
                assistant_messages: None,
                tool_uses: None,
                estimated_cost: Some(u.cost),
                last_user_prompt: None,
                gateway_id: None,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(format_age(59), "0m");
        assert_eq!(format_age(600), "10m");
        assert_eq!(format_age(3600), "1h");
        assert_eq!(format_age(86_399), "23h");
        assert_eq!(format_age(86_400 * 3), "3d");
        assert_eq!(format_age(-5), "0m");
    }

    #[test]
    fn token_strings() {
        assert_eq!(format_tokens(999, None), "999/200k (0%)");
        assert_eq!(format_tokens(12_400, Some(200_000)), "12k/200k (6%)");
        assert_eq!(format_tokens(1_500_000, Some(2_000_000)), "1.5m/2m (75%)");
        assert_eq!(format_tokens(50, Some(0)), "50/200k (0%)");
        assert_eq!(format_count(2_000_000), "2m");
    }
}
