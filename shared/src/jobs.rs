//! Job records: our `jobs` row carries what users poll (status, step,
//! progress, error, result); the apalis queue carries only the job id and
//! decides which worker runs it.
//!
//! This is the contract between the API, which enqueues jobs, and the
//! workers, which run them: the row's `kind` and `status` are [`JobKind`]
//! and [`JobStatus`], its `payload` a [`JobInput`] of the kind. They are
//! typed on both sides because the two processes only meet in the
//! database: a renamed status or a payload field one side no longer writes
//! would otherwise fail silently at run time instead of at compile time.
use apalis::prelude::TaskBuilder;
use apalis_core::task::task_id::TaskId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::{
    Problem,
    connectors::{AuthMethod, ObjectKey, StoreLocation},
    datasets::DatasetVisibility,
    text_enum::text_enum,
};

/// How often a worker's keep-alive beats (`apalis.workers.last_seen`),
/// from a thread of its own: whatever its jobs do (a long COPY, a GDAL
/// call, every slot busy), a worker whose process lives keeps beating.
pub const WORKER_HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a worker may go without a beat before it counts as dead: its
/// jobs go back to the queue for another worker, and it no longer counts
/// as live. Five missed beats, so a busy machine's hiccup is not a death.
pub const WORKER_DEAD_AFTER: Duration = Duration::from_secs(6);

/// The single apalis queue every job kind goes through.
pub const QUEUE: &str = "catalog_jobs";

text_enum! {
    /// What a job does: `jobs.kind`, and what the worker dispatches on.
    #[derive(utoipa::ToSchema)]
    pub enum JobKind {
        Ingest = "ingest",
        Reupload = "reupload",
        UrlDownload = "url_download",
        Rehydrate = "rehydrate",
        Connector = "connector",
        ServiceImport = "service_import",
        Archive = "archive",
        Restore = "restore",
        TileArchive = "tile_archive",
    }
}

text_enum! {
    /// Where a job is in its life: `jobs.status` (its CHECK constraint
    /// lists the same names). The API writes `queued` and `cancelled`, the
    /// worker the others.
    #[derive(utoipa::ToSchema)]
    pub enum JobStatus {
        Queued = "queued",
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl JobStatus {
    /// A job in one of these may still be (re)started or cancelled.
    pub const UNFINISHED: [JobStatus; 2] = [JobStatus::Queued, JobStatus::Running];
}

/// What the queue carries.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobMessage {
    pub job_id: Uuid,
}

/// Options of an ingest, as given at upload or URL import.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IngestOptions {
    pub title: Option<String>,
    pub summary: Option<String>,
    pub visibility: DatasetVisibility,
    /// One layer to load (jobs queued before `layers` came).
    pub layer: Option<String>,
    /// The layers to load, by name (or `file:layer` in a zip of several
    /// files); none: every layer. Left out when empty, so stored jobs read
    /// as they were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<String>,
    pub srid: Option<i32>,
    #[serde(default)]
    pub raster: RasterOptions,
    /// Only list the file's layers (the job's `result`); load nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
}

impl IngestOptions {
    /// The layers asked for; empty for every layer.
    pub fn wanted_layers(&self) -> Vec<String> {
        self.layers.iter().chain(self.layer.iter()).cloned().collect()
    }
}

/// How a GeoTIFF upload is stored (the upload's raster form fields).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RasterOptions {
    /// Store the uploaded bytes unchanged; the job fails unless they are a
    /// valid Cloud-Optimized GeoTIFF.
    #[serde(default)]
    pub strict_cog: bool,
    pub resampling: Option<String>,
    pub nodata_override: Option<f64>,
    pub srid_override: Option<i32>,
    pub compression: Option<String>,
}

/// Input of an `ingest` job: a file already in the object store.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IngestPayload {
    pub object_path: String,
    pub filename: String,
    pub options: IngestOptions,
}

/// Input of a `reupload` job: new data for an existing dataset, from a
/// file in the object store or pulled again from a remote service.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReuploadPayload {
    pub dataset_id: Uuid,
    pub object_path: String,
    pub filename: String,
    pub layer: Option<String>,
    pub srid: Option<i32>,
    /// Compare only; change nothing.
    pub preview: bool,
    /// Pull the data from this service first (object_path is then where it goes).
    #[serde(default)]
    pub service: Option<RemoteService>,
    /// How a raster dataset's new GeoTIFF is stored.
    #[serde(default)]
    pub raster: RasterOptions,
}

