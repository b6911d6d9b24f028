//! What every routed request passes through, once and in one place: its
//! request id and its one log line, CORS, the HTTP metrics, the rate
//! limit, the refusal of a query parameter given twice, the caller's
//! credential and whether the route serves that caller, then the handler
//! under a time limit with its panics turned into problems, and the
//! refusal to be framed (`framing`). One middleware rather than a stack of
//! them: each layer of a stack clones and boxes the rest of the stack per
//! request, which cost a tenth of a cached tile's time.
use std::{
    net::SocketAddr,
    panic::AssertUnwindSafe,
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    extract::{ConnectInfo, MatchedPath, Request, State},
    http::{HeaderName, HeaderValue, Method},
    middleware::Next,
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, DatabaseUnavailable, ServerErrorCause, db};
use futures::FutureExt;
use tracing::Instrument;

use crate::{access, auth::cors::Cors, framing, replicas, state::AppState};

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// The longest a handler may take; uploads stream within it.
const HANDLER_TIME_LIMIT: Duration = Duration::from_secs(300);

pub async fn serve(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    // A request id the client (or a proxy) sent is kept, so logs line up.
    let request_id = match request.headers().get(REQUEST_ID) {
        Some(id) => id.clone(),
        None => {
            let id = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()).expect("a UUID is a header value");
            request.headers_mut().insert(REQUEST_ID, id.clone());
            id
        }
    };
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %logged_path(&request),
        request_id = request_id.to_str().unwrap_or_default()
    );
    let started = Instant::now();
    let mut response = answer(&state, peer, request, next).instrument(span.clone()).await;
    span.in_scope(|| log_response(&response, started.elapsed()));
    response.headers_mut().entry(REQUEST_ID).or_insert(request_id);
    framing::apply(&mut response);
    response
}

/// The path as logged: a map's share link is a credential, so its token
/// stays out of the logs (the route template, or the web UI's page, instead).
fn logged_path(request: &Request) -> &str {
    const SHARED_MAP_PAGE: &str = "/maps/shared/";
    match request.extensions().get::<MatchedPath>() {
        Some(route) if route.as_str().contains("{token}") => route.as_str(),
        _ if request.uri().path().starts_with(SHARED_MAP_PAGE) => "/maps/shared/{token}",
        _ => request.uri().path(),
    }
}

async fn answer(state: &AppState, peer: SocketAddr, request: Request, next: Next) -> Response {
    let cors = Cors::of(state, &request);
    if let Some(preflight) = cors.as_ref().and_then(|c| c.preflight(&request)) {
        return preflight;
    }
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = request.method().clone();
    let started = Instant::now();
    let mut response = match admit(state, peer, request, route.as_ref()).await {
        Ok(request) => {
            let writer = (!method.is_safe())
                .then(|| request.extensions().get::<access::Caller>().and_then(|c| c.user_id()))
                .flatten();
            let response = if method.is_safe() || state.config.database_prepared_statements {
                run_read_anywhere(state, request, next).await
            } else {
                // Behind a transaction-mode pooler a connection commits as
                // it goes back to the pool: the answer waits for that.
                let write = db::WriteRequest::default();
                let response = write.run(run_read_anywhere(state, request, next)).await;
                write.committed(&state.pool).await;
                response
            };
            // Read-your-writes: this caller's next reads wait for replicas
            // to replay what the write committed.
            if let Some(writer) = writer
                && response.status().is_success()
            {
                state.db.note_write(writer).await;
            }
            response
        }
        Err(refusal) => refusal.into_response(),
    };
    state.metrics.observe(
        route.as_ref().map_or("unmatched", MatchedPath::as_str),
        &method,
        response.status(),
        started.elapsed(),
    );
    if let Some(cors) = &cors {
        cors.apply(response.headers_mut());
    }
    response
}

/// The rate limit, a query naming a parameter twice refused, then the
/// credential: the `Caller` the handlers read.
async fn admit(
    state: &AppState,
    peer: SocketAddr,
    request: Request,
    route: Option<&MatchedPath>,
) -> Result<Request, AppError> {
    let (mut parts, body) = request.into_parts();
    state.rate_limiter.check(peer.ip(), &parts).await?;
    // Before the credential: a query-string key given twice names no one.
    crate::extract::refuse_repeated_parameters(parts.uri.query())?;
    let caller = access::credentials::caller_of(state, &parts).await?;
    if let Some(route) = route {
        access::routes::require_credential(&caller, route.as_str(), &parts)?;
    }
    parts.extensions.insert(caller);
    Ok(Request::from_parts(parts, body))
}

/// The handler, within its time limit; a panic becomes a 500 problem.
/// Runs the handler; a read (GET or HEAD) the database could not serve is
/// run once more on the primary when replicas serve reads and the primary
/// is up: a replica cancels queries that conflict with what it replays
/// (a reupload swapping a table, a vacuum), and may go away mid-read.
async fn run_read_anywhere(state: &AppState, request: Request, next: Next) -> Response {
    let method = request.method();
    if !state.db.has_replicas() || !(method == Method::GET || method == Method::HEAD) {
        return run(request, next).await;
    }
    let (parts, body) = request.into_parts();
    let first = run(Request::from_parts(parts.clone(), body), next.clone()).await;
    if first.extensions().get::<DatabaseUnavailable>().is_none() || !state.db.primary_is_up() {
        return first;
    }
    tracing::info!(
        cause = first.extensions().get::<ServerErrorCause>().map(|c| c.0.as_str()),
        "a read the database could not serve runs again on the primary"
    );
    replicas::on_primary(run(Request::from_parts(parts, Body::empty()), next)).await
}

async fn run(request: Request, next: Next) -> Response {
    let handler = AssertUnwindSafe(next.run(request)).catch_unwind();
    match tokio::time::timeout(HANDLER_TIME_LIMIT, handler).await {
        Ok(Ok(response)) => response,
        Ok(Err(panic)) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            AppError::internal(format!("a request handler panicked: {message}")).into_response()
        }
        Err(_) => AppError::new(
            axum::http::StatusCode::GATEWAY_TIMEOUT,
            format!("the request took longer than {} seconds", HANDLER_TIME_LIMIT.as_secs()),
        )
        .into_response(),
    }
}

/// The one log line of each response, in the request's span (so with its
/// request id): server errors at error level with their cause, the rest at
/// info.
fn log_response(response: &Response, latency: Duration) {
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
