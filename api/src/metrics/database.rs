//! The figures every API process reads from the database at scrape time:
//! jobs by kind and status, the oldest queued job's age, finished jobs'
//! durations, and live workers.
use catalog_shared::{
    AppError,
    jobs::{JobKind, JobStatus, WORKER_DEAD_AFTER},
};
use prometheus::proto::MetricFamily;
use sqlx::PgPool;

use super::families::{Bucketed, gauge_family, histogram_family};

/// Upper bounds of the job duration buckets, in seconds: jobs run from a
/// second to hours.
const DURATION_BOUNDS: [f64; 12] = [
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 10800.0,
];

pub async fn families(pool: &PgPool) -> Result<Vec<MetricFamily>, AppError> {
    Ok(vec![
        jobs_by_kind_and_status(pool).await?,
        oldest_queued(pool).await?,
        job_durations(pool).await?,
        live_workers(pool).await?,
    ])
}

/// Every kind and status, zeros included, so a series never vanishes.
async fn jobs_by_kind_and_status(pool: &PgPool) -> Result<MetricFamily, AppError> {
    let counts: Vec<(String, String, i64)> = sqlx::query_as("SELECT kind, status, count(*) FROM jobs GROUP BY 1, 2")
        .fetch_all(pool)
        .await?;
    let mut samples = Vec::new();
    for kind in JobKind::ALL {
        for status in JobStatus::ALL {
            let count = counts
                .iter()
                .find(|(k, s, _)| k == kind.as_str() && s == status.as_str())
                .map_or(0, |(_, _, n)| *n);
            samples.push((
                vec![
                    ("kind", kind.as_str().to_string()),
                    ("status", status.as_str().to_string()),
                ],
                count as f64,
            ));
        }
    }
    Ok(gauge_family("catalog_jobs", "Jobs by kind and status.", samples))
}

async fn oldest_queued(pool: &PgPool) -> Result<MetricFamily, AppError> {
    let age: f64 = sqlx::query_scalar(
        "SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM jobs WHERE status = 'queued'",
    )
    .fetch_one(pool)
    .await?;
    Ok(gauge_family(
        "catalog_oldest_queued_job_age_seconds",
        "How long the oldest queued job has waited; 0 when none waits.",
        vec![(vec![], age)],
    ))
}

/// Every kind, zeros for a kind no job of which finished yet.
async fn job_durations(pool: &PgPool) -> Result<MetricFamily, AppError> {
    let rows: Vec<(String, Vec<i64>, i64, f64)> = sqlx::query_as(include_str!("job_durations.sql"))
        .bind(DURATION_BOUNDS.to_vec())
        .fetch_all(pool)
        .await?;
    let series = JobKind::ALL
        .iter()
        .map(|kind| {
            let (at_or_under, count, sum) = rows.iter().find(|(k, ..)| k == kind.as_str()).map_or(
                (vec![0; DURATION_BOUNDS.len()], 0, 0.0),
                |(_, at_or_under, count, sum)| (at_or_under.clone(), *count, *sum),
            );
            Bucketed {
                labels: vec![("kind", kind.as_str().to_string())],
                buckets: DURATION_BOUNDS
                    .iter()
                    .zip(at_or_under)
                    .map(|(upper, n)| (*upper, n as u64))
                    .collect(),
                sum,
                count: count as u64,
            }
        })
        .collect();
    Ok(histogram_family(
        "catalog_job_duration_seconds",
        "Run time of finished (succeeded or failed) jobs, by kind.",
        series,
    ))
}

async fn live_workers(pool: &PgPool) -> Result<MetricFamily, AppError> {
    let live: i64 =
        sqlx::query_scalar("SELECT count(*) FROM apalis.workers WHERE last_seen > now() - make_interval(secs => $1)")
            // Live: not yet silent long enough for its jobs to be taken.
            .bind(WORKER_DEAD_AFTER.as_secs_f64())
            .fetch_one(pool)
            .await?;
    Ok(gauge_family(
        "catalog_workers_live",
        "Worker processes whose heartbeat is recent.",
        vec![(vec![], live as f64)],
    ))
}
