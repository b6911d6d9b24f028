//! Job status for the people who started the work (and, for a cold
//! dataset's rehydration, for everyone who may read the dataset).
use axum::{
    Json,
    extract::{FromRequestParts, State},
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    ingest_report::IngestReport,
    jobs::{self, JOB_COLUMNS, JobKind, JobStatus, JobView},
};
use chrono::Utc;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{Caller, datasets::visible_dataset},
    extract::{Path, Query},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_jobs))
        .routes(routes!(get_job, cancel_job))
        .routes(routes!(get_report))
}

/// The job, when the caller started it or is an admin.
pub(crate) async fn own_job(state: &AppState, caller: &Caller, job_id: Uuid) -> Result<JobView, AppError> {
    let user = caller.signed_in()?;
    match jobs::find(&state.pool, job_id).await? {
        Some(job) if user.is_admin() || job.created_by == Some(user.id) => Ok(job),
        _ => Err(AppError::not_found(format!("no job {job_id}"))),
    }
}

/// The job, when the caller may follow it: their own, or the rehydration
/// or tile archive of a dataset they may read (every signed-in reader of a
/// cold dataset, or asking for its PMTiles, is handed that job's id,
/// whoever's read started it; anonymous readers retry the read after its
/// `Retry-After`).
async fn followed_job(state: &AppState, caller: &Caller, job_id: Uuid) -> Result<JobView, AppError> {
    let user = caller.signed_in()?;
    let job = jobs::find(&state.pool, job_id).await?;
    match job {
        Some(job) if user.is_admin() || job.created_by == Some(user.id) => Ok(job),
        Some(job)
            if matches!(job.kind, JobKind::Rehydrate | JobKind::TileArchive)
                && let Some(dataset_id) = job.dataset_id
                && visible_dataset(state, caller, dataset_id).await.is_ok() =>
        {
            Ok(job)
        }
        _ => Err(AppError::not_found(format!("no job {job_id}"))),
    }
}

/// Status, step, progress and outcome of one job.
#[utoipa::path(get, path = "/api/jobs/{job_id}", tag = "jobs",
    params(("job_id" = Uuid, Path)),
    responses((status = 200, body = JobView), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn get_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<Uuid>,
) -> Result<Json<JobView>, AppError> {
    let job = followed_job(&state, &caller, job_id).await?;
    // A client that sees the job done reads its datasets next, perhaps
    // before this process has heard their change announced: the copies it
    // holds go now (for as long as a copy lives after the job ended).
    if job.status == JobStatus::Succeeded
        && job
            .finished_at
            .is_some_and(|finished| Utc::now() - finished < crate::dataset_cache::KEPT_FOR)
    {
        for id in job.dataset_id.iter().chain(&job.dataset_ids) {
            state.datasets.forget(*id);
        }
    }
    Ok(Json(job))
}

