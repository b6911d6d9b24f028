//! The connections vector tile queries run on. sqlx's pool pings a
//! connection when it lends it and again when it comes back: two round
//! trips to PostgreSQL around a tile query that often takes less than
//! either. These connections are lent as they are. One whose query was
//! abandoned half-way (the client went away) is drained before it goes
//! back, since a new connection costs far more (PostGIS and PROJ load anew
//! in each server process: hundreds of milliseconds); one that failed is
//! closed. One idle for a while, or since another was found dropped by the
//! database, is pinged before it is lent, and a query whose connection was
//! dropped runs once more on another: once a database restart is over, it
//! costs no request an error.
use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use catalog_shared::{AppError, db::PoolFigures, error::is_unavailable};

use deadpool::managed::{self, Metrics, Object, PoolError, RecycleResult, Timeouts};
use sqlx::{ConnectOptions, Connection, PgConnection, postgres::PgConnectOptions};

/// How long a connection may sit idle before it is checked when lent.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(30);
/// How long a request waits for a connection, or for a new one to open.
const WAIT: Duration = Duration::from_secs(5);

pub struct TileConnections {
    pool: managed::Pool<Opener>,
}

/// What a tile query answers: the dataset's data version in the snapshot
/// the tile was cut from (none for the basemap), and the tile.
pub type CutTile = (Option<i64>, Option<Vec<u8>>);

/// Opens and checks the pool's connections.
struct Opener {
    options: PgConnectOptions,
    /// When a connection was last found dropped by the database: the
    /// others, idle since before then, are checked before they are lent.
    lost_at: Mutex<Option<Instant>>,
    /// False behind a transaction-mode pooler that cannot keep prepared
    /// statements: each tile is then one transaction of its own.
    prepared_statements: bool,
}

/// A tile's session settings (see `Opener::create`), for one transaction.
const POOLED_TILE_BEGIN: &str = "BEGIN; SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off";

impl managed::Manager for Opener {
    type Type = PgConnection;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConnection, sqlx::Error> {
        let mut connection = self.options.connect().await?;
        if !self.prepared_statements {
            return Ok(connection);
        }
        // A tile's area is a small window on the spatial index: parallel
        // workers only add contention under concurrent tile requests. JIT
        // compilation cost a crowded tile a third of its time (190 ms against
        // 130 ms without), every time: tile queries are many and short. And
        // the plan is always the spatial index on the tile's area, which the
        // planner, left to itself, worked out again for every small tile:
        // half a small tile's time in the database (pgbench: 10.5k tiles/s,
        // 21.9k with the one generic plan; a crowded tile the same).
        sqlx::raw_sql(
            "SET max_parallel_workers_per_gather = 0; SET jit = off; SET plan_cache_mode = force_generic_plan",
        )
        .execute(&mut connection)
        .await?;
        Ok(connection)
    }

    async fn recycle(&self, connection: &mut PgConnection, metrics: &Metrics) -> RecycleResult<sqlx::Error> {
        let idle_since = metrics.recycled.unwrap_or(metrics.created);
        let lost_at = *self.lost_at.lock().unwrap_or_else(|e| e.into_inner());
        if lost_at.is_some_and(|lost| idle_since < lost) || metrics.last_used() > CHECK_AFTER_IDLE {
            connection.ping().await?;
        }
        Ok(())
    }
}

/// A lent connection. It goes back to the pool through
/// [`Lent::give_back`], after a query that left it in a known state, or
/// drained when dropped mid-query.
struct Lent(Option<Object<Opener>>);

impl TileConnections {
    pub fn new(url: &str, max_connections: usize, prepared_statements: bool) -> anyhow::Result<Self> {
        let opener = Opener {
            options: url.parse()?,
            lost_at: Mutex::new(None),
            prepared_statements,
        };
        let pool = managed::Pool::builder(opener)
            .max_size(max_connections)
            .timeouts(Timeouts {
                wait: Some(WAIT),
                create: Some(WAIT),
                recycle: Some(WAIT),
            })
            .runtime(deadpool::Runtime::Tokio1)
            .build()?;
        Ok(Self { pool })
    }

