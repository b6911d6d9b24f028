use std::sync::Arc;

use catalog_shared::{auth::TokenKeys, config::Config, outbound::OutboundPolicy, storage};
use object_store::path::Path;
use sqlx::PgPool;

#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub store: storage::Store,
    pub prefix: Path,
    pub config: Arc<Config>,
    pub keys: TokenKeys,
    pub outbound: OutboundPolicy,
}

impl AppState {
    pub fn new(pool: PgPool, config: Config) -> anyhow::Result<Self> {
        let (store, prefix) = storage::open(&config.storage_url)?;
        Ok(Self {
            pool,
            store,
            prefix,
            keys: TokenKeys::new(&config.jwt_secret),
            outbound: OutboundPolicy::new(&config.outbound_allowed_hosts),
            config: Arc::new(config),
        })
    }
}
