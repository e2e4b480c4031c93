//! `/api/tasks`: CRUD, bulk status moves, comments and broadcast. Every change writes its activity,
//! audit, notification and subscription rows in the same transaction, then announces SSE events.

use std::time::Duration;

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::rules::{self, Actor, TaskChanges, log_activity, not_found};
use super::store::{self, Filter};
use super::{
    Comment, Problems, Task, check_assignee, check_due_date, check_hours, check_metadata, check_priority, check_status,
    check_tags, check_text, check_title, normalize_assignee,
};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::Success;
use crate::http::extract::optional_json_body;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{Page, RequireRole, app, client_ip, json_body, path_id, require_principal};
use crate::store::now_secs;
use crate::users::Role;

/// Task creates and updates per principal and minute (the interface's mutation limit).
const MUTATIONS_PER_MINUTE: u32 = 120;

#[derive(Serialize, ToSchema)]
pub struct TaskEnvelope {
    pub task: Task,
}

#[derive(Serialize, ToSchema)]
pub struct TaskPage {
    pub tasks: Vec<Task>,
    pub total: usize,
    pub page: usize,
    pub limit: usize,
}

/// Tasks, newest first, filtered by status, assignee and priority.
#[endpoint(
    tags("tasks"),
    parameters(
        ("status" = Option<String>, Query, description = "inbox, assigned, in_progress, quality_review, done"),
        ("assigned_to" = Option<String>, Query, description = "agent name"),
        ("priority" = Option<String>, Query, description = "critical, high, medium, low"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
        ("offset" = Option<u32>, Query, description = "default 0"),
    )
)]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TaskPage>> {
    let state = app(depot)?;
    let page = Page::from_query(req, 50, 200)?;
    let text = |name: &str| req.queries().get(name).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let filter = Filter { status: text("status"), assigned_to: text("assigned_to"), priority: text("priority") };
    let mut p = Problems::default();
    check_status(&mut p, filter.status.as_deref());
    check_priority(&mut p, filter.priority.as_deref());
    p.finish()?;
    let (tasks, total) = state.store.read_now(|tx| store::list(tx, &filter, page.limit, page.offset))?;
    Ok(Json(TaskPage { tasks, total, page: page.page(), limit: page.limit }))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateTask {
    pub title: String,
    pub description: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    pub assigned_to: Option<String>,
    pub created_by: Option<String>,
    pub due_date: Option<String>,
    pub estimated_hours: Option<f64>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<serde_json::Value>,
}

/// Create a task (status defaults to inbox, priority to medium). Operator.
#[endpoint(tags("tasks"), request_body = CreateTask)]
pub async fn create(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TaskEnvelope>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let body: CreateTask = json_body(req).await?;
    let title = body.title.trim().to_string();
    let mut p = Problems::default();
    check_title(&mut p, &title);
    check_text(&mut p, "description", body.description.as_deref());
    check_status(&mut p, body.status.as_deref());
    p.check(
        body.status.as_deref() != Some("done"),
        "status",
        "a new task cannot start as done (it needs quality approval)",
    );
    check_priority(&mut p, body.priority.as_deref());
    check_assignee(&mut p, body.assigned_to.as_deref());
    check_due_date(&mut p, body.due_date.as_deref());
    check_hours(&mut p, body.estimated_hours);
    check_tags(&mut p, body.tags.as_deref());
    check_metadata(&mut p, body.metadata.as_ref());
    p.finish()?;
    let now = now_secs();
    let created_by = body
        .created_by
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| actor.principal.username.clone());
    let task = Task {
        id: 0,
        title,
        description: body.description.unwrap_or_default(),
        status: body.status.unwrap_or_else(|| "inbox".into()),
        priority: body.priority.unwrap_or_else(|| "medium".into()),
        assigned_to: normalize_assignee(body.assigned_to),
        created_by,
        due_date: body.due_date,
        estimated_hours: body.estimated_hours,
        tags: body.tags.unwrap_or_default(),
        metadata: body.metadata.unwrap_or_else(|| json!({})),
        created_at: now,
        updated_at: now,
    };
    let task = state.write(move |tx| rules::create(tx, &actor, task)).await?;
    Ok(Json(TaskEnvelope { task }))
}

