//! What the workers sweep on a schedule, so nothing grows without bound:
//! staging tables of jobs that ended without publishing, uploaded sources
//! of finished jobs past their retention, finished job rows (and their
//! queue tasks) past theirs, except those a dataset still names,
//! datasets' past versions past theirs, and exports past theirs.
use std::time::Duration;

use catalog_shared::{
    datasets::{PublicationStatus, STAGING_PREFIX, StorageTier},
    history,
    jobs::{self, DatasetPayload, JobInput, JobStatus},
};
use sqlx::PgPool;
use uuid::Uuid;

use crate::context::JobDeps;

/// How long finished work is kept.
#[derive(Clone, Copy, Debug)]
pub struct Retention {
    /// An uploaded or downloaded source file, after its job finished.
    pub uploads: Duration,
    /// A finished job's row and queue task.
    pub jobs: Duration,
    /// A hot dataset nobody read (`ARCHIVE_AFTER_IDLE_DAYS`); None: never.
    pub archive_after_idle: Option<Duration>,
    /// A dataset's past versions (`VERSION_RETENTION_DAYS`).
    pub versions: Duration,
    /// An export kept for its readers, after it was made (`EXPORT_CACHE_DAYS`).
    pub exports: Duration,
}

/// What one sweep removed.
#[derive(Debug, Default)]
pub struct Swept {
    pub staging_tables: u64,
    pub workdirs: u64,
    pub uploads: u64,
    pub jobs: u64,
    pub archived: u64,
    pub versions: u64,
    pub exports: u64,
}

pub async fn sweep(deps: &JobDeps, retention: Retention) -> anyhow::Result<Swept> {
    Ok(Swept {
        staging_tables: cleanup_abandoned_staging(&deps.pool).await?,
        workdirs: remove_abandoned_workdirs(&deps.pool, &std::env::temp_dir()).await?,
        uploads: remove_uploads(deps, retention.uploads).await?,
        jobs: remove_jobs(deps, retention.jobs).await?,
        archived: match retention.archive_after_idle {
            Some(idle) => archive_idle(deps, idle).await?,
            None => 0,
        },
        versions: {
            let mut tx = deps.pool.begin().await?;
            let forgotten = history::forget_old_versions(&mut tx, retention.versions).await?;
            tx.commit().await?;
            forgotten
        },
        exports: remove_old_exports(deps, retention.exports).await?,
    })
}

/// Deletes the exports made longer ago than `retention`; the API makes an
/// export again when it is asked for once more.
async fn remove_old_exports(deps: &JobDeps, retention: Duration) -> anyhow::Result<u64> {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt;
    let storage = &deps.storage;
    let before = chrono::Utc::now() - retention;
    let old: Vec<object_store::path::Path> = storage
        .store
        .list(Some(&storage.exports_root()))
        .try_filter(|meta| std::future::ready(meta.last_modified < before))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await?;
    for object in &old {
        // Gone meanwhile (its dataset deleted): nothing left to do.
        match storage.store.delete(object).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(old.len() as u64)
}

/// Deletes the sources (everything under `uploads/<job id>/`) of jobs
/// finished longer ago than `retention`, a batch at a time.
async fn remove_uploads(deps: &JobDeps, retention: Duration) -> anyhow::Result<u64> {
    let finished: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM jobs
         WHERE NOT upload_removed AND status <> ALL($1) AND finished_at < now() - make_interval(secs => $2)
         ORDER BY finished_at LIMIT 500",
    )
    .bind(JobStatus::UNFINISHED)
    .bind(retention.as_secs_f64())
    .fetch_all(&deps.pool)
    .await?;
    let storage = &deps.storage;
    for job_id in &finished {
        storage.delete_folder(&storage.upload_folder(*job_id)).await?;
        sqlx::query("UPDATE jobs SET upload_removed = true WHERE id = $1")
            .bind(job_id)
            .execute(&deps.pool)
            .await?;
    }
    Ok(finished.len() as u64)
}

