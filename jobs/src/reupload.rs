//! The `reupload` job: a new file, or the layer pulled again from a remote
//! service, replaces an existing dataset's data (or, as a preview, is only
//! compared with it). The layer is the one asked
//! for, else the dataset's previous source layer when the file has it,
//! else the file's only spatial layer.
use catalog_shared::{
    datasets::{ColumnInfo, ColumnType, DatasetKind},
    db::quote_ident,
    jobs::{RemoteService, ReuploadPayload},
    uploads::SourceFormat,
};
use object_store::{ObjectStoreExt, path::Path};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{
    columns::sql_identifier,
    context::{JobContext, JobError},
    harvest,
    ingest::{local_source, plan_layers, read_message, truncated},
    load::{self, LoadedLayer, SourceMeta},
    plan::LayerJob,
    reader, sources, styles,
};

const PREVIEW_ROWS: usize = 5;

#[derive(sqlx::FromRow)]
struct Current {
    table_name: String,
    source_layer: Option<String>,
    column_info: sqlx::types::Json<Vec<ColumnInfo>>,
    feature_count: i64,
    is_registered: bool,
    kind: DatasetKind,
}

pub async fn run(ctx: &JobContext, payload: &ReuploadPayload) -> Result<(), JobError> {
    let current: Current =
        sqlx::query_as("SELECT table_name, source_layer, column_info, coalesce(feature_count, 0) AS feature_count, is_registered, kind FROM datasets WHERE id = $1")
            .bind(payload.dataset_id)
            .fetch_optional(&ctx.deps.pool)
            .await?
            .ok_or_else(|| JobError::Invalid("the dataset no longer exists".into()))?;
    if current.is_registered {
        return Err(JobError::Invalid(
            "the dataset is a registered table, read in place; it cannot be replaced".into(),
        ));
    }
    let (object, filename) = match &payload.service {
        Some(service) => (
            harvest::harvest(ctx, service).await?,
            harvest::HARVEST_FILENAME.to_string(),
        ),
        None => (
            Path::parse(&payload.object_path).map_err(|e| JobError::Internal(format!("object path: {e}")))?,
            payload.filename.clone(),
        ),
    };
    let payload = ReuploadPayload {
        filename,
        object_path: object.to_string(),
        ..payload.clone()
    };
    ctx.progress("reading", None, None).await?;
    let workdir = ctx.workdir()?;
    let local = local_source(ctx, &object, workdir.path(), &payload.filename).await?;
    match current.kind {
        DatasetKind::Raster => return replace_raster(ctx, &payload, &local).await,
        DatasetKind::Vector => {}
    }
    let name = payload.filename.clone();
    let srid = payload.srid;
    let planned = tokio::task::spawn_blocking(move || {
        let sources = sources::sources_of(&local, &name)?;
        if sources.iter().any(|s| s.format == SourceFormat::GeoTiff) {
            return Err("a reupload replaces a vector dataset's features; it cannot take a GeoTIFF".to_string());
        }
        plan_layers(sources, &[], srid, true)
    })
    .await
    .map_err(|e| JobError::Internal(format!("planning thread: {e}")))?
    .map_err(JobError::Invalid)?;
    let (candidates, mut report) = (planned.layers, planned.report);
    let chosen = choose_layer(&candidates, payload.layer.as_deref(), current.source_layer.as_deref())?;
    for (i, other) in candidates.iter().enumerate() {
        if i != chosen {
            report.skip(&other.key, "not the layer that replaces the dataset's data");
        }
    }
    let layer = &candidates[chosen];
    let loaded = if layer.plan.feature_count == Some(0) {
        None
    } else {
        let staging = format!("{}_0", ctx.staging_prefix());
        let table = format!(
            "{}_{}",
            truncated(&sql_identifier(&layer.plan.name, "layer"), 40),
            &Uuid::new_v4().simple().to_string()[..8]
        );
        let mut loaded = load::load_layer(ctx, &layer.source, &layer.plan, staging, table).await?;
        crate::report::note_assumptions(layer, &mut loaded);
        report.merge(loaded.report.clone());
        Some(loaded)
    };
    crate::report::store(ctx, &report).await?;
    if payload.preview {
        let mut preview = preview(&candidates, chosen, &current, &payload).await?;
        preview["job_id"] = json!(ctx.job_id);
        preview["report"] = json!(report);
        preview["row_diff"] = match &loaded {
            Some(loaded) => row_diff(ctx, &current, layer, loaded, payload.service.as_ref()).await?,
            None => Value::Null,
        };
        crate::context::drop_staging(ctx).await;
        sqlx::query("UPDATE jobs SET result = $2, dataset_id = $3, updated_at = clock_timestamp() WHERE id = $1")
            .bind(ctx.job_id)
            .bind(preview)
            .bind(payload.dataset_id)
            .execute(&ctx.deps.pool)
            .await?;
        // A preview keeps nothing: the pulled or uploaded file goes.
        if let Err(e) = ctx.deps.storage.store.delete(&object).await {
            tracing::warn!(job_id = %ctx.job_id, error = %e, "preview file not removed");
        }
        return Ok(());
    }
    let Some(loaded) = loaded.filter(|l| l.report.rows_read > 0) else {
        return Err(JobError::Invalid(format!(
            "layer {} has no features; the dataset keeps its data",
            layer.plan.name
        )));
    };
    if let Some(refused) = crate::report::refusal(ctx, &layer.key, &loaded.report) {
        return Err(refused);
    }
    let source = SourceMeta {
        format: layer.source.format.name().to_string(),
        filename: payload.filename.clone(),
        layer: layer.key.clone(),
        styles: styles::of_source(&layer.source, &layer.plan.name).await,
    };
    load::replace(ctx, payload.dataset_id, &layer.plan, &loaded, &source).await
}