/// One task.
#[endpoint(tags("tasks"), parameters(("id" = u64, Path, description = "task id")))]
pub async fn get(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TaskEnvelope>> {
    let state = app(depot)?;
    let id = path_id(req, "id")?;
    let task = state.store.read_now(|tx| store::get_task(tx, id))?.ok_or_else(|| not_found(id))?;
    Ok(Json(TaskEnvelope { task }))
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateTask {
    pub title: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    /// An empty string unassigns.
    pub assigned_to: Option<String>,
    pub due_date: Option<String>,
    pub estimated_hours: Option<f64>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<serde_json::Value>,
}

/// Update a task; moving it to `done` needs quality approval. Operator.
#[endpoint(tags("tasks"), request_body = UpdateTask, parameters(("id" = u64, Path, description = "task id")))]
pub async fn update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<TaskEnvelope>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let id = path_id(req, "id")?;
    let body: UpdateTask = json_body(req).await?;
    let title = body.title.map(|t| t.trim().to_string());
    let mut p = Problems::default();
    if let Some(t) = &title {
        check_title(&mut p, t);
    }
    check_text(&mut p, "description", body.description.as_deref());
    check_status(&mut p, body.status.as_deref());
    check_priority(&mut p, body.priority.as_deref());
    check_assignee(&mut p, body.assigned_to.as_deref());
    check_due_date(&mut p, body.due_date.as_deref().filter(|d| !d.is_empty()));
    check_hours(&mut p, body.estimated_hours);
    check_tags(&mut p, body.tags.as_deref());
    check_metadata(&mut p, body.metadata.as_ref());
    p.finish()?;
    let nothing = title.is_none()
        && body.description.is_none()
        && body.status.is_none()
        && body.priority.is_none()
        && body.assigned_to.is_none()
        && body.due_date.is_none()
        && body.estimated_hours.is_none()
        && body.tags.is_none()
        && body.metadata.is_none();
    if nothing {
        return Err(AppError::BadRequest("No fields to update".into()));
    }
    let changes = TaskChanges {
        title,
        description: body.description,
        status: body.status,
        priority: body.priority,
        assigned_to: body.assigned_to.map(|a| normalize_assignee(Some(a))),
        due_date: body.due_date.map(|d| (!d.is_empty()).then_some(d)),
        estimated_hours: body.estimated_hours,
        tags: body.tags,
        metadata: body.metadata,
    };
    let reviewer = state.config.quality_reviewer.clone();
    let task = state.write(move |tx| rules::update(tx, &actor, &reviewer, id, changes)).await?;
    Ok(Json(TaskEnvelope { task }))
}

#[derive(Deserialize, ToSchema)]
pub struct BulkItem {
    pub id: u64,
    pub status: String,
}

#[derive(Deserialize, ToSchema)]
pub struct BulkUpdate {
    pub tasks: Vec<BulkItem>,
}

#[derive(Serialize, ToSchema)]
pub struct BulkResult {
    pub success: bool,
    pub updated: usize,
}

/// Move several tasks at once (all or nothing). Operator.
#[endpoint(tags("tasks"), request_body = BulkUpdate)]
pub async fn bulk_update(req: &mut Request, depot: &mut Depot) -> AppResult<Json<BulkResult>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let body: BulkUpdate = json_body(req).await?;
    let mut p = Problems::default();
    p.check(!body.tasks.is_empty(), "tasks", "must not be empty");
    p.check(body.tasks.len() <= 200, "tasks", "at most 200 per request");
    for item in &body.tasks {
        check_status(&mut p, Some(&item.status));
    }
    p.finish()?;
    let reviewer = state.config.quality_reviewer.clone();
    let updated = state
        .write(move |tx| {
            let mut updated = 0;
            for item in body.tasks {
                if rules::move_status(tx, &actor, &reviewer, item.id, item.status)? {
                    updated += 1;
                }
            }
            Ok(updated)
        })
        .await?;
    Ok(Json(BulkResult { success: true, updated }))
}

/// Delete a task with its comments and reviews. Operators may delete their own tasks, admins any.
#[endpoint(tags("tasks"), parameters(("id" = u64, Path, description = "task id")))]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Success>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let id = path_id(req, "id")?;
    state
        .write(move |tx| {
            let task = store::get_task_w(tx, id)?.ok_or_else(|| not_found(id))?;
            if actor.principal.role < Role::Admin && task.created_by != actor.principal.username {
                return Err(AppError::Forbidden("Requires admin role or higher".into()));
            }
            store::delete(tx, &task)?;
            log_activity(tx, &actor, "task_deleted", &task, format!("Task \"{}\" deleted", task.title))?;
            tx.emit("task.deleted", json!({"id": task.id, "title": task.title}));
            Ok(())
        })
        .await?;
    Ok(Json(Success::ok()))
}

#[derive(Serialize, ToSchema)]
pub struct CommentList {
    pub comments: Vec<Comment>,
}

/// A task's comments, oldest first.
#[endpoint(tags("tasks"), parameters(("id" = u64, Path, description = "task id")))]
pub async fn list_comments(req: &mut Request, depot: &mut Depot) -> AppResult<Json<CommentList>> {
    let state = app(depot)?;
    let id = path_id(req, "id")?;
    let comments = state
        .store
        .read(move |tx| {
            store::get_task(tx, id)?.ok_or_else(|| not_found(id))?;
            Ok::<_, AppError>(store::comments(tx, id)?)
        })
        .await?;
    Ok(Json(CommentList { comments }))
}

