//! The `ingest` job: a file in the object store becomes one dataset per
//! spatial layer.
use std::collections::HashSet;

use catalog_shared::{
    ingest_report::{AssumptionCode, IngestReport},
    jobs::{IngestOptions, IngestPayload},
    uploads::SourceFormat,
};
use futures::StreamExt;
use object_store::{ObjectStoreExt, path::Path};
use tokio::io::AsyncWriteExt;

use crate::{
    columns::sql_identifier,
    context::{JobContext, JobError},
    load::{self, DatasetMeta, SourceMeta},
    plan::{LayerJob, ReadError},
    quota, raster, reader, source_text,
    sources::{self, Source},
    styles,
};

pub async fn run(ctx: &JobContext, payload: &IngestPayload) -> Result<(), JobError> {
    let object = Path::parse(&payload.object_path).map_err(|e| JobError::Internal(format!("object path: {e}")))?;
    ingest_object(ctx, &object, &payload.filename, &payload.options).await
}

/// A local file GDAL can read: the object itself in a local store, else a
/// copy in `dir`.
pub(crate) async fn local_source(
    ctx: &JobContext,
    object: &Path,
    dir: &std::path::Path,
    filename: &str,
) -> Result<std::path::PathBuf, JobError> {
    if let Some(path) = ctx.deps.storage.local_file(object) {
        return match tokio::fs::metadata(&path).await {
            Ok(_) => Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(JobError::Invalid(
                "the uploaded file is no longer in the object store".into(),
            )),
            Err(e) => Err(e.into()),
        };
    }
    let local = dir.join(filename);
    let mut file = tokio::io::BufWriter::with_capacity(1 << 20, tokio::fs::File::create(&local).await?);
    let mut stream = ctx.deps.storage.store.get(object).await?.into_stream();
    while let Some(bytes) = stream.next().await {
        file.write_all(&bytes?).await?;
    }
    file.flush().await?;
    Ok(local)
}

