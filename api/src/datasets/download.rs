//! Downloads: a raster's COG with HTTP Range, so GDAL's `/vsicurl/` and
//! QGIS read it in place; a vector dataset as GeoPackage (default),
//! GeoJSON, CSV, a zipped shapefile, FlatGeobuf or GeoParquet, its
//! features chosen as on items (`ogc::exports`), written by GDAL (or, for
//! GeoParquet, by `geoparquet`) from PostGIS into a scratch file (memory
//! stays flat however many features)
//! and kept in the object store once per data version and request
//! (`export_cache`); a client that leaves while it is written stops it. Opened by a
//! download token for that dataset (a two-minute JWT from
//! `POST /api/auth/download-token/{id}`, in the `token` query parameter,
//! the grant itself), or else as any read: the caller's own credential, a
//! signed asset link (`access::signed_assets`), or nothing for data
//! everyone may read.
use std::{
    path::Path as FilePath,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_raster::{
    cog::MEDIA_TYPE as COG_MEDIA_TYPE,
    export::{Export, ExportFormat, LayerStyle},
};
use catalog_shared::AppError;
use tower::ServiceExt;
use tower_http::services::ServeFile;
use uuid::Uuid;

use super::{
    export_cache::{self, Key},
    geoparquet::GeoParquet,
};
use crate::dataset_record::{DATASET_COLUMNS, Dataset};
use crate::{
    access::{Caller, datasets::downloadable_dataset},
    extract::{Path, Query},
    ogc::{crs::content_crs, exports::export_query},
    state::AppState,
};

/// Query parameters the download route reads itself; the others choose
/// what a vector download holds (`ogc::exports`).
const OWN_PARAMETERS: [&str; 6] = ["token", "format", "scope", "exp", "sig", "api_key"];

/// The dataset's data as a file.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/download", tag = "datasets",
    params(("dataset_id" = Uuid, Path),
        ("token" = Option<String>, Query, description = "a download token for this dataset"),
        ("format" = inline(Option<crate::openapi::names::DownloadFormat>), Query,
            description = "vector datasets: gpkg (default), geojson, csv (geometry as WKT), shp (zipped), fgb (FlatGeobuf), parquet (GeoParquet 1.1), pmtiles (the vector tile pyramid, zoom 0 to the complete zoom, made by a job: 202 with the job until it is kept)"),
        ("bbox" = Option<Vec<f64>>, Query, description = "as on items: features meeting the box, in bbox-crs"),
        ("bbox-crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "as on items: one of the collection's `crs`"),
        ("filter" = Option<String>, Query, description = "as on items: a CQL2 expression over the collection's queryables"),
        ("filter-lang" = inline(Option<crate::ogc::cql::Lang>), Query, description = "cql2-text (default), cql2-json, or cql-text (CQL2 text)"),
        ("datetime" = Option<String>, Query, description = "as on items"),
        ("properties" = Option<Vec<String>>, Query,
            description = "the columns the file holds, in this order (the key then goes only as the feature id, in formats that keep one)"),
        ("sortby" = Option<String>, Query, description = "as on items: the order of the features"),
        ("skipGeometry" = Option<bool>, Query, description = "true: a file without geometry"),
        ("crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of the coordinates, one of the collection's `crs` (default CRS84); Content-Crs names it"),
        ("scope" = Option<String>, Query, description = "signed asset link: dataset:<id>"),
        ("exp" = Option<String>, Query, description = "signed asset link: expiry, Unix seconds (a link that does not verify signs nothing)"),
        ("sig" = Option<String>, Query, description = "signed asset link: signature")),
    responses((status = 200, description = "the file: a raster's COG, or the matching features of a vector dataset in the format asked for",
               content(("image/tiff; application=geotiff; profile=cloud-optimized"), ("application/geopackage+sqlite3"),
                       ("application/geo+json"), ("text/csv; charset=utf-8"), ("application/zip"),
                       ("application/flatgeobuf"), ("application/vnd.apache.parquet"), ("application/vnd.pmtiles"))),
              (status = 202, description = "format=pmtiles: the archive is being made; `job_id` names the job, ask again after Retry-After"),
              (status = 206, description = "a byte range of the file",
               content(("image/tiff; application=geotiff; profile=cloud-optimized"), ("application/geopackage+sqlite3"),
                       ("application/geo+json"), ("text/csv; charset=utf-8"), ("application/zip"),
                       ("application/flatgeobuf"), ("application/vnd.apache.parquet"), ("application/vnd.pmtiles"))),
              (status = 400, description = "a parameter the download does not take, a filter that does not parse or fit, a format not named here", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 401, description = "no valid download token, signed link or credential, for data not everyone may read", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, description = "a token for another dataset", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "a signed-in caller may not read the dataset, or there is none", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "format=pmtiles of a dataset that is not generalized (a registered table, or loaded before 0.3)", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 412, description = "the file changed after If-Unmodified-Since", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 416, description = "a Range the file cannot satisfy; Content-Range gives its length", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn download(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(pairs): Query<Vec<(String, String)>>,
    request: Request,
) -> Result<Response, AppError> {
    let own = |name: &str| pairs.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let selection: Vec<(String, String)> = pairs
        .iter()
        .filter(|(name, _)| !OWN_PARAMETERS.contains(&name.as_str()))
        .cloned()
        .collect();
    let dataset = match own("token") {
        Some(token) => token_dataset(&state, token, id).await?,
        None => downloadable_dataset(&state, &caller, id).await?,
    };
    let stem = file_stem(&dataset.title);
    if dataset.is_raster() {
        if own("format").is_some() || !selection.is_empty() {
            return Err(AppError::bad_request(
                "a raster downloads as its COG; format and feature selections are for vector datasets",
            ));
        }
        let file = crate::tiles::raster_file(&state, &dataset).await?;
        return serve(&file, request, COG_MEDIA_TYPE, &format!("{stem}.tif"), None).await;
    }
    if own("format") == Some(super::tile_archive::FORMAT) {
        if !selection.is_empty() {
            return Err(AppError::bad_request(
                "a PMTiles archive holds the whole tile pyramid: it takes no feature selection",
            ));
        }
        return super::tile_archive::download(&state, &caller, &dataset, &stem, request).await;
    }
    let format = match own("format") {
        None => ExportFormat::GeoPackage,
        Some(name) => ExportFormat::from_name(name).ok_or_else(|| {
            AppError::bad_request(format!(
                "format must be one of {}, {}",
                ExportFormat::NAMES.join(", "),
                super::tile_archive::FORMAT
            ))
        })?,
    };
    // Before the query is planned: an archived dataset has no table yet.
    let data = crate::read_gate::open(&state, &caller, &dataset).await?;
    let query = export_query(
        &state.pool,
        &data,
        &selection,
        &dataset,
        &state.config.extra_crs,
        format.keeps_ids(),
    )
    .await?;
    let crs = query.crs;
    let styles = match format {
        ExportFormat::GeoPackage => kept_styles(&state, id).await?,
        _ => Vec::new(),
    };
    let style_texts: Vec<&str> = styles
        .iter()
        .flat_map(|s| {
            [
                s.name.as_str(),
                s.qml.as_deref().unwrap_or(""),
                s.sld.as_deref().unwrap_or(""),
            ]
        })
        .collect();
    let key = Key::of(&state.storage, &dataset, format, &stem, &selection, &style_texts);
    let writing = export_cache::one_at_a_time(&key).await;
    let kept = match export_cache::find(&state.storage, &key).await? {
        Some(kept) => kept,
        None => {
            let (workdir, written) = write_export(&state, query, format, &stem, id, styles).await?;
            let kept = export_cache::keep(&state.storage, &key, &written).await?;
            drop(workdir);
            kept
        }
    };
    drop(writing);
    let mut response = serve(
        &kept.file,
        request,
        format.media_type(),
        &format.download_name(&stem),
        Some((&key, kept.made)),
    )
    .await?;
    if let Ok(value) = HeaderValue::from_str(&content_crs(crs)) {
        response.headers_mut().insert("content-crs", value);
    }
    Ok(response)
}

/// Writes the export from PostGIS, with GDAL or, for GeoParquet, itself,
/// into a scratch folder that goes when the answer's folder handle is
/// dropped.
async fn write_export(
    state: &AppState,
    query: crate::ogc::exports::ExportQuery,
    format: ExportFormat,
    stem: &str,
    id: Uuid,
    styles: Vec<LayerStyle>,
) -> Result<(tempfile::TempDir, std::path::PathBuf), AppError> {
    let database_url = state.config.database_direct_url.clone();
    let connection = conninfo(&database_url)?;
    // A client that leaves stops the writer at its next feature; the folder
    // goes with the work, whichever ends first.
    let cancelled = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let (flag, layer, crs, ordered) = (cancelled.0.clone(), stem.to_string(), query.crs, query.ordered);
    let runtime = tokio::runtime::Handle::current();
    let (workdir, written) = tokio::task::spawn_blocking(move || {
        let workdir = tempfile::tempdir().map_err(AppError::internal)?;
        if format == ExportFormat::GeoParquet {
            let file = GeoParquet {
                database_url: &database_url,
                sql: &query.sql,
                unordered_sql: &query.unordered_sql,
                ordered,
                geometry_column: query.geometry_column.as_deref(),
                crs,
            };
            let written = file.write(&runtime, workdir.path(), &layer, &flag)?;
            return Ok((workdir, written));
        }
        let export = Export {
            connection: &connection,
            sql: &query.sql,
            layer: &layer,
            format,
            wgs84: crs.srid() == 4326,
            ordered,
            geometry_type: query.geometry_type.as_deref(),
            styles: &styles,
        };
        let written = export.write(workdir.path(), &flag);
        if flag.load(Ordering::Relaxed) {
            tracing::info!(dataset = %id, "export stopped: the client left");
        }
        let mut written = written.map_err(export_error)?;
        if format == ExportFormat::Shapefile {
            written = zip_folder(&written, &workdir.path().join(format!("{layer}.zip"))).map_err(export_error)?;
        }
        Ok::<_, AppError>((workdir, written))
    })
    .await
    .map_err(AppError::internal)??;
    drop(cancelled);
    Ok((workdir, written))
}

/// The QGIS styles the dataset's source brought, its default first.
async fn kept_styles(state: &AppState, id: Uuid) -> Result<Vec<LayerStyle>, AppError> {
    type Row = (String, Option<String>, Option<String>, Option<String>, bool);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT name, description, qml, sld, is_default FROM dataset_styles
         WHERE dataset_id = $1 ORDER BY is_default DESC, created_at, id",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, description, qml, sld, is_default)| LayerStyle {
            name,
            description,
            qml,
            sld,
            is_default,
        })
        .collect())
}

/// Tells the export's thread to stop when the request is dropped.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A value of a row that a filter cannot read (text cast to a number where
/// the planner could not see it) fails inside GDAL's query: the caller's
/// error, as on items. Anything else is the service's.
fn export_error(e: catalog_raster::RasterError) -> AppError {
    let message = e.to_string();
    if message.contains("invalid input syntax") || message.contains("out of range") {
        return AppError::bad_request(format!("the filter does not fit the data: {message}"));
    }
    AppError::internal(format!("export: {message}"))
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

/// The database URL as libpq's keywords and values, the lines of the
/// service file GDAL's PostgreSQL driver connects with.
fn conninfo(database_url: &str) -> Result<Vec<(String, String)>, AppError> {
    let url = url::Url::parse(database_url).map_err(AppError::internal)?;
    let decode = |v: &str| percent_encoding::percent_decode_str(v).decode_utf8_lossy().to_string();
    let mut parts = vec![("dbname".to_string(), decode(url.path().trim_start_matches('/')))];
    if let Some(host) = url.host_str() {
        parts.push(("host".into(), host.to_string()));
    }
    if let Some(port) = url.port() {
        parts.push(("port".into(), port.to_string()));
    }
    if !url.username().is_empty() {
        parts.push(("user".into(), decode(url.username())));
    }
    if let Some(password) = url.password() {
        parts.push(("password".into(), decode(password)));
    }
    parts.extend(
        url.query_pairs()
            .map(|(key, value)| (key.to_string(), value.to_string())),
    );
    Ok(parts)
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

/// Serves a file with Range and conditional requests (206, 304, 416); a
/// kept export also with its strong ETag (`If-None-Match` answered 304)
/// and the time it was made as `Last-Modified`.
pub(super) async fn serve(
    file: &FilePath,
    request: Request,
    media_type: &str,
    name: &str,
    export: Option<(&Key, std::time::SystemTime)>,
) -> Result<Response, AppError> {
    let mut request = request;
    if let Some((key, _)) = export
        && let Some(condition) = request.headers().get(header::IF_RANGE).and_then(|v| v.to_str().ok())
        && !key.is(condition)
    {
        // A range asked only if the file is still the one named: another
        // file is sent whole (RFC 9110 If-Range; ServeFile does not read it).
        request.headers_mut().remove(header::RANGE);
    }
    if let Some((key, _)) = export
        && request
            .headers()
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|tag| key.is(tag) || tag.trim() == "*")
    {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        response.headers_mut().insert(
            header::ETAG,
            HeaderValue::from_str(&key.etag()).map_err(AppError::internal)?,
        );
        return Ok(response);
    }
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
    if let Some((key, made)) = export {
        headers.insert(
            header::ETAG,
            HeaderValue::from_str(&key.etag()).map_err(AppError::internal)?,
        );
        headers.insert(
            header::LAST_MODIFIED,
            HeaderValue::from_str(&httpdate(made)).map_err(AppError::internal)?,
        );
    }
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
    // Deflate's fastest level: the zip is made while the client waits, and
    // the slowest part of a shapefile download was its compression.
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    for entry in std::fs::read_dir(folder).map_err(|e| fail(&e))? {
        let path = entry.map_err(|e| fail(&e))?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        archive.start_file(name, options).map_err(|e| fail(&e))?;
        let mut member = std::fs::File::open(&path).map_err(|e| fail(&e))?;
        std::io::copy(&mut member, &mut archive).map_err(|e| fail(&e))?;
    }
    archive.finish().map_err(|e| fail(&e))?;
    Ok(target.to_path_buf())
}

/// A time as HTTP writes it (RFC 9110 IMF-fixdate).
fn httpdate(at: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}
