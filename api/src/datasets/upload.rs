//! New data as queued jobs: a file upload, a reupload replacing a
//! dataset's data, and an import from a URL. Each answers 202 with the job.
use axum::{extract::State, response::Response};
use catalog_raster::cog;
use catalog_shared::{
    AppError,
    datasets::DatasetVisibility,
    jobs::{
        self, IngestOptions, IngestPayload, JobInput, JobKind, JobStatus, RasterOptions, ReuploadPayload,
        UrlDownloadPayload,
    },
    storage::safe_filename,
    uploads,
};
use object_store::{ObjectStoreExt, WriteMultipart};
use serde::Deserialize;
use url::Url;
use uuid::Uuid;

use crate::dataset_record::{SUMMARY_MAX, TITLE_MAX, check_text};
use crate::{
    access::{Caller, datasets::writable_dataset, policy::visibility_named},
    extract::{Json as JsonBody, Multipart, Path},
    jobs::{IdempotencyKey, JobAccepted, Queued, earlier_job, own_job, queue_fetch, queue_once, respond},
    quotas::{self, Demand},
    state::AppState,
};

#[allow(dead_code)]
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct UploadForm {
    /// .gpkg, .geojson/.json, .csv, .tif/.tiff (GeoTIFF; a COG is one), or
    /// .zip (a shapefile set or any of those)
    #[schema(format = Binary, value_type = String)]
    file: Vec<u8>,
    title: Option<String>,
    summary: Option<String>,
    visibility: Option<String>,
    /// A layer of a multi-layer source to load (repeat the field for
    /// several; a zip of several files names `file:layer`); default: every
    /// layer.
    layer: Option<Vec<String>>,
    /// true: only list the file's layers (the job's `result.layers`, each
    /// with the name to ask for it by); nothing is loaded.
    preview: Option<bool>,
    /// Source CRS (EPSG code) for files that declare none.
    srid: Option<i32>,
    /// GeoTIFF: store the file as uploaded; it must be a valid COG.
    strict_cog: Option<bool>,
    /// GeoTIFF overviews: nearest, bilinear, cubic, average or mode.
    resampling: Option<String>,
    /// GeoTIFF: the nodata value to record instead of the file's.
    nodata_override: Option<f64>,
    /// GeoTIFF: the CRS (EPSG code) to assign; never reprojects.
    srid_override: Option<i32>,
    /// GeoTIFF: deflate (default), lzw, zstd, webp, jpeg or none.
    compression: Option<String>,
}

/// Uploads a file; it is streamed into the object store and ingested by a worker.
#[utoipa::path(post, path = "/api/datasets/upload", tag = "datasets",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 202, body = JobAccepted),
              (status = 413, description = "larger than MAX_UPLOAD_BYTES", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    key: IdempotencyKey,
    mut multipart: Multipart,
) -> Result<Response, AppError> {
    let user = caller.editor()?.clone();
    if let Some(earlier) = earlier_request(&state, user.id, &key).await? {
        return Ok(respond(&state, Queued::Earlier(earlier), earlier));
    }
    quotas::refuse_when_full(&state.pool, user.id, 1).await?;
    let job_id = Uuid::now_v7();
    // Private unless the form names another visibility.
    let mut options = IngestOptions::default();
    let received = receive_upload(&state, job_id, &mut multipart, |name, value| {
        match name {
            "title" | "summary" | "visibility" | "srid" => describe(&mut options, name, value)?,
            "layer" => options.layers.push(value),
            "preview" => {
                options.preview = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(AppError::unprocessable("preview must be true or false")),
                }
            }
            raster => raster_option(&mut options.raster, raster, value)?,
        }
        Ok(())
    })
    .await?;
    if let Err(clash) = refuse_strict_cog_clash(&options.raster) {
        let _ = state.storage.store.delete(&received.path).await;
        return Err(clash);
    }
    let demand = Demand {
        bytes: received.bytes,
        datasets: 1,
    };
    let payload = IngestPayload {
        object_path: received.path.to_string(),
        filename: received.filename.clone(),
        options,
    };
    let upload = Upload {
        owner: user.id,
        creator: Some(user.id),
        key: &key,
        demand,
        received: &received,
    };
    let queued = enqueue_upload(&state, upload, job_id, JobInput::Ingest(payload)).await?;
    Ok(respond(&state, queued, job_id))
}

