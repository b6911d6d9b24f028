//! A dataset's history for those who may change it: its versions, the
//! changes edits recorded (who, when, which feature, before and after),
//! the difference between two versions, and restoring one (a job). The
//! model is `catalog_shared::history`.
use axum::{Json, extract::State, response::Response};
use catalog_shared::{
    AppError,
    db::quote_literal,
    history::{self, VersionKind},
    jobs::{self, JobInput, RestorePayload},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::dataset_record::Dataset;
use crate::{
    access::{Caller, datasets::writable_dataset},
    extract::{Path, Query},
    jobs::{IdempotencyKey, queue_once, respond},
    page::{Limit, Offset},
    state::AppState,
};

/// One version of a dataset.
#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub(super) struct Version {
    version: i32,
    kind: VersionKind,
    created_at: DateTime<Utc>,
    /// Who made it (null once the account is gone).
    created_by: Option<String>,
    /// A restore's source version.
    restored_from: Option<i32>,
    feature_count: i64,
    /// The dataset's version now.
    current: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct VersionList {
    /// Newest first.
    versions: Vec<Version>,
    limit: i64,
    offset: i64,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct HistoryPage {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 50)]
    limit: Limit<50, 200>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

/// The dataset's history, for one who may change it.
async fn dataset_with_history(state: &AppState, caller: &Caller, id: Uuid) -> Result<Dataset, AppError> {
    let dataset = writable_dataset(state, caller, id).await?;
    if dataset.is_registered || dataset.is_raster() {
        return Err(AppError::conflict(
            "only an ingested vector dataset keeps versions; a raster or a registered table has none",
        ));
    }
    Ok(dataset)
}

/// The versions kept of a dataset, newest first (`VERSION_RETENTION_DAYS`
/// decides how far back).
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/versions", tag = "history",
    params(("dataset_id" = Uuid, Path), HistoryPage),
    responses((status = 200, body = VersionList),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster or registered table", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn list_versions(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(page): Query<HistoryPage>,
) -> Result<Json<VersionList>, AppError> {
    dataset_with_history(&state, &caller, id).await?;
    let versions = sqlx::query_as(
        "SELECT v.version, v.kind, v.created_at, u.username AS created_by, v.restored_from, v.feature_count,
                v.version = d.version AS current
         FROM dataset_versions v JOIN datasets d ON d.id = v.dataset_id
         LEFT JOIN users u ON u.id = v.created_by
         WHERE v.dataset_id = $1 ORDER BY v.version DESC LIMIT $2 OFFSET $3",
    )
    .bind(id)
    .bind(page.limit.get())
    .bind(page.offset.get())
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(VersionList {
        versions,
        limit: page.limit.get(),
        offset: page.offset.get(),
    }))
}

/// One feature changed by an edit.
#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub(super) struct Change {
    version: i32,
    feature_id: i64,
    changed_at: DateTime<Utc>,
    changed_by: Option<String>,
    /// The feature before (GeoJSON, CRS84); null: it was added.
    #[schema(value_type = Option<Object>)]
    before: Option<Value>,
    /// The feature after; null: it was removed.
    #[schema(value_type = Option<Object>)]
    after: Option<Value>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct ChangeList {
    /// Newest first.
    changes: Vec<Change>,
    limit: i64,
    offset: i64,
}

/// A stored row (`history::row_json`) as a GeoJSON feature in CRS84.
fn feature_of(row: &str, dataset: &Dataset) -> String {
    let geometry = quote_literal(&dataset.geometry_column);
    let key = quote_literal(&dataset.key_column);
    format!(
        "CASE WHEN {row} IS NULL THEN NULL ELSE jsonb_build_object('type', 'Feature', 'id', {row}->{key},
            'geometry', ST_AsGeoJSON(ST_Transform(({row}->>{geometry})::geometry, 4326))::jsonb,
            'properties', {row} - {key} - {geometry}) END"
    )
}

/// The changes edits made, newest first: who changed which feature when,
/// with the feature before and after.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/changes", tag = "history",
    params(("dataset_id" = Uuid, Path), HistoryPage),
    responses((status = 200, body = ChangeList),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster or registered table", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn list_changes(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(page): Query<HistoryPage>,
) -> Result<Json<ChangeList>, AppError> {
    let dataset = dataset_with_history(&state, &caller, id).await?;
    let sql = format!(
        "SELECT c.version, c.gid AS feature_id, c.changed_at, u.username AS changed_by,
                {} AS before, {} AS after
         FROM feature_changes c LEFT JOIN users u ON u.id = c.changed_by
         WHERE c.dataset_id = $1 ORDER BY c.id DESC LIMIT $2 OFFSET $3",
        feature_of("c.before", &dataset),
        feature_of("c.after", &dataset),
    );
    let changes = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(page.limit.get())
        .bind(page.offset.get())
        .fetch_all(&state.pool)
        .await?;
    Ok(Json(ChangeList {
        changes,
        limit: page.limit.get(),
        offset: page.offset.get(),
    }))
}