    /// The tile that `sql` cuts at `address` with its layer named `layer`
    /// (none when it holds nothing), and, when `dataset` is given (as `$5`),
    /// the data version `sql` read beside it. A connection the database has
    /// dropped (it restarted, or ended the session) is closed and the query
    /// runs once more on another, so an outage that is over costs no
    /// request an error.
    pub async fn tile(
        &self,
        sql: &str,
        address: (u32, u32, u32),
        layer: &str,
        dataset: Option<uuid::Uuid>,
    ) -> Result<CutTile, AppError> {
        let mut retried = false;
        loop {
            let mut connection = self.lend().await?;
            let outcome = self.cut(&mut connection, sql, address, layer, dataset).await;
            connection.give_back(&outcome);
            match outcome {
                Err(e) if !retried && is_unavailable(&e) => {
                    *self.pool.manager().lost_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                    retried = true;
                }
                outcome => return outcome.map_err(AppError::from),
            }
        }
    }

    async fn cut(
        &self,
        connection: &mut PgConnection,
        sql: &str,
        address: (u32, u32, u32),
        layer: &str,
        dataset: Option<uuid::Uuid>,
    ) -> Result<CutTile, sqlx::Error> {
        let prepared = self.pool.manager().prepared_statements;
        if !prepared {
            sqlx::raw_sql(POOLED_TILE_BEGIN).execute(&mut *connection).await?;
        }
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .persistent(prepared)
            .bind(address.0 as i32)
            .bind(address.1 as i32)
            .bind(address.2 as i32)
            .bind(layer);
        if let Some(dataset) = dataset {
            query = query.bind(dataset);
        }
        let tile = query.fetch_one(&mut *connection).await;
        if !prepared {
            // Ends the transaction whether or not the query failed in it.
            sqlx::raw_sql("ROLLBACK").execute(&mut *connection).await?;
        }
        tile
    }

    async fn lend(&self) -> Result<Lent, AppError> {
        match self.pool.get().await {
            Ok(connection) => Ok(Lent(Some(connection))),
            Err(PoolError::Backend(e)) => Err(e.into()),
            Err(PoolError::Timeout(_)) => Err(sqlx::Error::PoolTimedOut.into()),
            Err(e) => Err(AppError::internal(e)),
        }
    }

    pub fn figures(&self) -> PoolFigures {
        let status = self.pool.status();
        PoolFigures {
            open: status.size,
            in_use: status.size.saturating_sub(status.available),
            most: status.max_size,
        }
    }
}

impl Lent {
    /// Puts the connection back after a query that ended with `outcome`:
    /// a statement PostgreSQL refused leaves it usable; a lost, ended or
    /// garbled connection is closed.
    fn give_back<T>(mut self, outcome: &Result<T, sqlx::Error>) {
        let Some(connection) = self.0.take() else {
            return;
        };
        let reusable = match outcome {
            Ok(_) => true,
            Err(e @ sqlx::Error::Database(_)) => !is_unavailable(e),
            Err(_) => false,
        };
        if !reusable {
            drop(Object::take(connection));
        }
    }
}

impl std::ops::Deref for Lent {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.0.as_ref().expect("a lent connection is held until given back")
    }
}

impl std::ops::DerefMut for Lent {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.0.as_mut().expect("a lent connection is held until given back")
    }
}

/// A connection not given back was abandoned mid-query: it goes back once
/// PostgreSQL has answered what is pending, or leaves the pool if it cannot.
impl Drop for Lent {
    fn drop(&mut self) {
        let Some(mut connection) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if connection.ping().await.is_err() {
                        drop(Object::take(connection));
                    }
                });
            }
            Err(_) => drop(Object::take(connection)),
        }
    }
}