/// Which layers of a previewed file to load, and the datasets' description
/// (as the upload form's fields).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PreviewedLoad {
    /// The layers to load, by the `layer` names the preview listed; none:
    /// every layer (as an upload without `layer` fields).
    #[serde(default)]
    layers: Vec<String>,
    title: Option<String>,
    summary: Option<String>,
    /// private (default), restricted, internal or public.
    visibility: Option<String>,
    /// Source CRS (EPSG code) for files that declare none.
    srid: Option<i32>,
}

/// Loads layers of a file an upload preview (`preview=true`) listed, from
/// the file the preview kept, so it is not sent again: a new upload job,
/// as if the file had been uploaded with these `layer` fields.
#[utoipa::path(post, path = "/api/datasets/upload/{job_id}/load", tag = "datasets",
    params(("job_id" = Uuid, Path, description = "the preview job")), request_body = PreviewedLoad,
    responses((status = 202, body = JobAccepted),
              (status = 404, description = "no preview job of the caller's", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "the job is not a finished preview whose file is still kept", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn load_previewed(
    State(state): State<AppState>,
    caller: Caller,
    key: IdempotencyKey,
    Path(preview_id): Path<Uuid>,
    JsonBody(body): JsonBody<PreviewedLoad>,
) -> Result<Response, AppError> {
    let user = caller.editor()?.clone();
    if let Some(earlier) = earlier_request(&state, user.id, &key).await? {
        return Ok(respond(&state, Queued::Earlier(earlier), earlier));
    }
    let preview = own_job(&state, &caller, preview_id).await?;
    let (payload, removed): (sqlx::types::Json<serde_json::Value>, bool) =
        sqlx::query_as("SELECT payload, upload_removed FROM jobs WHERE id = $1")
            .bind(preview_id)
            .fetch_one(&state.pool)
            .await?;
    let source = (preview.kind == JobKind::Ingest)
        .then(|| serde_json::from_value::<IngestPayload>(payload.0).ok())
        .flatten()
        .filter(|source| source.options.preview && preview.status == JobStatus::Succeeded)
        .ok_or_else(|| {
            AppError::conflict(format!(
                "job {preview_id} is not a finished upload preview: upload the file with preview=true first"
            ))
        })?;
    if removed {
        return Err(AppError::conflict(
            "the previewed file is no longer kept (uploads are kept for UPLOAD_RETENTION_HOURS): upload it again",
        ));
    }
    let mut options = IngestOptions {
        layers: body.layers,
        srid: source.options.srid,
        raster: source.options.raster,
        ..IngestOptions::default()
    };
    // As the upload form's text parts are taken: trimmed, empty ones left out.
    let fields = [
        ("title", body.title),
        ("summary", body.summary),
        ("visibility", body.visibility),
        ("srid", body.srid.map(|srid| srid.to_string())),
    ];
    for (name, value) in fields {
        if let Some(value) = value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            describe(&mut options, name, value)?;
        }
    }
    let owner = preview.created_by.unwrap_or(user.id);
    quotas::refuse_when_full(&state.pool, owner, 1).await?;
    // The new job keeps a copy of its own (a store-side copy), so each
    // job's files go with it at cleanup, as an upload's do.
    let job_id = Uuid::now_v7();
    let path = state.storage.upload_path(job_id, &source.filename);
    let from: object_store::path::Path = source.object_path.as_str().into();
    state.storage.store.copy(&from, &path).await.map_err(|e| match e {
        object_store::Error::NotFound { .. } => {
            AppError::conflict("the previewed file is no longer kept: upload it again")
        }
        e => e.into(),
    })?;
    let received = Received {
        path,
        filename: source.filename,
        bytes: preview.file_bytes.unwrap_or(0).max(0) as u64,
    };
    let payload = IngestPayload {
        object_path: received.path.to_string(),
        filename: received.filename.clone(),
        options,
    };
    let upload = Upload {
        owner,
        creator: Some(user.id),
        key: &key,
        demand: Demand {
            bytes: received.bytes,
            datasets: 1,
        },
        received: &received,
    };
    let queued = enqueue_upload(&state, upload, job_id, JobInput::Ingest(payload)).await?;
    Ok(respond(&state, queued, job_id))
}

/// Sets a field that describes the datasets an upload makes (`title`,
/// `summary`, `visibility`, `srid`), checked as the upload form checks it.
fn describe(options: &mut IngestOptions, name: &str, value: String) -> Result<(), AppError> {
    match name {
        "title" => {
            check_text("title", &value, 1, TITLE_MAX)?;
            options.title = Some(value);
        }
        "summary" => {
            check_text("summary", &value, 0, SUMMARY_MAX)?;
            options.summary = Some(value);
        }
        "visibility" => options.visibility = visibility_named(&value)?,
        "srid" => options.srid = Some(parse_srid(&value)?),
        other => return Err(AppError::unprocessable(format!("{other} does not describe a dataset"))),
    }
    Ok(())
}

/// A received upload about to be queued: whose quota it counts against,
/// whose job it is, and the request's key.
struct Upload<'a> {
    owner: Uuid,
    creator: Option<Uuid>,
    key: &'a IdempotencyKey,
    demand: Demand,
    received: &'a Received,
}