/// Deletes finished jobs older than `retention` that no dataset names,
/// with their queue tasks.
async fn remove_jobs(deps: &JobDeps, retention: Duration) -> anyhow::Result<u64> {
    let removed: Vec<String> = sqlx::query_scalar(
        "DELETE FROM jobs j
         WHERE j.status <> ALL($1) AND j.upload_removed AND j.finished_at < now() - make_interval(secs => $2)
           AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.job_id = j.id)
         RETURNING j.queue_task_id",
    )
    .bind(JobStatus::UNFINISHED)
    .bind(retention.as_secs_f64())
    .fetch_all(&deps.pool)
    .await?;
    sqlx::query("DELETE FROM apalis.jobs WHERE id = ANY($1)")
        .bind(&removed)
        .execute(&deps.pool)
        .await?;
    Ok(removed.len() as u64)
}

/// Removes the scratch folders (under `tmp`, this host's temporary
/// directory) of this deployment's jobs that are no longer running: a
/// worker killed mid-job leaves its folder, with a copy of the source from
/// a remote store, behind. A folder of a job this database does not know
/// may belong to another deployment on the host, and stays.
pub async fn remove_abandoned_workdirs(pool: &PgPool, tmp: &std::path::Path) -> anyhow::Result<u64> {
    let mut folders: Vec<(std::path::PathBuf, Uuid)> = Vec::new();
    for entry in std::fs::read_dir(tmp)?.flatten() {
        let name = entry.file_name();
        let job = name
            .to_str()
            .and_then(|n| n.strip_prefix(crate::context::WORKDIR_PREFIX))
            .and_then(|rest| rest.get(..36))
            .and_then(|id| id.parse::<Uuid>().ok());
        if let Some(job) = job {
            folders.push((entry.path(), job));
        }
    }
    if folders.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = folders.iter().map(|(_, id)| *id).collect();
    let stopped: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM jobs WHERE id = ANY($1) AND status <> $2")
        .bind(&ids)
        .bind(JobStatus::Running)
        .fetch_all(pool)
        .await?;
    let mut removed = 0;
    for (folder, job) in folders {
        if stopped.contains(&job) && std::fs::remove_dir_all(&folder).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Drops staging tables left by jobs that are no longer running (a worker
/// killed mid-load, a job cancelled while its worker was down).
async fn cleanup_abandoned_staging(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT t.tablename FROM pg_tables t
         WHERE t.schemaname = 'data' AND starts_with(t.tablename, $2)
           AND NOT EXISTS (
             SELECT 1 FROM jobs j
             WHERE j.status = ANY($1)
               AND starts_with(t.tablename, $2 || replace(j.id::text, '-', '')))",
    )
    .bind(JobStatus::UNFINISHED)
    .bind(STAGING_PREFIX)
    .fetch_all(pool)
    .await?;
    for table in &tables {
        let sql = format!("DROP TABLE IF EXISTS data.{}", crate::columns::quote(table));
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(pool).await?;
    }
    Ok(tables.len() as u64)
}

/// Queues an archive job for each published dataset (of the service's
/// own tables) whose data nobody read for `idle`, a batch at a time.
async fn archive_idle(deps: &JobDeps, idle: Duration) -> anyhow::Result<u64> {
    let idle_datasets: Vec<Uuid> = sqlx::query_scalar(include_str!("idle_datasets.sql"))
        .bind(idle.as_secs_f64())
        .bind(StorageTier::Hot)
        .bind(PublicationStatus::Ready)
        .fetch_all(&deps.pool)
        .await?;
    for dataset_id in &idle_datasets {
        let mut tx = deps.pool.begin().await?;
        let job_id = Uuid::now_v7();
        let input = JobInput::Archive(DatasetPayload {
            dataset_id: *dataset_id,
        });
        // Another worker's sweep may have queued it meanwhile: the
        // one-move-per-dataset index refuses the second job.
        match jobs::enqueue(&mut tx, job_id, &input, None).await {
            Ok(_) => tx.commit().await?,
            Err(e) => tracing::debug!(%dataset_id, error = %e, "archive already queued"),
        }
    }
    Ok(idle_datasets.len() as u64)
}
