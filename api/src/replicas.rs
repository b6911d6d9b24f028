//! Where a read goes: the primary, or one of the streaming replicas of
//! `DATABASE_READ_URLS`. Writes, jobs and catalog state always use the
//! primary; the read routes (items, features, tiles, search, STAC, the
//! sandbox) ask for a [`Reader`] no older than a WAL position:
//!
//! - the caller's last write (read-your-writes): noted after each write a
//!   signed-in caller makes, in this process and in Redis when configured,
//!   else announced to the other API processes by NOTIFY on the primary,
//!   so every API process sees it;
//! - for a dataset's data, the position at which this process read the
//!   dataset's record, so a replica never answers with data older than
//!   the version the record names (and the tile cache, keyed by that
//!   version, never keeps older data under it).
//!
//! A watcher asks the primary for its position and each replica for what it
//! has replayed four times a second. A replica that does not answer, or
//! still lacks a position the primary had more than `READ_MAX_LAG_SECONDS`
//! ago, is skipped until it catches up. With the primary down, reads go to
//! any replica that answers (stale beats nothing; writes answer 503).
//!
//! A read a replica could not serve (it cancelled the query for conflicting
//! with what it replays, or went away mid-read) is run once more on the
//! primary when the primary is up ([`on_primary`], by the edge), so the
//! caller sees no error for what the primary can answer.
use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use catalog_shared::{config::Config, db};
use sqlx::{PgPool, postgres::PgListener};
use uuid::Uuid;

use crate::{rate_limit::SharedStore, tile_connections::TileConnections};

tokio::task_local! {
    /// Set while a read runs again on the primary: every reader is the primary.
    static ON_PRIMARY: ();
}

/// Runs `read` with every [`Database::reader`] it asks for on the primary.
pub async fn on_primary<F: Future>(read: F) -> F::Output {
    ON_PRIMARY.scope((), read).await
}

/// Where API processes announce write positions to each other when no
/// Redis is configured: `<caller> <position>`.
const WRITES_CHANNEL: &str = "caller_wrote";

/// How often positions are read.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How often a read behind the watcher's figures may ask a replica again.
const REFRESH_EVERY: Duration = Duration::from_millis(20);
/// How long a position query may take before its server counts as down.
const ANSWER_WITHIN: Duration = Duration::from_millis(700);
/// How long a caller's write position is kept: past it, every replica that
/// lacks the write lags beyond any sensible `READ_MAX_LAG_SECONDS`.
const WRITE_REMEMBERED: Duration = Duration::from_secs(120);
/// A position nothing has reached: read from the primary.
pub const UNKNOWN_POSITION: i64 = i64::MAX;

/// The WAL position of a server, as bytes from the start of the WAL.
const PRIMARY_POSITION_SQL: &str = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint";
const REPLAYED_POSITION_SQL: &str = "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint";
/// Either, on whichever server answers: for records read beside it.
pub const POSITION_SQL: &str = "CASE WHEN pg_is_in_recovery() \
     THEN pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0') \
     ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') END::bigint";

pub struct Database {
    /// The primary's request pool (also `AppState::pool`).
    primary: PgPool,
    primary_tiles: TileConnections,
    primary_up: AtomicBool,
    /// The primary's recent positions, oldest first, for replicas' lag.
    primary_positions: Mutex<VecDeque<(Instant, i64)>>,
    replicas: Vec<Replica>,
    next: AtomicUsize,
    max_lag: Duration,
    written: Written,
    reads: [AtomicU64; 2],
}

pub struct Replica {
    /// host:port, for logs and metrics (never the credentials).
    pub name: String,
    pool: PgPool,
    tiles: TileConnections,
    up: AtomicBool,
    replayed: AtomicI64,
    lagging: AtomicBool,
    /// When a read last asked it for its position.
    refreshed: Mutex<Option<Instant>>,
}

impl Replica {
    /// Whether it answers, and whether it lags past `READ_MAX_LAG_SECONDS`.
    pub fn state(&self) -> (bool, bool) {
        (self.up.load(Ordering::Relaxed), self.lagging.load(Ordering::Relaxed))
    }

    /// Whether its position may be asked now (then it counts as asked).
    fn refresh_due(&self) -> bool {
        let mut last = self.refreshed.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < REFRESH_EVERY) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }
}