/// The job an earlier request with this key queued, looked up before the
/// body is read, so a retried upload is not stored again.
async fn earlier_request(state: &AppState, requester: Uuid, key: &IdempotencyKey) -> Result<Option<Uuid>, AppError> {
    let Some(key) = key.0.as_deref() else {
        return Ok(None);
    };
    let mut tx = state.pool.begin().await?;
    let earlier = earlier_job(&mut tx, requester, &[key]).await?;
    tx.commit().await?;
    Ok(earlier)
}

/// Admits a received upload against its owner's quota and queues its job
/// (as the creator's, once per key), the upload's bytes held until the job
/// ends; a refused or repeated upload is deleted from the store.
async fn enqueue_upload(
    state: &AppState,
    upload: Upload<'_>,
    job_id: Uuid,
    input: JobInput,
) -> Result<Queued, AppError> {
    let Upload {
        owner,
        creator,
        key,
        demand,
        received,
    } = upload;
    let keys: Vec<&str> = key.0.iter().map(String::as_str).collect();
    let bytes = received.bytes;
    let queued = queue_once(state, creator.unwrap_or(owner), &keys, job_id, |tx| {
        Box::pin(async move {
            quotas::admit(tx, owner, demand).await?;
            jobs::enqueue(tx, job_id, &input, creator).await?;
            quotas::hold_upload(tx, job_id, bytes).await?;
            Ok(())
        })
    })
    .await;
    if !matches!(queued, Ok(Queued::New)) {
        let _ = state.storage.store.delete(&received.path).await;
    }
    queued
}

