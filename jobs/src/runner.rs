//! Runs one job: claims its row, dispatches on its kind, retries
//! transient failures with backoff and records the outcome users poll.
use std::{sync::Arc, time::Duration};

use catalog_shared::{
    Problem,
    config::Config,
    error::is_unavailable,
    jobs::{JobKind, JobStatus},
    notify,
    outbound::OutboundPolicy,
    storage::Storage,
};
use http::StatusCode;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{download, harvest, ingest, reupload};

/// What every job handler needs; built once per worker process.
#[derive(Clone)]
pub struct JobDeps {
    pub pool: PgPool,
    pub storage: Storage,
    pub config: Arc<Config>,
    pub outbound: OutboundPolicy,
}

pub struct JobContext {
    pub deps: JobDeps,
    pub job_id: Uuid,
    pub created_by: Option<Uuid>,
}

#[derive(Debug)]
pub enum JobError {
    /// The input is wrong; retrying cannot help.
    Invalid(String),
    /// The database or the store is unavailable; retried with backoff.
    Transient(String),
    /// The job was cancelled while it ran.
    Cancelled,
    /// A defect of ours; logged and reported without details.
    Internal(String),
}

impl From<sqlx::Error> for JobError {
    fn from(e: sqlx::Error) -> Self {
        if is_unavailable(&e) {
            return JobError::Transient(e.to_string());
        }
        match &e {
            // Data exceptions and constraint violations come from the input.
            sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22") || c.starts_with("23")) => {
                JobError::Invalid(format!("the data could not be stored: {}", db.message()))
            }
            _ => JobError::Internal(e.to_string()),
        }
    }
}

impl From<object_store::Error> for JobError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { .. } => {
                JobError::Invalid("the uploaded file is no longer in the object store".into())
            }
            other => JobError::Transient(format!("object store: {other}")),
        }
    }
}

impl From<std::io::Error> for JobError {
    fn from(e: std::io::Error) -> Self {
        JobError::Transient(format!("local disk: {e}"))
    }
}

const MAX_TRIES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

impl JobContext {
    /// Records what the job is doing; answers `Cancelled` once the job was
    /// cancelled, so every progress report doubles as a cancellation check.
    pub async fn progress(&self, step: &str, done: Option<i64>, total: Option<i64>) -> Result<(), JobError> {
        let still_running = sqlx::query(
            "UPDATE jobs SET step = $2, progress_done = $3, progress_total = $4, updated_at = clock_timestamp()
             WHERE id = $1 AND status = $5",
        )
        .bind(self.job_id)
        .bind(step)
        .bind(done)
        .bind(total)
        .bind(JobStatus::Running)
        .execute(&self.deps.pool)
        .await?
        .rows_affected()
            == 1;
        if still_running {
            Ok(())
        } else {
            Err(JobError::Cancelled)
        }
    }

    /// Name prefix of this job's staging tables.
    pub fn staging_prefix(&self) -> String {
        format!("_staging_{}", self.job_id.simple())
    }
}

#[derive(sqlx::FromRow)]
struct ClaimedJob {
    kind: JobKind,
    payload: serde_json::Value,
    created_by: Option<Uuid>,
}