/// Where one read runs.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    pub pool: &'a PgPool,
    pub tiles: &'a TileConnections,
    /// Which replica, by its place in `DATABASE_READ_URLS`; none for the primary.
    pub replica: Option<usize>,
}

/// The write positions of callers who wrote lately.
struct Written {
    local: Mutex<HashMap<Uuid, (i64, Instant)>>,
    shared: SharedStore,
    /// Whether `REDIS_URL` is set: then a position it cannot answer for is
    /// unknown, not absent.
    configured: bool,
}

/// Keeps the larger of a stored position and the given one, for a while.
const KEEP_LARGER: &str = "local v = redis.call('GET', KEYS[1]) \
     if (not v) or tonumber(v) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end return 1";

impl Database {
    pub fn new(primary: PgPool, config: &Config, shared: SharedStore) -> anyhow::Result<Self> {
        let replicas = config
            .database_read_urls
            .iter()
            .map(|url| {
                let parsed = url::Url::parse(url)?;
                Ok(Replica {
                    name: format!(
                        "{}:{}",
                        parsed.host_str().unwrap_or("local"),
                        parsed.port().unwrap_or(5432)
                    ),
                    pool: db::connect_for_requests(url, 20, config.database_prepared_statements)?,
                    tiles: TileConnections::new(url, 16, config.database_prepared_statements)?,
                    up: AtomicBool::new(false),
                    replayed: AtomicI64::new(0),
                    lagging: AtomicBool::new(true),
                    refreshed: Mutex::new(None),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            primary_tiles: TileConnections::new(&config.database_url, 16, config.database_prepared_statements)?,
            primary,
            primary_up: AtomicBool::new(true),
            primary_positions: Mutex::default(),
            replicas,
            next: AtomicUsize::new(0),
            max_lag: config.read_max_lag,
            written: Written {
                local: Mutex::default(),
                shared,
                configured: config.redis_url.is_some(),
            },
            reads: Default::default(),
        })
    }

    pub fn has_replicas(&self) -> bool {
        !self.replicas.is_empty()
    }

    pub fn replicas(&self) -> &[Replica] {
        &self.replicas
    }

    /// Whether the primary answered the watcher's last question.
    pub fn primary_is_up(&self) -> bool {
        self.primary_up.load(Ordering::Relaxed)
    }

    fn primary_reader(&self) -> Reader<'_> {
        Reader {
            pool: &self.primary,
            tiles: &self.primary_tiles,
            replica: None,
        }
    }

    /// Where a read of catalog state goes: the primary, unless it is down
    /// and a replica answers.
    pub fn catalog_reader(&self) -> Reader<'_> {
        if self.primary_up.load(Ordering::Relaxed) {
            return self.primary_reader();
        }
        self.any_replica(|_| true).unwrap_or_else(|| self.primary_reader())
    }

