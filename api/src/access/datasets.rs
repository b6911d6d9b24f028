//! A dataset as the caller may use it: each function loads what the
//! decision depends on (the record and the caller's grant) and asks the one
//! rule, `policy::dataset_decision`.
use std::sync::Arc;

use catalog_shared::{AppError, auth::Permission, datasets::PublicationStatus};
use uuid::Uuid;

use super::{
    Caller,
    policy::{DatasetAction, DatasetFacts, dataset_decision, read_needs_grant},
};
use crate::{
    dataset_record::{DATASET_COLUMNS, Dataset},
    state::AppState,
};

fn facts(dataset: &Dataset, grant: Option<Permission>) -> DatasetFacts {
    DatasetFacts {
        id: dataset.id,
        owner: dataset.created_by,
        visibility: dataset.visibility,
        published: dataset.status == PublicationStatus::Ready,
        grant,
    }
}

#[derive(sqlx::FromRow)]
struct DatasetWithGrant {
    #[sqlx(flatten)]
    dataset: Dataset,
    caller_grant: Option<Permission>,
}

/// The dataset, read fresh from the database, when the caller may take
/// the action on it; 404 when it may not even see it.
pub async fn dataset_for(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    action: DatasetAction,
) -> Result<Dataset, AppError> {
    let sql = format!(
        "SELECT {DATASET_COLUMNS},
            (SELECT g.permission FROM dataset_grants g WHERE g.dataset_id = datasets.id AND g.user_id = $2) AS caller_grant
         FROM datasets WHERE id = $1"
    );
    let found: DatasetWithGrant = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(caller.user_id())
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no dataset {id}")))?;
    let grant = found.caller_grant;
    dataset_decision(caller, &facts(&found.dataset, grant), action)?;
    Ok(found.dataset)
}

/// The dataset when the caller may see it, or when a capability the
/// request was served under covers it; 404 otherwise.
pub async fn visible_dataset(state: &AppState, caller: &Caller, id: Uuid) -> Result<Dataset, AppError> {
    dataset_for(state, caller, id, DatasetAction::Read).await
}

/// The dataset whose file (a raster's COG, a vector export) the caller
/// may download without a download token: read access, as on every other
/// route, through the caller's own credential, a signed asset link, or,
/// for anyone, data everyone may read. An anonymous caller refused is
/// asked for a credential (401) whether or not the dataset exists, so the
/// answer tells nothing of what exists.
pub async fn downloadable_dataset(state: &AppState, caller: &Caller, id: Uuid) -> Result<Dataset, AppError> {
    let anonymous = caller.user().is_none() && caller.capability.is_none();
    visible_dataset(state, caller, id).await.map_err(|refusal| {
        if anonymous && refusal.status().as_u16() == 404 {
            AppError::unauthorized(format!(
                "a credential is required: a download token (POST /api/auth/download-token/{id}, then ?token=), \
                 a signed asset link, an API key or a bearer token"
            ))
        } else {
            refusal
        }
    })
}

/// The dataset, when the caller may change it: an admin, or an editor who
/// owns it or holds a write grant; 404 when it may not even see it.
pub async fn writable_dataset(state: &AppState, caller: &Caller, id: Uuid) -> Result<Dataset, AppError> {
    dataset_for(state, caller, id, DatasetAction::Write).await
}

/// The dataset behind an OGC collection id; 404 naming the collection for
/// anything the caller may not see. Served from the minute-long cache.
pub async fn visible_collection(state: &AppState, caller: &Caller, id: &str) -> Result<Arc<Dataset>, AppError> {
    let missing = || AppError::not_found(format!("no collection {id}"));
    let uuid: Uuid = id.parse().map_err(|_| missing())?;
    cached_visible_dataset(state, caller, uuid)
        .await
        .map_err(|e| if e.status().as_u16() == 404 { missing() } else { e })
}

/// The dataset for the hot read routes (items, tiles), from the minute
/// cache; the caller's grant is looked up only when the decision needs it.
pub async fn cached_visible_dataset(state: &AppState, caller: &Caller, id: Uuid) -> Result<Arc<Dataset>, AppError> {
    let dataset = state.datasets.dataset(state.db.catalog_reader().pool, id).await?;
    let grant = if read_needs_grant(caller, dataset.created_by, dataset.visibility) {
        let permission: Option<Permission> =
            sqlx::query_scalar("SELECT permission FROM dataset_grants WHERE dataset_id = $1 AND user_id = $2")
                .bind(id)
                .bind(caller.user_id())
                .fetch_optional(&state.pool)
                .await?;
        permission
    } else {
        None
    };
    dataset_decision(caller, &facts(&dataset, grant), DatasetAction::Read)?;
    Ok(dataset)
}
