//! Runs one job: claims its row, dispatches on its kind, retries
//! transient failures with backoff and records the outcome users poll.
use std::time::Duration;

use catalog_shared::{
    Problem,
    jobs::{self, ConnectorPayload, JobInput, JobKind, JobStatus},
    notify,
};
use http::StatusCode;
use uuid::Uuid;

use crate::{
    cold,
    context::{JobContext, JobDeps, JobError, drop_staging},
    download, harvest, ingest, pull, restore, reupload, tile_archive,
};

/// Tries of a handler whose database or object store is unavailable,
/// within one run.
const MAX_TRIES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before a job whose provider failed runs again.
const MAX_REQUEUE_DELAY: Duration = Duration::from_secs(3600);

#[derive(sqlx::FromRow)]
struct ClaimedJob {
    kind: JobKind,
    payload: serde_json::Value,
    created_by: Option<Uuid>,
    attempts: i32,
}

/// What running a job came to: its kind and the status it ended in.
#[derive(Clone, Copy, Debug)]
pub struct JobRun {
    pub kind: JobKind,
    pub status: JobStatus,
}

/// Runs the job once it is handed over by the queue; None when it was
/// already finished or cancelled. Errors returned here are only those of
/// reaching the database at all; the queue retries them.
pub async fn run_job(deps: &JobDeps, job_id: Uuid) -> anyhow::Result<Option<JobRun>> {
    let claimed: Option<ClaimedJob> = sqlx::query_as(
        "UPDATE jobs SET status = $2, attempts = attempts + 1, step = NULL, next_attempt_at = NULL,
                started_at = coalesce(started_at, clock_timestamp()), updated_at = clock_timestamp()
         WHERE id = $1 AND status = ANY($3)
         RETURNING kind, payload, created_by, attempts",
    )
    .bind(job_id)
    .bind(JobStatus::Running)
    .bind(JobStatus::UNFINISHED)
    .fetch_optional(&deps.pool)
    .await?;
    let Some(job) = claimed else {
        tracing::info!(%job_id, "job already finished or cancelled; nothing to do");
        return Ok(None);
    };
    let ctx = JobContext {
        deps: deps.clone(),
        job_id,
        created_by: job.created_by,
    };
    tracing::info!(%job_id, kind = %job.kind, "job started");
    let outcome = match JobInput::from_payload(job.kind, job.payload) {
        Ok(input) => run_with_retries(&ctx, &input).await,
        Err(why) => Err(JobError::Internal(why)),
    };
    let status = match outcome {
        Ok(()) => {
            sqlx::query(
                "UPDATE jobs SET status = $2, step = NULL, last_error = NULL, finished_at = clock_timestamp(), updated_at = clock_timestamp()
                 WHERE id = $1 AND status = $3",
            )
            .bind(job_id)
            .bind(JobStatus::Succeeded)
            .bind(JobStatus::Running)
            .execute(&deps.pool)
            .await?;
            tracing::info!(%job_id, "job succeeded");
            tokio::spawn(notify_finished(deps.clone(), job_id, job.kind, None));
            JobStatus::Succeeded
        }
        Err(JobError::Cancelled) => {
            drop_staging(&ctx).await;
            tracing::info!(%job_id, "job cancelled");
            JobStatus::Cancelled
        }
        Err(JobError::Upstream(why)) if job.attempts < deps.config.job_retries.max_attempts as i32 => {
            drop_staging(&ctx).await;
            let delay = retry_delay(deps.config.job_retries.first_backoff, job.attempts);
            tracing::warn!(%job_id, %why, attempts = job.attempts, retry_in = ?delay, "the provider failed; the job runs again later");
            let mut tx = deps.pool.begin().await?;
            let waiting = jobs::requeue(&mut tx, job_id, delay, &why).await?;
            tx.commit().await?;
            if waiting {
                JobStatus::Queued
            } else {
                JobStatus::Cancelled
            }
        }
        Err(err) => {
            drop_staging(&ctx).await;
            let problem = match err {
                JobError::Upstream(why) => Problem::new(
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "the provider failed on each of the job's {} attempts; the last time: {why}",
                        job.attempts
                    ),
                ),
                JobError::Invalid(detail) => Problem::new(StatusCode::UNPROCESSABLE_ENTITY, detail),
                JobError::StoreFull(why) => {
                    tracing::error!(%job_id, %why, "job failed: no space left");
                    Problem::new(
                        StatusCode::INSUFFICIENT_STORAGE,
                        format!(
                            "there is no space left to write the job's result, so nothing was kept; an operator must free space before the job is run again ({why})"
                        ),
                    )
                }
                JobError::StoreRefused(why) => {
                    tracing::error!(%job_id, %why, "job failed: the store refused access");
                    Problem::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!(
                            "the store refused the job access (permission denied, a read-only file system or rejected credentials), so nothing was kept; an operator must fix its permissions before the job is run again ({why})"
                        ),
                    )
                }
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
                "UPDATE jobs SET status = $3, step = NULL, error = $2, last_error = NULL, finished_at = clock_timestamp(), updated_at = clock_timestamp()
                 WHERE id = $1 AND status = $4",
            )
            .bind(job_id)
            .bind(sqlx::types::Json(&problem))
            .bind(JobStatus::Failed)
            .bind(JobStatus::Running)
            .execute(&deps.pool)
            .await?;
            tokio::spawn(notify_finished(deps.clone(), job_id, job.kind, Some(problem)));
            JobStatus::Failed
        }
    };
    Ok(Some(JobRun { kind: job.kind, status }))
}

