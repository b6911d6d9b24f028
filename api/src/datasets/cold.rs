//! Archiving a dataset (admin): a job moves its table into the object
//! store; a read brings it back through `read_gate`.
use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, datasets::StorageTier};
use uuid::Uuid;

use crate::dataset_record::Dataset;
use crate::{
    access::{Caller, datasets::visible_dataset},
    extract::Path,
    jobs::{JobAccepted, accepted},
    read_gate::{Move, queue_move},
    state::AppState,
};

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
    if dataset.storage == StorageTier::Cold {
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
    match queue_move(&state, id, StorageTier::Cold, Some(admin)).await? {
        Move::Job(job_id) => Ok(accepted(&state, job_id).into_response()),
        // Archived since the record above was read.
        Move::Done => Ok(Json(visible_dataset(&state, &caller, id).await?).into_response()),
    }
}
