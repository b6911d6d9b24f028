//! The worker's heartbeat, and the reclaim of dead workers' jobs, on a
//! thread of their own.
//!
//! apalis beats from the worker's queue loop: the task that also polls
//! every job's future, on connections of the pool the jobs use. A job that
//! blocked its thread (a GDAL call outside `spawn_blocking`), a pool the
//! jobs hold, or a starved runtime would silence that beat, and with a
//! short dead-worker timeout another worker would then take the job of a
//! worker that is only busy. Here a dedicated OS thread, with a runtime
//! and connections of its own, sets `apalis.workers.last_seen` of the
//! worker's current name every [`WORKER_HEARTBEAT`]: a worker counts as
//! live while its process lives. Beside it, on another connection, it
//! hands the jobs of workers silent for [`WORKER_DEAD_AFTER`] back to the
//! queue (`reclaim.sql`), whatever this worker's own jobs are doing; but
//! only once it has itself beaten that long without a miss, so that after
//! a database outage, which silences every worker, each has the time to
//! beat again before any worker's jobs are taken. apalis's own beat is
//! turned off (`lib.rs`).
use std::{
    cell::Cell,
    str::FromStr,
    sync::{Arc, Mutex},
    time::Duration,
};

use catalog_shared::jobs::{QUEUE, WORKER_DEAD_AFTER, WORKER_HEARTBEAT};
use chrono::{DateTime, Utc};
use sqlx::{
    PgPool,
    postgres::{PgConnectOptions, PgPoolOptions},
};
use tokio::time::{Instant, MissedTickBehavior};

/// The server cancels a beat or reclaim that takes longer; the next one
/// tries again, on a new connection if this one is gone.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The name the thread beats for: the queue loop takes a fresh one each
/// time it (re)starts, and the old name falls silent.
#[derive(Clone)]
pub struct KeepAlive {
    name: Arc<Mutex<Option<String>>>,
}

impl KeepAlive {
    /// Starts the thread; it beats once a name is given.
    pub fn start(database_url: &str) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(database_url)?
            .application_name("catalog-worker keep-alive")
            // A beat lost in a crash costs nothing; one waiting behind a
            // large load's WAL flush would be late.
            .options([
                ("synchronous_commit", "off".to_string()),
                ("statement_timeout", format!("{}ms", STATEMENT_TIMEOUT.as_millis())),
            ]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let name = Arc::new(Mutex::new(None));
        let beaten = name.clone();
        std::thread::Builder::new().name("keep-alive".into()).spawn(move || {
            let _exit = ExitIfGone;
            runtime.block_on(async move {
                // Two connections, so a reclaim waiting on a lock never
                // holds up a beat.
                let beating_since = Cell::new(None);
                tokio::join!(
                    beat(connection(&options), beaten, &beating_since),
                    reclaim(connection(&options), &beating_since)
                );
            });
        })?;
        Ok(Self { name })
    }

    /// Beats for `name` from now on (and no longer for the previous one).
    pub fn beat_for(&self, name: &str) {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.to_string());
    }

    /// Beats for no name until the next `beat_for`.
    pub fn fall_silent(&self) {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

fn connection(options: &PgConnectOptions) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(STATEMENT_TIMEOUT)
        .connect_lazy_with(options.clone())
}

/// Beats every [`WORKER_HEARTBEAT`]; `beating_since` says since when every
/// beat succeeded (None after a failed one).
async fn beat(pool: PgPool, name: Arc<Mutex<Option<String>>>, beating_since: &Cell<Option<Instant>>) {
    let mut every = tokio::time::interval(WORKER_HEARTBEAT);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let name = name.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // Without a name (the queue loop waits to start again) the beat only
        // says that the database answers; before apalis has registered the
        // name there is no row to update, which is no failure either.
        let beat = match &name {
            Some(name) => sqlx::query("UPDATE apalis.workers SET last_seen = now() WHERE id = $1")
                .bind(name)
                .execute(&pool),
            None => sqlx::query("SELECT 1").execute(&pool),
        };
        let failure = match tokio::time::timeout(STATEMENT_TIMEOUT, beat).await {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("timed out".to_string()),
        };
        match (failure, beating_since.get()) {
            (None, None) => {
                beating_since.set(Some(Instant::now()));
                tracing::info!(name = name.as_deref(), "the keep-alive beats");
            }
            (Some(error), Some(_)) => {
                beating_since.set(None);
                tracing::warn!(name = name.as_deref(), %error, "the keep-alive could not beat; retrying every beat");
            }
            _ => {}
        }
    }
}

/// Hands back the jobs of silent workers every [`WORKER_HEARTBEAT`], once
/// this worker has itself beaten for [`WORKER_DEAD_AFTER`] without a miss;
/// and, from the first beat on, wakes the workers for tasks that came due
/// since the last round (retries after their backoff: apalis's own tick,
/// which would fetch them, is all but off). Rounds follow on from the
/// database's clock, so a late round still wakes what came due meanwhile.
async fn reclaim(pool: PgPool, beating_since: &Cell<Option<Instant>>) {
    let mut every = tokio::time::interval(WORKER_HEARTBEAT);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut woken_until: Option<DateTime<Utc>> = None;
    loop {
        every.tick().await;
        let woken = sqlx::query_as::<_, (DateTime<Utc>, i64)>(include_str!("wake_due.sql"))
            .bind(QUEUE)
            .bind(woken_until)
            .fetch_one(&pool);
        match tokio::time::timeout(STATEMENT_TIMEOUT, woken).await {
            Ok(Ok((until, _))) => woken_until = Some(until),
            Ok(Err(e)) => tracing::debug!(error = %e, "waking workers for due tasks failed"),
            Err(_) => tracing::debug!("waking workers for due tasks timed out"),
        }
        if beating_since
            .get()
            .is_none_or(|since| since.elapsed() < WORKER_DEAD_AFTER)
        {
            continue;
        }
        let released = sqlx::query_scalar::<_, String>(include_str!("reclaim.sql"))
            .bind(QUEUE)
            .bind(WORKER_DEAD_AFTER.as_secs_f64())
            .fetch_all(&pool);
        match tokio::time::timeout(STATEMENT_TIMEOUT, released).await {
            Ok(Ok(tasks)) if !tasks.is_empty() => tracing::info!(
                tasks = tasks.len(),
                silent_for = ?WORKER_DEAD_AFTER,
                "jobs of workers that stopped beating are back in the queue"
            ),
            Ok(Ok(_)) => {}
            // The beat warns when the database is away.
            Ok(Err(e)) => tracing::debug!(error = %e, "reclaim failed"),
            Err(_) => tracing::debug!("reclaim timed out"),
        }
    }
}

/// The thread never ends; should it (a panic), the process goes too: a
/// worker that no longer beats would see its jobs run again elsewhere while
/// it still ran them.
struct ExitIfGone;

impl Drop for ExitIfGone {
    fn drop(&mut self) {
        tracing::error!("the keep-alive thread stopped; exiting, so that this worker's jobs are reclaimed");
        std::process::exit(1);
    }
}
