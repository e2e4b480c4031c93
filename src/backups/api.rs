//! `/api/backup` (admin): list, create (10 per hour per admin, one at a time) and delete backups.

use std::time::Duration;

use salvo::prelude::*;
use salvo_oapi::{ToSchema, endpoint};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Backup, BackupActor, backups_dir, create_backup};
use crate::audit::{self, Entry};
use crate::error::{AppError, AppResult};
use crate::http::Json;
use crate::http::rate_limit::{KeyBy, RouteLimit};
use crate::http::{RequireRole, app, client_ip, json_body, require_principal};
use crate::users::Role;

/// Backup creations per admin and hour.
const CREATES_PER_HOUR: u32 = 10;

#[derive(Serialize, ToSchema)]
pub struct BackupList {
    /// Newest first.
    pub backups: Vec<Backup>,
    /// The directory holding the backups.
    pub dir: String,
}

#[derive(Serialize, ToSchema)]
pub struct BackupCreated {
    pub success: bool,
    pub backup: Backup,
}

#[derive(Deserialize, ToSchema)]
pub struct DeleteBackup {
    /// File name: ends with `.db`, no `/` or `..`.
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub success: bool,
}

/// Backups in `$SVC_DATA_DIR/backups`, newest first.
#[endpoint(tags("backups"))]
pub async fn list(depot: &mut Depot) -> AppResult<Json<BackupList>> {
    let state = app(depot)?;
    let dir = backups_dir(&state.config);
    let (backups, dir) = tokio::task::spawn_blocking(move || {
        let backups = super::list(&dir)?;
        let shown = std::fs::canonicalize(&dir).unwrap_or(dir);
        Ok::<_, std::io::Error>((backups, shown.to_string_lossy().into_owned()))
    })
    .await
    .map_err(AppError::internal)?
    .map_err(AppError::internal)?;
    Ok(Json(BackupList { backups, dir }))
}

/// Take a consistent snapshot of the database while the service keeps serving; prunes the oldest
/// beyond `general.backup_retention_count`. 409 while another backup runs, 500 when it fails.
#[endpoint(
    tags("backups"),
    responses((status_code = 409, description = "Another backup is in progress"), (status_code = 500, description = "Backup failed"))
)]
pub async fn create(depot: &mut Depot) -> AppResult<Json<BackupCreated>> {
    let state = app(depot)?;
    let principal = require_principal(depot)?;
    let backup = create_backup(&state, BackupActor::User { principal, ip: client_ip(depot) }).await?;
    Ok(Json(BackupCreated { success: true, backup }))
}

/// Delete a backup by name: 400 for an invalid name, 404 when it does not exist.
#[endpoint(tags("backups"), request_body = DeleteBackup, responses((status_code = 404, description = "No such backup")))]
pub async fn delete(req: &mut Request, depot: &mut Depot) -> AppResult<Json<Deleted>> {
    let state = app(depot)?;
    let who = require_principal(depot)?;
    let ip = client_ip(depot);
    let body: DeleteBackup = json_body(req).await?;
    let dir = backups_dir(&state.config);
    let name = body.name.clone();
    tokio::task::spawn_blocking(move || super::delete(&dir, &name)).await.map_err(AppError::internal)??;
    let name = body.name;
    state
        .write(move |tx| {
            Ok::<_, AppError>(audit::record(tx, Entry::by(&who, ip, "backup_delete", json!({"name": name})))?)
        })
        .await?;
    Ok(Json(Deleted { success: true }))
}

pub fn router() -> Router {
    let limit = RouteLimit::new("backup_create", CREATES_PER_HOUR, Duration::from_secs(3600), KeyBy::Principal);
    Router::with_path("backup")
        .hoop(RequireRole(Role::Admin))
        .push(Router::new().get(list).delete(delete))
        .push(Router::new().hoop(limit).post(create))
}
