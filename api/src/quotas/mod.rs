//! Per-user quotas: an admin sets a cap on storage bytes and on datasets
//! (null: unlimited); uploads, URL imports, connector pushes and reuploads
//! past a cap answer 422 naming the quota, its limit and the usage, before
//! anything is queued or fetched. Usage is `catalog_usage()` in the
//! database: table bytes in PostGIS, bytes kept in the object store, and
//! uploads held for unfinished jobs.
use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    quotas::{exceeded, standing},
};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::Caller,
    extract::{Json as JsonBody, Path},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(set_quota))
}

/// A user's caps; null is unlimited, and so is 0, as `quota_usage` shows
/// an unlimited cap as 0.
#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    #[schema(minimum = 0)]
    storage_bytes: Option<i64>,
    #[schema(minimum = 0)]
    dataset_count: Option<i64>,
}

/// Sets a user's quota (admin). Work already accepted is not undone; the
/// next upload, import or push past a cap is refused.
#[utoipa::path(put, path = "/api/admin/users/{user_id}/quota", tag = "admin", params(("user_id" = Uuid, Path)), request_body = Quota,
    responses((status = 200, body = Quota),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn set_quota(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<Uuid>,
    JsonBody(quota): JsonBody<Quota>,
) -> Result<Json<Quota>, AppError> {
    caller.admin()?;
    let quota = Quota {
        storage_bytes: quota.storage_bytes.filter(|v| *v != 0),
        dataset_count: quota.dataset_count.filter(|v| *v != 0),
    };
    for (field, value) in [
        ("storage_bytes", quota.storage_bytes),
        ("dataset_count", quota.dataset_count),
    ] {
        if value.is_some_and(|v| v < 0) {
            return Err(AppError::invalid_field(
                field,
                "must be 0 or more, or null for unlimited",
            ));
        }
    }
    let updated = sqlx::query(
        "UPDATE users SET quota_storage_bytes = $2, quota_dataset_count = $3, updated_at = now() WHERE id = $1",
    )
    .bind(user_id)
    .bind(quota.storage_bytes)
    .bind(quota.dataset_count)
    .execute(&state.pool)
    .await?;
    if updated.rows_affected() == 0 {
        return Err(AppError::not_found(format!("no user {user_id}")));
    }
    Ok(Json(quota))
}

/// What a request would add to its owner's usage.
pub struct Demand {
    /// Bytes it stores (an upload's size; 0 when not known yet).
    pub bytes: u64,
    /// Datasets it may create.
    pub datasets: i64,
}

/// Admits the demand against the owner's quota, or answers the 422 that
/// names the quota, its limit and the usage. Checks of one owner run one
/// at a time (a transaction-scoped lock), and what is admitted counts at
/// once (held upload bytes, queued jobs), so concurrent requests cannot
/// overshoot: at most the last admitted file's real size differs from
/// what it was admitted as.
pub async fn admit(tx: &mut PgConnection, owner: Uuid, demand: Demand) -> Result<(), AppError> {
    let Some(standing) = standing(tx, owner, None).await? else {
        return Ok(());
    };
    if let Some(cap) = standing.count_cap {
        let usage = standing.dataset_count + standing.pending_datasets;
        if demand.datasets > 0 && usage + demand.datasets > cap {
            return Err(refusal("dataset_count", cap, usage, "datasets"));
        }
    }
    if let Some(cap) = standing.storage_cap {
        let usage = standing.bytes_used;
        let wanted = i64::try_from(demand.bytes).unwrap_or(i64::MAX);
        if usage.saturating_add(wanted) > cap || (wanted == 0 && usage >= cap) {
            return Err(refusal("storage", cap, usage, "bytes"));
        }
    }
    Ok(())
}

fn refusal(quota: &str, limit: i64, usage: i64, unit: &str) -> AppError {
    AppError::unprocessable(exceeded(quota, limit, usage, unit))
}

/// Refuses at once, before a body is read or a source fetched, a request
/// whose owner is already at a cap; `admit` decides when it is queued.
pub async fn refuse_when_full(pool: &sqlx::PgPool, owner: Uuid, datasets: i64) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    admit(&mut tx, owner, Demand { bytes: 0, datasets }).await?;
    tx.commit().await?;
    Ok(())
}

/// Counts an admitted upload's bytes against its owner until its job ends.
pub async fn hold_upload(tx: &mut PgConnection, job_id: Uuid, bytes: u64) -> Result<(), AppError> {
    sqlx::query("UPDATE jobs SET upload_bytes = $2 WHERE id = $1")
        .bind(job_id)
        .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await?;
    Ok(())
}
