//! Datasets: upload and URL import (both answered with a queued job), and
//! reading, editing and deleting the catalog records.
use axum::{
    Json,
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::IntoResponse,
};
use catalog_shared::{
    AppError,
    db::quote_ident,
    jobs::{self, IngestOptions, IngestPayload, JobInput, JobStatus, ReuploadPayload, UrlDownloadPayload},
    storage::safe_filename,
    uploads,
};
use chrono::{DateTime, Utc};
use object_store::{ObjectStoreExt, WriteMultipart};
use serde::{Deserialize, Serialize};
use url::Url;
use utoipa_axum::{
    router::{OpenApiRouter, UtoipaMethodRouterExt},
    routes,
};
use uuid::Uuid;

use crate::{
    access::{
        Caller,
        datasets::{dataset_for, visible_dataset, writable_dataset},
        policy::{DatasetAction, check_visibility, visible_to_caller},
    },
    extract::{Json as JsonBody, Multipart, Path, Query},
    state::AppState,
};

pub mod record;

use record::{DATASET_COLUMNS, Dataset};

pub fn routes(max_upload_bytes: u64) -> OpenApiRouter<AppState> {
    // Multipart framing adds a little to the file itself.
    let body_limit = usize::try_from(max_upload_bytes.saturating_add(1 << 20)).unwrap_or(usize::MAX);
    OpenApiRouter::new()
        .routes(routes!(upload).layer(DefaultBodyLimit::max(body_limit)))
        .routes(routes!(reupload).layer(DefaultBodyLimit::max(body_limit)))
        .routes(routes!(import_url))
        .routes(routes!(list_datasets))
        .routes(routes!(get_dataset, update_dataset, delete_dataset))
        .routes(routes!(list_grants))
        .routes(routes!(put_grant, delete_grant))
}

const TITLE_MAX: usize = 500;
const SUMMARY_MAX: usize = 5000;

fn check_text(field: &str, value: &str, min: usize, max: usize) -> Result<(), AppError> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(AppError::unprocessable(format!(
            "{field} must be {min} to {max} characters long"
        )));
    }
    Ok(())
}

/// The answer to work that was queued.
#[derive(Serialize, utoipa::ToSchema)]
pub struct JobAccepted {
    job_id: Uuid,
    status: JobStatus,
}

pub(crate) fn accepted(state: &AppState, job_id: Uuid) -> impl IntoResponse + use<> {
    let mut headers = HeaderMap::new();
    if let Ok(location) = HeaderValue::from_str(&format!("{}/api/jobs/{job_id}", state.config.public_url)) {
        headers.insert(header::LOCATION, location);
    }
    (
        StatusCode::ACCEPTED,
        headers,
        Json(JobAccepted {
            job_id,
            status: JobStatus::Queued,
        }),
    )
}

#[allow(dead_code)]
#[derive(utoipa::ToSchema)]
struct UploadForm {
    /// .gpkg, .geojson/.json, .csv or .zip (a shapefile set or any of those)
    #[schema(format = Binary, value_type = String)]
    file: Vec<u8>,
    title: Option<String>,
    summary: Option<String>,
    visibility: Option<String>,
    /// Only this layer of a multi-layer source; default: every layer.
    layer: Option<String>,
    /// Source CRS (EPSG code) for files that declare none.
    srid: Option<i32>,
}

/// Uploads a file; it is streamed into the object store and ingested by a worker.
#[utoipa::path(post, path = "/api/datasets/upload", tag = "datasets",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 202, body = JobAccepted),
              (status = 413, description = "larger than MAX_UPLOAD_BYTES", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    mut multipart: Multipart,
) -> Result<impl IntoResponse, AppError> {
    let user = caller.editor()?.clone();
    let job_id = Uuid::now_v7();
    let mut options = IngestOptions {
        visibility: "private".into(),
        ..Default::default()
    };
    let (path, filename) = receive_upload(&state, job_id, &mut multipart, |name, value| {
        match name {
            "title" => {
                check_text("title", &value, 1, TITLE_MAX)?;
                options.title = Some(value);
            }
            "summary" => {
                check_text("summary", &value, 0, SUMMARY_MAX)?;
                options.summary = Some(value);
            }
            "visibility" => {
                check_visibility(&value)?;
                options.visibility = value;
            }
            "layer" => options.layer = Some(value),
            "srid" => options.srid = Some(parse_srid(&value)?),
            other => return Err(AppError::unprocessable(format!("unknown form field {other:?}"))),
        }
        Ok(())
    })
    .await?;
    let payload = IngestPayload {
        object_path: path.to_string(),
        filename,
        options,
    };
    let mut tx = state.pool.begin().await?;
    jobs::enqueue(&mut tx, job_id, &JobInput::Ingest(payload), Some(user.id)).await?;
    tx.commit().await?;
    Ok(accepted(&state, job_id))
}

