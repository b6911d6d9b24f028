//! Datasets: the catalog records (list, read, edit, delete) here; new data
//! as queued jobs in `upload`; grants in `grants`.
use axum::{
    Json,
    extract::{DefaultBodyLimit, State},
    http::StatusCode,
};
use catalog_shared::{
    AppError,
    datasets::{DatasetVisibility, PublicationStatus},
};
use serde::{Deserialize, Serialize};
use utoipa_axum::{
    router::{OpenApiRouter, UtoipaMethodRouterExt},
    routes,
};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{
        Caller,
        datasets::{visible_dataset, writable_dataset},
        policy::visible_to_caller,
    },
    extract::{Json as JsonBody, Path, Query},
    state::AppState,
};

pub mod cold;
mod download;
mod export_cache;
mod geoparquet;
mod grants;
mod history;
mod picture;
mod quarantine;
mod styles;
mod summary;
mod tile_archive;
mod upload;

use crate::dataset_record::{
    ATTRIBUTION_MAX, DATASET_COLUMNS, Dataset, LICENSE_MAX, SUMMARY_MAX, TITLE_MAX, check_text,
};

pub fn routes(max_upload_bytes: u64) -> OpenApiRouter<AppState> {
    // Multipart framing adds a little to the file itself.
    let body_limit = usize::try_from(max_upload_bytes.saturating_add(1 << 20)).unwrap_or(usize::MAX);
    OpenApiRouter::new()
        .routes(routes!(upload::upload).layer(DefaultBodyLimit::max(body_limit)))
        .routes(routes!(upload::load_previewed))
        .routes(routes!(upload::reupload).layer(DefaultBodyLimit::max(body_limit)))
        .routes(routes!(upload::import_url))
        .routes(routes!(cold::archive))
        .routes(routes!(download::download))
        .routes(routes!(list_datasets))
        .routes(routes!(get_dataset, update_dataset, delete_dataset))
        .routes(routes!(grants::list_grants, grants::grant_by_username))
        .routes(routes!(grants::put_grant, grants::delete_grant))
        .routes(routes!(history::list_versions))
        .routes(routes!(history::list_changes))
        .routes(routes!(history::diff))
        .routes(routes!(history::restore))
        .routes(routes!(quarantine::quarantined_rows))
        .routes(routes!(styles::list_styles))
        .routes(routes!(styles::style_file))
        .routes(routes!(summary::column_summary))
        .routes(routes!(picture::dataset_thumbnail))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct DatasetListQuery {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000, default = 100)]
    limit: Limit<100, 1000>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

#[derive(Serialize, utoipa::ToSchema)]
struct DatasetList {
    datasets: Vec<Dataset>,
    total: i64,
    limit: i64,
    offset: i64,
}

/// Datasets the caller may see, newest first.
#[utoipa::path(get, path = "/api/datasets", tag = "datasets", params(DatasetListQuery), responses((status = 200, body = DatasetList)))]
async fn list_datasets(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<DatasetListQuery>,
) -> Result<Json<DatasetList>, AppError> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let visible = visible_to_caller("datasets");
    let sql = format!(
        "SELECT {DATASET_COLUMNS} FROM datasets WHERE {visible}
         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
    );
    let datasets: Vec<Dataset> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(limit)
        .bind(offset)
        .fetch_all(&state.pool)
        .await?;
    let count_sql = format!("SELECT count(*) FROM datasets WHERE {visible}");
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(count_sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .fetch_one(&state.pool)
        .await?;
    Ok(Json(DatasetList {
        datasets,
        total,
        limit,
        offset,
    }))
}

