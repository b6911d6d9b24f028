use std::sync::Arc;

use catalog_shared::{auth::TokenKeys, config::Config, outbound::OutboundPolicy, storage::Storage};
use sqlx::PgPool;

/// What every handler shares, behind one reference count: axum clones the
/// state for each extractor and middleware of every request.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    /// The primary's request pool: writes and catalog state.
    pub pool: PgPool,
    /// Where reads go: the primary or a replica, with the connections for
    /// vector tile queries (generic plans) of each.
    pub db: Arc<crate::replicas::Database>,
    /// Connections as the SQL sandbox's role, for callers' statements only.
    pub sandbox: crate::sandbox_pool::SandboxPool,
    pub storage: Storage,
    pub config: Arc<Config>,
    pub keys: TokenKeys,
    pub outbound: OutboundPolicy,
    pub datasets: crate::dataset_cache::DatasetCache,
    pub basemaps: crate::remote_styles::BasemapCache,
    pub rate_limiter: crate::rate_limit::RateLimiter,
    pub metrics: crate::http_metrics::HttpMetrics,
    pub reads: crate::read_clock::ReadClock,
    pub tiles: crate::tile_cache::TileCache,
    /// Exact counts of filtered items, per data version.
    pub match_counts: crate::match_counts::MatchCounts,
    pub fonts: crate::glyphs::Fonts,
    /// Rendered pictures of datasets and maps, by entity tag.
    pub pictures: crate::pictures::PictureCache,
}

impl AppState {
    pub fn new(
        pool: PgPool,
        db: Arc<crate::replicas::Database>,
        config: Config,
        rate_limiter: crate::rate_limit::RateLimiter,
    ) -> anyhow::Result<Self> {
        Ok(Self(Arc::new(Shared {
            sandbox: crate::sandbox_pool::SandboxPool::new(&config),
            pool,
            db,
            storage: Storage::open(&config.storage_url)?,
            keys: TokenKeys::new(&config.jwt_secret),
            outbound: OutboundPolicy::new(&config.outbound_allowed_hosts),
            datasets: Default::default(),
            basemaps: Default::default(),
            rate_limiter,
            metrics: Default::default(),
            reads: Default::default(),
            tiles: crate::tile_cache::TileCache::new(config.tile_cache_bytes),
            match_counts: Default::default(),
            fonts: crate::glyphs::Fonts::load(&config.fonts_dir),
            pictures: Default::default(),
            config: Arc::new(config),
        })))
    }
}
