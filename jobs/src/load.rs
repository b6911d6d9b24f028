//! Loads one layer: a staging table filled by binary COPY, then key,
//! spatial index and statistics, then an atomic publish in which the table
//! gets its final name and the dataset row appears.
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use catalog_shared::{
    datasets::{self, DatasetVisibility, GeometryType},
    extent::ExtentTracker,
    generalize::{self, Recorded},
    history::{self, VersionKind},
    ingest_report::IngestReport,
    jobs::JobStatus,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::{
    columns::quote,
    context::{JobContext, JobError},
    plan::{GeomTarget, LayerPlan, ReadError},
    quarantine,
    reader::{self, Chunk, ReadRequest, ReadStats, postgis_type_name},
    sources::Source,
    styles::{self, KeptStyle},
};

/// A loaded, indexed staging table waiting to be published, with the
/// rows it kept aside.
pub struct LoadedLayer {
    pub staging: String,
    pub table: String,
    pub geometry_type: GeometryType,
    pub stats: ReadStats,
    /// Rows in the table.
    pub rows: u64,
    /// What loading did to every row of the layer.
    pub report: IngestReport,
    /// What its tiles below the complete zoom draw.
    pub generalization: Recorded,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(500);

pub async fn load_layer(
    ctx: &JobContext,
    source: &Source,
    plan: &LayerPlan,
    staging: String,
    table: String,
) -> Result<LoadedLayer, JobError> {
    let mut target = plan.target;
    loop {
        create_staging(ctx, plan, target, &staging).await?;
        let started = Instant::now();
        match copy_layer(ctx, source, plan, target, &staging).await {
            Ok(mut stats) => {
                let copied = started.elapsed();
                ctx.progress("checking", Some(stats.read as i64), Some(stats.read as i64))
                    .await?;
                let mut report = std::mem::take(&mut stats.report);
                let moved = quarantine::repair_geometries(
                    ctx,
                    &staging,
                    &plan.name,
                    target,
                    &plan.fields,
                    &stats.closed_rows,
                    &mut report,
                )
                .await?;
                if moved > 0 {
                    // The rows moved out no longer count in the extent.
                    stats.extent = extent_of(ctx, &staging).await?;
                }
                // The repair's rows among the reader's, in the layer's order.
                report.examples.sort_by_key(|e| e.row);
                let rows = stats.loaded - moved;
                report.rows_loaded = rows;
                ctx.progress("indexing", Some(rows as i64), Some(rows as i64)).await?;
                let geometry_type = settle_geometry_type(ctx, plan, target, &staging, &mut stats).await?;
                let generalization = generalize(ctx, &staging).await?;
                let ranked = started.elapsed();
                index_and_analyze(ctx, &staging, &table, stats.read + 1).await?;
                tracing::info!(
                    job_id = %ctx.job_id,
                    layer = %plan.name,
                    rows,
                    quarantined = report.rows_quarantined,
                    repaired = report.rows_repaired,
                    copy_ms = copied.as_millis() as u64,
                    generalize_ms = (ranked - copied).as_millis() as u64,
                    index_ms = (started.elapsed() - ranked).as_millis() as u64,
                    complete_zoom = generalization.complete_zoom,
                    kept_below_it = generalization.kept,
                    "layer loaded"
                );
                return Ok(LoadedLayer {
                    staging,
                    table,
                    geometry_type,
                    stats,
                    rows,
                    report,
                    generalization,
                });
            }
            Err(CopyError::Read(ReadError::GeometryMismatch)) if target != GeomTarget::Generic => {
                tracing::info!(job_id = %ctx.job_id, layer = %plan.name, "mixed geometry types; reloading into a generic column");
                target = GeomTarget::Generic;
            }
            Err(CopyError::Read(ReadError::GeometryMismatch)) => {
                return Err(JobError::Internal("generic geometry column refused a geometry".into()));
            }
            Err(CopyError::Read(ReadError::Invalid(msg))) => {
                return Err(JobError::Invalid(format!("layer {}: {msg}", plan.name)));
            }
            Err(CopyError::Read(ReadError::Stopped)) => {
                return Err(JobError::Internal("the reader stopped without a reason".into()));
            }
            Err(CopyError::Job(e)) => return Err(e),
        }
    }
}

/// The extent of a staging table's geometries, counted part by part as
/// the reader counts them.
async fn extent_of(ctx: &JobContext, staging: &str) -> Result<ExtentTracker, JobError> {
    let sql = format!(
        "SELECT ST_XMin(b), ST_XMax(b), ST_YMin(b), ST_YMax(b)
         FROM (SELECT (ST_Dump(geom)).geom::box2d AS b FROM data.{} WHERE geom IS NOT NULL) parts",
        quote(staging)
    );
    let mut extent = ExtentTracker::default();
    let mut parts = sqlx::query_as::<_, (f64, f64, f64, f64)>(sqlx::AssertSqlSafe(sql)).fetch(&ctx.deps.pool);
    while let Some((min_x, max_x, min_y, max_y)) = futures::TryStreamExt::try_next(&mut parts).await? {
        extent.add(min_x, max_x, min_y, max_y);
    }
    Ok(extent)
}

fn geometry_column_type(target: GeomTarget, has_z: bool) -> String {
    let base = match target {
        GeomTarget::Fixed(t) => postgis_type_name(t),
        GeomTarget::Generic => "Geometry",
    };
    format!("geometry({base}{},4326)", if has_z { "Z" } else { "" })
}

async fn create_staging(ctx: &JobContext, plan: &LayerPlan, target: GeomTarget, staging: &str) -> Result<(), JobError> {
    let mut columns = vec![
        "gid bigint NOT NULL".to_string(),
        format!("geom {}", geometry_column_type(target, plan.has_z)),
    ];
    columns.extend(plan.fields.iter().map(|f| format!("{} {}", quote(&f.name), f.pg.sql())));
    let drop = format!("DROP TABLE IF EXISTS data.{}", quote(staging));
    let create = format!("CREATE TABLE data.{} ({})", quote(staging), columns.join(", "));
    sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&ctx.deps.pool).await?;
    sqlx::query(sqlx::AssertSqlSafe(create)).execute(&ctx.deps.pool).await?;
    quarantine::create(ctx, staging).await
}

enum CopyError {
    Read(ReadError),
    Job(JobError),
}

impl<E: Into<JobError>> From<E> for CopyError {
    fn from(e: E) -> Self {
        CopyError::Job(e.into())
    }
}

/// Streams the layer into the staging table: GDAL reads and encodes on a
/// blocking thread while this task feeds the COPY.
async fn copy_layer(
    ctx: &JobContext,
    source: &Source,
    plan: &LayerPlan,
    target: GeomTarget,
    staging: &str,
) -> Result<ReadStats, CopyError> {
    let (tx, mut rx) = mpsc::channel::<Chunk>(4);
    let stop = Arc::new(AtomicBool::new(false));
    let rows_read = Arc::new(AtomicU64::new(0));
    let request = ReadRequest {
        path: source.gdal_path.clone(),
        format: source.format,
        label: source.label.clone(),
        plan: plan.clone(),
        target,
        stop: stop.clone(),
        rows_read: rows_read.clone(),
    };
    let reader = tokio::task::spawn_blocking(move || reader::read_layer(request, tx));
    let mut conn = ctx.deps.pool.acquire().await?;
    let statement = format!("COPY data.{} FROM STDIN (FORMAT binary)", quote(staging));
    let mut copy = conn.copy_in_raw(&statement).await?;
    let total = plan.feature_count.map(|n| n as i64);
    let mut last_report = Instant::now();
    let mut failure: Option<CopyError> = None;
    while let Some(chunk) = rx.recv().await {
        let sent = match chunk {
            Chunk::Rows(rows) => copy.send(rows).await.map(|_| ()).map_err(CopyError::from),
            Chunk::Quarantined(rows) => quarantine::keep(ctx, staging, rows).await.map_err(CopyError::Job),
        };
        if let Err(e) = sent {
            failure = Some(e);
            break;
        }
        if last_report.elapsed() >= PROGRESS_EVERY {
            last_report = Instant::now();
            let done = rows_read.load(Ordering::Relaxed) as i64;
            if let Err(e) = ctx.progress("loading", Some(done), total).await {
                failure = Some(CopyError::Job(e));
                break;
            }
        }
    }
    if failure.is_some() {
        stop.store(true, Ordering::Relaxed);
        drop(rx);
    }
    let read = reader
        .await
        .map_err(|e| CopyError::Job(JobError::Internal(format!("reader thread: {e}"))))?;
    if let Some(failure) = failure {
        let _ = copy.abort("load stopped").await;
        return Err(failure);
    }
    match read {
        Ok(stats) => {
            copy.finish().await?;
            Ok(stats)
        }
        Err(e) => {
            let _ = copy.abort("source could not be read").await;
            Err(CopyError::Read(e))
        }
    }
}

/// A generic column whose rows turned out to share one type is narrowed to
/// that type; single and multi parts of one family are made all multi.
async fn settle_geometry_type(
    ctx: &JobContext,
    plan: &LayerPlan,
    target: GeomTarget,
    staging: &str,
    stats: &mut ReadStats,
) -> Result<GeometryType, JobError> {
    if let GeomTarget::Fixed(t) = target {
        return Ok(reader::target_type(GeomTarget::Fixed(t)));
    }
    let mut types: Vec<&str> = stats.types_seen.iter().copied().collect();
    let families: std::collections::BTreeSet<&str> = types.iter().map(|t| t.trim_start_matches("Multi")).collect();
    if types.len() == 2 && families.len() == 1 && families.iter().all(|f| *f != "GeometryCollection") {
        let sql = format!(
            "UPDATE data.{} SET geom = ST_Multi(geom) WHERE NOT starts_with(GeometryType(geom), 'MULTI')",
            quote(staging)
        );
        stats.promoted += sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&ctx.deps.pool)
            .await?
            .rows_affected();
        types.retain(|t| t.starts_with("Multi"));
    }
    if let [only] = types.as_slice() {
        let sql = format!(
            "ALTER TABLE data.{} ALTER COLUMN geom TYPE geometry({only}{},4326)",
            quote(staging),
            if plan.has_z { "Z" } else { "" }
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&ctx.deps.pool).await?;
        return Ok(GeometryType::parse(only).unwrap_or(GeometryType::Geometry));
    }
    Ok(GeometryType::Geometry)
}