/// Cancels a queued or running job; its partial work is discarded.
#[utoipa::path(delete, path = "/api/jobs/{job_id}", tag = "jobs",
    params(("job_id" = Uuid, Path)),
    responses((status = 200, body = JobView), (status = 409, description = "the job has already finished", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn cancel_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<Uuid>,
) -> Result<Json<JobView>, AppError> {
    let job = own_job(&state, &caller, job_id).await?;
    let cancelled = sqlx::query(
        "UPDATE jobs SET status = $2, step = NULL, finished_at = clock_timestamp(), updated_at = clock_timestamp()
         WHERE id = $1 AND status = ANY($3)",
    )
    .bind(job_id)
    .bind(JobStatus::Cancelled)
    .bind(JobStatus::UNFINISHED)
    .execute(&state.pool)
    .await?
    .rows_affected();
    if cancelled == 0 {
        return Err(AppError::conflict(format!("the job has already {}", job.status)));
    }
    Ok(Json(own_job(&state, &caller, job_id).await?))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct ReportQuery {
    /// `json` (default), or `csv`: the rows the report shows, one a line.
    #[param(inline)]
    f: Option<ReportFormat>,
}

#[derive(Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum ReportFormat {
    Json,
    Csv,
}

/// What a job that loaded rows did to each of them: counts, reasons, the
/// first rows of each reason, assumptions and skipped layers
/// (`docs/ingest-report.md`).
#[utoipa::path(get, path = "/api/jobs/{job_id}/report", tag = "jobs",
    params(("job_id" = Uuid, Path), ReportQuery),
    responses(
        (status = 200, description = "the report; with f=csv its rows, one a line: reason, layer, row, fid, field, value, message",
         content((IngestReport = "application/json"), (String = "text/csv"))),
        (status = 404, description = "no such job, or it has no report (yet)", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn get_report(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<Uuid>,
    Query(q): Query<ReportQuery>,
) -> Result<Response, AppError> {
    let job = followed_job(&state, &caller, job_id).await?;
    let report: Option<sqlx::types::Json<IngestReport>> =
        sqlx::query_scalar("SELECT report FROM job_reports WHERE job_id = $1")
            .bind(job_id)
            .fetch_optional(&state.pool)
            .await?;
    let Some(sqlx::types::Json(report)) = report else {
        let why = if !JobStatus::UNFINISHED.contains(&job.status) {
            "it read no rows (a job that loads none, or one that failed before reading)"
        } else {
            "it has not read its rows yet"
        };
        return Err(AppError::not_found(format!("job {job_id} has no report: {why}")));
    };
    match q.f.unwrap_or(ReportFormat::Json) {
        ReportFormat::Json => Ok(Json(report).into_response()),
        ReportFormat::Csv => {
            let mut out = csv::Writer::from_writer(Vec::new());
            for example in &report.examples {
                out.serialize(example)
                    .map_err(|e| AppError::internal(format!("report as CSV: {e}")))?;
            }
            let body = out
                .into_inner()
                .map_err(|e| AppError::internal(format!("report as CSV: {e}")))?;
            let disposition = format!("attachment; filename=\"job-{job_id}-report.csv\"");
            Ok((
                [
                    (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                    (header::CONTENT_DISPOSITION, disposition),
                ],
                body,
            )
                .into_response())
        }
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct JobListQuery {
    /// Whose jobs: an admin's filter; others may name only themselves.
    user_id: Option<Uuid>,
    /// Only jobs in this status (another name is a 400, not an empty list).
    #[param(inline)]
    status: Option<JobStatus>,
    /// Only jobs of this kind (another name is a 400, not an empty list).
    #[param(inline)]
    kind: Option<JobKind>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 50)]
    limit: Limit<50, 200>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

#[derive(Serialize, utoipa::ToSchema)]
struct JobList {
    jobs: Vec<JobView>,
    limit: i64,
    offset: i64,
}

/// Jobs newest first: every job for an admin (`user_id` narrows to one
/// user's), the caller's own for others.
#[utoipa::path(get, path = "/api/jobs", tag = "jobs", params(JobListQuery),
    responses((status = 200, body = JobList), (status = 403, description = "another user's jobs, asked by a non-admin", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn list_jobs(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<JobListQuery>,
) -> Result<Json<JobList>, AppError> {
    let user = caller.signed_in()?;
    let owner = if user.is_admin() {
        q.user_id
    } else if q.user_id.is_none_or(|id| id == user.id) {
        Some(user.id)
    } else {
        return Err(AppError::forbidden("only admins may list other users' jobs"));
    };
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM jobs
         WHERE ($1::uuid IS NULL OR created_by = $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR kind = $3)
         ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
    );
    let rows: Vec<JobView> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(owner)
        .bind(q.status)
        .bind(q.kind)
        .bind(limit)
        .bind(offset)
        .fetch_all(&state.pool)
        .await?;
    Ok(Json(JobList {
        jobs: rows.into_iter().map(JobView::with_progress).collect(),
        limit,
        offset,
    }))
}

/// The answer to work that was queued.
#[derive(Serialize, utoipa::ToSchema)]
pub struct JobAccepted {
    job_id: Uuid,
    // Always `queued`, also when a repeated request is answered with an
    // earlier job: the answer is the first request's, and the job's status
    // now is at its `Location`.
    status: JobStatus,
}

/// A request's `Idempotency-Key` header: the same key from the same user
/// answers the job its first request queued instead of queueing another.
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(Self(None));
        };
        // Visible ASCII only (0x21-0x7E): `to_str` also lets tabs and
        // spaces through, which would make keys that look alike differ.
        let visible = value.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b));
        if !visible || !(1..=255).contains(&value.len()) {
            return Err(AppError::bad_request(
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            ));
        }
        let key = String::from_utf8_lossy(value.as_bytes());
        Ok(Self(Some(format!("header:{key}"))))
    }
}

/// What `queue_once` did.
pub enum Queued {
    New,
    /// An earlier request with the same key queued this job.
    Earlier(Uuid),
}

/// Queues a job once per key: in one transaction, answers the job an
/// earlier request with one of `keys` queued for `owner`, or runs `queue`
/// (quota checks and `jobs::enqueue` of `job_id`) and remembers the keys.
pub(crate) async fn queue_once(
    state: &AppState,
    owner: Uuid,
    keys: &[&str],
    job_id: Uuid,
    queue: impl for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<(), AppError>>,
) -> Result<Queued, AppError> {
    let mut tx = state.pool.begin().await?;
    if let Some(earlier) = earlier_job(&mut tx, owner, keys).await? {
        return Ok(Queued::Earlier(earlier));
    }
    queue(&mut tx).await?;
    remember(&mut tx, owner, keys, job_id).await?;
    tx.commit().await?;
    Ok(Queued::New)
}

/// Queues, once per key, a job that fetches its source and may create a
/// dataset (URL import, connector push, service import), past the owner's
/// quotas; answers its 202 (or the earlier job's).
pub(crate) async fn queue_fetch(
    state: &AppState,
    owner: Uuid,
    keys: &[&str],
    input: jobs::JobInput,
) -> Result<Response, AppError> {
    let job_id = Uuid::now_v7();
    let queued = queue_once(state, owner, keys, job_id, |tx| {
        Box::pin(async move {
            crate::quotas::admit(tx, owner, crate::quotas::Demand { bytes: 0, datasets: 1 }).await?;
            jobs::enqueue(tx, job_id, &input, Some(owner)).await?;
            Ok(())
        })
    })
    .await?;
    Ok(respond(state, queued, job_id))
}

/// The 202 of the job `queue_once` queued (`job_id`) or found.
pub(crate) fn respond(state: &AppState, queued: Queued, job_id: Uuid) -> Response {
    let job_id = match queued {
        Queued::New => job_id,
        Queued::Earlier(earlier) => earlier,
    };
    accepted(state, job_id).into_response()
}

/// The job an earlier request with one of these keys queued for `owner`.
/// Requests with the same key wait for each other here (a lock held to the
/// end of the transaction), so two at once queue one job.
pub async fn earlier_job(tx: &mut PgConnection, owner: Uuid, keys: &[&str]) -> Result<Option<Uuid>, AppError> {
    for key in keys {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog_job_request'), hashtext($1::text || $2))")
            .bind(owner)
            .bind(key)
            .execute(&mut *tx)
            .await?;
    }
    let earlier = sqlx::query_scalar("SELECT job_id FROM job_requests WHERE owner = $1 AND key = ANY($2) LIMIT 1")
        .bind(owner)
        .bind(keys)
        .fetch_optional(&mut *tx)
        .await?;
    Ok(earlier)
}

/// Records that these keys of `owner` queued the job.
async fn remember(tx: &mut PgConnection, owner: Uuid, keys: &[&str], job_id: Uuid) -> Result<(), AppError> {
    sqlx::query("INSERT INTO job_requests (owner, key, job_id) SELECT $1, k, $3 FROM unnest($2::text[]) AS k")
        .bind(owner)
        .bind(keys)
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The 202 of a queued job, with its `Location`: every request that
/// queues a job (or is answered with the job an earlier one queued) gets
/// this, `queued`, whatever a worker has done with the job since.
pub(crate) fn accepted(state: &AppState, job_id: Uuid) -> impl IntoResponse + use<> {
    let mut headers = HeaderMap::new();
    if let Ok(location) = HeaderValue::from_str(&format!("{}/api/jobs/{job_id}", state.config.public_url)) {
        headers.insert(header::LOCATION, location);
    }
    let answer = JobAccepted {
        job_id,
        status: JobStatus::Queued,
    };
    (StatusCode::ACCEPTED, headers, Json(answer))
}
