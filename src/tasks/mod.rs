//! Tasks: the types, their validation and the quality gate rule.

pub mod api;
pub mod quality;
pub mod rules;
pub mod store;

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};

pub const STATUSES: [&str; 5] = ["inbox", "assigned", "in_progress", "quality_review", "done"];
pub const PRIORITIES: [&str; 4] = ["critical", "high", "medium", "low"];
const MAX_TAGS: usize = 50;
const MAX_TAG_LEN: usize = 100;
const MAX_TITLE_LEN: usize = 500;
const MAX_TEXT_LEN: usize = 100_000;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "Task"))]
pub struct Task {
    pub id: u64,
    pub title: String,
    pub description: String,
    /// `inbox`, `assigned`, `in_progress`, `quality_review` or `done`.
    pub status: String,
    /// `critical`, `high`, `medium` or `low`.
    pub priority: String,
    pub assigned_to: Option<String>,
    pub created_by: String,
    /// ISO 8601, as given.
    pub due_date: Option<String>,
    pub estimated_hours: Option<f64>,
    pub tags: Vec<String>,
    pub metadata: serde_json::Value,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Rank used to order pending work: critical first.
pub fn priority_rank(priority: &str) -> usize {
    PRIORITIES.iter().position(|p| *p == priority).unwrap_or(PRIORITIES.len())
}

#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
#[salvo(schema(name = "TaskStats"))]
pub struct TaskStats {
    pub total: u64,
    pub assigned: u64,
    pub in_progress: u64,
    pub completed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "TaskComment"))]
pub struct Comment {
    pub id: u64,
    pub task_id: u64,
    pub author: String,
    pub content: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[salvo(schema(name = "QualityReview"))]
pub struct Review {
    pub id: u64,
    #[serde(rename = "taskId")]
    pub task_id: u64,
    pub reviewer: String,
    /// `approved` or `rejected`.
    pub status: String,
    pub notes: String,
    pub created_by: String,
    pub created_at: i64,
}

/// Collects `field: problem` lines; `finish` turns them into one 400.
#[derive(Default)]
pub struct Problems(Vec<String>);

impl Problems {
    pub fn check(&mut self, ok: bool, field: &str, problem: &str) {
        if !ok {
            self.0.push(format!("{field}: {problem}"));
        }
    }

    pub fn finish(self) -> AppResult<()> {
        if self.0.is_empty() { Ok(()) } else { Err(AppError::Validation(self.0)) }
    }
}

pub fn check_status(p: &mut Problems, status: Option<&str>) {
    if let Some(s) = status {
        p.check(STATUSES.contains(&s), "status", "must be one of inbox, assigned, in_progress, quality_review, done");
    }
}

pub fn check_priority(p: &mut Problems, priority: Option<&str>) {
    if let Some(s) = priority {
        p.check(PRIORITIES.contains(&s), "priority", "must be one of critical, high, medium, low");
    }
}

pub fn check_title(p: &mut Problems, title: &str) {
    p.check(!title.is_empty(), "title", "must not be empty");
    p.check(title.chars().count() <= MAX_TITLE_LEN, "title", "must be at most 500 characters");
}

pub fn check_text(p: &mut Problems, field: &str, text: Option<&str>) {
    if let Some(t) = text {
        p.check(t.len() <= MAX_TEXT_LEN, field, "must be at most 100000 characters");
    }
}

pub fn check_assignee(p: &mut Problems, name: Option<&str>) {
    if let Some(n) = name {
        p.check(n.chars().count() <= 100, "assigned_to", "must be at most 100 characters");
    }
}

/// ISO 8601: a date (`2026-12-01`) or a date-time with offset (`2026-12-01T09:00:00Z`).
pub fn check_due_date(p: &mut Problems, due: Option<&str>) {
    if let Some(d) = due {
        let ok = chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok()
            || chrono::DateTime::parse_from_rfc3339(d).is_ok()
            || chrono::NaiveDateTime::parse_from_str(d, "%Y-%m-%dT%H:%M:%S%.f").is_ok();
        p.check(ok, "due_date", "must be an ISO 8601 date or date-time");
    }
}

pub fn check_hours(p: &mut Problems, hours: Option<f64>) {
    if let Some(h) = hours {
        p.check(h.is_finite() && h >= 0.0, "estimated_hours", "must be a non-negative number");
    }
}

pub fn check_tags(p: &mut Problems, tags: Option<&[String]>) {
    if let Some(tags) = tags {
        p.check(tags.len() <= MAX_TAGS, "tags", "at most 50 tags");
        p.check(tags.iter().all(|t| t.chars().count() <= MAX_TAG_LEN), "tags", "each tag at most 100 characters");
    }
}

pub fn check_metadata(p: &mut Problems, metadata: Option<&serde_json::Value>) {
    if let Some(m) = metadata {
        p.check(m.is_object(), "metadata", "must be an object");
    }
}

/// An assignee string: trimmed; empty means unassigned.
pub fn normalize_assignee(name: Option<String>) -> Option<String> {
    name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty())
}

pub fn approval_required(id: u64) -> AppError {
    AppError::Forbidden(format!("Quality approval required for task {id}"))
}
