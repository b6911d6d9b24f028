//! The dataset cap, held where the number of datasets is first known: an
//! upload is admitted as one dataset, but a GeoPackage or a zip may hold
//! several layers. Before publishing anything, the job reserves a dataset
//! for each layer it will publish, or fails naming the quota with nothing
//! published.
use catalog_shared::quotas::{exceeded, standing};

use crate::context::{JobContext, JobError};

/// Reserves `datasets` more datasets for this job against its owner's
/// cap; the reservation counts for every later check (the API's
/// admissions and other jobs' reservations) until the job ends.
pub async fn reserve_datasets(ctx: &JobContext, datasets: usize) -> Result<(), JobError> {
    let Some(owner) = ctx.created_by else {
        return Ok(());
    };
    let wanted = i64::try_from(datasets).unwrap_or(i64::MAX);
    let mut tx = ctx.deps.pool.begin().await?;
    let Some(standing) = standing(&mut tx, owner, Some(ctx.job_id)).await? else {
        return Ok(());
    };
    if let Some(cap) = standing.count_cap {
        let usage = standing.dataset_count + standing.pending_datasets;
        if usage.saturating_add(wanted) > cap {
            let plural = if wanted == 1 { "" } else { "s" };
            return Err(JobError::Invalid(format!(
                "the file would make {wanted} dataset{plural} (one per layer), so none was published: {}",
                exceeded("dataset_count", cap, usage, "datasets")
            )));
        }
    }
    sqlx::query("UPDATE jobs SET planned_datasets = cardinality(dataset_ids) + $2 WHERE id = $1")
        .bind(ctx.job_id)
        .bind(i32::try_from(datasets).unwrap_or(i32::MAX))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}
