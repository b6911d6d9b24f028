//! Exports made once: each distinct download (the dataset, its data
//! version, the format, the layer's name and the selection: crs,
//! properties, filter, bbox, ...) is written once, kept in the object store
//! (`exports/<dataset>/`, until `EXPORT_CACHE_DAYS` after it was made, in
//! no quota) and served from there with a strong `ETag` (the key), a
//! `Last-Modified` of when it was made, and byte ranges: a reader that
//! reads in place by ranges (`/vsicurl/`, a cloud reader) pays one export.
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, LazyLock, Mutex},
    time::SystemTime,
};

use catalog_raster::export::ExportFormat;
use catalog_shared::{AppError, storage::Storage};
use object_store::{ObjectStoreExt, WriteMultipart, path::Path as ObjectPath};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::dataset_record::Dataset;

/// One export, by what makes it distinct.
pub(super) struct Key {
    /// Hex of the SHA-256 of what makes it distinct: its strong ETag.
    pub digest: String,
    pub object: ObjectPath,
}

impl Key {
    /// `extra`: what else goes into the file (a GeoPackage's kept styles).
    pub fn of(
        storage: &Storage,
        dataset: &Dataset,
        format: ExportFormat,
        layer: &str,
        selection: &[(String, String)],
        extra: &[&str],
    ) -> Self {
        let mut hash = Sha256::new();
        // Each part ends with a NUL, which no part holds (query values are
        // text, and a NUL in one is refused before a file is written).
        for part in [
            dataset.id.to_string(),
            dataset.data_version.to_string(),
            format.name().to_string(),
            layer.to_string(),
        ] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        for (name, value) in selection {
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(value.as_bytes());
            hash.update([0]);
        }
        hash.update([1]);
        for part in extra {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        let digest: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let object = storage
            .export_folder(dataset.id)
            .join(format!("{digest}.{}", extension(format)));
        Self { digest, object }
    }

    pub fn etag(&self) -> String {
        format!("\"{}\"", self.digest)
    }

    /// Whether an entity tag a client sent names this export (weakly, as
    /// `If-None-Match` and `If-Range` compare: a `W/` prefix matches too).
    pub fn is(&self, tag: &str) -> bool {
        tag.trim().trim_start_matches("W/") == self.etag()
    }
}

fn extension(format: ExportFormat) -> &'static str {
    match format {
        ExportFormat::Shapefile => "zip",
        other => other.name(),
    }
}

/// A kept export: its file on local disk and when it was made.
pub(super) struct Kept {
    pub file: PathBuf,
    pub made: SystemTime,
}

/// The export, if it was made before.
pub(super) async fn find(storage: &Storage, key: &Key) -> Result<Option<Kept>, AppError> {
    match storage.store.head(&key.object).await {
        Ok(meta) => Ok(Some(Kept {
            file: crate::local_copy::local_copy(storage, &key.object).await?,
            made: meta.last_modified.into(),
        })),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(AppError::internal(e)),
    }
}

/// Stores a just-written export under its key; answers it as kept.
pub(super) async fn keep(storage: &Storage, key: &Key, written: &Path) -> Result<Kept, AppError> {
    match storage.local_file(&key.object) {
        // A local store: copied beside its place and linked there, so no
        // reader sees half a file (a rename alone may cross disks), and the
        // first process to finish it wins: a file another one made under
        // the same key is never replaced under its readers.
        Some(place) => {
            let folder = place.parent().expect("an export has a folder");
            tokio::fs::create_dir_all(folder).await.map_err(AppError::internal)?;
            let partial = place.with_extension(format!("part-{}", uuid::Uuid::new_v4().simple()));
            tokio::fs::copy(written, &partial).await.map_err(AppError::internal)?;
            let linked = tokio::fs::hard_link(&partial, &place).await;
            let _ = tokio::fs::remove_file(&partial).await;
            match linked {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(AppError::internal(e)),
            }
        }
        None => {
            upload(storage, &key.object, written).await?;
            crate::local_copy::keep_as_copy(storage, &key.object, written).await?;
        }
    }
    find(storage, key)
        .await?
        .ok_or_else(|| AppError::internal("an export just stored is not in the store"))
}

/// Copies the file into a remote store in parts, a few in flight at a
/// time, so memory stays flat whatever the file's size.
async fn upload(storage: &Storage, object: &ObjectPath, file: &Path) -> Result<(), AppError> {
    let mut reader = tokio::fs::File::open(file).await.map_err(AppError::internal)?;
    let upload = storage.store.put_multipart(object).await.map_err(AppError::internal)?;
    let mut writer = WriteMultipart::new(upload);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let read = match reader.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => writer.wait_for_capacity(2).await.map(|()| n),
            Err(e) => Err(object_store::Error::Generic {
                store: "local file",
                source: Box::new(e),
            }),
        };
        match read {
            Ok(n) => writer.write(&chunk[..n]),
            Err(e) => {
                let _ = writer.abort().await;
                return Err(AppError::internal(e));
            }
        }
    }
    writer.finish().await.map_err(AppError::internal)?;
    Ok(())
}

/// Requests for one export wait for each other here, so that the export is
/// written once by this process however many readers ask at once.
pub(super) async fn one_at_a_time(key: &Key) -> tokio::sync::OwnedMutexGuard<()> {
    static WRITING: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = LazyLock::new(Default::default);
    let lock = {
        let mut writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
        // Forget the locks nobody holds or waits for.
        writing.retain(|_, lock| Arc::strong_count(lock) > 1);
        writing.entry(key.digest.clone()).or_default().clone()
    };
    lock.lock_owned().await
}