/// Runs the job once it is handed over by the queue. Errors returned here
/// are only those of reaching the database at all; the queue retries them.
pub async fn run_job(deps: &JobDeps, job_id: Uuid) -> anyhow::Result<()> {
    let claimed: Option<ClaimedJob> = sqlx::query_as(
        "UPDATE jobs SET status = $2, attempts = attempts + 1, step = NULL,
                started_at = coalesce(started_at, clock_timestamp()), updated_at = clock_timestamp()
         WHERE id = $1 AND status = ANY($3)
         RETURNING kind, payload, created_by",
    )
    .bind(job_id)
    .bind(JobStatus::Running)
    .bind(JobStatus::UNFINISHED)
    .fetch_optional(&deps.pool)
    .await?;
    let Some(job) = claimed else {
        tracing::info!(%job_id, "job already finished or cancelled; nothing to do");
        return Ok(());
    };
    let ctx = JobContext {
        deps: deps.clone(),
        job_id,
        created_by: job.created_by,
    };
    tracing::info!(%job_id, kind = %job.kind, "job started");
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 0;
    let outcome = loop {
        tries += 1;
        let result = match job.kind {
            JobKind::Ingest => ingest::run(&ctx, job.payload.clone()).await,
            JobKind::UrlDownload | JobKind::Connector => download::run(&ctx, job.payload.clone()).await,
            JobKind::Reupload => reupload::run(&ctx, job.payload.clone()).await,
            JobKind::ServiceImport => harvest::run(&ctx, job.payload.clone()).await,
            JobKind::Rehydrate => Err(JobError::Internal(format!("no handler for job kind {}", job.kind))),
        };
        match result {
            Err(JobError::Transient(why)) if tries < MAX_TRIES => {
                tracing::warn!(%job_id, %why, retry_in = ?backoff, "transient failure; retrying");
                drop_staging(&ctx).await;
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            other => break other,
        }
    };
    match outcome {
        Ok(()) => {
            sqlx::query(
                "UPDATE jobs SET status = $2, step = NULL, finished_at = clock_timestamp(), updated_at = clock_timestamp()
                 WHERE id = $1 AND status = $3",
            )
            .bind(job_id)
            .bind(JobStatus::Succeeded)
            .bind(JobStatus::Running)
            .execute(&deps.pool)
            .await?;
            tracing::info!(%job_id, "job succeeded");
            tokio::spawn(notify_finished(deps.clone(), job_id, job.kind, None));
        }
        Err(JobError::Cancelled) => {
            drop_staging(&ctx).await;
            tracing::info!(%job_id, "job cancelled");
        }
        Err(err) => {
            drop_staging(&ctx).await;
            let problem = match err {
                JobError::Invalid(detail) => Problem::new(StatusCode::UNPROCESSABLE_ENTITY, detail),
                JobError::Transient(why) => {
                    tracing::error!(%job_id, %why, "job gave up after retries");
                    Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "the job could not reach the database or the object store after {MAX_TRIES} tries: {why}"
                        ),
                    )
                }
                JobError::Internal(why) => {
                    tracing::error!(%job_id, %why, "job failed on an internal error");
                    Problem::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the job failed on an internal error; it has been logged",
                    )
                }
                JobError::Cancelled => unreachable!("handled above"),
            };
            tracing::info!(%job_id, detail = %problem.detail, "job failed");
            sqlx::query(
                "UPDATE jobs SET status = $3, step = NULL, error = $2, finished_at = clock_timestamp(), updated_at = clock_timestamp()
                 WHERE id = $1 AND status = $4",
            )
            .bind(job_id)
            .bind(sqlx::types::Json(&problem))
            .bind(JobStatus::Failed)
            .bind(JobStatus::Running)
            .execute(&deps.pool)
            .await?;
            tokio::spawn(notify_finished(deps.clone(), job_id, job.kind, Some(problem)));
        }
    }
    Ok(())
}

/// Tells the notification channels that a job finished, when its event is
/// switched on. Best effort: a channel's failure is logged, never the job's.
async fn notify_finished(deps: JobDeps, job_id: Uuid, kind: JobKind, failure: Option<Problem>) {
    let event = if failure.is_some() {
        "job_failed"
    } else {
        "job_succeeded"
    };
    let channels = match notify::channels(&deps.pool).await {
        Ok(channels) if channels.events.iter().any(|e| e == event) => channels,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(%job_id, error = %e, "notification settings unreadable; nothing sent");
            return;
        }
    };
    let (subject, text) = match &failure {
        Some(problem) => (
            format!("Job {job_id} ({kind}) failed"),
            format!("The {kind} job {job_id} failed: {}", problem.detail),
        ),
        None => (
            format!("Job {job_id} ({kind}) succeeded"),
            format!("The {kind} job {job_id} succeeded."),
        ),
    };
    let notification = notify::Notification {
        event: event.into(),
        subject,
        text,
        details: serde_json::json!({"job_id": job_id, "kind": kind, "error": failure}),
    };
    for outcome in notify::send(&channels, &deps.config.jwt_secret, &deps.outbound, &notification).await {
        if let Some(error) = outcome.error {
            tracing::warn!(%job_id, channel = outcome.channel, %error, "notification not delivered");
        }
    }
}

/// Drops the staging tables of one job.
pub async fn drop_staging(ctx: &JobContext) {
    if let Err(e) = drop_staging_like(&ctx.deps.pool, &ctx.staging_prefix()).await {
        tracing::warn!(job_id = %ctx.job_id, error = %e, "staging tables not dropped yet; the sweeper will");
    }
}

async fn drop_staging_like(pool: &PgPool, prefix: &str) -> Result<(), sqlx::Error> {
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT tablename FROM pg_tables WHERE schemaname = 'data' AND starts_with(tablename, $1)")
            .bind(prefix)
            .fetch_all(pool)
            .await?;
    for table in tables {
        let sql = format!("DROP TABLE IF EXISTS data.{}", crate::columns::quote(&table));
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(pool).await?;
    }
    Ok(())
}

/// Drops staging tables left by jobs that are no longer running (a worker
/// killed mid-load, a job cancelled while its worker was down).
pub async fn cleanup_abandoned_staging(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT t.tablename FROM pg_tables t
         WHERE t.schemaname = 'data' AND starts_with(t.tablename, '_staging_')
           AND NOT EXISTS (
             SELECT 1 FROM jobs j
             WHERE j.status = ANY($1)
               AND starts_with(t.tablename, '_staging_' || replace(j.id::text, '-', '')))",
    )
    .bind(JobStatus::UNFINISHED)
    .fetch_all(pool)
    .await?;
    for table in &tables {
        let sql = format!("DROP TABLE IF EXISTS data.{}", crate::columns::quote(table));
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(pool).await?;
    }
    Ok(tables.len() as u64)
}
