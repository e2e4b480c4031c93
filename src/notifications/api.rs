//! `/api/notifications`: list, mark read (viewer, own only unless admin), delete (admin).

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};

use super::Notification;
use super::store::{self, Filter};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::extract::query_opt;
use crate::http::{Page, Principal, RequireRole, app, json_body, require_principal};
use crate::store::now_secs;
use crate::users::Role;

#[derive(Serialize, ToSchema)]
pub struct NotificationPage {
    pub notifications: Vec<Notification>,
    pub total: usize,
    #[serde(rename = "unreadCount")]
    pub unread_count: u64,
}

/// A non-admin only ever sees their own notifications.
fn effective_recipient(who: &Principal, asked: Option<String>) -> Option<String> {
    if who.role == Role::Admin { asked } else { Some(who.username.clone()) }
}

/// Notifications, newest first. Viewers see their own; admins all (or `recipient`'s).
#[endpoint(
    tags("notifications"),
    parameters(
        ("recipient" = Option<String>, Query, description = "admins only; others always see their own"),
        ("unread_only" = Option<bool>, Query, description = "only unread"),
        ("type" = Option<String>, Query, description = "notification type"),
        ("limit" = Option<u32>, Query, description = "default 50, max 200"),
        ("offset" = Option<u32>, Query, description = "default 0"),
    )
)]
pub async fn list(req: &mut Request, depot: &mut Depot) -> AppResult<Json<NotificationPage>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let page = Page::from_query(req, 50, 200)?;
    let unread_only = query_opt::<bool>(req, "unread_only", "must be true or false")?.unwrap_or(false);
    let text = |name: &str| req.queries().get(name).filter(|s| !s.is_empty()).cloned();
    let filter = Filter { recipient: effective_recipient(&who, text("recipient")), unread_only, kind: text("type") };
    let (notifications, total, unread_count) =
        state.store.read(move |tx| store::list(tx, &filter, page.limit, page.offset)).await?;
    Ok(Json(NotificationPage { notifications, total, unread_count }))
}

#[derive(Deserialize, ToSchema)]
pub struct MarkRead {
    pub ids: Option<Vec<u64>>,
    pub recipient: Option<String>,
    #[serde(rename = "markAllRead", default)]
    pub mark_all_read: bool,
}

#[derive(Serialize, ToSchema)]
pub struct MarkReadResult {
    pub success: bool,
    #[serde(rename = "markedAsRead")]
    pub marked_as_read: usize,
}

/// Mark notifications read: `{ids}` or `{recipient, markAllRead: true}`. Viewer (own only unless admin).
#[endpoint(tags("notifications"), request_body = MarkRead)]
pub async fn mark_read(req: &mut Request, depot: &mut Depot) -> AppResult<Json<MarkReadResult>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let body: MarkRead = json_body(req).await?;
    let owner = (who.role != Role::Admin).then(|| who.username.clone());
    let marked = match (body.ids, body.mark_all_read) {
        (Some(ids), false) => {
            state.write(move |tx| Ok(store::mark_read(tx, &ids, owner.as_deref(), now_secs())?)).await?
        }
        (None, true) => {
            let recipient = effective_recipient(&who, body.recipient)
                .ok_or_else(|| AppError::validation("recipient", "is required with markAllRead"))?;
            state
                .write(move |tx| {
                    let ids = store::unread_ids(tx, &recipient)?;
                    Ok(store::mark_read(tx, &ids, None, now_secs())?)
                })
                .await?
        }
        _ => return Err(AppError::validation("ids", "give either ids or markAllRead: true")),
    };
    Ok(Json(MarkReadResult { success: true, marked_as_read: marked }))
}

#[derive(Deserialize, ToSchema)]
pub struct DeleteNotifications {
    pub ids: Vec<u64>,
}

#[derive(Serialize, ToSchema)]
pub struct DeleteResult {
    pub success: bool,
    pub deleted: usize,
}

/// Delete notifications by id. Admin.
#[endpoint(tags("notifications"), request_body = DeleteNotifications)]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<DeleteResult>> {
    let state = app(depot)?;
    let body: DeleteNotifications = json_body(req).await?;
    let deleted = state.write(move |tx| Ok(store::delete(tx, &body.ids)?)).await?;
    Ok(Json(DeleteResult { success: true, deleted }))
}

pub fn router() -> Router {
    Router::with_path("notifications")
        .push(Router::new().hoop(RequireRole(Role::Viewer)).get(list).put(mark_read))
        .push(Router::new().hoop(RequireRole(Role::Admin)).delete(delete))
}
