//! The API process: validates requests, stores uploads, enqueues jobs and
//! serves the catalog. `catalog-api migrate` applies migrations and exits.
// Only the jobs crate, which calls GDAL, needs unsafe code.
#![forbid(unsafe_code)]
use std::time::Duration;

use catalog_shared::{config::Config, db, telemetry};

mod access;
mod app;
mod assist;
mod auth;
mod bbox;
mod catalog;
mod connectors;
mod dataset_cache;
mod datasets;
mod extract;
mod features;
mod health;
mod interval;
mod jobs;
mod maps;
mod notifications;
mod ogc;
mod openapi;
mod rate_limit;
mod records;
mod sandbox;
mod search;
mod services;
mod stac;
mod state;
mod tiles;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let command = std::env::args().nth(1).unwrap_or_else(|| "serve".into());
    match command.as_str() {
        "migrate" => {
            let url =
                std::env::var("DATABASE_URL").unwrap_or_else(|_| catalog_shared::config::DEFAULT_DATABASE_URL.into());
            let pool = db::connect(&url, 2).await?;
            db::wait_until_reachable(&pool, Duration::from_secs(60)).await?;
            db::migrate(&pool).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        "serve" => serve().await,
        other => anyhow::bail!("unknown command {other:?}; use `serve` (default) or `migrate`"),
    }
}

async fn serve() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let pool = db::connect_for_requests(&config.database_url, 20).await?;
    db::wait_until_reachable(&pool, Duration::from_secs(60)).await?;
    db::migrate(&pool).await?;
    auth::bootstrap_admin(&pool, &config).await?;
    let bind_addr = config.bind_addr;
    let rate_limiter = rate_limit::RateLimiter::start(config.redis_url.as_deref(), config.rate_limits.clone()).await;
    let state = state::AppState::new(pool, config, rate_limiter)?;
    state.sandbox.prepare_login(&state.pool).await;
    tokio::spawn(state.datasets.clone().follow_changes(state.pool.clone()));
    let app = app::build(state);
    let listener = tokio::net::TcpListener::bind(bind_addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "API listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