/// What changed between two versions, feature by feature.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Diff {
    from: i32,
    to: i32,
    /// Features in `to` and not in `from` (GeoJSON, CRS84).
    #[schema(value_type = Vec<Object>)]
    added: Vec<Value>,
    /// Features in `from` and not in `to`.
    #[schema(value_type = Vec<Object>)]
    removed: Vec<Value>,
    /// Features in both whose geometry or a value differs: `{id, before, after}`.
    #[schema(value_type = Vec<Object>)]
    changed: Vec<Value>,
    /// Whether each list holds every feature, or stopped at `limit`.
    complete: bool,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct DiffQuery {
    /// At most this many features in all three lists together.
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 10000, default = 1000)]
    limit: Limit<1000, 10000>,
}

/// The features added, removed and changed from version `a` to version
/// `b`, by key, comparing every value and the geometry exactly: within one
/// era only the features edits touched between them, across eras (a
/// reupload or restore between them) every feature.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/versions/{a}/diff/{b}", tag = "history",
    params(("dataset_id" = Uuid, Path), ("a" = i32, Path), ("b" = i32, Path), DiffQuery),
    responses((status = 200, body = Diff),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "no such dataset, or a version not kept", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster or registered table", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, a, b)): Path<(Uuid, i32, i32)>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<Diff>, AppError> {
    let dataset = dataset_with_history(&state, &caller, id).await?;
    crate::read_gate::open(&state, &caller, &dataset).await?;
    let mut tx = state.pool.begin().await?;
    let mut state_of = async |version: i32| {
        let (era, source) = history::version_source(&mut tx, id, version)
            .await?
            .ok_or_else(|| AppError::not_found(format!("version {version} of dataset {id} is not kept")))?;
        Ok::<_, AppError>((era, history::state_sql(id, version, era, &source)))
    };
    let ((era_a, from), (era_b, to)) = (state_of(a).await?, state_of(b).await?);
    // Within one era only the features edits between the two versions
    // touched can differ: the comparison reads those (by key) alone.
    let touched = if era_a == era_b {
        format!(
            "WHERE s.gid IN (SELECT gid FROM feature_changes WHERE dataset_id = '{id}' AND version > {} AND version <= {})",
            a.min(b),
            a.max(b)
        )
    } else {
        String::new()
    };
    let json = |alias: &str| history::row_json(alias, &dataset.geometry_column);
    let sql = format!(
        "WITH a AS (SELECT * FROM ({from}) s {touched}), b AS (SELECT * FROM ({to}) s {touched}),
              pairs AS (SELECT coalesce(a.gid, b.gid) AS gid,
                               CASE WHEN a.gid IS NULL THEN NULL ELSE {a_json} END AS before,
                               CASE WHEN b.gid IS NULL THEN NULL ELSE {b_json} END AS after
                        FROM a FULL JOIN b ON a.gid = b.gid)
         SELECT gid, {before}, {after} FROM pairs
         WHERE before IS DISTINCT FROM after ORDER BY gid LIMIT $1",
        a_json = json("a"),
        b_json = json("b"),
        before = feature_of("before", &dataset),
        after = feature_of("after", &dataset),
    );
    let limit = query.limit.get();
    let rows: Vec<(i64, Option<Value>, Option<Value>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(limit + 1)
        .fetch_all(&mut *tx)
        .await?;
    tx.rollback().await?;
    let complete = rows.len() as i64 <= limit;
    let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for (gid, before, after) in rows.into_iter().take(limit as usize) {
        match (before, after) {
            (None, Some(after)) => added.push(after),
            (Some(before), None) => removed.push(before),
            (before, after) => changed.push(serde_json::json!({"id": gid, "before": before, "after": after})),
        }
    }
    Ok(Json(Diff {
        from: a,
        to: b,
        added,
        removed,
        changed,
        complete,
    }))
}

/// Brings back a version exactly (the same features, keys and columns) as
/// a new version, by a job.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/versions/{version}/restore", tag = "history",
    params(("dataset_id" = Uuid, Path), ("version" = i32, Path),
        ("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$",
            description = "a retried request with the same key answers the same job")),
    responses((status = 202, description = "the restore job, queued", body = crate::jobs::JobAccepted),
              (status = 422, description = "the owner's storage quota is full", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "no such dataset, or a version not kept", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster or registered table", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    key: IdempotencyKey,
    Path((id, version)): Path<(Uuid, i32)>,
) -> Result<Response, AppError> {
    let dataset = dataset_with_history(&state, &caller, id).await?;
    let requester = caller.editor()?.id;
    crate::read_gate::open(&state, &caller, &dataset).await?;
    let input = JobInput::Restore(RestorePayload {
        dataset_id: id,
        version,
    });
    let job_id = Uuid::now_v7();
    let keys: Vec<&str> = key.0.iter().map(String::as_str).collect();
    let queued = queue_once(&state, requester, &keys, job_id, |tx| {
        Box::pin(async move {
            if history::version_source(tx, id, version).await?.is_none() {
                return Err(AppError::not_found(format!(
                    "version {version} of dataset {id} is not kept"
                )));
            }
            // The version kept now counts in its owner's storage.
            if let Some(owner) = dataset.created_by {
                crate::quotas::admit(tx, owner, crate::quotas::Demand { bytes: 0, datasets: 0 }).await?;
            }
            jobs::enqueue(tx, job_id, &input, Some(requester)).await?;
            Ok(())
        })
    })
    .await?;
    Ok(respond(&state, queued, job_id))
}
