//! The router: every module's routes behind the one edge middleware
//! (`edge`), problem documents for unknown routes and methods, documents
//! gzipped for a client that accepts it, and paths served with or without
//! a trailing slash.
use std::sync::Arc;

use axum::response::Response;
use axum::{
    Extension, Router,
    extract::Request,
    http::{Method, StatusCode},
    middleware,
    routing::get,
};
use catalog_shared::AppError;
use tower::Layer;
use tower_http::{
    CompressionLevel,
    compression::{
        CompressionLayer,
        predicate::{Predicate, SizeAbove},
    },
    normalize_path::{NormalizePath, NormalizePathLayer},
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{
    assist, auth, basemap, catalog, connectors, datasets, edge, editing, features, health, jobs, maps, metrics,
    notifications, ogc, openapi::ApiDoc, quotas, records, sandbox, search, services, stac, state::AppState, tiles,
};

/// The router as one service, answering paths with or without a trailing
/// slash.
pub fn service(router: Router) -> NormalizePath<Router> {
    NormalizePathLayer::trim_trailing_slash().layer(router)
}

pub fn router(state: AppState) -> Router {
    let (api, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(health::routes())
        .merge(auth::routes())
        .merge(datasets::routes(state.config.max_upload_bytes))
        .merge(jobs::routes())
        .merge(ogc::routes())
        .merge(features::routes())
        .merge(editing::routes())
        .merge(maps::routes())
        .merge(catalog::routes())
        .merge(search::routes())
        .merge(sandbox::routes())
        .merge(stac::routes())
        .merge(records::routes())
        .merge(tiles::routes())
        .merge(basemap::routes())
        .merge(notifications::routes())
        .merge(connectors::routes())
        .merge(services::routes())
        .merge(assist::routes())
        .merge(metrics::routes())
        .merge(quotas::routes())
        .split_for_parts();
    doc.info.version = crate::openapi::INTERFACE_VERSION.into();
    let mut doc = serde_json::to_value(&doc).expect("the OpenAPI document serializes");
    crate::openapi::add_common_responses(&mut doc);
    crate::openapi::describe_query_lists(&mut doc);
    crate::openapi::pin_uuid_formats(&mut doc);
    crate::openapi::add_links(&mut doc);
    let doc = Arc::new(doc);
    api.route("/api/openapi.json", get(ogc::openapi::handler).layer(Extension(doc)))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(documents_compressed())
        .layer(middleware::from_fn_with_state(state.clone(), edge::serve))
        .with_state(state)
}

/// Documents (JSON, XML, HTML, CSV, any text) gzipped when the client
/// accepts it, at the fastest level: a page of world countries' GeoJSON
/// shrinks about five times for a few milliseconds. Files that answer
/// ranges (downloads, archives, rasters) go as they are, so a range read
/// after a whole one reads the same bytes; so do images, tiles (their
/// routes gzip them), small answers and event streams, which must not
/// wait for a buffer to fill.
fn documents_compressed() -> CompressionLayer<impl Predicate> {
    let document =
        |_: StatusCode, _: axum::http::Version, headers: &axum::http::HeaderMap, _: &axum::http::Extensions| {
            let media_type = headers
                .get(axum::http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_ascii_lowercase();
            let essence = media_type.split(';').next().unwrap_or_default().trim();
            let textual = essence.starts_with("text/") && essence != "text/event-stream"
                || essence.ends_with("/json")
                || essence.ends_with("+json")
                || essence.ends_with("/xml")
                || essence.ends_with("+xml");
            textual && !headers.contains_key(axum::http::header::ACCEPT_RANGES)
        };
    CompressionLayer::new()
        .quality(CompressionLevel::Fastest)
        .compress_when(SizeAbove::new(1024).and(document))
}

/// Paths no API route takes: the web UI's, or a problem.
async fn not_found(method: Method, request: Request) -> Response {
    let path = request.uri().path();
    crate::web_ui::respond(&method, path, request.headers()).unwrap_or_else(|| {
        axum::response::IntoResponse::into_response(AppError::not_found(format!("no route for {method} {path}")))
    })
}

async fn method_not_allowed(method: Method, request: Request) -> AppError {
    AppError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", request.uri().path()),
    )
}