text_enum! {
    /// The kinds of remote map service a layer is pulled from.
    pub enum ServiceType {
        OgcapiFeatures = "ogcapi_features",
        ArcgisFeatureserver = "arcgis_featureserver",
        Wfs = "wfs",
    }
}

/// A layer of a remote map service to pull features from. Its credentials
/// travel sealed (hex), so job payloads never hold them in clear.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RemoteService {
    pub url: String,
    pub service_type: ServiceType,
    pub layer_name: String,
    pub layer_id: Option<i64>,
    pub object_id_field: Option<String>,
    pub sealed_credentials: Option<String>,
}

/// What a remote service is asked with: a token (ArcGIS's `token`
/// parameter, else a bearer token) and/or an `auth` of the specification.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ServiceCredentials {
    pub token: Option<String>,
    pub auth: Option<ServiceAuth>,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceAuth {
    pub method: AuthMethod,
    pub token: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub header_name: Option<String>,
    pub header_value: Option<String>,
}

/// Input of a `service_import` job: a remote service layer becomes a dataset.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServiceImportPayload {
    pub service: RemoteService,
    pub options: IngestOptions,
}

/// Input of a `url_download` job, and of a `connector` job (which also
/// names the stored credential to present).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UrlDownloadPayload {
    pub url: String,
    pub options: IngestOptions,
    #[serde(default)]
    pub credential_id: Option<Uuid>,
}

/// Input of a `connector` job.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConnectorPayload {
    /// An object in a bucket (the `s3`, `gcs` and `azure` connectors).
    Store(StorePullPayload),
    /// A URL (the `http` connector).
    Http(UrlDownloadPayload),
}

/// An object to pull from a provider's store and ingest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StorePullPayload {
    pub location: StoreLocation,
    /// The object's key in the bucket (prefix and resource id).
    pub key: ObjectKey,
    pub options: IngestOptions,
    pub credential_id: Option<Uuid>,
}

/// What a job is given, by kind: the API stores it in `jobs.payload` and
/// the worker reads it back with the row's kind. Each kind has its own
/// input type, so a kind cannot be enqueued with another kind's input.
#[derive(Clone, Debug)]
pub enum JobInput {
    Ingest(IngestPayload),
    Reupload(ReuploadPayload),
    UrlDownload(UrlDownloadPayload),
    Connector(ConnectorPayload),
    ServiceImport(ServiceImportPayload),
    Archive(DatasetPayload),
    Rehydrate(DatasetPayload),
    Restore(RestorePayload),
    /// The PMTiles archive of a dataset's vector tiles, at its data version.
    TileArchive(DatasetPayload),
}

/// The version of a dataset a restore job brings back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RestorePayload {
    pub dataset_id: Uuid,
    pub version: i32,
}

/// The dataset an archive or rehydrate job moves.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatasetPayload {
    pub dataset_id: Uuid,
}

impl JobInput {
    pub fn kind(&self) -> JobKind {
        match self {
            JobInput::Ingest(_) => JobKind::Ingest,
            JobInput::Reupload(_) => JobKind::Reupload,
            JobInput::UrlDownload(_) => JobKind::UrlDownload,
            JobInput::Connector(_) => JobKind::Connector,
            JobInput::ServiceImport(_) => JobKind::ServiceImport,
            JobInput::Archive(_) => JobKind::Archive,
            JobInput::Rehydrate(_) => JobKind::Rehydrate,
            JobInput::Restore(_) => JobKind::Restore,
            JobInput::TileArchive(_) => JobKind::TileArchive,
        }
    }

    /// The dataset an archive, rehydrate, restore or tile archive job works
    /// on: recorded on the job row when it is queued, where the
    /// one-move-per-dataset index sees the moves.
    fn moved_dataset(&self) -> Option<Uuid> {
        match self {
            JobInput::Archive(p) | JobInput::Rehydrate(p) | JobInput::TileArchive(p) => Some(p.dataset_id),
            JobInput::Restore(p) => Some(p.dataset_id),
            _ => None,
        }
    }

