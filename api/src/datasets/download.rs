//! Downloads: a raster's COG with HTTP Range, so GDAL's `/vsicurl/` and
//! QGIS read it in place; a vector dataset as GeoPackage (default),
//! GeoJSON, CSV or a zipped shapefile, written by GDAL from PostGIS into a
//! temporary file (memory stays flat however many features). Opened by a
//! download token for that dataset (a two-minute JWT from
//! `POST /api/auth/download-token/{id}`, in the `token` query parameter,
//! the grant itself), or else as any read: the caller's own credential, a
//! signed asset link (`access::signed_assets`), or nothing for data
//! everyone may read.
use std::{io::Write, path::Path as FilePath};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_raster::{
    cog::MEDIA_TYPE as COG_MEDIA_TYPE,
    export::{self, ExportFormat},
};
use catalog_shared::{AppError, db::quote_ident};
use serde::Deserialize;
use tower::ServiceExt;
use tower_http::services::ServeFile;
use uuid::Uuid;

use super::record::{DATASET_COLUMNS, Dataset, published_columns, table_sql};
use crate::{
    access::{Caller, datasets::downloadable_dataset},
    extract::{Path, Query},
    state::AppState,
};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct DownloadQuery {
    /// A download token for this dataset.
    token: Option<String>,
    /// Vector datasets: gpkg (default), geojson, csv or shp (zipped).
    #[param(value_type = Option<crate::openapi::names::DownloadFormat>, inline)]
    format: Option<String>,
    // A signed asset link's parameters are a credential, which `edge`
    // reads (`access::signed_assets`); they are named here so that the
    // query is not refused as unknown, and described for clients.
    /// Signed asset link: dataset:<id>.
    #[serde(rename = "scope")]
    _scope: Option<String>,
    /// Signed asset link: expiry, Unix seconds (a link that does not
    /// verify signs nothing).
    #[serde(rename = "exp")]
    _exp: Option<String>,
    /// Signed asset link: signature.
    #[serde(rename = "sig")]
    _sig: Option<String>,
}