/// A raster dataset takes one GeoTIFF (alone or as the only one in a zip).
async fn replace_raster(ctx: &JobContext, payload: &ReuploadPayload, local: &std::path::Path) -> Result<(), JobError> {
    let sources = sources::sources_of(local, &payload.filename).map_err(JobError::Invalid)?;
    let mut tiffs: Vec<_> = sources
        .into_iter()
        .filter(|s| s.format == SourceFormat::GeoTiff)
        .collect();
    let source = match tiffs.len() {
        1 => tiffs.remove(0),
        0 => {
            return Err(JobError::Invalid(
                "a raster dataset takes a GeoTIFF (.tif, .tiff), alone or zipped; the file has none".into(),
            ));
        }
        n => {
            return Err(JobError::Invalid(format!(
                "a raster dataset takes one GeoTIFF; the file has {n}"
            )));
        }
    };
    crate::raster::replace(ctx, payload.dataset_id, &source, &payload.filename, &payload.raster).await
}

fn choose_layer(candidates: &[LayerJob], wanted: Option<&str>, previous: Option<&str>) -> Result<usize, JobError> {
    let names = || candidates.iter().map(|c| c.key.as_str()).collect::<Vec<_>>().join(", ");
    let find = |name: &str| {
        candidates
            .iter()
            .position(|c| c.key == name || c.plan.name.eq_ignore_ascii_case(name))
    };
    if let Some(wanted) = wanted {
        return find(wanted).ok_or_else(|| {
            JobError::Invalid(format!(
                "layer {wanted:?} is not in the file; its spatial layers are: {}",
                names()
            ))
        });
    }
    if let Some(index) = previous.and_then(find) {
        return Ok(index);
    }
    if candidates.len() == 1 {
        return Ok(0);
    }
    Err(JobError::Invalid(format!(
        "the file has several spatial layers ({}); say which one replaces the data with `layer`",
        names()
    )))
}

/// Columns, types and row counts of the file against the dataset, with a
/// few rows, for the person deciding whether to replace the data.
async fn preview(
    candidates: &[LayerJob],
    chosen: usize,
    current: &Current,
    payload: &ReuploadPayload,
) -> Result<Value, JobError> {
    let layer = &candidates[chosen];
    let (path, format, plan) = (layer.source.gdal_path.clone(), layer.source.format, layer.plan.clone());
    let samples = tokio::task::spawn_blocking(move || reader::sample_rows(&path, format, &plan, PREVIEW_ROWS))
        .await
        .map_err(|e| JobError::Internal(format!("preview thread: {e}")))?
        .map_err(|e| JobError::Invalid(read_message(e)))?;
    let new_columns: Vec<(String, ColumnType)> = layer
        .plan
        .fields
        .iter()
        .map(|f| (f.name.clone(), f.pg.column_type()))
        .collect();
    let old_columns: Vec<(String, ColumnType)> = current
        .column_info
        .0
        .iter()
        .map(|c| (c.name.clone(), c.pg_type))
        .collect();
    let column = |(name, kind): &(String, ColumnType)| json!({"name": name, "type": kind});
    let added: Vec<Value> = new_columns
        .iter()
        .filter(|(n, _)| !old_columns.iter().any(|(o, _)| o == n))
        .map(column)
        .collect();
    let removed: Vec<Value> = old_columns
        .iter()
        .filter(|(o, _)| !new_columns.iter().any(|(n, _)| n == o))
        .map(column)
        .collect();
    let type_changes: Vec<Value> = new_columns
        .iter()
        .filter_map(|(n, new_type)| {
            let (_, old_type) = old_columns.iter().find(|(o, _)| o == n)?;
            (old_type != new_type).then(|| json!({"name": n, "old_type": old_type, "new_type": new_type}))
        })
        .collect();
    let row_count_new = layer.plan.feature_count.map(|n| n as i64);
    Ok(json!({
        "source_filename": payload.filename,
        "columns": new_columns.iter().map(column).collect::<Vec<_>>(),
        "crs": layer.plan.source_srid,
        "geometry_type": reader::target_type(layer.plan.target),
        "feature_count": row_count_new,
        "sample_rows": samples,
        "layer_name": layer.key,
        "schema_diff": {
            "columns_added": added,
            "columns_removed": removed,
            "type_changes": type_changes,
            "row_count_old": current.feature_count,
            "row_count_new": row_count_new,
            "row_count_delta": row_count_new.map(|n| n - current.feature_count),
        },
        "all_layers": candidates.iter().map(|c| json!({
            "name": c.key,
            "geometry_type": reader::target_type(c.plan.target),
            "feature_count": c.plan.feature_count,
        })).collect::<Vec<_>>(),
        "previous_source_layer": current.source_layer,
    }))
}

