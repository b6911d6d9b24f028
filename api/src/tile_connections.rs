//! The connections vector tile queries run on. sqlx's pool pings a
//! connection when it lends it and again when it comes back: two round
//! trips to PostgreSQL around a tile query that often takes less than
//! either. These connections are lent as they are. One whose query was
//! abandoned half-way (the client went away) is drained before it goes
//! back, since a new connection costs far more (PostGIS and PROJ load anew
//! in each server process: hundreds of milliseconds); one that failed is
//! closed; one idle for a while is pinged first, so a database restarted
//! meanwhile costs no request an error.
use std::time::Duration;

use catalog_shared::{AppError, db::PoolFigures};

use deadpool::managed::{self, Metrics, Object, PoolError, RecycleResult, Timeouts};
use sqlx::{ConnectOptions, Connection, PgConnection, postgres::PgConnectOptions};

/// How long a connection may sit idle before it is checked when lent.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(30);
/// How long a request waits for a connection, or for a new one to open.
const WAIT: Duration = Duration::from_secs(5);

pub struct TileConnections {
    pool: managed::Pool<Opener>,
}

/// Opens and checks the pool's connections.
struct Opener {
    options: PgConnectOptions,
}

impl managed::Manager for Opener {
    type Type = PgConnection;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConnection, sqlx::Error> {
        let mut connection = self.options.connect().await?;
        // A tile's area is a small window on the spatial index: parallel
        // workers only add contention under concurrent tile requests.
        sqlx::raw_sql("SET max_parallel_workers_per_gather = 0")
            .execute(&mut connection)
            .await?;
        Ok(connection)
    }

    async fn recycle(&self, connection: &mut PgConnection, metrics: &Metrics) -> RecycleResult<sqlx::Error> {
        if metrics.last_used() > CHECK_AFTER_IDLE {
            connection.ping().await?;
        }
        Ok(())
    }
}

/// A lent connection. It goes back to the pool only through
/// [`Lent::give_back`], after a query that left it in a known state.
pub struct Lent(Option<Object<Opener>>);

impl TileConnections {
    pub fn new(url: &str, max_connections: usize) -> anyhow::Result<Self> {
        let pool = managed::Pool::builder(Opener { options: url.parse()? })
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

    pub async fn lend(&self) -> Result<Lent, AppError> {
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
    /// a statement PostgreSQL refused leaves it usable; a lost or garbled
    /// connection is closed.
    pub fn give_back<T>(mut self, outcome: &Result<T, sqlx::Error>) {
        let Some(connection) = self.0.take() else {
            return;
        };
        if matches!(outcome, Err(e) if !matches!(e, sqlx::Error::Database(_))) {
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
