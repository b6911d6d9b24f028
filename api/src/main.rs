//! The API process: validates requests, stores uploads, enqueues jobs and
//! serves the catalog. `catalog-api migrate` applies migrations and exits;
//! `catalog-api --version` prints the release.
#![forbid(unsafe_code)]
use std::time::Duration;

use axum::{
    Router,
    body::Body,
    extract::{ConnectInfo, Request},
};
use catalog_api::app;
use catalog_shared::{config::Config, db, telemetry};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::net::TcpListener;
use tower_http::normalize_path::NormalizePath;

/// Requests allocate many small, short-lived buffers and futures; glibc's
/// allocator spent a tenth of a cached tile's time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = std::env::args().nth(1).unwrap_or_else(|| "serve".into());
    if catalog_shared::asks_for_version(Some(&command)) {
        println!(
            "catalog-api {} (HTTP interface {})",
            catalog_shared::VERSION,
            catalog_api::INTERFACE_VERSION
        );
        return Ok(());
    }
    telemetry::init();
    match command.as_str() {
        "migrate" => {
            // The primary itself: a transaction-mode pooler cannot hold a
            // migration's session (advisory locks, several transactions).
            let url = std::env::var("DATABASE_DIRECT_URL")
                .or_else(|_| std::env::var("DATABASE_URL"))
                .unwrap_or_else(|_| catalog_shared::config::DEFAULT_DATABASE_URL.into());
            let pool = db::connect(&url, 2).await?;
            db::wait_until_reachable(&pool, Duration::from_secs(60)).await?;
            catalog_api::migrate(&pool).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        "serve" => serve().await,
        other => anyhow::bail!("unknown command {other:?}; use `serve` (default), `migrate` or `--version`"),
    }
}

async fn serve() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let bind_addr = config.bind_addr;
    let app = app::service(app::router(catalog_api::start(config).await?));
    let listener = TcpListener::bind(bind_addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "API listening");
    serve_connections(listener, app).await;
    Ok(())
}

/// Accepts connections until a stop signal, then lets the requests in
/// flight finish. The HTTP server runs with a timer, so a client that
/// sends its request headers slower than `HEADER_READ_TIMEOUT` (slowloris)
/// is disconnected instead of holding its connection forever.
async fn serve_connections(listener: TcpListener, app: NormalizePath<Router>) {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    http.http2().timer(TokioTimer::new());
    let connections = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop_signal());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most likely: let some close.
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        // Small answers (tiles, pages) go out at once, not after the client's ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let service = tower::ServiceExt::map_request(app.clone(), move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            request.map(Body::new)
        });
        let connection = http.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = connections.watch(connection.into_owned());
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    connections.shutdown().await;
}

/// Ctrl-C, or SIGTERM as container runtimes and service managers send it:
/// requests in flight finish first.
async fn stop_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("a SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
