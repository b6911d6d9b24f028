//! The one gate a read of a dataset's data goes through, once the access
//! module has said the caller may read the dataset (`access::datasets`):
//! whether its data is in PostGIS (an archived dataset answers 202 with
//! the one rehydrate job that brings it back, however many readers and API
//! processes ask at once, and is served as soon as it is back, whatever
//! copy of the record the process holds), and which connection reads it
//! (`Data::reader`: a replica that has caught up with the dataset's last
//! write and the caller's own, or the primary). Items, features, tiles,
//! OGC tiles, pictures, summaries, history, downloads and exports open
//! their data here; the SQL sandbox checks the tables a statement names
//! for the same 202.
use catalog_shared::{
    AppError,
    datasets::StorageTier,
    db::quote_ident,
    jobs::{self, DatasetPayload, JobInput, JobStatus},
};
use serde_json::json;
use uuid::Uuid;

use crate::{access::Caller, dataset_record::Dataset, replicas::Reader, state::AppState};

/// How long a reader of a cold dataset is asked to wait before retrying.
const RETRY_AFTER_SECS: u64 = 5;

/// A dataset's data, open for reading: its table is in PostGIS. The table's
/// SQL name comes only from here, so a read that skips the gate does not
/// compile.
pub struct Data<'s> {
    state: &'s AppState,
    caller: Option<Uuid>,
    dataset: Uuid,
    table: String,
}

impl<'s> Data<'s> {
    /// The dataset's table, quoted for SQL.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The connection that reads the data: one that has the dataset's
    /// last write and the caller's own. Asked only when the read needs the
    /// database (a cached tile does not).
    pub async fn reader(&self) -> Reader<'s> {
        self.state
            .db
            .reader(self.caller, self.state.datasets.position(self.dataset))
            .await
    }
}

/// Opens the dataset's data for a caller the access module admitted: the
/// 202 `{status: "rehydrating", job_id}` (with `Retry-After`) of the job
/// that brings an archived dataset back, queued by the first reader to
/// ask; call it once the request is known to be well formed, so a
/// malformed one restores nothing.
///
/// A raster dataset has no features: reads of features answer 422.
pub async fn open<'s>(state: &'s AppState, caller: &Caller, dataset: &Dataset) -> Result<Data<'s>, AppError> {
    if dataset.is_raster() {
        return Err(AppError::unprocessable(format!(
            "dataset {} is a raster: it has no features; read it as raster tiles (/api/tiles/{}/{{z}}/{{x}}/{{y}}.png) or download it",
            dataset.id, dataset.id
        )));
    }
    if dataset.storage == StorageTier::Cold {
        rehydrated(state, caller, dataset.id).await?;
    }
    if state.reads.due(dataset.id) {
        // Beside the read, not before it: a read must not wait for (or
        // fail with) the primary, which may be down while replicas answer.
        tokio::spawn(record_read(state.pool.clone(), dataset.id));
    }
    Ok(as_it_is(state, caller, dataset))
}

/// The dataset's data where it is, not brought back when archived: for a
/// picture, which shows an archived dataset's extent instead.
pub fn as_it_is<'s>(state: &'s AppState, caller: &Caller, dataset: &Dataset) -> Data<'s> {
    let (schema, table) = dataset.table_names();
    Data {
        state,
        caller: caller.user_id(),
        dataset: dataset.id,
        table: format!("{}.{}", quote_ident(schema), quote_ident(table)),
    }
}

/// Notes that the dataset's data was read (for `ARCHIVE_AFTER_IDLE_DAYS`).
async fn record_read(pool: sqlx::PgPool, dataset_id: Uuid) {
    let recorded = sqlx::query(
        "INSERT INTO dataset_reads (dataset_id, last_read_at) VALUES ($1, now())
         ON CONFLICT (dataset_id) DO UPDATE SET last_read_at = now()",
    )
    .bind(dataset_id)
    .execute(&pool)
    .await;
    if let Err(e) = recorded {
        tracing::warn!(error = %e, %dataset_id, "could not record a read of the dataset; a read an hour later records it");
    }
}

/// For a read of a dataset its caller's copy of the record says is cold
/// (the caller may read it): nothing when the data is back in PostGIS
/// after all, otherwise the 202 answer with the rehydrate job, queued if
/// none runs yet.
pub async fn rehydrated(state: &AppState, caller: &Caller, dataset_id: Uuid) -> Result<(), AppError> {
    match queue_move(state, dataset_id, StorageTier::Hot, caller.user_id()).await? {
        Move::Job(job_id) => Err(AppError::accepted(
            json!({"status": "rehydrating", "job_id": job_id}),
            RETRY_AFTER_SECS,
        )),
        Move::Done => {
            // The copy is older than the move's announcement: drop it now.
            state.datasets.forget(dataset_id);
            Ok(())
        }
    }
}

/// What asking for a move came to.
pub enum Move {
    /// The dataset's data is already where the move would put it.
    Done,
    /// The unfinished job that moves it, queued now or earlier.
    Job(Uuid),
}

/// The unfinished job that moves the dataset's data to `destination` (an
/// archive to cold, a rehydrate to hot), queued now if there is none, or
/// `Done` when the data is already there. Callers wait for each other on a
/// lock of their own, so one job is queued however many ask at once.
pub async fn queue_move(
    state: &AppState,
    dataset_id: Uuid,
    destination: StorageTier,
    created_by: Option<Uuid>,
) -> Result<Move, AppError> {
    let payload = DatasetPayload { dataset_id };
    let input = match destination {
        StorageTier::Cold => JobInput::Archive(payload),
        StorageTier::Hot => JobInput::Rehydrate(payload),
    };
    let mut tx = state.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog_dataset_move'), hashtext($1::text))")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    // The storage itself, not the caller's copy of the record: that copy
    // may predate a move that finished meanwhile, and queueing another job
    // then would hand later callers a job id of their own. Storage and job
    // come from one snapshot: a worker commits the storage before it marks
    // its job finished, so no snapshot sees the job finished and the
    // storage as it was.
    let (storage, running): (StorageTier, Option<Uuid>) = sqlx::query_as(
        "SELECT d.storage,
                (SELECT j.id FROM jobs j WHERE j.kind = $1 AND j.dataset_id = d.id AND j.status = ANY($3) LIMIT 1)
         FROM datasets d WHERE d.id = $2",
    )
    .bind(input.kind())
    .bind(dataset_id)
    .bind(JobStatus::UNFINISHED)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| AppError::not_found(format!("no dataset {dataset_id}")))?;
    if storage == destination {
        return Ok(Move::Done);
    }
    if let Some(job_id) = running {
        return Ok(Move::Job(job_id));
    }
    let job_id = Uuid::now_v7();
    jobs::enqueue(&mut tx, job_id, &input, created_by).await?;
    tx.commit().await?;
    Ok(Move::Job(job_id))
}