    /// The input as stored: the kind's payload alone (the kind has its column).
    fn to_payload(&self) -> serde_json::Value {
        let payload = match self {
            JobInput::Ingest(p) => serde_json::to_value(p),
            JobInput::Reupload(p) => serde_json::to_value(p),
            JobInput::UrlDownload(p) => serde_json::to_value(p),
            JobInput::Connector(p) => serde_json::to_value(p),
            JobInput::ServiceImport(p) => serde_json::to_value(p),
            JobInput::Archive(p) | JobInput::Rehydrate(p) | JobInput::TileArchive(p) => serde_json::to_value(p),
            JobInput::Restore(p) => serde_json::to_value(p),
        };
        payload.expect("job payloads serialize")
    }

    /// The input of a stored job; why not, when the payload does not fit
    /// its kind or no worker handles the kind.
    pub fn from_payload(kind: JobKind, payload: serde_json::Value) -> Result<Self, String> {
        fn parse<T: serde::de::DeserializeOwned>(kind: JobKind, payload: serde_json::Value) -> Result<T, String> {
            serde_json::from_value(payload).map_err(|e| format!("{kind} payload: {e}"))
        }
        Ok(match kind {
            JobKind::Ingest => JobInput::Ingest(parse(kind, payload)?),
            JobKind::Reupload => JobInput::Reupload(parse(kind, payload)?),
            JobKind::UrlDownload => JobInput::UrlDownload(parse(kind, payload)?),
            JobKind::Connector => JobInput::Connector(parse(kind, payload)?),
            JobKind::ServiceImport => JobInput::ServiceImport(parse(kind, payload)?),
            JobKind::Archive => JobInput::Archive(parse(kind, payload)?),
            JobKind::Rehydrate => JobInput::Rehydrate(parse(kind, payload)?),
            JobKind::Restore => JobInput::Restore(parse(kind, payload)?),
            JobKind::TileArchive => JobInput::TileArchive(parse(kind, payload)?),
        })
    }
}