#[derive(Deserialize, ToSchema)]
pub struct NewComment {
    pub content: String,
    /// Defaults to the signed-in user.
    pub author: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CommentEnvelope {
    pub comment: Comment,
}

/// Comment on a task; subscribers and `@mentioned` names are notified. Operator.
#[endpoint(tags("tasks"), request_body = NewComment, parameters(("id" = u64, Path, description = "task id")))]
pub async fn add_comment(req: &mut Request, depot: &mut Depot) -> AppResult<Json<CommentEnvelope>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let id = path_id(req, "id")?;
    let body: NewComment = json_body(req).await?;
    let content = body.content.trim().to_string();
    let mut p = Problems::default();
    p.check(!content.is_empty(), "content", "must not be empty");
    check_text(&mut p, "content", Some(&content));
    p.finish()?;
    let author = body
        .author
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| actor.principal.username.clone());
    let comment = state.write(move |tx| rules::add_comment(tx, &actor, id, &author, &content)).await?;
    Ok(Json(CommentEnvelope { comment }))
}

#[derive(Deserialize, ToSchema)]
pub struct Broadcast {
    /// Agent names; empty or absent means every subscriber of the task plus its assignee.
    pub agents: Option<Vec<String>>,
    pub message: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct BroadcastResult {
    pub success: bool,
    pub delivered_to: Vec<String>,
}

/// Send a message about a task to agents (type `broadcast`, from the caller). Operator.
#[endpoint(tags("tasks"), request_body = Broadcast, parameters(("id" = u64, Path, description = "task id")))]
pub async fn broadcast(req: &mut Request, depot: &mut Depot) -> AppResult<Json<BroadcastResult>> {
    let state = app(depot)?;
    let actor = Actor { principal: require_principal(depot)?, ip: client_ip(depot) };
    let id = path_id(req, "id")?;
    let body: Broadcast = optional_json_body(req).await?;
    let mut p = Problems::default();
    check_text(&mut p, "message", body.message.as_deref());
    p.check(body.agents.as_ref().is_none_or(|a| a.len() <= 200), "agents", "at most 200 names");
    p.finish()?;
    let delivered_to = state
        .write(move |tx| {
            let task = store::get_task_w(tx, id)?.ok_or_else(|| not_found(id))?;
            let message = body
                .message
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| format!("Update on task #{}: {} ({})", task.id, task.title, task.status));
            let named: Vec<String> =
                body.agents.unwrap_or_default().into_iter().map(|a| a.trim().to_string()).collect();
            let explicit = !named.is_empty();
            let mut recipients = if explicit { named } else { store::subscribers_w(tx, id)? };
            if !explicit && let Some(a) = &task.assigned_to {
                recipients.push(a.clone());
            }
            let mut seen = std::collections::HashSet::new();
            recipients.retain(|r| !r.is_empty() && seen.insert(r.clone()));
            let mut delivered = Vec::new();
            for name in recipients {
                // Named recipients must exist (404); implicit ones that are not registered agents are skipped.
                if !explicit && crate::agents::find_by_name_w(tx, &name)?.is_none() {
                    continue;
                }
                crate::agents::insert_message(tx, &actor.principal.username, &name, &message, "broadcast")?;
                delivered.push(name);
            }
            let text = format!("Task \"{}\" broadcast to {} agent(s)", task.title, delivered.len());
            log_activity(tx, &actor, "task_broadcast", &task, text)?;
            Ok(delivered)
        })
        .await?;
    Ok(Json(BroadcastResult { success: true, delivered_to }))
}

pub fn router() -> Router {
    let mutation_limit =
        || RouteLimit::new("task_mutations", MUTATIONS_PER_MINUTE, Duration::from_secs(60), KeyBy::Principal);
    Router::with_path("tasks")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list))
        .push(Router::new().hoop(RequireRole(Role::Operator)).hoop(mutation_limit()).post(create).put(bulk_update))
        .push(
            Router::with_path("{id}")
                .push(Router::new().hoop(RequireRole(Role::Viewer)).get(get))
                .push(Router::new().hoop(RequireRole(Role::Operator)).hoop(mutation_limit()).put(update))
                .push(Router::new().hoop(RequireRole(Role::Operator)).delete(delete))
                .push(Router::with_path("broadcast").hoop(RequireRole(Role::Operator)).post(broadcast))
                .push(
                    Router::with_path("comments")
                        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list_comments))
                        .push(Router::new().hoop(RequireRole(Role::Operator)).post(add_comment)),
                ),
        )
}
