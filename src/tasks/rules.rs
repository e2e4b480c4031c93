//! Task changes, each inside the caller's ONE write transaction together with what it implies: activity,
//! audit, subscription and notification rows, and the SSE events published after the commit. The HTTP
//! handlers (`api.rs`, `quality.rs`) validate input and call these; so does the demo seeder.

use std::net::IpAddr;

use serde_json::json;

use super::{Comment, Review, Task, approval_required, store};
use crate::activity::{self, NewActivity};
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Principal;
use crate::notifications::{NewNotification, notify};
use crate::store::{StoreError, Tx, now_secs};

/// Who made a change, for audit rows and notifications.
#[derive(Clone)]
pub struct Actor {
    pub principal: Principal,
    pub ip: IpAddr,
}

pub fn not_found(id: u64) -> AppError {
    AppError::NotFound(format!("Task {id} not found"))
}

fn task_json(t: &Task) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or_default()
}

pub fn log_activity(
    tx: &mut Tx,
    actor: &Actor,
    kind: &str,
    task: &Task,
    description: String,
) -> Result<(), StoreError> {
    activity::record(
        tx,
        NewActivity {
            kind,
            entity_type: "task",
            entity_id: Some(task.id),
            actor: &actor.principal.username,
            description,
            data: json!({"title": task.title, "status": task.status, "assigned_to": task.assigned_to}),
        },
    )?;
    Ok(())
}

/// Subscribes and notifies a newly assigned agent, with its audit and activity rows.
fn on_assigned(tx: &mut Tx, actor: &Actor, task: &Task, agent: &str) -> Result<(), StoreError> {
    store::subscribe(tx, task.id, agent)?;
    notify(
        tx,
        NewNotification {
            recipient: agent,
            kind: "task_assigned",
            title: format!("Task assigned: {}", task.title),
            message: format!("{} assigned task #{} \"{}\" to {agent}", actor.principal.username, task.id, task.title),
            source_type: Some("task"),
            source_id: Some(task.id),
        },
    )?;
    let detail = json!({"task_id": task.id, "title": task.title, "assigned_to": agent});
    audit::record(tx, Entry::by(&actor.principal, actor.ip, "task_assigned", detail))?;
    log_activity(tx, actor, "task_assigned", task, format!("Task \"{}\" assigned to {agent}", task.title))
}

/// Everything a change from `old` to `new` implies (both saved already).
pub fn record_update(tx: &mut Tx, actor: &Actor, old: &Task, new: &Task) -> Result<(), StoreError> {
    log_activity(tx, actor, "task_updated", new, format!("Task \"{}\" updated", new.title))?;
    tx.emit("task.updated", task_json(new));
    if old.status != new.status {
        let text = format!("Task \"{}\" moved from {} to {}", new.title, old.status, new.status);
        log_activity(tx, actor, "task_status_changed", new, text)?;
        tx.emit(
            "task.status_changed",
            json!({"id": new.id, "title": new.title, "status": new.status, "previous_status": old.status}),
        );
    }
    if let Some(agent) = new.assigned_to.as_deref().filter(|a| old.assigned_to.as_deref() != Some(*a)) {
        on_assigned(tx, actor, new, agent)?;
    }
    Ok(())
}

/// Moves a task into `done` only with the reviewer's approval.
fn check_gate(tx: &Tx, reviewer: &str, old: &Task, new_status: &str) -> AppResult<()> {
    if new_status == "done" && old.status != "done" && !store::is_approved(tx, old.id, reviewer)? {
        return Err(approval_required(old.id));
    }
    Ok(())
}

/// Creates a validated task (its id is allocated here): 409 `Task title already exists` for a taken
/// title. Audit and activity `task_created`, SSE `task.created`, and the assignment rows.
pub fn create(tx: &mut Tx, actor: &Actor, mut task: Task) -> AppResult<Task> {
    if store::id_by_title(tx, &task.title)?.is_some() {
        return Err(AppError::Conflict("Task title already exists".into()));
    }
    task.id = store::new_task_id(tx)?;
    store::insert(tx, &task)?;
    let detail = json!({"task_id": task.id, "title": task.title});
    audit::record(tx, Entry::by(&actor.principal, actor.ip, "task_created", detail))?;
    log_activity(tx, actor, "task_created", &task, format!("Task \"{}\" created", task.title))?;
    tx.emit("task.created", task_json(&task));
    if let Some(agent) = task.assigned_to.clone() {
        on_assigned(tx, actor, &task, &agent)?;
    }
    Ok(task)
}

/// A validated change to a task; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct TaskChanges {
    pub title: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    /// `Some(None)` unassigns.
    pub assigned_to: Option<Option<String>>,
    /// `Some(None)` clears the due date.
    pub due_date: Option<Option<String>>,
    pub estimated_hours: Option<f64>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<serde_json::Value>,
}