/// Memory for one index build; the builds run side by side.
const INDEX_BUILD_MEMORY: &str = "256MB";

/// Builds the key, the spatial index and the low zooms' partial one (of a
/// table `generalize` ranked) at the same time on three connections (each
/// takes only a SHARE lock), then makes the unique index
/// the primary key, adds the identity for later inserts (from
/// `next_key`), and analyzes. Indexes are named after `table`.
pub(crate) async fn index_and_analyze(
    ctx: &JobContext,
    staging: &str,
    table: &str,
    next_key: u64,
) -> Result<(), JobError> {
    let staging_q = format!("data.{}", quote(staging));
    let pkey = quote(&format!("{table}_pkey"));
    let key_index = format!("CREATE UNIQUE INDEX {pkey} ON {staging_q} (gid)");
    let spatial_index = format!(
        "CREATE INDEX {} ON {staging_q} USING gist (geom)",
        quote(&format!("{table}_geom_idx"))
    );
    let low_zooms_index = generalize::low_zooms_index_sql(&staging_q, &format!("{table}_low_zooms_idx"));
    tokio::try_join!(
        build_index(ctx, key_index),
        build_index(ctx, spatial_index),
        build_index(ctx, low_zooms_index)
    )?;
    let statements = [
        format!(
            "ALTER TABLE {staging_q} ADD CONSTRAINT {pkey} PRIMARY KEY USING INDEX {pkey},
               ALTER COLUMN gid ADD GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME data.{} START WITH {})",
            quote(&format!("{table}_gid_seq")),
            next_key
        ),
        format!("ANALYZE {staging_q}"),
    ];
    for sql in statements {
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&ctx.deps.pool).await?;
    }
    Ok(())
}