pub async fn ingest_object(
    ctx: &JobContext,
    object: &Path,
    filename: &str,
    options: &IngestOptions,
) -> Result<(), JobError> {
    ctx.progress("reading", None, None).await?;
    let started = std::time::Instant::now();
    let workdir = ctx.workdir()?;
    let local = local_source(ctx, object, workdir.path(), filename).await?;
    tracing::info!(job_id = %ctx.job_id, fetch_ms = started.elapsed().as_millis() as u64, "source fetched");
    let (source_path, name) = (local.clone(), filename.to_string());
    let sources = tokio::task::spawn_blocking(move || sources::sources_of(&source_path, &name))
        .await
        .map_err(|e| JobError::Internal(format!("planning thread: {e}")))?
        .map_err(JobError::Invalid)?;
    let published: HashSet<String> = sqlx::query_scalar("SELECT source_layer FROM datasets WHERE job_id = $1")
        .bind(ctx.job_id)
        .fetch_all(&ctx.deps.pool)
        .await?
        .into_iter()
        .collect();
    let (rasters, vectors): (Vec<Source>, Vec<Source>) =
        sources.into_iter().partition(|s| s.format == SourceFormat::GeoTiff);
    let single_raster = rasters.len() == 1 && vectors.is_empty();
    // Every layer is planned before any is published, so the dataset cap
    // holds for the whole file: all of it, or nothing.
    let Planned { layers, mut report } = if vectors.is_empty() {
        Planned {
            layers: Vec::new(),
            report: IngestReport::default(),
        }
    } else {
        let wanted = options.wanted_layers();
        let (srid, full) = (options.srid, !options.preview);
        tokio::task::spawn_blocking(move || plan_layers(vectors, &wanted, srid, full))
            .await
            .map_err(|e| JobError::Internal(format!("planning thread: {e}")))?
            .map_err(JobError::Invalid)?
    };
    if options.preview {
        return list_layers(ctx, &rasters, &layers).await;
    }
    let rasters: Vec<&Source> = rasters.iter().filter(|s| !published.contains(&s.label)).collect();
    let to_load = layers
        .iter()
        .filter(|l| !published.contains(&l.key) && l.plan.feature_count != Some(0))
        .count();
    if rasters.len() + to_load > 0 {
        quota::reserve_datasets(ctx, rasters.len() + to_load).await?;
    }
    for source in rasters {
        let stem = source.label.rsplit('/').next().unwrap_or(&source.label);
        let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
        let naming = raster::Naming {
            title: title_for(options, filename, stem, single_raster),
            filename,
        };
        raster::ingest(ctx, source, naming, options).await?;
    }
    if layers.is_empty() {
        return Ok(());
    }
    // Every layer is loaded before any is published: one that is refused
    // (too many rows quarantined) leaves the whole file unpublished.
    let single = layers.len() == 1;
    let mut staged = Vec::new();
    for (n, layer) in layers.iter().enumerate() {
        if published.contains(&layer.key) {
            continue;
        }
        if layer.plan.feature_count == Some(0) {
            report.skip(&layer.key, "the layer holds no features");
            continue;
        }
        let staging = format!("{}_{n}", ctx.staging_prefix());
        let table = format!(
            "{}_{}",
            truncated(&sql_identifier(&layer.plan.name, "layer"), 40),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let mut loaded = load::load_layer(ctx, &layer.source, &layer.plan, staging, table).await?;
        if loaded.report.rows_read == 0 {
            report.skip(&layer.key, "the layer holds no features");
            continue;
        }
        crate::report::note_assumptions(layer, &mut loaded);
        staged.push((layer, loaded));
    }
    for (_, loaded) in &staged {
        report.merge(loaded.report.clone());
    }
    crate::report::store(ctx, &report).await?;
    if staged.is_empty() && published.is_empty() {
        return Err(JobError::Invalid(
            "the file holds no features: every spatial layer is empty".into(),
        ));
    }
    if let Some(refused) = staged
        .iter()
        .find_map(|(layer, loaded)| crate::report::refusal(ctx, &layer.key, &loaded.report))
    {
        return Err(refused);
    }
    for (layer, loaded) in &staged {
        let meta = DatasetMeta {
            title: title_for(options, filename, &layer.plan.name, single),
            summary: options.summary.clone(),
            visibility: options.visibility,
            source: SourceMeta {
                format: layer.source.format.name().to_string(),
                filename: filename.to_string(),
                layer: layer.key.clone(),
                styles: styles::of_source(&layer.source, &layer.plan.name).await,
            },
        };
        load::publish(ctx, &layer.plan, loaded, &meta).await?;
    }
    // Layers that held no row leave their empty staging tables.
    crate::context::drop_staging(ctx).await;
    Ok(())
}

/// A preview: the file's layers as the job's result (what an upload could
/// load, and by which name to ask for each); nothing loads. The file stays
/// as every upload's does (until the cleanup's upload retention), so the
/// layers chosen load from it (`POST /api/datasets/upload/{job}/load`).
async fn list_layers(ctx: &JobContext, rasters: &[Source], layers: &[LayerJob]) -> Result<(), JobError> {
    let mut listed: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| {
            let geometry_type = match l.plan.target {
                crate::plan::GeomTarget::Fixed(t) => Some(reader::postgis_type_name(t)),
                crate::plan::GeomTarget::Generic => None,
            };
            serde_json::json!({"layer": l.key, "name": l.plan.name, "geometry_type": geometry_type,
                               "feature_count": l.plan.feature_count})
        })
        .collect();
    listed.extend(rasters.iter().map(|r| serde_json::json!({"layer": r.label, "name": r.label, "geometry_type": null, "feature_count": null, "raster": true})));
    sqlx::query("UPDATE jobs SET result = $2, updated_at = clock_timestamp() WHERE id = $1")
        .bind(ctx.job_id)
        .bind(serde_json::json!({"layers": listed}))
        .execute(&ctx.deps.pool)
        .await?;
    Ok(())
}

pub(crate) fn truncated(s: &str, max: usize) -> String {
    s.chars()
        .take(max)
        .collect::<String>()
        .trim_end_matches('_')
        .to_string()
}

fn title_for(options: &IngestOptions, filename: &str, layer: &str, single: bool) -> String {
    let stem = filename.rsplit_once('.').map_or(filename, |(s, _)| s);
    match (&options.title, single) {
        (Some(title), true) => title.clone(),
        (Some(title), false) => format!("{title} — {layer}"),
        (None, true) if !stem.is_empty() => stem.to_string(),
        _ => layer.to_string(),
    }
}