/// The dataset's data as a file.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/download", tag = "datasets",
    params(("dataset_id" = Uuid, Path), DownloadQuery),
    responses((status = 200, description = "the file: a raster's COG, or a vector dataset in the format asked for",
               content(("image/tiff; application=geotiff; profile=cloud-optimized"), ("application/geopackage+sqlite3"),
                       ("application/geo+json"), ("text/csv; charset=utf-8"), ("application/zip"))),
              (status = 206, description = "a byte range of the file",
               content(("image/tiff; application=geotiff; profile=cloud-optimized"), ("application/geopackage+sqlite3"),
                       ("application/geo+json"), ("text/csv; charset=utf-8"), ("application/zip"))),
              (status = 401, description = "no valid download token, signed link or credential, for data not everyone may read", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, description = "a token for another dataset", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "a signed-in caller may not read the dataset, or there is none", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 412, description = "the file changed after If-Unmodified-Since", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 416, description = "a Range the file cannot satisfy; Content-Range gives its length", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn download(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(query): Query<DownloadQuery>,
    request: Request,
) -> Result<Response, AppError> {
    let dataset = match query.token.as_deref() {
        Some(token) => token_dataset(&state, token, id).await?,
        None => downloadable_dataset(&state, &caller, id).await?,
    };
    let stem = file_stem(&dataset.title);
    if dataset.is_raster() {
        if query.format.is_some() {
            return Err(AppError::bad_request(
                "a raster downloads as its COG; format is for vector datasets",
            ));
        }
        let file = crate::tiles::raster_file(&state, &dataset).await?;
        return serve(&file, request, COG_MEDIA_TYPE, &format!("{stem}.tif")).await;
    }
    let format = match query.format.as_deref() {
        None => ExportFormat::GeoPackage,
        Some(name) => ExportFormat::from_name(name).ok_or_else(|| {
            AppError::bad_request(format!("format must be one of {}", ExportFormat::NAMES.join(", ")))
        })?,
    };
    super::cold::ensure_hot(&state, &caller, &dataset).await?;
    let workdir = tempfile::tempdir().map_err(AppError::internal)?;
    let connection = conninfo(&state.config.database_url)?;
    let (select, dir) = (export_sql(&dataset), workdir.path().to_path_buf());
    let layer = stem.clone();
    let written = tokio::task::spawn_blocking(move || {
        let written = export::export(&connection, &select, &layer, format, &dir)?;
        if format == ExportFormat::Shapefile {
            return zip_folder(&written, &dir.join(format!("{layer}.zip")));
        }
        Ok(written)
    })
    .await
    .map_err(AppError::internal)?
    .map_err(|e| AppError::internal(format!("export: {e}")))?;
    // The open file outlives its folder: the response streams from it.
    let response = serve(&written, request, format.media_type(), &format.download_name(&stem)).await;
    drop(workdir);
    response
}

/// The dataset a download token opens: the token is the grant, so the
/// dataset's access is not checked again within its two minutes.
async fn token_dataset(state: &AppState, token: &str, id: Uuid) -> Result<Dataset, AppError> {
    let claims = state
        .keys
        .verify_download(token)
        .ok_or_else(|| AppError::unauthorized("the download token is not valid, or it expired"))?;
    if !claims.is_for(id) {
        return Err(AppError::forbidden("the download token is for another dataset"));
    }
    let sql = format!("SELECT {DATASET_COLUMNS} FROM datasets WHERE id = $1");
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no dataset {id}")))
}

/// The dataset's rows as users know them: the key, the published columns
/// under their source names, and the geometry.
fn export_sql(dataset: &Dataset) -> String {
    let mut columns = vec![quote_ident(&dataset.key_column)];
    columns.extend(
        published_columns(dataset)
            .iter()
            .filter(|c| c.name != dataset.key_column && c.name != dataset.geometry_column)
            .map(|c| format!("{} AS {}", quote_ident(&c.name), quote_ident(&c.original_name))),
    );
    columns.push(quote_ident(&dataset.geometry_column));
    format!(
        "SELECT {} FROM {} ORDER BY {}",
        columns.join(", "),
        table_sql(dataset),
        quote_ident(&dataset.key_column)
    )
}

/// The database URL as libpq's `key=value` connection string, the form
/// GDAL's PostgreSQL driver reads.
fn conninfo(database_url: &str) -> Result<String, AppError> {
    let url = url::Url::parse(database_url).map_err(AppError::internal)?;
    let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
    let decode = |v: &str| percent_encoding::percent_decode_str(v).decode_utf8_lossy().to_string();
    let mut parts = vec![format!("dbname={}", quote(&decode(url.path().trim_start_matches('/'))))];
    if let Some(host) = url.host_str() {
        parts.push(format!("host={}", quote(host)));
    }
    if let Some(port) = url.port() {
        parts.push(format!("port={port}"));
    }
    if !url.username().is_empty() {
        parts.push(format!("user={}", quote(&decode(url.username()))));
    }
    if let Some(password) = url.password() {
        parts.push(format!("password={}", quote(&decode(password))));
    }
    for (key, value) in url.query_pairs() {
        parts.push(format!("{key}={}", quote(&value)));
    }
    Ok(parts.join(" "))
}

/// A file name from a title: letters, digits, `-` and `_`.
fn file_stem(title: &str) -> String {
    let stem: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if stem.trim_matches('_').is_empty() {
        "dataset".into()
    } else {
        stem
    }
}

/// Serves a file with Range and conditional requests (206, 304, 416).
async fn serve(file: &FilePath, request: Request, media_type: &str, name: &str) -> Result<Response, AppError> {
    let mut response = ServeFile::new(file)
        .oneshot(request)
        .await
        .map_err(AppError::internal)?
        .map(Body::new)
        .into_response();
    if response.status().is_client_error() || response.status().is_server_error() {
        return Err(file_refusal(file, &response));
    }
    let success = response.status().is_success();
    let headers = response.headers_mut();
    if success {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(media_type).map_err(AppError::internal)?,
        );
    }
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")).map_err(AppError::internal)?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    Ok(response)
}

/// `ServeFile`'s refusals come as plain text, or empty with the file's
/// media type; every error of the API is a problem document, so they are
/// answered again as one. A 416 keeps the `Content-Range: bytes */<len>`
/// that tells the client the file's length.
fn file_refusal(file: &FilePath, response: &Response) -> AppError {
    let refusal = match response.status() {
        StatusCode::RANGE_NOT_SATISFIABLE => AppError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "Range must name one byte range that starts within the file (its length is in Content-Range); \
             several ranges in one request are not served",
        ),
        StatusCode::PRECONDITION_FAILED => AppError::new(
            StatusCode::PRECONDITION_FAILED,
            "the file changed after the date in If-Unmodified-Since",
        ),
        other => AppError::internal(format!("serving {}: {other}", file.display())),
    };
    match response.headers().get(header::CONTENT_RANGE) {
        Some(range) => refusal.with_header(header::CONTENT_RANGE, range.clone()),
        None => refusal,
    }
}

/// Zips the files of a shapefile folder.
fn zip_folder(folder: &FilePath, target: &FilePath) -> Result<std::path::PathBuf, catalog_raster::RasterError> {
    let fail = |e: &dyn std::fmt::Display| catalog_raster::RasterError::Gdal(format!("zipping the shapefile: {e}"));
    let mut archive = zip::ZipWriter::new(std::fs::File::create(target).map_err(|e| fail(&e))?);
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for entry in std::fs::read_dir(folder).map_err(|e| fail(&e))? {
        let path = entry.map_err(|e| fail(&e))?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        archive.start_file(name, options).map_err(|e| fail(&e))?;
        let bytes = std::fs::read(&path).map_err(|e| fail(&e))?;
        archive.write_all(&bytes).map_err(|e| fail(&e))?;
    }
    archive.finish().map_err(|e| fail(&e))?;
    Ok(target.to_path_buf())
}
