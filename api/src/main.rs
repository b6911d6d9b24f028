//! The API process: validates requests, stores uploads, enqueues jobs and
//! serves the catalog. `catalog-api migrate` applies migrations and exits;
//! `catalog-api --version` prints the release.
#![forbid(unsafe_code)]
use std::time::Duration;

use axum::serve::ListenerExt;
use catalog_api::app;
use catalog_shared::{config::Config, db, telemetry};

/// Requests allocate many small, short-lived buffers and futures; glibc's
/// allocator spent a tenth of a cached tile's time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
            let url =
                std::env::var("DATABASE_URL").unwrap_or_else(|_| catalog_shared::config::DEFAULT_DATABASE_URL.into());
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
    let app = app::build(catalog_api::start(config).await?);
    let listener = tokio::net::TcpListener::bind(bind_addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "API listening");
    // Small answers (tiles, pages) go out at once, not after the client's ACK.
    let listener = listener.tap_io(|stream| {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
    });
    axum::serve(listener, app).with_graceful_shutdown(stop_signal()).await?;
    Ok(())
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