    /// Where a read that must see position `after` (and the writes of
    /// `caller`, when given) goes.
    pub async fn reader(&self, caller: Option<Uuid>, after: i64) -> Reader<'_> {
        if self.replicas.is_empty() || ON_PRIMARY.try_with(|_| ()).is_ok() {
            self.reads[0].fetch_add(1, Ordering::Relaxed);
            return self.primary_reader();
        }
        let after = match caller {
            Some(user) => after.max(self.written.position(user).await),
            None => after,
        };
        let caught_up = |r: &Replica| !r.lagging.load(Ordering::Relaxed) && r.replayed.load(Ordering::Relaxed) >= after;
        if self.any_replica(caught_up).is_none() {
            // The watcher's figures may be a quarter of a second old: ask
            // the replicas that are in use how far they are now.
            self.refresh_behind(after).await;
        }
        let chosen = self
            .any_replica(caught_up)
            .or_else(|| {
                (!self.primary_up.load(Ordering::Relaxed))
                    .then(|| self.any_replica(|_| true))
                    .flatten()
            })
            .unwrap_or_else(|| self.primary_reader());
        self.reads[usize::from(chosen.replica.is_some())].fetch_add(1, Ordering::Relaxed);
        if chosen.replica.is_none() {
            let replayed: Vec<i64> = self
                .replicas
                .iter()
                .map(|r| r.replayed.load(Ordering::Relaxed))
                .collect();
            tracing::debug!(
                after,
                ?replayed,
                "a read went to the primary: no replica has replayed its position"
            );
        }
        chosen
    }

    /// Reads again what the usable replicas behind `after` have replayed,
    /// each at most once per `REFRESH_EVERY`, so a replica that really is
    /// behind costs a query now and then, not one per read.
    async fn refresh_behind(&self, after: i64) {
        let behind = self.replicas.iter().filter(|r| {
            r.up.load(Ordering::Relaxed)
                && !r.lagging.load(Ordering::Relaxed)
                && r.replayed.load(Ordering::Relaxed) < after
                && r.refresh_due()
        });
        futures::future::join_all(behind.map(|r| async move {
            if let Some(Some(replayed)) = position_of(&r.pool, REPLAYED_POSITION_SQL).await {
                r.replayed.fetch_max(replayed, Ordering::Relaxed);
            }
        }))
        .await;
    }

    /// The next replica, in turn, that answers and passes `usable`.
    fn any_replica(&self, usable: impl Fn(&Replica) -> bool) -> Option<Reader<'_>> {
        let count = self.replicas.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        (0..count).map(|i| (first + i) % count).find_map(|i| {
            let replica = &self.replicas[i];
            (replica.up.load(Ordering::Relaxed) && usable(replica)).then_some(Reader {
                pool: &replica.pool,
                tiles: &replica.tiles,
                replica: Some(i),
            })
        })
    }

    /// Reads served so far by the primary and by replicas.
    pub fn reads(&self) -> [(&'static str, u64); 2] {
        [
            ("primary", self.reads[0].load(Ordering::Relaxed)),
            ("replica", self.reads[1].load(Ordering::Relaxed)),
        ]
    }

    /// Notes that `caller` wrote just now: until replicas have replayed the
    /// primary's present position, the caller's reads go to the primary.
    pub async fn note_write(&self, caller: Uuid) {
        if self.replicas.is_empty() {
            return;
        }
        // Without Redis the position goes to the other processes by NOTIFY,
        // delivered before this write's answer leaves.
        let noted = if self.written.configured {
            sqlx::query_scalar::<_, i64>(PRIMARY_POSITION_SQL)
                .fetch_one(&self.primary)
                .await
        } else {
            sqlx::query_scalar::<_, i64>(
                "WITH p AS (SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS v),
                      n AS (SELECT pg_notify($1, $2 || ' ' || v) FROM p)
                 SELECT v FROM p, n",
            )
            .bind(WRITES_CHANNEL)
            .bind(caller.to_string())
            .fetch_one(&self.primary)
            .await
        };
        match noted {
            Ok(position) => self.written.note(caller, position).await,
            // The write could not have committed without the primary;
            // read from it anyway until the position is known.
            Err(e) => {
                tracing::debug!(error = %e, "the primary's position after a write is unknown");
                self.written.note(caller, UNKNOWN_POSITION).await;
            }
        }
    }

    /// Without Redis: hears the write positions the other API processes
    /// announce, for as long as the process runs (`pool`: a direct
    /// connection, as LISTEN needs). Positions announced while the channel
    /// was lost are missed: those callers may read a replica a moment
    /// early, which Redis avoids.
    pub async fn follow_writes(self: Arc<Self>, pool: PgPool) {
        if self.replicas.is_empty() || self.written.configured {
            return;
        }
        loop {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(listener) => listener,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for other processes' writes; retrying");
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    continue;
                }
            };
            if let Err(e) = listener.listen(WRITES_CHANNEL).await {
                tracing::warn!(error = %e, "cannot listen for other processes' writes; retrying");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
            loop {
                match listener.try_recv().await {
                    Ok(Some(notification)) => {
                        let heard = notification
                            .payload()
                            .split_once(' ')
                            .and_then(|(caller, position)| Some((caller.parse().ok()?, position.parse().ok()?)));
                        if let Some((caller, position)) = heard {
                            self.written.note_here(caller, position);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "lost the channel of other processes' writes; reconnecting");
                        break;
                    }
                }
            }
        }
    }

    /// Reads the primary's position and each replica's, for as long as the
    /// process runs.
    pub async fn watch(self: Arc<Self>) {
        if self.replicas.is_empty() {
            return;
        }
        let mut every = tokio::time::interval(WATCH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            every.tick().await;
            let primary = position_of(&self.primary, PRIMARY_POSITION_SQL).await;
            let was_up = self.primary_up.swap(primary.is_some(), Ordering::Relaxed);
            if was_up != primary.is_some() {
                tracing::warn!(up = primary.is_some(), "the primary database changed state");
            }
            let now = Instant::now();
            {
                let mut positions = self.primary_positions.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(Some(position)) = primary {
                    positions.push_back((now, position));
                }
                while positions
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > self.max_lag + Duration::from_secs(2))
                {
                    positions.pop_front();
                }
            }
            let replayed = futures::future::join_all(
                self.replicas
                    .iter()
                    .map(|r| position_of(&r.pool, REPLAYED_POSITION_SQL)),
            )
            .await;
            for (replica, replayed) in self.replicas.iter().zip(replayed) {
                self.update(replica, replayed, now);
            }
        }
    }

    fn update(&self, replica: &Replica, replayed: Option<Option<i64>>, now: Instant) {
        let up = replayed.is_some();
        if replica.up.swap(up, Ordering::Relaxed) != up {
            tracing::warn!(replica = %replica.name, up, "a read replica changed state");
        }
        let Some(replayed) = replayed else {
            return;
        };
        // A server that is not in recovery (a read URL naming a primary)
        // has everything.
        let replayed = replayed.unwrap_or(UNKNOWN_POSITION);
        replica.replayed.store(replayed, Ordering::Relaxed);
        // Behind by the age of the oldest position the primary had that
        // the replica has not replayed yet.
        let positions = self.primary_positions.lock().unwrap_or_else(|e| e.into_inner());
        let behind = positions
            .iter()
            .find(|(_, position)| *position > replayed)
            .map_or(Duration::ZERO, |(at, _)| now.duration_since(*at));
        let lagging = behind > self.max_lag;
        if replica.lagging.swap(lagging, Ordering::Relaxed) != lagging {
            tracing::warn!(replica = %replica.name, lagging, behind_ms = behind.as_millis() as u64, "a read replica's lag crossed READ_MAX_LAG_SECONDS");
        }
    }
}

