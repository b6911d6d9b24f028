//! The router: every module's routes, the credential resolver, request ids,
//! tracing, problem documents for unknown routes and methods, and paths
//! served with or without a trailing slash.
use std::time::Duration;

use std::sync::Arc;

use axum::response::Response;
use axum::{
    Extension, Router,
    body::Body,
    extract::Request,
    http::{HeaderName, Method, StatusCode},
    middleware,
    routing::get,
};
use catalog_shared::{AppError, ServerErrorCause};
use tower::Layer;
use tower_http::{
    catch_panic::CatchPanicLayer,
    normalize_path::{NormalizePath, NormalizePathLayer},
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    timeout::TimeoutLayer,
    trace::TraceLayer,
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{
    access, assist, auth, catalog, connectors, datasets, features, health, jobs, maps, metrics, notifications, ogc,
    openapi::ApiDoc, quotas, rate_limit, records, sandbox, search, services, stac, state::AppState, tiles,
};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub fn build(
    state: AppState,
) -> axum::extract::connect_info::IntoMakeServiceWithConnectInfo<NormalizePath<Router>, std::net::SocketAddr> {
    axum::ServiceExt::<Request<Body>>::into_make_service_with_connect_info::<std::net::SocketAddr>(service(router(
        state,
    )))
}

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
        .merge(maps::routes())
        .merge(catalog::routes())
        .merge(search::routes())
        .merge(sandbox::routes())
        .merge(stac::routes())
        .merge(records::routes())
        .merge(tiles::routes())
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
    let doc = Arc::new(doc);
    api.route("/api/openapi.json", get(ogc::openapi::handler).layer(Extension(doc)))
        .route_layer(middleware::from_fn(access::routes::require_credential))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            access::credentials::resolve_caller,
        ))
        .layer(middleware::from_fn_with_state(
            state.rate_limiter.clone(),
            rate_limit::limit,
        ))
        // Outside the rate limiter, so its refusals are counted.
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::http::record,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), auth::cors::cors))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            Duration::from_secs(300),
        ))
        .layer(CatchPanicLayer::custom(|panic: Box<dyn std::any::Any + Send>| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            axum::response::IntoResponse::into_response(AppError::internal(format!(
                "a request handler panicked: {message}"
            )))
        }))
        .layer(
            TraceLayer::new_for_http()
                .on_response(log_response)
                // A 5xx is logged once, by `log_response`, with its cause.
                .on_failure(())
                .make_span_with(|request: &Request<Body>| {
                    let request_id = request
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id)
                }),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(state)
}

/// The one log line of each response, in the request's span (so with its
/// request id): server errors at error level with their cause, the rest at
/// info.
fn log_response(response: &Response, latency: Duration, _: &tracing::Span) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_millis() as u64;
    if response.status().is_server_error() {
        let cause = response.extensions().get::<ServerErrorCause>().map(|c| c.0.as_str());
        tracing::error!(
            status,
            latency_ms,
            cause = cause.unwrap_or("none recorded"),
            "request failed"
        );
    } else {
        tracing::info!(status, latency_ms, "finished processing request");
    }
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
