//! The worker process: takes jobs from the Postgres-backed apalis queue
//! and runs them. Run as many as you like, on as many hosts as you like.
//! SIGTERM drains it: it takes no new job, lets running ones finish for up
//! to `WORKER_DRAIN_SECONDS`, hands the rest back to the queue and exits 0.
// Only the jobs and raster crates, which call GDAL's C API, have unsafe code.
#![forbid(unsafe_code)]
use std::{net::SocketAddr, sync::Arc, time::Duration};

use catalog_jobs::{JobDeps, Retention};
use catalog_shared::{config::Config, db, outbound::OutboundPolicy, storage::Storage, telemetry};
use catalog_worker::metrics::{self, WorkerMetrics};
use keep_alive::KeepAlive;

mod keep_alive;

/// How long running jobs may take to finish after SIGTERM, unless
/// `WORKER_DRAIN_SECONDS` says otherwise.
const DEFAULT_DRAIN: Duration = Duration::from_secs(300);
/// Defaults of the cleanup schedule (`CLEANUP_INTERVAL_SECONDS`,
/// `UPLOAD_RETENTION_HOURS`, `JOB_RETENTION_DAYS`).
const CLEANUP_INTERVAL: u64 = 60;
const UPLOAD_RETENTION_HOURS: u64 = 24;
const JOB_RETENTION_DAYS: u64 = 30;
/// How long a dataset's past versions are kept (its current one always is).
const VERSION_RETENTION_DAYS: u64 = 30;
/// How long an export is kept for its readers after it was made.
const EXPORT_CACHE_DAYS: u64 = 7;
const RESTART_BACKOFF: Duration = Duration::from_secs(1);
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);
/// A worker that ran this long before failing starts over with a short backoff.
const STABLE_RUN: Duration = Duration::from_secs(60);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if catalog_shared::asks_for_version(std::env::args().nth(1).as_deref()) {
        println!("catalog-worker {}", catalog_shared::VERSION);
        return Ok(());
    }
    telemetry::init();
    let config = Arc::new(Config::from_env()?);
    let concurrency: usize = setting("WORKER_CONCURRENCY")?.filter(|n| *n > 0).unwrap_or(2);
    let pool = db::connect(&config.database_direct_url, concurrency as u32 * 2 + 4).await?;
    db::wait_until_reachable(&pool, Duration::from_secs(60)).await?;
    db::migrate(&pool).await?;
    let keep_alive = KeepAlive::start(&config.database_direct_url)?;
    let deps = JobDeps {
        pool: pool.clone(),
        storage: Storage::open(&config.storage_url)?,
        outbound: OutboundPolicy::new(&config.outbound_allowed_hosts),
        config,
    };

    let drain = Duration::from_secs(setting("WORKER_DRAIN_SECONDS")?.unwrap_or(DEFAULT_DRAIN.as_secs()));
    let metrics = WorkerMetrics::new();
    if let Some(addr) = setting::<SocketAddr>("WORKER_METRICS_ADDR")? {
        tokio::spawn(metrics::serve(addr, metrics.clone()));
    }

    let every = Duration::from_secs(setting("CLEANUP_INTERVAL_SECONDS")?.unwrap_or(CLEANUP_INTERVAL).max(1));
    let retention = Retention {
        uploads: Duration::from_secs(3600 * setting("UPLOAD_RETENTION_HOURS")?.unwrap_or(UPLOAD_RETENTION_HOURS)),
        jobs: Duration::from_secs(86400 * setting("JOB_RETENTION_DAYS")?.unwrap_or(JOB_RETENTION_DAYS)),
        archive_after_idle: deps.config.archive_after_idle,
        versions: Duration::from_secs(86400 * setting("VERSION_RETENTION_DAYS")?.unwrap_or(VERSION_RETENTION_DAYS)),
        exports: Duration::from_secs(86400 * setting("EXPORT_CACHE_DAYS")?.unwrap_or(EXPORT_CACHE_DAYS)),
    };
    tokio::spawn(clean_up(deps.clone(), every, retention));

    let mut shutdown = std::pin::pin!(shutdown_signal());
    let mut backoff = RESTART_BACKOFF;
    loop {
        // A fresh name on every start: jobs held under the old name are
        // reclaimed once its heartbeats stop, never left running forever.
        let name = format!(
            "worker-{}-{}-{}",
            hostname(),
            std::process::id(),
            ulid::Ulid::generate().to_string().to_lowercase()
        );
        keep_alive.beat_for(&name);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let mut run = Box::pin(catalog_worker::run(
            &name,
            deps.clone(),
            metrics.clone(),
            concurrency,
            async move {
                let _ = stopped.await;
            },
        ));
        let started = tokio::time::Instant::now();
        tokio::select! {
            result = &mut run => match result {
                Ok(()) => break,
                Err(e) => {
                    // Its jobs stopped with it: let them be reclaimed
                    // while this loop waits to start again.
                    keep_alive.fall_silent();
                    if started.elapsed() > STABLE_RUN {
                        backoff = RESTART_BACKOFF;
                    }
                    tracing::warn!(error = %e, retry_in = ?backoff, "lost the queue (database unreachable?); restarting");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RESTART_BACKOFF);
                }
            },
            _ = &mut shutdown => {
                tracing::info!(drain_seconds = drain.as_secs(), "draining: no new job is taken");
                metrics.draining();
                let _ = stop.send(());
                if tokio::time::timeout(drain, run).await.is_ok() {
                    tracing::info!("drained: every running job finished");
                } else {
                    // Dropping `run` above stopped the jobs still running.
                    let handed_back = hand_back(&pool, &name).await?;
                    tracing::info!(jobs = handed_back, "drain time is over; unfinished jobs handed back to the queue");
                }
                break;
            }
        }
    }
    Ok(())
}

/// Puts the jobs this worker still holds back in the queue; answers how
/// many.
async fn hand_back(pool: &sqlx::PgPool, worker: &str) -> anyhow::Result<usize> {
    let jobs: Vec<uuid::Uuid> = sqlx::query_scalar(include_str!("hand_back.sql"))
        .bind(worker)
        .fetch_all(pool)
        .await?;
    Ok(jobs.len())
}

/// A setting from the environment, None when unset or empty.
fn setting<T: std::str::FromStr>(name: &str) -> anyhow::Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name).ok().filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(raw) => raw
            .trim()
            .parse()
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{name}={raw:?} is not valid: {e}")),
    }
}

/// Sweeps on the operator's schedule: staging tables of ended jobs,
/// finished jobs' sources and old finished jobs. Every worker sweeps; the
/// deletes are idempotent, so several at once only repeat each other.
async fn clean_up(deps: JobDeps, every: Duration, retention: Retention) {
    let mut interval = tokio::time::interval(every);
    loop {
        interval.tick().await;
        match catalog_jobs::sweep(&deps, retention).await {
            Ok(swept)
                if swept.staging_tables
                    + swept.workdirs
                    + swept.uploads
                    + swept.jobs
                    + swept.archived
                    + swept.exports
                    > 0 =>
            {
                tracing::info!(
                    staging_tables = swept.staging_tables,
                    scratch_folders = swept.workdirs,
                    uploads = swept.uploads,
                    jobs = swept.jobs,
                    archive_jobs = swept.archived,
                    exports = swept.exports,
                    "cleaned up finished work"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cleanup sweep failed"),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