/// A server's position, `Some(None)` when it has none of that kind (a
/// primary asked what it replayed), `None` when it does not answer in time.
async fn position_of(pool: &PgPool, sql: &'static str) -> Option<Option<i64>> {
    match tokio::time::timeout(ANSWER_WITHIN, sqlx::query_scalar::<_, Option<i64>>(sql).fetch_one(pool)).await {
        Ok(Ok(position)) => Some(position),
        _ => None,
    }
}

impl Written {
    fn store(&self) -> Option<redis::aio::ConnectionManager> {
        self.shared.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps the larger of the remembered position and `position`, in this
    /// process.
    fn note_here(&self, caller: Uuid, position: i64) {
        let mut local = self.local.lock().unwrap_or_else(|e| e.into_inner());
        if local.len() > 100_000 {
            local.retain(|_, (_, at)| at.elapsed() < WRITE_REMEMBERED);
        }
        let entry = local.entry(caller).or_insert((position, Instant::now()));
        *entry = (entry.0.max(position), Instant::now());
    }

    async fn note(&self, caller: Uuid, position: i64) {
        self.note_here(caller, position);
        if let Some(mut shared) = self.store() {
            let result: Result<i64, redis::RedisError> = redis::cmd("EVAL")
                .arg(KEEP_LARGER)
                .arg(1)
                .arg(key_of(caller))
                .arg(position)
                .arg(WRITE_REMEMBERED.as_secs())
                .query_async(&mut shared)
                .await;
            if let Err(e) = result {
                tracing::warn!(error = %e, "could not share a write position; other API processes may read older data for this caller");
            }
        }
    }

    /// The caller's last write position (0 when none is remembered).
    async fn position(&self, caller: Uuid) -> i64 {
        let local = {
            let local = self.local.lock().unwrap_or_else(|e| e.into_inner());
            local
                .get(&caller)
                .filter(|(_, at)| at.elapsed() < WRITE_REMEMBERED)
                .map_or(0, |(p, _)| *p)
        };
        let Some(mut shared) = self.store() else {
            return if self.configured { UNKNOWN_POSITION } else { local };
        };
        let stored: Result<Option<i64>, redis::RedisError> =
            redis::cmd("GET").arg(key_of(caller)).query_async(&mut shared).await;
        match stored {
            Ok(stored) => local.max(stored.unwrap_or(0)),
            // Unknown: the primary is always new enough.
            Err(_) => UNKNOWN_POSITION,
        }
    }
}

fn key_of(caller: Uuid) -> String {
    format!("catalog:written:{caller}")
}
