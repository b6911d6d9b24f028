//! Restoring a version of a vector dataset: a new table made of the
//! version's rows (its era's table, rows changed later in the era taken as
//! they were), with the same keys and columns, indexed as an ingest
//! indexes, takes the dataset's table name in one short transaction; the
//! table it replaces is kept as the end of its era, and the restore is a
//! new version (`catalog_shared::history`) with the count and extent the
//! restored version had.
use catalog_shared::{
    datasets,
    db::quote_ident,
    history::{self, VersionKind},
    ingest_report::IngestReport,
    jobs::RestorePayload,
};

use crate::{
    context::{JobContext, JobError},
    load,
};

pub async fn run(ctx: &JobContext, payload: &RestorePayload) -> Result<(), JobError> {
    ctx.progress("restoring", None, None).await?;
    let id = payload.dataset_id;
    let pool = &ctx.deps.pool;
    let found: Option<(bool, String)> = sqlx::query_as("SELECT is_registered, kind FROM datasets WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    let (registered, kind) = found.ok_or_else(|| JobError::Invalid(format!("dataset {id} was deleted")))?;
    if registered || kind != "vector" {
        return Err(JobError::Invalid(
            "only an ingested vector dataset has versions to restore".into(),
        ));
    }
    let not_kept = || {
        JobError::Invalid(format!(
            "version {} of dataset {id} is not kept (past VERSION_RETENTION_DAYS, or never made)",
            payload.version
        ))
    };
    let (era, source) = history::version_source(&mut *pool.acquire().await?, id, payload.version)
        .await?
        .ok_or_else(not_kept)?;
    // The version's rows, copied in one statement (one snapshot) and
    // indexed as an ingest indexes, outside the dataset's lock: a version's
    // rows never change, whatever edits come meanwhile.
    let staging = format!("{}_0", ctx.staging_prefix());
    let staging_q = format!("data.{}", quote_ident(&staging));
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {staging_q} AS {}",
        history::state_sql(id, payload.version, era, &source)
    )))
    .execute(pool)
    .await?;
    // Without the columns later versions of the era added.
    let added_later = history::columns_added_after(&mut *pool.acquire().await?, id, era, payload.version).await?;
    for column in &added_later {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE {staging_q} DROP COLUMN {}",
            quote_ident(column)
        )))
        .execute(pool)
        .await?;
    }
    let generalization = load::generalize(ctx, &staging).await?;
    load::index_and_analyze(ctx, &staging, &staging, 1).await?;

    // The swap, under the dataset row's lock.
    let mut tx = pool.begin().await?;
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| JobError::Invalid(format!("dataset {id} was deleted")))?;
    let (count, extent): (i64, Option<Vec<f64>>) = sqlx::query_as(
        "SELECT feature_count, extent_bbox FROM dataset_versions WHERE dataset_id = $1 AND version = $2",
    )
    .bind(id)
    .bind(payload.version)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(not_kept)?;
    // New features go on after the largest key any version had, so a key
    // never names two features.
    let next: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT greatest((SELECT coalesce(max(gid), 0) FROM {staging_q}),
                         (SELECT coalesce(max(gid), 0) FROM feature_changes WHERE dataset_id = $1),
                         (SELECT coalesce(max(gid), 0) FROM data.{})) + 1",
        quote_ident(&table)
    )))
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER TABLE {staging_q} ALTER COLUMN gid RESTART WITH {next}"
    )))
    .execute(&mut *tx)
    .await?;
    history::retire_table(&mut tx, id, &table).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER TABLE {staging_q} RENAME TO {}",
        quote_ident(&table)
    )))
    .execute(&mut *tx)
    .await?;
    // The dataset row describes the data as it was at the end of the
    // version's era (its columns but those added later, geometry type,
    // source), with the version's own count and extent.
    sqlx::query(
        "UPDATE datasets d SET geometry_type = e.shape->>'geometry_type',
                source_srid = (e.shape->>'source_srid')::integer,
                column_info = coalesce((SELECT jsonb_agg(c ORDER BY n) FROM jsonb_array_elements(e.shape->'column_info')
                                        WITH ORDINALITY AS a(c, n) WHERE NOT (c->>'name' = ANY($5::text[]))), '[]'::jsonb),
                sample_values = (e.shape->'sample_values') - $5::text[],
                geometry_info = e.shape->'geometry_info', temporal_column = e.shape->>'temporal_column',
                source_format = e.shape->>'source_format', source_filename = e.shape->>'source_filename',
                source_layer = e.shape->>'source_layer',
                feature_count = $3, extent_bbox = $4, quarantined_count = 0, data_version = data_version + 1,
                updated_at = now()
         FROM dataset_eras e
         WHERE d.id = $1 AND e.dataset_id = $1 AND e.era = $2",
    )
    .bind(id)
    .bind(era)
    .bind(count)
    .bind(extent)
    .bind(&added_later)
    .execute(&mut *tx)
    .await?;
    generalization.record(&mut tx, id).await?;
    let time_axis: Option<String> = sqlx::query_scalar("SELECT temporal_column FROM datasets WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    datasets::set_time_axis(&mut tx, id, ("data", &table), time_axis.as_deref()).await?;
    history::begin_era(&mut tx, id, VersionKind::Restore, ctx.created_by, Some(payload.version)).await?;
    sqlx::query("UPDATE jobs SET dataset_ids = ARRAY[$2]::uuid[], updated_at = clock_timestamp() WHERE id = $1")
        .bind(ctx.job_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    // The version's rows come back as they were kept: every one loads.
    let rows = count.max(0) as u64;
    let report = IngestReport {
        rows_read: rows,
        rows_loaded: rows,
        ..Default::default()
    };
    crate::report::store(ctx, &report).await
}