/// Reads one of a GeoTIFF upload's form fields; any other name is unknown.
fn raster_option(raster: &mut RasterOptions, name: &str, value: String) -> Result<(), AppError> {
    let one_of = |field: &str, allowed: &[&str]| {
        if allowed.contains(&value.as_str()) {
            Ok(Some(value.clone()))
        } else {
            Err(AppError::invalid_field(
                field,
                &format!("must be one of {}", allowed.join(", ")),
            ))
        }
    };
    match name {
        "strict_cog" => {
            raster.strict_cog = match value.as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(AppError::invalid_field("strict_cog", "must be true or false")),
            }
        }
        "resampling" => raster.resampling = one_of("resampling", &cog::RESAMPLINGS)?,
        "compression" => raster.compression = one_of("compression", &cog::COMPRESSIONS)?,
        "nodata_override" => {
            let nodata = value.trim().parse::<f64>().ok().filter(|v| v.is_finite());
            raster.nodata_override =
                Some(nodata.ok_or_else(|| AppError::invalid_field("nodata_override", "must be a number"))?);
        }
        "srid_override" => {
            raster.srid_override = Some(
                value
                    .parse()
                    .ok()
                    .filter(|s: &i32| *s > 0)
                    .ok_or_else(|| AppError::invalid_field("srid_override", "must be a positive EPSG code"))?,
            );
        }
        other => return Err(AppError::unprocessable(format!("unknown form field {other:?}"))),
    }
    Ok(())
}

/// `strict_cog` stores the upload unchanged, so nothing that would change
/// it may come with it: the 422 names every field that does.
fn refuse_strict_cog_clash(raster: &RasterOptions) -> Result<(), AppError> {
    if !raster.strict_cog {
        return Ok(());
    }
    let clashing: Vec<&str> = [
        ("resampling", raster.resampling.is_some()),
        ("nodata_override", raster.nodata_override.is_some()),
        ("srid_override", raster.srid_override.is_some()),
        (
            "compression",
            raster.compression.as_deref().is_some_and(|c| c != "deflate"),
        ),
    ]
    .into_iter()
    .filter_map(|(field, set)| set.then_some(field))
    .collect();
    if clashing.is_empty() {
        return Ok(());
    }
    Err(AppError::unprocessable(format!(
        "strict_cog stores the file exactly as uploaded, so it cannot be combined with {}",
        clashing.join(", ")
    )))
}

fn parse_srid(value: &str) -> Result<i32, AppError> {
    value
        .parse()
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| AppError::unprocessable("srid must be a positive EPSG code"))
}

/// A file received into the object store: where, under which name, and
/// its size in bytes.
struct Received {
    path: object_store::path::Path,
    filename: String,
    bytes: u64,
}

/// Streams the form's one `file` part into the object store (under the
/// job's upload path, at most MAX_UPLOAD_BYTES) and hands every non-empty
/// text part, trimmed, to `on_text`. Nothing is left stored on failure.
async fn receive_upload(
    state: &AppState,
    job_id: Uuid,
    multipart: &mut Multipart,
    mut on_text: impl FnMut(&str, String) -> Result<(), AppError>,
) -> Result<Received, AppError> {
    let limit = state.config.max_upload_bytes;
    let mut stored: Option<Received> = None;
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
            let received = stored.insert(Received {
                path,
                filename,
                bytes: 0,
            });
            loop {
                let chunk = match field.chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => break,
                    Err(e) => {
                        let _ = writer.abort().await;
                        return Err(e.into());
                    }
                };
                received.bytes += chunk.len() as u64;
                if received.bytes > limit {
                    let _ = writer.abort().await;
                    return Err(AppError::payload_too_large(limit));
                }
                writer.wait_for_capacity(4).await?;
                writer.write(&chunk);
            }
            if received.bytes == 0 {
                let _ = writer.abort().await;
                return Err(AppError::unprocessable("the file is empty"));
            }
            writer.finish().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = outcome {
        if let Some(received) = &stored {
            let _ = state.storage.store.delete(&received.path).await;
            state.storage.remove_empty_folder(&state.storage.upload_folder(job_id));
        }
        return Err(e);
    }
    stored.ok_or_else(|| AppError::unprocessable("the form has no file part named \"file\""))
}