/// Inserts the job row and pushes its queue task in the caller's
/// transaction, so a job exists in both places or in neither.
pub async fn enqueue(
    tx: &mut PgConnection,
    job_id: Uuid,
    input: &JobInput,
    created_by: Option<Uuid>,
) -> Result<Uuid, sqlx::Error> {
    let task_id = ulid::Ulid::generate();
    sqlx::query(
        "INSERT INTO jobs (id, kind, payload, queue_task_id, created_by, dataset_id) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(job_id)
    .bind(input.kind())
    .bind(input.to_payload())
    .bind(task_id.to_string())
    .bind(created_by)
    .bind(input.moved_dataset())
    .execute(&mut *tx)
    .await?;
    push_task(tx, job_id, task_id, Duration::ZERO).await?;
    Ok(job_id)
}

/// Puts a running job back in the queue, to run again after `delay`
/// (a provider failed and may recover). False when the job was cancelled
/// meanwhile.
pub async fn requeue(tx: &mut PgConnection, job_id: Uuid, delay: Duration, why: &str) -> Result<bool, sqlx::Error> {
    let task_id = ulid::Ulid::generate();
    let waiting = sqlx::query(
        "UPDATE jobs SET status = $2, step = NULL, queue_task_id = $3, last_error = $4,
                next_attempt_at = clock_timestamp() + make_interval(secs => $5), updated_at = clock_timestamp()
         WHERE id = $1 AND status = $6",
    )
    .bind(job_id)
    .bind(JobStatus::Queued)
    .bind(task_id.to_string())
    .bind(why)
    .bind(delay.as_secs_f64())
    .bind(JobStatus::Running)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if waiting {
        push_task(tx, job_id, task_id, delay).await?;
    }
    Ok(waiting)
}

async fn push_task(
    tx: &mut PgConnection,
    job_id: Uuid,
    task_id: ulid::Ulid,
    delay: Duration,
) -> Result<(), sqlx::Error> {
    let message = serde_json::to_vec(&JobMessage { job_id }).expect("job message serializes");
    // Retries of transient failures are ours (`requeue`, or inside the
    // handler); the queue's own attempts only cover workers that died.
    let task = TaskBuilder::new(message)
        .task_id(TaskId::Ulid(task_id))
        .max_attempts(10)
        .run_after(delay)
        .build();
    apalis_postgres::queries::push_tasks(&mut *tx, QUEUE, vec![task])
        .await
        .map_err(|e| match e {
            apalis_postgres::Error::Database(db) => db,
            other => sqlx::Error::Protocol(other.to_string()),
        })
}

/// A job as users see it.
#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct JobView {
    pub id: Uuid,
    pub kind: JobKind,
    pub status: JobStatus,
    pub step: Option<String>,
    #[sqlx(skip)]
    pub progress: Option<Progress>,
    #[serde(skip)]
    pub progress_done: Option<i64>,
    #[serde(skip)]
    pub progress_total: Option<i64>,
    #[sqlx(json(nullable))]
    pub error: Option<Problem>,
    pub dataset_id: Option<Uuid>,
    pub dataset_ids: Vec<Uuid>,
    /// The file, address or service the job reads, as its sender named it.
    pub source: Option<String>,
    /// Where the job's ingest report is (`GET /api/jobs/{id}/report`), once
    /// it has one: every job that loads rows writes one.
    #[sqlx(skip)]
    pub report_url: Option<String>,
    #[serde(skip)]
    pub has_report: bool,
    /// What a job that reports something found (a reupload preview).
    #[schema(value_type = Option<Object>)]
    pub result: Option<sqlx::types::Json<serde_json::Value>>,
    pub attempts: i32,
    /// When a job waiting after a provider's failure runs again.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Why the last run of a job waiting to run again did not succeed.
    pub last_error: Option<String>,
    #[serde(skip)]
    pub created_by: Option<Uuid>,
    /// The username of whoever sent the job; null once that account is gone.
    pub owner: Option<String>,
    /// The uploaded file's size in bytes; null for a job that read no upload.
    pub file_bytes: Option<i64>,
    /// Each step the job went through, with when it began, oldest first
    /// (a job run again after a failure goes through its steps again).
    #[sqlx(json)]
    pub steps: Vec<JobStep>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A step of a job and when it began.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobStep {
    pub step: String,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Progress {
    pub done: i64,
    pub total: Option<i64>,
}

pub const JOB_COLUMNS: &str = "id, kind, status, step, progress_done, progress_total, error, dataset_id, dataset_ids,
    coalesce(payload->>'filename', payload->>'url', payload->'service'->>'url') AS source,
    EXISTS (SELECT 1 FROM job_reports r WHERE r.job_id = jobs.id) AS has_report,
    result, attempts, next_attempt_at, last_error, created_by,
    (SELECT u.username FROM users u WHERE u.id = jobs.created_by) AS owner, nullif(upload_bytes, 0) AS file_bytes, steps,
    created_at, started_at, finished_at";

impl JobView {
    /// Fills in what is derived from the row: progress and the report's address.
    pub fn with_progress(mut self) -> Self {
        self.report_url = self.has_report.then(|| format!("/api/jobs/{}/report", self.id));
        self.progress = self.progress_done.map(|done| Progress {
            done,
            total: self.progress_total,
        });
        self
    }
}

pub async fn find(db: impl PgExecutor<'_>, job_id: Uuid) -> Result<Option<JobView>, sqlx::Error> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
    let job: Option<JobView> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(job_id)
        .fetch_optional(db)
        .await?;
    Ok(job.map(JobView::with_progress))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in a payload are text the database keeps across releases:
    /// a job queued before an upgrade is read after it, and one queued now
    /// is stored in the same words.
    #[test]
    fn a_stored_service_import_reads_back_and_is_stored_in_the_same_words() {
        let stored = serde_json::json!({
            "service": {
                "url": "https://maps.example/arcgis/rest/services/Parcels/FeatureServer",
                "service_type": "arcgis_featureserver",
                "layer_name": "Parcels",
                "layer_id": 0,
                "object_id_field": null,
                "sealed_credentials": null,
            },
            "options": {
                "title": null,
                "summary": null,
                "visibility": "internal",
                "layer": null,
                "srid": null,
                "raster": {"strict_cog": false, "resampling": null, "nodata_override": null, "srid_override": null, "compression": null},
            },
        });
        let input = JobInput::from_payload(JobKind::ServiceImport, stored.clone()).unwrap();
        assert_eq!(input.to_payload(), stored);

        let sealed = serde_json::json!({
            "token": null,
            "auth": {"method": "header", "token": null, "username": null, "password": null, "header_name": "X-Key", "header_value": "v"},
        });
        let credentials: ServiceCredentials = serde_json::from_value(sealed.clone()).unwrap();
        assert_eq!(serde_json::to_value(&credentials).unwrap(), sealed);
    }
}
