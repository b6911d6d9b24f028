//! Cold datasets from the API's side: an admin archives a dataset (a job
//! moves its table into the object store), and a read of a cold dataset's
//! data answers 202 with the one rehydrate job that brings it back, however
//! many readers (and API processes) ask at once.
use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    jobs::{self, DatasetPayload, JobInput, JobKind, JobStatus},
};
use serde_json::json;
use uuid::Uuid;

use super::record::Dataset;
use crate::{
    access::{Caller, datasets::visible_dataset},
    extract::Path,
    jobs::{JobAccepted, accepted},
    state::AppState,
};

/// How long a reader of a cold dataset is asked to wait before retrying.
const RETRY_AFTER_SECS: u64 = 5;

/// Moves a dataset's table into the object store (admin): 202 with the
/// archive job, or 200 with the record when it is already cold. Catalog
/// row, grants, maps, records and signed links stay.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/archive", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    responses((status = 202, body = JobAccepted), (status = 200, body = Dataset),
              (status = 409, description = "a registered table is read in place", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn archive(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Response, AppError> {
    let admin = caller.admin()?.id;
    let dataset = visible_dataset(&state, &caller, id).await?;
    if dataset.storage == "cold" {
        return Ok(Json(dataset).into_response());
    }
    if dataset.is_registered {
        return Err(AppError::conflict(
            "this dataset is a registered table, read in place; it cannot be archived",
        ));
    }
    if dataset.is_raster() {
        return Err(AppError::conflict(
            "this dataset is a raster, already a file in the object store; only tables are archived",
        ));
    }
    let job_id = queue_move(&state, id, JobKind::Archive, Some(admin)).await?;
    Ok(accepted(&state, job_id).into_response())
}

/// Nothing when the dataset's table is in PostGIS; otherwise the 202
/// `{status: "rehydrating", job_id}` (with `Retry-After`) of the job that
/// brings it back, queued by the first reader to ask. Call it after the
/// access check, so a caller who may not read the dataset starts nothing.
///
/// A raster dataset has no features: reads of features answer 422.
pub async fn ensure_hot(state: &AppState, caller: &Caller, dataset: &Dataset) -> Result<(), AppError> {
    if dataset.is_raster() {
        return Err(AppError::unprocessable(format!(
            "dataset {} is a raster: it has no features; read it as raster tiles (/api/tiles/{}/{{z}}/{{x}}/{{y}}.png) or download it",
            dataset.id, dataset.id
        )));
    }
    if dataset.storage != "cold" {
        if state.reads.due(dataset.id) {
            record_read(state, dataset.id).await?;
        }
        return Ok(());
    }
    Err(rehydrating(state, caller, dataset.id).await)
}

/// Notes that the dataset's data was read (for `ARCHIVE_AFTER_IDLE_DAYS`).
async fn record_read(state: &AppState, dataset_id: Uuid) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO dataset_reads (dataset_id, last_read_at) VALUES ($1, now())
         ON CONFLICT (dataset_id) DO UPDATE SET last_read_at = now()",
    )
    .bind(dataset_id)
    .execute(&state.pool)
    .await?;
    Ok(())
}

/// The 202 answer of a read of a cold dataset the caller may read, its
/// rehydrate job queued if none runs yet.
pub async fn rehydrating(state: &AppState, caller: &Caller, dataset_id: Uuid) -> AppError {
    match queue_move(state, dataset_id, JobKind::Rehydrate, caller.user_id()).await {
        Ok(job_id) => AppError::accepted(json!({"status": "rehydrating", "job_id": job_id}), RETRY_AFTER_SECS),
        Err(e) => e,
    }
}

/// The unfinished archive or rehydrate job of the dataset, queued now if
/// there is none. Callers wait for each other on a lock of their own, so
/// one job is queued however many ask at once.
async fn queue_move(
    state: &AppState,
    dataset_id: Uuid,
    kind: JobKind,
    created_by: Option<Uuid>,
) -> Result<Uuid, AppError> {
    let mut tx = state.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog_dataset_move'), hashtext($1::text))")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    let running: Option<Uuid> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE kind = $1 AND dataset_id = $2 AND status = ANY($3) LIMIT 1")
            .bind(kind)
            .bind(dataset_id)
            .bind(JobStatus::UNFINISHED)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some(job_id) = running {
        return Ok(job_id);
    }
    let job_id = Uuid::now_v7();
    let payload = DatasetPayload { dataset_id };
    let input = match kind {
        JobKind::Archive => JobInput::Archive(payload),
        _ => JobInput::Rehydrate(payload),
    };
    jobs::enqueue(&mut tx, job_id, &input, created_by).await?;
    tx.commit().await?;
    Ok(job_id)
}