/// Applies a change: 404 for an unknown task, 409 for a title another task has, 403 for a move into
/// `done` without the reviewer's approval.
pub fn update(tx: &mut Tx, actor: &Actor, reviewer: &str, id: u64, changes: TaskChanges) -> AppResult<Task> {
    let old = store::get_task_w(tx, id)?.ok_or_else(|| not_found(id))?;
    let mut new = old.clone();
    if let Some(t) = changes.title {
        if store::id_by_title(tx, &t)?.is_some_and(|other| other != id) {
            return Err(AppError::Conflict("Task title already exists".into()));
        }
        new.title = t;
    }
    if let Some(s) = changes.status {
        check_gate(tx, reviewer, &old, &s)?;
        new.status = s;
    }
    new.description = changes.description.unwrap_or(new.description);
    new.priority = changes.priority.unwrap_or(new.priority);
    if let Some(assignee) = changes.assigned_to {
        new.assigned_to = assignee;
    }
    if let Some(d) = changes.due_date {
        new.due_date = d;
    }
    new.estimated_hours = changes.estimated_hours.or(new.estimated_hours);
    new.tags = changes.tags.unwrap_or(new.tags);
    new.metadata = changes.metadata.unwrap_or(new.metadata);
    new.updated_at = now_secs();
    store::update(tx, &old, &new)?;
    record_update(tx, actor, &old, &new)?;
    Ok(new)
}

/// Moves one task to `status` (a bulk item). Returns false when it already had it.
pub fn move_status(tx: &mut Tx, actor: &Actor, reviewer: &str, id: u64, status: String) -> AppResult<bool> {
    let old = store::get_task_w(tx, id)?.ok_or_else(|| not_found(id))?;
    check_gate(tx, reviewer, &old, &status)?;
    if old.status == status {
        return Ok(false);
    }
    let mut new = old.clone();
    new.status = status;
    new.updated_at = now_secs();
    store::update(tx, &old, &new)?;
    record_update(tx, actor, &old, &new)?;
    Ok(true)
}

/// `@name` mentions in a comment.
pub fn mentions(content: &str) -> Vec<String> {
    let mut names: Vec<String> = content
        .split(|c: char| c.is_whitespace() || ",;:!?()".contains(c))
        .filter_map(|w| w.strip_prefix('@'))
        .map(|n| n.trim_end_matches('.').to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// Adds a comment: `@mentioned` names get a `mention` notification, other subscribers an `info` one;
/// activity `comment_added`.
pub fn add_comment(tx: &mut Tx, actor: &Actor, id: u64, author: &str, content: &str) -> AppResult<Comment> {
    let task = store::get_task_w(tx, id)?.ok_or_else(|| not_found(id))?;
    let comment = store::insert_comment(tx, id, author, content)?;
    let mentioned = mentions(content);
    for name in mentioned.iter().filter(|n| *n != author) {
        notify(
            tx,
            NewNotification {
                recipient: name,
                kind: "mention",
                title: format!("Mentioned on: {}", task.title),
                message: format!("{author} mentioned you on task #{id}: {content}"),
                source_type: Some("comment"),
                source_id: Some(comment.id),
            },
        )?;
    }
    for agent in store::subscribers_w(tx, id)? {
        if agent == author || mentioned.contains(&agent) {
            continue;
        }
        notify(
            tx,
            NewNotification {
                recipient: &agent,
                kind: "info",
                title: format!("New comment on: {}", task.title),
                message: format!("{author} commented on task #{id}: {content}"),
                source_type: Some("comment"),
                source_id: Some(comment.id),
            },
        )?;
    }
    log_activity(tx, actor, "comment_added", &task, format!("{author} commented on \"{}\"", task.title))?;
    Ok(comment)
}

/// A validated quality review.
pub struct ReviewInput {
    pub task_id: u64,
    pub reviewer: String,
    /// `approved` or `rejected`.
    pub status: String,
    pub notes: String,
}

/// Records a review; an approval by `gatekeeper` also moves the task to `done`. Returns the review and
/// the task's status after it.
pub fn review(tx: &mut Tx, actor: &Actor, gatekeeper: &str, new: ReviewInput) -> AppResult<(Review, String)> {
    let task = store::get_task_w(tx, new.task_id)?.ok_or_else(|| not_found(new.task_id))?;
    let review = Review {
        id: store::new_review_id(tx)?,
        task_id: task.id,
        reviewer: new.reviewer,
        status: new.status,
        notes: new.notes,
        created_by: actor.principal.username.clone(),
        created_at: now_secs(),
    };
    store::insert_review(tx, &review)?;
    tx.emit(
        "task.reviewed",
        json!({"id": task.id, "title": task.title, "reviewer": review.reviewer, "status": review.status}),
    );
    let mut status = task.status.clone();
    if review.reviewer == gatekeeper && review.status == "approved" && task.status != "done" {
        let mut done = task.clone();
        done.status = "done".into();
        done.updated_at = now_secs();
        store::update(tx, &task, &done)?;
        record_update(tx, actor, &task, &done)?;
        status = done.status;
    }
    Ok((review, status))
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn finds_mentions() {
        assert_eq!(mentions("hey @builder, ask @scout. thanks @builder"), ["builder", "scout"]);
        assert!(mentions("no mentions @ here").is_empty());
    }
}
