//! A GeoTIFF becomes a raster dataset: checked, written as a
//! Cloud-Optimized GeoTIFF (or, under `strict_cog`, checked to be one and
//! kept byte for byte), stored in the object store, and published with
//! its description in one transaction.
use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use catalog_raster::{
    RasterError, RasterInfo,
    cog::{self, CogOptions},
    info,
};
use catalog_shared::{
    datasets::DatasetKind,
    jobs::{IngestOptions, RasterOptions},
};
use gdal::Dataset;
use object_store::{ObjectStoreExt, WriteMultipart, path::Path as ObjectPath};
use tokio::io::AsyncReadExt;
use uuid::Uuid;

use crate::{
    context::{JobContext, JobError},
    load,
    sources::Source,
};

/// What the blocking GDAL work hands back: the file to store and what the
/// record says of it.
struct Prepared {
    file: PathBuf,
    info: RasterInfo,
    extent: [f64; 4],
}

/// What the dataset is called and where it came from.
pub struct Naming<'a> {
    pub title: String,
    pub filename: &'a str,
}

pub async fn ingest(
    ctx: &JobContext,
    source: &Source,
    naming: Naming<'_>,
    options: &IngestOptions,
) -> Result<(), JobError> {
    let workdir = ctx.workdir()?;
    let prepared = prepare(ctx, source, &options.raster, workdir.path()).await?;
    ctx.progress("publishing", None, None).await?;
    let dataset_id = Uuid::now_v7();
    let object = object_of(ctx, dataset_id);
    store(ctx, &prepared.file, &object).await?;
    let published = publish(ctx, dataset_id, &object, &prepared, &naming, source, options).await;
    if published.is_err() {
        let _ = ctx.deps.storage.store.delete(&object).await;
    }
    published
}

/// A reupload of a raster dataset: the new GeoTIFF is checked and stored
/// beside the old file, the record switches to it in one transaction (its
/// data version rolls, so no cached tile of the old file is served again),
/// and then the old file goes.
pub async fn replace(
    ctx: &JobContext,
    dataset_id: Uuid,
    source: &Source,
    filename: &str,
    options: &RasterOptions,
) -> Result<(), JobError> {
    let workdir = ctx.workdir()?;
    let prepared = prepare(ctx, source, options, workdir.path()).await?;
    ctx.progress("publishing", None, None).await?;
    let object = object_of(ctx, dataset_id);
    store(ctx, &prepared.file, &object).await?;
    let switched = switch_file(ctx, dataset_id, &object, &prepared, filename).await;
    match switched {
        Ok(old) => {
            if let Some(old) = old.and_then(|o| ObjectPath::parse(o).ok())
                && let Err(e) = ctx.deps.storage.store.delete(&old).await
            {
                tracing::warn!(job_id = %ctx.job_id, error = %e, "the replaced raster file was not removed");
            }
            Ok(())
        }
        Err(e) => {
            let _ = ctx.deps.storage.store.delete(&object).await;
            Err(e)
        }
    }
}

/// Where a job stores a dataset's raster file: a new name per job, so a
/// replaced file is never overwritten while it is being read.
fn object_of(ctx: &JobContext, dataset_id: Uuid) -> ObjectPath {
    ctx.deps
        .storage
        .raster_folder(dataset_id)
        .join(format!("{}.tif", ctx.job_id))
}

/// Checks the source and, unless it is kept as uploaded, converts it.
async fn prepare(
    ctx: &JobContext,
    source: &Source,
    options: &RasterOptions,
    workdir: &Path,
) -> Result<Prepared, JobError> {
    ctx.progress("validating", None, None).await?;
    let raster = options.clone();
    let (gdal_path, dir) = (source.gdal_path.clone(), workdir.to_path_buf());
    let checked = blocking(move || check(&gdal_path, &dir, &raster)).await?;
    match checked {
        Checked::AsUploaded(prepared) => Ok(*prepared),
        Checked::Convert { overview_share } => convert_reporting(ctx, source, options, workdir, overview_share).await,
    }
}

