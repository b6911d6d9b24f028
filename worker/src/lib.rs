//! The worker's queue loop as a library: [`run`] takes jobs from the
//! Postgres-backed apalis queue and runs them with `catalog_jobs::run_job`
//! until a shutdown future resolves. The `catalog-worker` binary calls it
//! (and keeps its signals, draining, heartbeat thread, metrics server and
//! restart loop); the integration tests call it to run jobs in the test's
//! own process.
// Only the jobs and raster crates, which call GDAL's C API, have unsafe code.
#![forbid(unsafe_code)]
use std::{future::Future, time::Duration};

use apalis::prelude::*;
use apalis_postgres::{Config as QueueConfig, PostgresStorage, Pubsub};
use catalog_jobs::JobDeps;
use catalog_shared::jobs::{JobMessage, QUEUE};

pub mod metrics;

use metrics::WorkerMetrics;

/// Backstop for what LISTEN/NOTIFY misses (retries, delayed tasks).
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// apalis's own heartbeat, and its reclaim of dead workers' tasks, all but
/// off: they run from the queue loop, which a busy worker may not poll in
/// time. The binary's `keep_alive` beats and reclaims instead
/// (`WORKER_HEARTBEAT`, `WORKER_DEAD_AFTER`); apalis beats once a day, and
/// takes only tasks of workers silent that long.
const APALIS_OWN_HEARTBEAT: Duration = Duration::from_secs(86_400);

/// Runs one worker named `name`, `concurrency` jobs at a time, on the queue
/// in `deps.pool`'s database, until `shutdown` resolves (then it takes no
/// new job and ends once the running ones have); an error when it lost the
/// queue.
pub async fn run(
    name: &str,
    deps: JobDeps,
    metrics: WorkerMetrics,
    concurrency: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WorkerError> {
    let queue_config = QueueConfig::default()
        .queue(QUEUE)
        .batch_size(1)
        .heartbeat_interval(APALIS_OWN_HEARTBEAT)
        .missed_heartbeats(1);
    let strategy = Strategy::new()
        .stream(Pubsub::new(deps.pool.clone(), QUEUE.to_string()))
        .interval(POLL_INTERVAL);
    let backend = PostgresStorage::<JobMessage>::new(&deps.pool)
        .with_config(queue_config)
        .poll_with_strategy(strategy);
    tracing::info!(%name, concurrency, "worker ready");
    let worker = WorkerBuilder::new(name.to_string())
        .backend(backend)
        .data(deps)
        .data(metrics)
        .concurrency(concurrency)
        .build(handle);
    worker
        .run_until(async move {
            shutdown.await;
            Ok::<(), WorkerError>(())
        })
        .await
}

async fn handle(message: JobMessage, deps: Data<JobDeps>, metrics: Data<WorkerMetrics>) -> Result<(), BoxDynError> {
    metrics.job_started();
    let started = tokio::time::Instant::now();
    let result = catalog_jobs::run_job(&deps, message.job_id).await;
    metrics.job_ended(result.as_ref().ok().copied().flatten(), started.elapsed().as_secs_f64());
    result.map(|_| ()).map_err(Into::into)
}
