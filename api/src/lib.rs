//! The API as a library: the router and the state it serves from, so the
//! binary and the in-process route tests build the same application.
// Only the jobs and raster crates, which call GDAL's C API, have unsafe code.
#![forbid(unsafe_code)]
use std::time::Duration;

use catalog_shared::{config::Config, db};

mod access;
pub mod app;
mod assist;
mod auth;
mod basemap;
mod bbox;
mod catalog;
mod connectors;
mod coordinates;
mod dataset_cache;
mod dataset_record;
mod datasets;
mod edge;
mod editing;
mod extract;
mod features;
mod framing;
mod glyphs;
mod health;
mod http_metrics;
mod interval;
mod jobs;
mod local_copy;
mod maps;
mod match_counts;
mod metrics;
mod notifications;
mod ogc;
mod ogc_html;
mod openapi;
pub use openapi::INTERFACE_VERSION;
mod page;
mod pictures;
mod quotas;
mod rate_limit;
mod read_clock;
mod read_gate;
mod records;
mod remote_styles;
mod replicas;
mod sandbox;
mod sandbox_pool;
mod search;
mod services;
mod stac;
pub mod state;
mod tile_cache;
mod tile_connections;
mod tiles;
mod web_ui;

/// Applies the migrations, then loads the built-in basemap's data when the
/// database holds other data or none.
pub async fn migrate(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    db::migrate(pool).await?;
    basemap::data::load(pool).await
}

/// Connects, migrates, makes the bootstrap admin and starts the background
/// work of one API process; answers the state its router serves from.
pub async fn start(config: Config) -> anyhow::Result<state::AppState> {
    let pool = db::connect_for_requests(&config.database_url, 20, config.database_prepared_statements)?;
    // Migrations and LISTEN need a session of their own: never through a
    // transaction-mode pooler.
    let direct = db::connect(&config.database_direct_url, 2).await?;
    db::wait_until_reachable(&direct, Duration::from_secs(60)).await?;
    migrate(&direct).await?;
    ogc::crs::check_extra_crs(&pool, &config.extra_crs).await?;
    auth::bootstrap_admin(&pool, &config).await?;
    let rate_limiter = rate_limit::RateLimiter::start(config.redis_url.as_deref(), config.rate_limits.clone()).await;
    let database = std::sync::Arc::new(replicas::Database::new(pool.clone(), &config, rate_limiter.store())?);
    tokio::spawn(database.clone().watch());
    tokio::spawn(database.clone().follow_writes(direct.clone()));
    let state = state::AppState::new(pool, database, config, rate_limiter)?;
    state.sandbox.prepare_login(&state.pool).await;
    tokio::spawn(state.datasets.clone().follow_changes(direct));
    Ok(state)
}