#[allow(dead_code)]
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReuploadForm {
    /// The new data: .gpkg, .geojson/.json, .csv or .zip for a vector
    /// dataset; .tif/.tiff (or a .zip holding one) for a raster.
    #[schema(format = Binary, value_type = String)]
    file: Vec<u8>,
    /// Which layer of a multi-layer file; default: the dataset's previous
    /// source layer if the file has it, else the file's only layer.
    layer: Option<String>,
    srid: Option<i32>,
    /// `true`: only compare the file with the dataset (job `result`); not
    /// for a raster.
    preview: Option<bool>,
    /// GeoTIFF: as on upload.
    strict_cog: Option<bool>,
    /// GeoTIFF: as on upload.
    resampling: Option<String>,
    /// GeoTIFF: as on upload.
    nodata_override: Option<f64>,
    /// GeoTIFF: as on upload.
    srid_override: Option<i32>,
    /// GeoTIFF: as on upload.
    compression: Option<String>,
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
pub(super) async fn reupload(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    key: IdempotencyKey,
    mut multipart: Multipart,
) -> Result<Response, AppError> {
    let dataset = writable_dataset(&state, &caller, id).await?;
    if !dataset.is_raster() {
        crate::read_gate::open(&state, &caller, &dataset).await?;
    }
    if dataset.is_registered {
        return Err(AppError::conflict(
            "this dataset is a registered table, read in place; change the table itself",
        ));
    }
    let user_id = caller.user_id();
    // The data is the owner's, so it counts against the owner's quota.
    let owner = dataset.created_by.or(user_id).unwrap_or_default();
    let requester = user_id.unwrap_or(owner);
    if let Some(earlier) = earlier_request(&state, requester, &key).await? {
        return Ok(respond(&state, Queued::Earlier(earlier), earlier));
    }
    quotas::refuse_when_full(&state.pool, owner, 0).await?;
    let job_id = Uuid::now_v7();
    let (mut layer, mut srid, mut preview, mut raster) = (None, None, false, RasterOptions::default());
    let received = receive_upload(&state, job_id, &mut multipart, |name, value| {
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
            other => raster_option(&mut raster, other, value)?,
        }
        Ok(())
    })
    .await?;
    let refusal = if preview && dataset.is_raster() {
        Err(AppError::invalid_field(
            "preview",
            "a preview compares columns and rows; a raster dataset has none",
        ))
    } else {
        refuse_strict_cog_clash(&raster)
    };
    if let Err(refusal) = refusal {
        let _ = state.storage.store.delete(&received.path).await;
        return Err(refusal);
    }
    let payload = ReuploadPayload {
        dataset_id: id,
        object_path: received.path.to_string(),
        filename: received.filename.clone(),
        layer,
        srid,
        preview,
        service: None,
        raster,
    };
    let demand = Demand {
        bytes: received.bytes,
        datasets: 0,
    };
    let upload = Upload {
        owner,
        creator: user_id,
        key: &key,
        demand,
        received: &received,
    };
    let queued = enqueue_upload(&state, upload, job_id, JobInput::Reupload(payload)).await?;
    Ok(respond(&state, queued, job_id))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ImportUrl {
    /// A URL whose host resolves to a public address.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
    #[schema(min_length = 1, max_length = 500)]
    title: Option<String>,
    #[schema(max_length = 5000)]
    summary: Option<String>,
    visibility: Option<DatasetVisibility>,
    layer: Option<String>,
    srid: Option<i32>,
}

const URL_MAX: usize = 2048;

/// Imports a file from a URL; the download runs in the background (job step `downloading`).
#[utoipa::path(post, path = "/api/datasets/import-url", tag = "datasets", request_body = ImportUrl,
    responses((status = 202, body = JobAccepted), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn import_url(
    State(state): State<AppState>,
    caller: Caller,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<ImportUrl>,
) -> Result<Response, AppError> {
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
    let payload = UrlDownloadPayload {
        url: url.to_string(),
        options: IngestOptions {
            title: body.title,
            summary: body.summary,
            visibility: body.visibility.unwrap_or_default(),
            layer: body.layer,
            srid: body.srid,
            raster: Default::default(),
            ..Default::default()
        },
        credential_id: None,
    };
    let keys: Vec<&str> = key.0.iter().map(String::as_str).collect();
    queue_fetch(&state, user.id, &keys, JobInput::UrlDownload(payload)).await
}