/// The layers to load, and what planning them skipped or chose.
pub(crate) struct Planned {
    pub layers: Vec<LayerJob>,
    pub report: IngestReport,
}

/// Opens every source with GDAL and lists the spatial layers to load:
/// those named in `wanted` (by name, or `file:layer` in a zip of several
/// files), or all. `full` also reads what keeping values exactly needs
/// (a preview only lists). Tables without geometry, and layers not asked
/// for, are reported as skipped.
pub(crate) fn plan_layers(
    sources: Vec<Source>,
    wanted: &[String],
    srid: Option<i32>,
    full: bool,
) -> Result<Planned, String> {
    let many_sources = sources.len() > 1;
    let mut all = Vec::new();
    let mut available = Vec::new();
    let mut report = IngestReport::default();
    for source in sources {
        let ds = reader::open(&source.gdal_path, source.format, &source.label).map_err(read_message)?;
        let layers = reader::layers(&ds);
        if !layers.iter().any(|(_, _, spatial)| *spatial) && source.format == SourceFormat::Csv {
            return Err(format!(
                "{}: no coordinates found; a CSV needs lon/lat (or x/y, longitude/latitude) columns or a WKT column named wkt, geom, geometry or the_geom",
                source.label
            ));
        }
        for (index, name, spatial) in layers {
            let key = if many_sources {
                format!("{}:{name}", source.label)
            } else {
                name.clone()
            };
            if !spatial {
                let why = if name.eq_ignore_ascii_case("layer_styles") {
                    "QGIS's styles of the file's layers: kept as the styles of the layers they belong to, not loaded as data"
                        .to_string()
                } else {
                    "a table without geometry: a dataset is a spatial layer, so it was not loaded".to_string()
                };
                report.skip(&key, why);
                continue;
            }
            available.push(name.clone());
            let selected = wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(&name) || *w == key);
            if !selected {
                report.skip(&key, "not among the layers the upload asked for (layer)");
                continue;
            }
            let mut plan = reader::plan_layer(&ds, index, srid).map_err(read_message)?;
            if full {
                source_text::keep_values(&source.gdal_path, source.format, &mut plan).map_err(read_message)?;
            }
            all.push(LayerJob {
                source: source.clone(),
                plan,
                key,
            });
        }
    }
    if available.is_empty() {
        return Err("the file holds no layer with geometry".into());
    }
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|w| !all.iter().any(|l| w.eq_ignore_ascii_case(&l.plan.name) || **w == l.key))
        .collect();
    if all.is_empty() || !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|w| format!("{w:?}")).collect();
        return Err(format!(
            "layer {} is not in the file; its spatial layers are: {}",
            names.join(", "),
            available.join(", ")
        ));
    }
    let tables: Vec<String> = report
        .skipped
        .iter()
        .filter(|s| s.why.starts_with("a table without geometry"))
        .map(|s| s.layer.clone())
        .collect();
    if !tables.is_empty() {
        report.assume(
            AssumptionCode::NonSpatialTableSkipped,
            None,
            format!(
                "the file's tables without geometry were not loaded ({}); a dataset is a spatial layer",
                tables.join(", ")
            ),
        );
    }
    if !wanted.is_empty() && all.len() < available.len() {
        let chosen: Vec<&str> = all.iter().map(|l| l.key.as_str()).collect();
        report.assume(
            AssumptionCode::LayersChosen,
            None,
            format!(
                "only the layers asked for were loaded ({}) of the file's {} spatial layers ({})",
                chosen.join(", "),
                available.len(),
                available.join(", ")
            ),
        );
    }
    Ok(Planned { layers: all, report })
}

pub(crate) fn read_message(e: ReadError) -> String {
    match e {
        ReadError::Invalid(msg) => msg,
        other => format!("{other:?}"),
    }
}

/// Where a job keeps its source file in the object store.
pub fn object_for(ctx: &JobContext, filename: &str) -> Path {
    ctx.deps.storage.upload_path(ctx.job_id, filename)
}
