//! `format=pmtiles` on the download route (decisions: Generalized tiles):
//! the dataset's vector pyramid, zoom 0 to its complete zoom, as one
//! PMTiles v3 archive a `tile_archive` job makes once per data version
//! into the object store. While it is made the answer is 202 with the job;
//! then the archive, with byte ranges and a strong entity tag, so a
//! static host's reader (`pmtiles`, MapLibre's PMTiles protocol) reads it
//! in place.
use axum::{extract::Request, response::Response};
use catalog_shared::{
    AppError,
    jobs::{self, DatasetPayload, JobInput, JobKind, JobStatus},
};
use serde_json::json;
use uuid::Uuid;

use super::{download::serve, export_cache::Key};
use crate::{access::Caller, dataset_record::Dataset, state::AppState};

pub use catalog_shared::tile_sql::ARCHIVE_FORMAT as FORMAT;
const MEDIA_TYPE: &str = "application/vnd.pmtiles";
/// How soon a client should ask again while the archive is made.
const RETRY_AFTER_SECS: u64 = 5;

pub(super) async fn download(
    state: &AppState,
    caller: &Caller,
    dataset: &Dataset,
    stem: &str,
    request: Request,
) -> Result<Response, AppError> {
    if dataset.complete_zoom.is_none() {
        return Err(AppError::conflict(format!(
            "dataset {} is not generalized (a registered table, or one loaded before 0.3), so it has no tile \
             pyramid to archive: reupload it first",
            dataset.id
        )));
    }
    // An archived dataset comes back first (202 with its rehydration).
    crate::read_gate::open(state, caller, dataset).await?;
    let object = state.storage.tile_archive(dataset.id, dataset.data_version);
    let key = Key {
        digest: format!("pmtiles-{}-v{}", dataset.id, dataset.data_version),
        object,
    };
    if let Some(kept) = super::export_cache::find(&state.storage, &key).await? {
        return serve(
            &kept.file,
            request,
            MEDIA_TYPE,
            &format!("{stem}.pmtiles"),
            Some((&key, kept.made)),
        )
        .await;
    }
    let job_id = queue(state, dataset.id, caller.user_id()).await?;
    Err(AppError::accepted(
        json!({"status": "building", "job_id": job_id, "data_version": dataset.data_version}),
        RETRY_AFTER_SECS,
    ))
}

/// The unfinished tile archive job of the dataset, queued now if there is
/// none; callers wait for each other on a lock, so one job is queued
/// however many ask at once. A job queued for an older data version makes
/// the archive of the version it reads, and the next request queues
/// another.
async fn queue(state: &AppState, dataset_id: Uuid, created_by: Option<Uuid>) -> Result<Uuid, AppError> {
    let mut tx = state.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog_tile_archive'), hashtext($1::text))")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    let running: Option<Uuid> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE kind = $1 AND dataset_id = $2 AND status = ANY($3) LIMIT 1")
            .bind(JobKind::TileArchive)
            .bind(dataset_id)
            .bind(JobStatus::UNFINISHED)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some(job_id) = running {
        return Ok(job_id);
    }
    let job_id = Uuid::now_v7();
    jobs::enqueue(
        &mut tx,
        job_id,
        &JobInput::TileArchive(DatasetPayload { dataset_id }),
        created_by,
    )
    .await?;
    tx.commit().await?;
    Ok(job_id)
}