fn parse_srid(value: &str) -> Result<i32, AppError> {
    value
        .parse()
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| AppError::unprocessable("srid must be a positive EPSG code"))
}

/// Streams the form's one `file` part into the object store (under the
/// job's upload path, at most MAX_UPLOAD_BYTES) and hands every non-empty
/// text part, trimmed, to `on_text`. Nothing is left stored on failure.
async fn receive_upload(
    state: &AppState,
    job_id: Uuid,
    multipart: &mut Multipart,
    mut on_text: impl FnMut(&str, String) -> Result<(), AppError>,
) -> Result<(object_store::path::Path, String), AppError> {
    let limit = state.config.max_upload_bytes;
    let mut stored: Option<(object_store::path::Path, String)> = None;
    let outcome: Result<(), AppError> = async {
        while let Some(mut field) = multipart.next_field().await? {
            let name = field.name().unwrap_or_default().to_string();
            if name != "file" {
                let value = field.text().await?.trim().to_string();
                if !value.is_empty() {
                    on_text(&name, value)?;
                }
                continue;
            }
            if stored.is_some() {
                return Err(AppError::unprocessable("send exactly one file part"));
            }
            let filename = safe_filename(field.file_name().unwrap_or_default());
            if !uploads::is_accepted_upload(&filename) {
                return Err(AppError::unprocessable(format!(
                    "{filename} is not a supported file; upload {}",
                    uploads::ACCEPTED
                )));
            }
            let path = state.storage.upload_path(job_id, &filename);
            let mut writer = WriteMultipart::new(state.storage.store.put_multipart(&path).await?);
            stored = Some((path, filename));
            let mut size: u64 = 0;
            loop {
                let chunk = match field.chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => break,
                    Err(e) => {
                        let _ = writer.abort().await;
                        return Err(e.into());
                    }
                };
                size += chunk.len() as u64;
                if size > limit {
                    let _ = writer.abort().await;
                    return Err(AppError::payload_too_large(limit));
                }
                writer.wait_for_capacity(4).await?;
                writer.write(&chunk);
            }
            if size == 0 {
                let _ = writer.abort().await;
                return Err(AppError::unprocessable("the file is empty"));
            }
            writer.finish().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = outcome {
        if let Some((path, _)) = &stored {
            let _ = state.storage.store.delete(path).await;
        }
        return Err(e);
    }
    stored.ok_or_else(|| AppError::unprocessable("the form has no file part named \"file\""))
}

#[allow(dead_code)]
#[derive(utoipa::ToSchema)]
struct ReuploadForm {
    /// The new data: .gpkg, .geojson/.json, .csv or .zip
    #[schema(format = Binary, value_type = String)]
    file: Vec<u8>,
    /// Which layer of a multi-layer file; default: the dataset's previous
    /// source layer if the file has it, else the file's only layer.
    layer: Option<String>,
    srid: Option<i32>,
    /// `true`: only compare the file with the dataset (job `result`).
    preview: Option<bool>,
}

/// Replaces a dataset's data with a new file, keeping its id, table name,
/// metadata, grants, maps and signed tile links. With `preview=true` the
/// job only compares (columns, types, row counts) and changes nothing.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/reupload", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    request_body(content = ReuploadForm, content_type = "multipart/form-data"),
    responses((status = 202, body = JobAccepted),
              (status = 409, description = "a registered table is not the service's to replace", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 413, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn reupload(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    mut multipart: Multipart,
) -> Result<impl IntoResponse, AppError> {
    let dataset = writable_dataset(&state, &caller, id).await?;
    if dataset.is_registered {
        return Err(AppError::conflict(
            "this dataset is a registered table, read in place; change the table itself",
        ));
    }
    let user_id = caller.user_id();
    let job_id = Uuid::now_v7();
    let (mut layer, mut srid, mut preview) = (None, None, false);
    let (path, filename) = receive_upload(&state, job_id, &mut multipart, |name, value| {
        match name {
            "layer" => layer = Some(value),
            "srid" => srid = Some(parse_srid(&value)?),
            "preview" => {
                preview = match value.as_str() {
                    "true" | "1" | "yes" => true,
                    "false" | "0" | "no" => false,
                    _ => return Err(AppError::unprocessable("preview must be true or false")),
                }
            }
            other => return Err(AppError::unprocessable(format!("unknown form field {other:?}"))),
        }
        Ok(())
    })
    .await?;
    let payload = ReuploadPayload {
        dataset_id: id,
        object_path: path.to_string(),
        filename,
        layer,
        srid,
        preview,
        service: None,
    };
    let mut tx = state.pool.begin().await?;
    jobs::enqueue(&mut tx, job_id, &JobInput::Reupload(payload), user_id).await?;
    tx.commit().await?;
    Ok(accepted(&state, job_id))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ImportUrl {
    url: String,
    title: Option<String>,
    summary: Option<String>,
    visibility: Option<String>,
    layer: Option<String>,
    srid: Option<i32>,
}

const URL_MAX: usize = 2048;

/// Imports a file from a URL; the download runs in the background (job step `downloading`).
#[utoipa::path(post, path = "/api/datasets/import-url", tag = "datasets", request_body = ImportUrl,
    responses((status = 202, body = JobAccepted), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn import_url(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ImportUrl>,
) -> Result<impl IntoResponse, AppError> {
    let user = caller.editor()?.clone();
    check_text("url", &body.url, 1, URL_MAX)?;
    let url = Url::parse(&body.url).map_err(|e| AppError::unprocessable(format!("url is not a valid URL: {e}")))?;
    state
        .outbound
        .check_resolved(&url)
        .await
        .map_err(|why| AppError::unprocessable(format!("url is refused: {why}")))?;
    if let Some(title) = &body.title {
        check_text("title", title, 1, TITLE_MAX)?;
    }
    if let Some(summary) = &body.summary {
        check_text("summary", summary, 0, SUMMARY_MAX)?;
    }
    let visibility = body.visibility.unwrap_or_else(|| "private".into());
    check_visibility(&visibility)?;
    let payload = UrlDownloadPayload {
        url: url.to_string(),
        options: IngestOptions {
            title: body.title,
            summary: body.summary,
            visibility,
            layer: body.layer,
            srid: body.srid,
        },
        credential_id: None,
    };
    let job_id = Uuid::now_v7();
    let mut tx = state.pool.begin().await?;
    jobs::enqueue(&mut tx, job_id, &JobInput::UrlDownload(payload), Some(user.id)).await?;
    tx.commit().await?;
    Ok(accepted(&state, job_id))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct DatasetListQuery {
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
    offset: Option<i64>,
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
    let (limit, offset) = crate::extract::page(q.limit, q.offset, 100, 1000)?;
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
    title: Option<String>,
    summary: Option<String>,
    visibility: Option<String>,
    keywords: Option<Vec<String>>,
    /// Publication status: `ready` (published) or `unpublished` (seen only
    /// by its owner and admins).
    status: Option<String>,
}

const PUBLICATION_STATUSES: [&str; 2] = ["ready", "unpublished"];

/// Edits title, summary, keywords, visibility or publication status. A
/// change of visibility or status rolls the publication version, which
/// retires signed tile templates.
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
    if let Some(visibility) = &body.visibility {
        check_visibility(visibility)?;
    }
    if let Some(status) = &body.status
        && !PUBLICATION_STATUSES.contains(&status.as_str())
    {
        return Err(AppError::unprocessable(format!(
            "status must be one of {}",
            PUBLICATION_STATUSES.join(", ")
        )));
    }
    if let Some(keywords) = &body.keywords
        && (keywords.len() > 50 || keywords.iter().any(|k| k.trim().is_empty() || k.chars().count() > 100))
    {
        return Err(AppError::unprocessable(
            "keywords: at most 50, each 1 to 100 characters",
        ));
    }
    writable_dataset(&state, &caller, id).await?;
    sqlx::query(
        "UPDATE datasets SET
            title = coalesce($2, title),
            summary = coalesce($3, summary),
            publication_version = publication_version
                + CASE WHEN coalesce($4, visibility) <> visibility OR coalesce($6, status) <> status THEN 1 ELSE 0 END,
            visibility = coalesce($4, visibility),
            keywords = coalesce($5, keywords),
            status = coalesce($6, status),
            updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(body.title.as_deref().map(str::trim))
    .bind(&body.summary)
    .bind(&body.visibility)
    .bind(&body.keywords)
    .bind(&body.status)
    .execute(&state.pool)
    .await?;
    state.datasets.forget(id);
    Ok(Json(visible_dataset(&state, &caller, id).await?))
}

/// Deletes a dataset. An ingested dataset's table is dropped with it; a
/// registered table is left in place.
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

/// Removes a dataset: its record (grants and map layers go with it) and,
/// for an ingested dataset, its table; a registered table stays in place.
pub(crate) async fn delete_dataset_record(state: &AppState, dataset: &Dataset) -> Result<(), AppError> {
    let mut tx = state.pool.begin().await?;
    sqlx::query("DELETE FROM datasets WHERE id = $1")
        .bind(dataset.id)
        .execute(&mut *tx)
        .await?;
    if !dataset.is_registered {
        let sql = format!(
            "DROP TABLE IF EXISTS {}.{}",
            quote_ident(&dataset.schema_name),
            quote_ident(&dataset.table_name)
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    state.datasets.forget(dataset.id);
    Ok(())
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Grant {
    user_id: Uuid,
    username: String,
    /// `read` or `write`
    permission: String,
    created_at: DateTime<Utc>,
}

/// Who was granted access to the dataset (owner or admin).
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/grants", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = Vec<Grant>)))]
async fn list_grants(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Vec<Grant>>, AppError> {
    dataset_for(&state, &caller, id, DatasetAction::ManageGrants).await?;
    let grants = sqlx::query_as(
        "SELECT g.user_id, u.username, g.permission, g.created_at FROM dataset_grants g JOIN users u ON u.id = g.user_id
         WHERE g.dataset_id = $1 ORDER BY g.created_at",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(grants))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct GrantRequest {
    /// `read` or `write`
    permission: String,
}

/// Grants a user read or write access to a dataset (owner or admin).
#[utoipa::path(put, path = "/api/datasets/{dataset_id}/grants/{user_id}", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("user_id" = Uuid, Path)), request_body = GrantRequest,
    responses((status = 200, body = Grant), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn put_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, user_id)): Path<(Uuid, Uuid)>,
    JsonBody(body): JsonBody<GrantRequest>,
) -> Result<Json<Grant>, AppError> {
    dataset_for(&state, &caller, id, DatasetAction::ManageGrants).await?;
    if !matches!(body.permission.as_str(), "read" | "write") {
        return Err(AppError::unprocessable("permission must be read or write"));
    }
    let grant: Option<Grant> = sqlx::query_as(
        "WITH upsert AS (
            INSERT INTO dataset_grants (dataset_id, user_id, permission, granted_by)
            SELECT $1, id, $3, $4 FROM users WHERE id = $2
            ON CONFLICT (dataset_id, user_id) DO UPDATE SET permission = excluded.permission
            RETURNING user_id, permission, created_at)
         SELECT upsert.user_id, u.username, upsert.permission, upsert.created_at FROM upsert JOIN users u ON u.id = upsert.user_id",
    )
    .bind(id)
    .bind(user_id)
    .bind(&body.permission)
    .bind(caller.user_id())
    .fetch_optional(&state.pool)
    .await?;
    grant
        .map(Json)
        .ok_or_else(|| AppError::not_found(format!("no user {user_id}")))
}

/// Revokes a user's grant on a dataset (owner or admin).
#[utoipa::path(delete, path = "/api/datasets/{dataset_id}/grants/{user_id}", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("user_id" = Uuid, Path)),
    responses((status = 204, description = "revoked"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, user_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, AppError> {
    dataset_for(&state, &caller, id, DatasetAction::ManageGrants).await?;
    let deleted = sqlx::query("DELETE FROM dataset_grants WHERE dataset_id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(&state.pool)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(AppError::not_found(format!(
            "user {user_id} holds no grant on this dataset"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}