/// Converts on a blocking thread while the job shows how far GDAL got (in
/// percent): `overviews` while the COG driver builds them, then
/// `converting` while it writes the full-resolution image. A cancelled job
/// stops GDAL at its next report.
async fn convert_reporting(
    ctx: &JobContext,
    source: &Source,
    options: &RasterOptions,
    workdir: &Path,
    overview_share: f64,
) -> Result<Prepared, JobError> {
    let (report, mut reports) = tokio::sync::mpsc::unbounded_channel::<(&'static str, i64)>();
    let stop = Arc::new(AtomicBool::new(false));
    let (raster, gdal_path, dir, stopped) = (
        options.clone(),
        source.gdal_path.clone(),
        workdir.to_path_buf(),
        stop.clone(),
    );
    let work = blocking(move || {
        let mut last = ("", -1);
        convert(&gdal_path, &dir, &raster, &mut |done| {
            let step = if done < overview_share {
                "overviews"
            } else {
                "converting"
            };
            let now = (step, (done * 100.0) as i64);
            if now != last {
                last = now;
                let _ = report.send(now);
            }
            !stopped.load(Ordering::Relaxed)
        })
    });
    tokio::pin!(work);
    let mut shown = ("", -1);
    loop {
        tokio::select! {
            converted = &mut work => return converted,
            Some(mut latest) = reports.recv() => {
                while let Ok(next) = reports.try_recv() {
                    latest = next;
                }
                if latest != shown {
                    shown = latest;
                    if let Err(e) = ctx.progress(latest.0, Some(latest.1), Some(100)).await {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
        }
    }
}

enum Checked {
    /// `strict_cog`: the upload is a valid COG and is stored as it is.
    AsUploaded(Box<Prepared>),
    /// To be written as a COG; the share of the work its overviews take.
    Convert { overview_share: f64 },
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RasterError> + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| JobError::Internal(format!("raster thread: {e}")))?
        .map_err(|e| match e {
            RasterError::Invalid(why) => JobError::Invalid(why),
            RasterError::Gdal(why) => JobError::Invalid(format!("the raster could not be read: {why}")),
        })
}

fn check(gdal_path: &str, dir: &Path, options: &RasterOptions) -> Result<Checked, RasterError> {
    let ds = Dataset::open(gdal_path)
        .map_err(|e| RasterError::Invalid(format!("the file is not a readable GeoTIFF: {e}")))?;
    cog::check_source(&ds, options.srid_override)?;
    if !options.strict_cog {
        let (width, height) = ds.raster_size();
        return Ok(Checked::Convert {
            overview_share: cog::overview_share(width, height),
        });
    }
    drop(ds);
    let file = plain_file(gdal_path, dir)?;
    let problems = cog::cog_problems(&file)?;
    if !problems.is_empty() {
        return Err(RasterError::Invalid(format!(
            "the file is not a valid Cloud-Optimized GeoTIFF (strict_cog): {}",
            problems.join("; ")
        )));
    }
    describe(file, true).map(|prepared| Checked::AsUploaded(Box::new(prepared)))
}

fn convert(
    gdal_path: &str,
    dir: &Path,
    options: &RasterOptions,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Prepared, RasterError> {
    let source = Dataset::open(gdal_path)?;
    let file = dir.join("stored.tif");
    let cog_options = CogOptions {
        compression: options.compression.clone(),
        resampling: options.resampling.clone(),
        nodata: options.nodata_override,
        srid: options.srid_override,
    };
    cog::convert(&source, &file, &cog_options, progress)?;
    let is_cog = cog::cog_problems(&file)?.is_empty();
    describe(file, is_cog)
}

fn describe(file: PathBuf, is_cog: bool) -> Result<Prepared, RasterError> {
    let size = std::fs::metadata(&file)
        .map_err(|e| RasterError::Gdal(e.to_string()))?
        .len();
    let ds = Dataset::open(&file)?;
    let info = info::describe(&ds, size, is_cog)?;
    let extent = info::extent_4326(&ds)?;
    drop(ds);
    Ok(Prepared { file, info, extent })
}

/// The source as a file of its own: a zip member is copied out, so what is
/// stored is its bytes exactly.
fn plain_file(gdal_path: &str, dir: &Path) -> Result<PathBuf, RasterError> {
    if !gdal_path.starts_with("/vsi") {
        return Ok(PathBuf::from(gdal_path));
    }
    let file = dir.join("uploaded.tif");
    let data = read_zip_member(gdal_path)?;
    std::fs::write(&file, data).map_err(|e| RasterError::Gdal(e.to_string()))?;
    Ok(file)
}

/// The bytes of a `/vsizip/<archive>.zip/<member>` source.
fn read_zip_member(gdal_path: &str) -> Result<Vec<u8>, RasterError> {
    use std::io::Read;
    let (zip, member) = gdal_path
        .strip_prefix("/vsizip/")
        .and_then(|rest| {
            rest.split_once(".zip/")
                .map(|(z, m)| (format!("{z}.zip"), m.to_string()))
        })
        .ok_or_else(|| RasterError::Gdal(format!("cannot read {gdal_path}")))?;
    let file = std::fs::File::open(zip).map_err(|e| RasterError::Gdal(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| RasterError::Gdal(e.to_string()))?;
    let mut entry = archive.by_name(&member).map_err(|e| RasterError::Gdal(e.to_string()))?;
    let mut data = Vec::new();
    entry
        .read_to_end(&mut data)
        .map_err(|e| RasterError::Gdal(e.to_string()))?;
    Ok(data)
}

/// Copies the file into the object store in parts.
pub(crate) async fn store(ctx: &JobContext, file: &Path, object: &ObjectPath) -> Result<(), JobError> {
    let mut reader = tokio::fs::File::open(file).await?;
    let upload = ctx.deps.storage.store.put_multipart(object).await?;
    let mut writer = WriteMultipart::new(upload);
    let mut chunk = vec![0u8; 8 << 20];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(e.into());
            }
        };
        writer.write(&chunk[..n]);
    }
    writer.finish().await?;
    Ok(())
}

async fn publish(
    ctx: &JobContext,
    dataset_id: Uuid,
    object: &ObjectPath,
    prepared: &Prepared,
    naming: &Naming<'_>,
    source: &Source,
    options: &IngestOptions,
) -> Result<(), JobError> {
    let mut tx = load::lock_running_job(ctx).await?;
    sqlx::query(include_str!("publish.sql"))
        .bind(dataset_id)
        .bind(&naming.title)
        .bind(&options.summary)
        .bind(prepared.info.srid)
        .bind(prepared.extent.to_vec())
        .bind(options.visibility)
        .bind(&source.label)
        .bind(ctx.job_id)
        .bind(ctx.created_by)
        .bind(sqlx::types::Json(&prepared.info))
        .bind(object.to_string())
        .bind(naming.filename)
        .bind(stored_bytes(&prepared.info))
        .bind(DatasetKind::Raster)
        .execute(&mut *tx)
        .await?;
    load::record_published(&mut tx, ctx, dataset_id).await?;
    tx.commit().await?;
    Ok(())
}

/// What the stored file counts against its owner's quota.
fn stored_bytes(info: &RasterInfo) -> i64 {
    i64::try_from(info.size_bytes).unwrap_or(i64::MAX)
}

/// Points the dataset's record at its new file; answers the old one.
async fn switch_file(
    ctx: &JobContext,
    dataset_id: Uuid,
    object: &ObjectPath,
    prepared: &Prepared,
    filename: &str,
) -> Result<Option<String>, JobError> {
    let mut tx = load::lock_running_job(ctx).await?;
    let old: Option<Option<String>> =
        sqlx::query_scalar("SELECT raster_object FROM datasets WHERE id = $1 AND kind = $2 FOR UPDATE")
            .bind(dataset_id)
            .bind(DatasetKind::Raster)
            .fetch_optional(&mut *tx)
            .await?;
    let old = old.ok_or_else(|| JobError::Invalid("the dataset was deleted while its new file was prepared".into()))?;
    sqlx::query(include_str!("replace.sql"))
        .bind(dataset_id)
        .bind(prepared.info.srid)
        .bind(prepared.extent.to_vec())
        .bind(sqlx::types::Json(&prepared.info))
        .bind(object.to_string())
        .bind(filename)
        .bind(stored_bytes(&prepared.info))
        .execute(&mut *tx)
        .await?;
    load::record_published(&mut tx, ctx, dataset_id).await?;
    tx.commit().await?;
    Ok(old)
}