#[utoipa::path(get, path = "/api/datasets/{dataset_id}", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = Dataset), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn get_dataset(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Dataset>, AppError> {
    Ok(Json(visible_dataset(&state, &caller, id).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct DatasetUpdate {
    /// 1 to 500 characters once trimmed.
    #[schema(
        max_length = 500,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    title: Option<String>,
    #[schema(max_length = 5000)]
    summary: Option<String>,
    visibility: Option<DatasetVisibility>,
    /// At most 50, each 1 to 100 characters and not only blanks.
    #[schema(max_items = 50, value_type = Option<Vec<crate::openapi::names::Keyword>>)]
    keywords: Option<Vec<String>>,
    /// Publication status: `ready` (published) or `unpublished` (seen only
    /// by its owner and admins).
    status: Option<PublicationStatus>,
    /// The licence (an SPDX identifier, a URL or words); empty for none.
    #[schema(max_length = 500)]
    license: Option<String>,
    /// The credit maps show with the data; empty for none.
    #[schema(max_length = 1000)]
    attribution: Option<String>,
    /// The time axis: a column of a date or time type (its name or the
    /// source's), which `datetime` then filters the items on; null for none.
    #[serde(default, deserialize_with = "set_or_null")]
    #[schema(value_type = Option<String>, nullable)]
    temporal_column: Option<Option<String>>,
}

/// A field that is absent (`None`), null (`Some(None)`) or set.
fn set_or_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Edits title, summary, keywords, licence, attribution, visibility,
/// publication status or the time axis (whose temporal extent is worked out anew). A change of
/// visibility or status rolls the publication version, which retires
/// signed tile templates.
#[utoipa::path(patch, path = "/api/datasets/{dataset_id}", tag = "datasets", params(("dataset_id" = Uuid, Path)), request_body = DatasetUpdate,
    responses((status = 200, body = Dataset), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn update_dataset(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<DatasetUpdate>,
) -> Result<Json<Dataset>, AppError> {
    if let Some(title) = &body.title {
        check_text("title", title.trim(), 1, TITLE_MAX)?;
    }
    if let Some(summary) = &body.summary {
        check_text("summary", summary, 0, SUMMARY_MAX)?;
    }
    if let Some(keywords) = &body.keywords
        && (keywords.len() > 50 || keywords.iter().any(|k| k.trim().is_empty() || k.chars().count() > 100))
    {
        return Err(AppError::unprocessable(
            "keywords: at most 50, each 1 to 100 characters",
        ));
    }
    if let Some(license) = &body.license {
        check_text("license", license, 0, LICENSE_MAX)?;
    }
    if let Some(attribution) = &body.attribution {
        check_text("attribution", attribution, 0, ATTRIBUTION_MAX)?;
    }
    let dataset = writable_dataset(&state, &caller, id).await?;
    let time_axis = match &body.temporal_column {
        None => None,
        Some(None) => Some(None),
        Some(Some(name)) => Some(Some(time_axis_of(&dataset, name)?)),
    };
    if time_axis.is_some() {
        crate::read_gate::open(&state, &caller, &dataset).await?;
    }
    let mut tx = state.pool.begin().await?;
    sqlx::query(
        "UPDATE datasets SET
            title = coalesce($2, title),
            summary = coalesce($3, summary),
            publication_version = publication_version
                + CASE WHEN coalesce($4, visibility) <> visibility OR coalesce($6, status) <> status THEN 1 ELSE 0 END,
            visibility = coalesce($4, visibility),
            keywords = coalesce($5, keywords),
            status = coalesce($6, status),
            license = CASE WHEN $7::text IS NULL THEN license ELSE nullif(btrim($7), '') END,
            attribution = CASE WHEN $8::text IS NULL THEN attribution ELSE nullif(btrim($8), '') END,
            updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(body.title.as_deref().map(str::trim))
    .bind(&body.summary)
    .bind(body.visibility)
    .bind(&body.keywords)
    .bind(body.status)
    .bind(&body.license)
    .bind(&body.attribution)
    .execute(&mut *tx)
    .await?;
    if let Some(column) = time_axis {
        let table = dataset.table_names();
        catalog_shared::datasets::set_time_axis(&mut tx, id, table, column.as_deref()).await?;
    }
    tx.commit().await?;
    state.datasets.forget(id);
    Ok(Json(visible_dataset(&state, &caller, id).await?))
}

/// The column a PATCH names as the time axis: one of the dataset's columns
/// (by its name or the source's) of a date or time type.
fn time_axis_of(dataset: &Dataset, name: &str) -> Result<String, AppError> {
    let column = dataset
        .column_info
        .0
        .iter()
        .find(|c| c.name == name || c.original_name == name)
        .ok_or_else(|| AppError::unprocessable(format!("temporal_column: the dataset has no column {name:?}")))?;
    if !column.pg_type.is_temporal() {
        return Err(AppError::unprocessable(format!(
            "temporal_column: {name:?} holds {}, not dates or times",
            column.sql_type()
        )));
    }
    Ok(column.name.clone())
}

/// Deletes a dataset with everything it keeps: an ingested dataset's
/// table, a raster's file, a cold dataset's archive. A registered table is
/// left in place.
#[utoipa::path(delete, path = "/api/datasets/{dataset_id}", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    responses((status = 204, description = "deleted"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_dataset(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    let dataset = writable_dataset(&state, &caller, id).await?;
    delete_dataset_record(&state, &dataset).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a dataset: its record (grants, map layers and history go with
/// it), for an ingested dataset its table and the tables of its history, and every object it keeps in the store;
/// a registered table stays in place.
pub(crate) async fn delete_dataset_record(state: &AppState, dataset: &Dataset) -> Result<(), AppError> {
    let mut tx = state.pool.begin().await?;
    catalog_shared::history::drop_kept_tables(&mut tx, dataset.id).await?;
    sqlx::query("DELETE FROM datasets WHERE id = $1")
        .bind(dataset.id)
        .execute(&mut *tx)
        .await?;
    if !dataset.is_registered {
        sqlx::query(sqlx::AssertSqlSafe(dataset.drop_table_sql()))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    state.datasets.forget(dataset.id);
    // The objects go once nothing names them. The dataset is gone either
    // way, so a store that refuses leaves them for an operator (the log
    // says which) rather than failing a delete that happened.
    for folder in state.storage.dataset_folders(dataset.id) {
        if let Err(e) = state.storage.delete_folder(&folder).await {
            tracing::warn!(dataset_id = %dataset.id, folder = %folder, error = %e, "a deleted dataset's objects were not removed");
        }
    }
    Ok(())
}
