//! Dataset records kept for a minute for the hot read routes (OGC items).
//! The specification allows it: metadata changes take effect within about
//! a minute. In practice they take effect at once: every change to a
//! dataset record (here, in another API process, or by a worker) is
//! announced by the database on the `dataset_changed` channel and every process forgets
//! its copy; the minute bounds staleness if an announcement is lost.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use catalog_shared::AppError;
use catalog_shared::datasets::DatasetChanged;
use sqlx::{FromRow, PgPool, Row, postgres::PgListener};
use uuid::Uuid;

use crate::{
    dataset_record::{DATASET_COLUMNS, Dataset},
    replicas::{POSITION_SQL, UNKNOWN_POSITION},
};

const TTL: Duration = Duration::from_secs(60);
/// How long a record stays cached, as a span of wall-clock time.
pub const KEPT_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(TTL.as_secs() as i64);
const MAX_ENTRIES: usize = 10_000;

/// When each record was fetched, by dataset id, and how many times
/// records were forgotten so far.
#[derive(Default)]
struct Entries {
    /// Each record with when it was fetched and the database's WAL position
    /// then (see `replicas`): a replica that has replayed that position
    /// holds the data the record names.
    records: HashMap<Uuid, (Instant, Arc<Dataset>, i64)>,
    forgets: u64,
}

#[derive(Clone, Default)]
pub struct DatasetCache {
    entries: Arc<Mutex<Entries>>,
}

impl DatasetCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached record, or the count of forgets before it is fetched.
    fn get(&self, id: Uuid) -> Result<Arc<Dataset>, u64> {
        let entries = self.entries();
        entries
            .records
            .get(&id)
            .filter(|(at, _, _)| at.elapsed() < TTL)
            .map(|(_, d, _)| d.clone())
            .ok_or(entries.forgets)
    }

    /// Keeps a record fetched after `forgets` forgets, unless one came
    /// since: a record read before a change was announced would otherwise
    /// be kept after the announcement, for the whole minute.
    fn put(&self, dataset: Dataset, position: i64, forgets: u64) -> Arc<Dataset> {
        let dataset = Arc::new(dataset);
        let mut entries = self.entries();
        if entries.forgets != forgets {
            return dataset;
        }
        if entries.records.len() >= MAX_ENTRIES {
            entries.records.retain(|_, (at, _, _)| at.elapsed() < TTL);
        }
        entries
            .records
            .insert(dataset.id, (Instant::now(), dataset.clone(), position));
        dataset
    }

    /// Any dataset by id, from the cache when it is there; callers decide
    /// who may see it.
    pub async fn dataset(&self, pool: &PgPool, id: Uuid) -> Result<Arc<Dataset>, AppError> {
        let forgets = match self.get(id) {
            Ok(dataset) => return Ok(dataset),
            Err(forgets) => forgets,
        };
        let sql = format!("SELECT {DATASET_COLUMNS}, {POSITION_SQL} AS wal_position FROM datasets WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(pool)
            .await?
            .ok_or_else(|| AppError::not_found(format!("no dataset {id}")))?;
        let dataset = Dataset::from_row(&row)?;
        Ok(self.put(dataset, row.try_get("wal_position")?, forgets))
    }

    /// The WAL position at which the cached record of `id` was read; a
    /// read of its data must not go to a replica behind it.
    pub fn position(&self, id: Uuid) -> i64 {
        self.entries()
            .records
            .get(&id)
            .map_or(UNKNOWN_POSITION, |(_, _, position)| *position)
    }

    pub fn forget(&self, id: Uuid) {
        let mut entries = self.entries();
        entries.forgets += 1;
        entries.records.remove(&id);
    }

    fn forget_all(&self) {
        let mut entries = self.entries();
        entries.forgets += 1;
        entries.records.clear();
    }

    /// Forgets datasets as their changes are announced, for as long as the
    /// process runs. After a lost connection everything is forgotten, since
    /// announcements may have been missed meanwhile.
    pub async fn follow_changes(self, pool: PgPool) {
        loop {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(listener) => listener,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for dataset changes; retrying");
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    continue;
                }
            };
            if let Err(e) = listener.listen(DatasetChanged::CHANNEL).await {
                tracing::warn!(error = %e, "cannot listen for dataset changes; retrying");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
            self.forget_all();
            loop {
                match listener.try_recv().await {
                    Ok(Some(notification)) => {
                        if let Some(changed) = DatasetChanged::from_payload(notification.payload()) {
                            self.forget(changed.dataset_id);
                        }
                    }
                    Ok(None) => self.forget_all(),
                    Err(e) => {
                        tracing::warn!(error = %e, "lost the dataset change channel; reconnecting");
                        break;
                    }
                }
            }
        }
    }
}