/// The wait before the next run of a job that ran `attempts` times: the
/// first wait, doubled for each run after the first.
fn retry_delay(first: Duration, attempts: i32) -> Duration {
    let doublings = attempts.saturating_sub(1).clamp(0, 16) as u32;
    first.saturating_mul(1 << doublings).min(MAX_REQUEUE_DELAY)
}

/// Runs the handler of the input's kind, again after transient failures.
async fn run_with_retries(ctx: &JobContext, input: &JobInput) -> Result<(), JobError> {
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 0;
    loop {
        tries += 1;
        let result = match input {
            JobInput::Ingest(payload) => ingest::run(ctx, payload).await,
            JobInput::UrlDownload(payload) | JobInput::Connector(ConnectorPayload::Http(payload)) => {
                download::run(ctx, payload).await
            }
            JobInput::Connector(ConnectorPayload::Store(payload)) => pull::run(ctx, payload).await,
            JobInput::Reupload(payload) => reupload::run(ctx, payload).await,
            JobInput::ServiceImport(payload) => harvest::run(ctx, payload).await,
            JobInput::Archive(payload) => cold::archive(ctx, payload.dataset_id).await,
            JobInput::Rehydrate(payload) => cold::rehydrate(ctx, payload.dataset_id).await,
            JobInput::Restore(payload) => restore::run(ctx, payload).await,
            JobInput::TileArchive(payload) => tile_archive::run(ctx, payload.dataset_id).await,
        };
        match result {
            Err(JobError::Transient(why)) if tries < MAX_TRIES => {
                tracing::warn!(job_id = %ctx.job_id, %why, retry_in = ?backoff, "transient failure; retrying");
                drop_staging(ctx).await;
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            other => return other,
        }
    }
}

/// Tells the notification channels that a job finished, when its event is
/// switched on. Best effort: a channel's failure is logged, never the job's.
async fn notify_finished(deps: JobDeps, job_id: Uuid, kind: JobKind, failure: Option<Problem>) {
    let event = if failure.is_some() {
        notify::JOB_FAILED
    } else {
        notify::JOB_SUCCEEDED
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_waits_double_up_to_an_hour() {
        let first = Duration::from_secs(30);
        let waits: Vec<u64> = (1..=5).map(|n| retry_delay(first, n).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480]);
        assert_eq!(retry_delay(first, 40), MAX_REQUEUE_DELAY);
        assert_eq!(retry_delay(Duration::ZERO, 3), Duration::ZERO);
    }
}
