use std::time::Duration;

use apalis_postgres::PostgresStorage;
use sqlx::{
    PgPool, SqlSafeStr,
    postgres::{PgConnectOptions, PgPoolOptions, PgTransactionManager},
};
use sqlx_core::transaction::TransactionManager;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// A pool that fails fast when the database is down (requests answer 503)
/// and reconnects by itself when it comes back.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    Ok(pool_options(max_connections).connect_lazy(url)?)
}

/// Settings every request's connection runs with. Statements are prepared
/// once per connection, but planned for each request's own values: a
/// generic plan (which PostgreSQL picks after five runs) cannot tell a
/// dense bbox from a sparse one and chose a 20x slower plan for the items
/// page. JIT compilation is off: it spent 60 ms of a crowded tile's 190 ms
/// compiling expressions that ran for less than that. Parallel query
/// workers only add contention among many small queries.
const REQUEST_SETTINGS: &str =
    "SET max_parallel_workers_per_gather = 0; SET plan_cache_mode = force_custom_plan; SET jit = off";

/// What a connection lent behind a transaction-mode pooler runs first: the
/// same settings for this transaction only, and no statement left by
/// whoever used the server connection before.
const POOLED_TRANSACTION_BEGIN: &str = "BEGIN; DEALLOCATE ALL; SET LOCAL max_parallel_workers_per_gather = 0; \
     SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL jit = off";

/// The same for request handlers. With `prepared_statements` off (a
/// transaction-mode pooler that cannot keep them, such as PgBouncer before
/// 1.21) nothing outlives a transaction: every borrowed connection is one
/// transaction (begun when lent, committed when given back, so the pooler
/// keeps one server connection under it for that long), whose settings
/// are `SET LOCAL` and whose statements are prepared within it. It is
/// begun as sqlx's own, so a handler's transaction nests in it as a
/// savepoint.
pub fn connect_for_requests(url: &str, max_connections: u32, prepared_statements: bool) -> anyhow::Result<PgPool> {
    if prepared_statements {
        let options = pool_options(max_connections).after_connect(|conn, _| {
            Box::pin(async move {
                sqlx::raw_sql(REQUEST_SETTINGS).execute(conn).await?;
                Ok(())
            })
        });
        return Ok(options.connect_lazy(url)?);
    }
    let connect_options = url.parse::<PgConnectOptions>()?.statement_cache_capacity(0);
    let options = pool_options(max_connections)
        // Beginning the transaction checks the connection as well.
        .test_before_acquire(false)
        .after_connect(|conn, _| Box::pin(begin_lent(conn)))
        .before_acquire(|conn, _| {
            Box::pin(async move {
                begin_lent(conn).await?;
                Ok(true)
            })
        })
        .after_release(|conn, _| {
            Box::pin(async move {
                PgTransactionManager::commit(conn).await?;
                Ok(true)
            })
        });
    Ok(options.connect_lazy_with(connect_options))
}

async fn begin_lent(conn: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    let begin = match WRITING.try_with(|request| request.0) {
        Ok(key) => {
            format!("{POOLED_TRANSACTION_BEGIN}; SELECT pg_advisory_xact_lock_shared({WRITE_REQUEST_LOCKS}, {key})")
        }
        Err(_) => POOLED_TRANSACTION_BEGIN.to_string(),
    };
    PgTransactionManager::begin(conn, Some(sqlx::AssertSqlSafe(begin).into_sql_str())).await
}

tokio::task_local! {
    static WRITING: WriteRequest;
}

/// The advisory lock class that marks the connections lent to a write
/// request (`WriteRequest`); the key within it is the request's.
const WRITE_REQUEST_LOCKS: i32 = 0x5752_4954;

/// How long a write's answer waits for its connections to commit before
/// it goes anyway (a connection kept past the handler, by a task it left
/// running, is not worth holding the answer for).
const COMMIT_WAIT: &str = "10s";

/// A write request served by a pool without prepared statements
/// (`connect_for_requests`): each connection it borrows is one transaction
/// that commits as the connection goes back to the pool, in a task of its
/// own, after the handler is done. Its answer must wait for those commits,
/// or whoever reads next (the caller itself) may not see what it wrote.
/// Each such connection holds a shared advisory lock on the request's key
/// until it commits; `committed` takes the lock exclusively, so it returns
/// once they all have.
#[derive(Clone, Copy)]
pub struct WriteRequest(i32);

impl WriteRequest {
    /// Runs the request's handler, its borrowed connections marked.
    pub async fn run<F: Future>(self, handler: F) -> F::Output {
        WRITING.scope(self, handler).await
    }

    /// Waits until every connection the handler borrowed has committed.
    pub async fn committed(self, pool: &PgPool) {
        // One round trip: the time limit and the lock in one simple query.
        let wait = format!(
            "SET LOCAL lock_timeout = '{COMMIT_WAIT}'; SELECT pg_advisory_xact_lock({WRITE_REQUEST_LOCKS}, {})",
            self.0
        );
        if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(wait)).execute(pool).await {
            tracing::warn!(error = %e, "a write's answer did not wait for its connections to commit");
        }
    }
}

impl Default for WriteRequest {
    /// A new request's key: random, so requests in other API processes
    /// rarely share it (one that does only waits a little longer).
    fn default() -> Self {
        Self(rand::random())
    }
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

/// A string literal of SQL holding `text` exactly, by PostgreSQL's own rule
/// (`quote_literal`): quotes doubled and, where it holds a backslash, an
/// escape string with backslashes doubled, so it reads the same whatever
/// `standard_conforming_strings` says. For what cannot be bound: a name
/// inside SQL the service writes, or SQL handed to a reader that binds
/// nothing (GDAL).
pub fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if quoted.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

#[cfg(test)]
mod tests {
    use super::quote_literal;

    #[test]
    fn literals_double_quotes_and_escape_backslashes_as_postgresql_does() {
        assert_eq!(quote_literal("plain"), "'plain'");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal(r"a\'b"), r"E'a\\''b'");
        assert_eq!(quote_literal(""), "''");
    }
}
