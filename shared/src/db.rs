use std::time::Duration;

use apalis_postgres::PostgresStorage;
use sqlx::{PgPool, postgres::PgPoolOptions};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// A pool that fails fast when the database is down (requests answer 503)
/// and reconnects by itself when it comes back.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    Ok(pool_options(max_connections).connect_lazy(url)?)
}

/// The same for request handlers: many small queries at once, where
/// parallel query workers only add contention. Statements are prepared once
/// per connection, but planned for each request's own values: a generic
/// plan (which PostgreSQL picks after five runs) cannot tell a dense bbox
/// from a sparse one and chose a 20x slower plan for the items page. JIT
/// compilation is off: it spent 60 ms of a crowded tile's 190 ms compiling
/// expressions that ran for less than that.
pub async fn connect_for_requests(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = pool_options(max_connections).after_connect(|conn, _| {
        Box::pin(async move {
            sqlx::raw_sql(
                "SET max_parallel_workers_per_gather = 0; SET plan_cache_mode = force_custom_plan; SET jit = off",
            )
            .execute(conn)
            .await?;
            Ok(())
        })
    });
    Ok(options.connect_lazy(url)?)
}

/// One pool's connections: open, lent out, and the most it opens.
pub struct PoolFigures {
    pub open: usize,
    pub in_use: usize,
    pub most: usize,
}

impl PoolFigures {
    pub fn of(pool: &PgPool) -> Self {
        let open = pool.size() as usize;
        Self {
            open,
            in_use: open.saturating_sub(pool.num_idle()),
            most: pool.options().get_max_connections() as usize,
        }
    }
}

fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(5))
}

/// Waits for the database at start-up so a service started beside its
/// database does not die while the database is still booting.
pub async fn wait_until_reachable(pool: &PgPool, patience: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match sqlx::query("SELECT 1").execute(pool).await {
            Ok(_) => return Ok(()),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "database not reachable yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(anyhow::anyhow!("database not reachable: {e}")),
        }
    }
}

/// Applies the catalog's migrations and the queue's own schema. Both take
/// advisory locks, so concurrent starts are safe.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR.run(pool).await?;
    PostgresStorage::<()>::setup(pool).await?;
    Ok(())
}

/// Quotes an identifier for SQL text. Only for names the service made or
/// checked itself; request values always travel as bound parameters.
pub fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}
