//! What a job handler works with: the worker's connections, the job it
//! runs, how it reports progress and how it fails. Handlers and the runner
//! both depend on this; the runner alone knows the handlers.
use std::sync::Arc;

use catalog_shared::{
    config::Config, datasets, error::is_unavailable, jobs::JobStatus, outbound::OutboundPolicy, storage::Storage,
};
use sqlx::PgPool;
use uuid::Uuid;

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
    /// A provider (the server a file or service is fetched from) failed in
    /// a way that may pass; the job waits in the queue and runs again.
    Upstream(String),
    /// The object store or the local disk is full: retrying cannot help
    /// until an operator frees space.
    StoreFull(String),
    /// The object store or the local disk refuses the worker (permission
    /// denied, read-only, rejected credentials): retrying cannot help until
    /// an operator fixes it.
    StoreRefused(String),
    /// The job was cancelled while it ran.
    Cancelled,
    /// A defect of ours; logged and reported without details.
    Internal(String),
}

impl JobError {
    /// A provider answered with a failure: a server error, 408 or 429 may
    /// pass, any other answer is about the request.
    pub fn provider_answer(status: http::StatusCode, what: String) -> Self {
        if status.is_server_error() || matches!(status.as_u16(), 408 | 429) {
            JobError::Upstream(what)
        } else {
            JobError::Invalid(what)
        }
    }

    /// A request to a provider did not complete: a connection that failed
    /// or broke off may work later; a time limit hit, a refused address or
    /// a bad redirect will not change by waiting.
    pub fn provider_request(e: &reqwest::Error, what: String) -> Self {
        if !e.is_timeout() && (e.is_connect() || e.is_body() || e.is_request()) && !e.is_redirect() {
            JobError::Upstream(what)
        } else {
            JobError::Invalid(what)
        }
    }
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
            full if catalog_shared::storage::is_out_of_space(&full) => {
                JobError::StoreFull(format!("object store: {full}"))
            }
            refused if catalog_shared::storage::is_refused(&refused) => {
                JobError::StoreRefused(format!("object store: {refused}"))
            }
            other => JobError::Transient(format!("object store: {other}")),
        }
    }
}

impl From<std::io::Error> for JobError {
    fn from(e: std::io::Error) -> Self {
        if catalog_shared::storage::is_out_of_space(&e) {
            return JobError::StoreFull(format!("local disk: {e}"));
        }
        if catalog_shared::storage::is_refused(&e) {
            return JobError::StoreRefused(format!("local disk: {e}"));
        }
        JobError::Transient(format!("local disk: {e}"))
    }
}

/// Prefix of a job's scratch folder in the temporary directory; the name
/// goes on with the job id, so the cleanup sweep can tell a killed
/// worker's leftovers from a running job's folder.
pub const WORKDIR_PREFIX: &str = "catalog-job-";

impl JobContext {
    /// A scratch folder for this job, removed when dropped (and by the
    /// cleanup sweep when its worker was killed first).
    pub fn workdir(&self) -> std::io::Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(&format!("{WORKDIR_PREFIX}{}-", self.job_id))
            .tempdir()
    }

    /// Records what the job is doing; answers `Cancelled` once the job was
    /// cancelled, so every progress report doubles as a cancellation check.
    pub async fn progress(&self, step: &str, done: Option<i64>, total: Option<i64>) -> Result<(), JobError> {
        let still_running = sqlx::query(
            "UPDATE jobs SET step = $2, progress_done = $3, progress_total = $4, updated_at = clock_timestamp(),
                             steps = CASE WHEN step IS DISTINCT FROM $2
                                          THEN steps || jsonb_build_array(jsonb_build_object('step', $2::text, 'at', clock_timestamp()))
                                          ELSE steps END
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
        datasets::staging_prefix(self.job_id)
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