async fn build_index(ctx: &JobContext, statement: String) -> Result<(), JobError> {
    let mut tx = ctx.deps.pool.begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'"
    )))
    .execute(&mut *tx)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(statement)).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// What the low zooms of a staging table's tiles draw
/// (`catalog_shared::generalize`), ranked before `index_and_analyze`
/// builds the indexes, theirs among them.
pub(crate) async fn generalize(ctx: &JobContext, staging: &str) -> Result<Recorded, JobError> {
    let staging_q = format!("data.{}", quote(staging));
    Ok(generalize::rank_table(&ctx.deps.pool, &staging_q).await?)
}

/// The transaction that publishes a loaded layer, once the job is known to
/// be still running (locked, so a cancel waits for the outcome).
async fn begin_publishing(
    ctx: &JobContext,
    loaded: &LoadedLayer,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, JobError> {
    ctx.progress("publishing", Some(loaded.rows as i64), Some(loaded.rows as i64))
        .await?;
    lock_running_job(ctx).await
}

/// A transaction holding the job's row, once it is known still to run
/// (a cancelled job publishes nothing).
pub(crate) async fn lock_running_job(ctx: &JobContext) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, JobError> {
    let mut tx = ctx.deps.pool.begin().await?;
    let status: Option<JobStatus> = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1 FOR UPDATE")
        .bind(ctx.job_id)
        .fetch_optional(&mut *tx)
        .await?;
    if status != Some(JobStatus::Running) {
        return Err(JobError::Cancelled);
    }
    Ok(tx)
}

/// Records on the job the dataset it published.
pub(crate) async fn record_published(
    tx: &mut sqlx::PgConnection,
    ctx: &JobContext,
    dataset_id: Uuid,
) -> Result<(), JobError> {
    sqlx::query(
        "UPDATE jobs SET dataset_ids = array_append(dataset_ids, $2), dataset_id = coalesce(dataset_id, $2),
                         updated_at = clock_timestamp()
         WHERE id = $1",
    )
    .bind(ctx.job_id)
    .bind(dataset_id)
    .execute(tx)
    .await?;
    Ok(())
}

/// A few values of each column, by column name, for the dataset record.
fn samples_of(plan: &LayerPlan, loaded: &LoadedLayer) -> Map<String, Value> {
    plan.fields
        .iter()
        .zip(&loaded.stats.samples)
        .map(|(f, values)| (f.name.clone(), Value::Array(values.clone())))
        .collect()
}

/// What the dataset row says about its geometries beyond their type.
fn geometry_info(loaded: &LoadedLayer) -> Value {
    let curves: Vec<&str> = loaded.stats.curves_linearized.iter().copied().collect();
    serde_json::json!({"linearized": !curves.is_empty(), "source_curve_types": curves})
}

/// What a new dataset's row says about it.
pub struct DatasetMeta {
    pub title: String,
    pub summary: Option<String>,
    pub visibility: DatasetVisibility,
    pub source: SourceMeta,
}

/// What the dataset row says about its source.
pub struct SourceMeta {
    pub format: String,
    pub filename: String,
    pub layer: String,
    /// The styles the source brought for the layer (`styles`).
    pub styles: Vec<KeptStyle>,
}

/// One transaction: the job is still running, the table takes its final
/// name, the dataset row appears and the job records it.
pub async fn publish(
    ctx: &JobContext,
    plan: &LayerPlan,
    loaded: &LoadedLayer,
    meta: &DatasetMeta,
) -> Result<Uuid, JobError> {
    let dataset_id = Uuid::now_v7();
    let mut tx = begin_publishing(ctx, loaded).await?;
    let rename = format!(
        "ALTER TABLE data.{} RENAME TO {}",
        quote(&loaded.staging),
        quote(&loaded.table)
    );
    sqlx::query(sqlx::AssertSqlSafe(rename)).execute(&mut *tx).await?;
    let samples = samples_of(plan, loaded);
    let extent = loaded.stats.extent.bbox().map(|b| b.to_vec());
    sqlx::query(
        "INSERT INTO datasets (id, title, summary, schema_name, table_name, geometry_type, srid, source_srid,
                               extent_bbox, feature_count, column_info, sample_values, visibility,
                               source_format, source_filename, source_layer, job_id, created_by, geometry_info)
         VALUES ($1, $2, $3, 'data', $4, $5, 4326, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(dataset_id)
    .bind(&meta.title)
    .bind(&meta.summary)
    .bind(&loaded.table)
    .bind(loaded.geometry_type)
    .bind(plan.source_srid)
    .bind(extent)
    .bind(loaded.rows as i64)
    .bind(sqlx::types::Json(reader::column_info(plan)))
    .bind(Value::Object(samples))
    .bind(meta.visibility)
    .bind(&meta.source.format)
    .bind(&meta.source.filename)
    .bind(&meta.source.layer)
    .bind(ctx.job_id)
    .bind(ctx.created_by)
    .bind(geometry_info(loaded))
    .execute(&mut *tx)
    .await?;
    loaded.generalization.record(&mut tx, dataset_id).await?;
    let columns = reader::column_info(plan);
    let time_axis = datasets::detect_temporal_column(&columns).map(|c| c.name.as_str());
    datasets::set_time_axis(&mut tx, dataset_id, ("data", &loaded.table), time_axis).await?;
    history::record_load(&mut tx, dataset_id, ctx.created_by).await?;
    quarantine::adopt(&mut tx, &loaded.staging, dataset_id, loaded.report.rows_quarantined).await?;
    styles::store(&mut tx, dataset_id, loaded.geometry_type, &columns, &meta.source.styles).await?;
    record_published(&mut tx, ctx, dataset_id).await?;
    tx.commit().await?;
    Ok(dataset_id)
}

/// One transaction: the job is still running and the dataset still there;
/// its old table is kept in `history` and the loaded one takes its name (so tile
/// layer names and exported styles stay valid); the dataset row takes the
/// new shape. The publication version does not roll: a reupload keeps
/// signed tile links. API processes are told to forget their cached copy.
pub async fn replace(
    ctx: &JobContext,
    dataset_id: Uuid,
    plan: &LayerPlan,
    loaded: &LoadedLayer,
    source: &SourceMeta,
) -> Result<(), JobError> {
    let mut tx = begin_publishing(ctx, loaded).await?;
    let found: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT table_name, temporal_column FROM datasets WHERE id = $1 AND NOT is_registered FOR UPDATE",
    )
    .bind(dataset_id)
    .fetch_optional(&mut *tx)
    .await?;
    let (table, time_axis) =
        found.ok_or_else(|| JobError::Invalid("the dataset was deleted while its new data loaded".into()))?;
    // The old table is kept as the end of its era (history); the loaded
    // one takes its name.
    history::retire_table(&mut tx, dataset_id, &table).await?;
    let swap = format!(
        "ALTER TABLE data.{} RENAME TO {}",
        quote(&loaded.staging),
        quote(&table)
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(swap)).execute(&mut *tx).await?;
    let samples = samples_of(plan, loaded);
    sqlx::query(
        "UPDATE datasets SET geometry_type = $2, source_srid = $3, extent_bbox = $4, feature_count = $5,
                column_info = $6, sample_values = $7, source_format = $8, source_filename = $9, source_layer = $10,
                geometry_info = $11, data_version = data_version + 1, updated_at = now()
         WHERE id = $1",
    )
    .bind(dataset_id)
    .bind(loaded.geometry_type)
    .bind(plan.source_srid)
    .bind(loaded.stats.extent.bbox().map(|b| b.to_vec()))
    .bind(loaded.rows as i64)
    .bind(sqlx::types::Json(reader::column_info(plan)))
    .bind(Value::Object(samples))
    .bind(&source.format)
    .bind(&source.filename)
    .bind(&source.layer)
    .bind(geometry_info(loaded))
    .execute(&mut *tx)
    .await?;
    loaded.generalization.record(&mut tx, dataset_id).await?;
    // The time axis stays where it was while the new data has it;
    // otherwise it is found anew.
    let columns = reader::column_info(plan);
    let kept = time_axis.and_then(|name| columns.iter().find(|c| c.name == name && c.pg_type.is_temporal()));
    let time_axis = kept
        .or_else(|| datasets::detect_temporal_column(&columns))
        .map(|c| c.name.as_str());
    datasets::set_time_axis(&mut tx, dataset_id, ("data", &table), time_axis).await?;
    styles::store(&mut tx, dataset_id, loaded.geometry_type, &columns, &source.styles).await?;
    history::begin_era(&mut tx, dataset_id, VersionKind::Reupload, ctx.created_by, None).await?;
    quarantine::adopt(&mut tx, &loaded.staging, dataset_id, loaded.report.rows_quarantined).await?;
    sqlx::query(
        "UPDATE jobs SET dataset_ids = ARRAY[$2]::uuid[], dataset_id = $2, updated_at = clock_timestamp() WHERE id = $1",
    )
    .bind(ctx.job_id)
    .bind(dataset_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