/// Column names a dataset's key is looked for under, after a service's
/// own object id field: the first one unique and never null in both the
/// data and the new file is the key rows are matched by.
const KEY_NAMES: &[&str] = &[
    "id", "fid", "objectid", "ogc_fid", "gid_0", "uid", "uuid", "code", "key",
];

/// The new rows against the dataset's: by key (added, removed, changed,
/// unchanged) where both have one, else as whole rows (changed is then
/// null: without a key a changed row is one removed and one added).
async fn row_diff(
    ctx: &JobContext,
    current: &Current,
    layer: &LayerJob,
    loaded: &LoadedLayer,
    service: Option<&RemoteService>,
) -> Result<Value, JobError> {
    let old = format!("data.{}", quote_ident(&current.table_name));
    let new = format!("data.{}", quote_ident(&loaded.staging));
    let common: Vec<&str> = current
        .column_info
        .0
        .iter()
        .filter(|c| {
            layer
                .plan
                .fields
                .iter()
                .any(|f| f.name == c.name && f.pg.column_type() == c.pg_type)
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut candidates: Vec<&str> = service
        .and_then(|s| s.object_id_field.as_deref())
        .and_then(|field| common.iter().copied().find(|c| c.eq_ignore_ascii_case(field)))
        .into_iter()
        .collect();
    candidates.extend(
        common.iter().copied().filter(|c| {
            KEY_NAMES.contains(&c.to_ascii_lowercase().as_str()) || c.to_ascii_lowercase().ends_with("_id")
        }),
    );
    let mut key = None;
    for candidate in candidates {
        let k = quote_ident(candidate);
        let unique =
            |table: &str| format!("(SELECT count({k}) = count(*) AND count(DISTINCT {k}) = count(*) FROM {table})");
        let sql = format!("SELECT {} AND {}", unique(&old), unique(&new));
        if sqlx::query_scalar::<_, bool>(sqlx::AssertSqlSafe(sql))
            .fetch_one(&ctx.deps.pool)
            .await?
        {
            key = Some(candidate);
            break;
        }
    }
    let mut fingerprinted: Vec<String> = common.iter().map(|c| quote_ident(c)).collect();
    fingerprinted.push("ST_AsEWKB(geom)".into());
    let fingerprint = format!("md5(ROW({})::text)", fingerprinted.join(", "));
    let counts: (i64, i64, Option<i64>, i64) = match key {
        Some(key) => {
            let k = quote_ident(key);
            let sql = format!(
                "SELECT count(*) FILTER (WHERE o.k IS NULL), count(*) FILTER (WHERE n.k IS NULL),
                        count(*) FILTER (WHERE o.f <> n.f), count(*) FILTER (WHERE o.f = n.f)
                 FROM (SELECT {k}::text AS k, {fingerprint} AS f FROM {old}) o
                 FULL JOIN (SELECT {k}::text AS k, {fingerprint} AS f FROM {new}) n ON o.k = n.k"
            );
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_one(&ctx.deps.pool)
                .await?
        }
        None => {
            let sql = format!(
                "SELECT coalesce(sum(greatest(n - o, 0)), 0)::bigint, coalesce(sum(greatest(o - n, 0)), 0)::bigint,
                        NULL::bigint, coalesce(sum(least(o, n)), 0)::bigint
                 FROM (SELECT f, count(*) FILTER (WHERE side = 'o') AS o, count(*) FILTER (WHERE side = 'n') AS n
                       FROM (SELECT 'o' AS side, {fingerprint} AS f FROM {old}
                             UNION ALL SELECT 'n', {fingerprint} FROM {new}) rows
                       GROUP BY f) by_row"
            );
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_one(&ctx.deps.pool)
                .await?
        }
    };
    Ok(json!({
        "key": key,
        "added": counts.0,
        "removed": counts.1,
        "changed": counts.2,
        "unchanged": counts.3,
        "compared_columns": common,
    }))
}
