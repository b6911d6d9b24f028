//! The object store holding uploads: a local directory by default, any
//! S3-compatible store through `STORAGE_URL=s3://bucket/prefix`.
use std::{path::PathBuf, sync::Arc};

use object_store::{ObjectStore, ObjectStoreExt, path::Path};
use url::Url;

pub type Store = Arc<dyn ObjectStore>;

/// The object store with the prefix every key lives under and, for a local
/// directory, its root (GDAL then reads sources in place).
#[derive(Clone, Debug)]
pub struct Storage {
    pub store: Store,
    pub prefix: Path,
    local_root: Option<PathBuf>,
}

impl Storage {
    pub fn open(storage_url: &str) -> anyhow::Result<Self> {
        let url =
            Url::parse(storage_url).map_err(|e| anyhow::anyhow!("STORAGE_URL {storage_url:?} is not a URL: {e}"))?;
        if url.scheme() == "file" {
            let dir = url
                .to_file_path()
                .map_err(|_| anyhow::anyhow!("STORAGE_URL {storage_url:?} is not a local path"))?;
            std::fs::create_dir_all(&dir)?;
            // Deleting an object removes folders it leaves empty, so swept
            // uploads leave no directories behind.
            let store = object_store::local::LocalFileSystem::new_with_prefix(&dir)?.with_automatic_cleanup(true);
            return Ok(Self {
                store: Arc::new(store),
                prefix: Path::default(),
                local_root: Some(dir),
            });
        }
        let options: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("AWS_"))
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        crate::outbound::install_tls_provider();
        let (store, prefix) = object_store::parse_url_opts(&url, options)?;
        Ok(Self {
            store: Arc::from(store),
            prefix,
            local_root: None,
        })
    }

    /// Where the source file of a job is kept.
    pub fn upload_path(&self, job_id: uuid::Uuid, filename: &str) -> Path {
        self.upload_folder(job_id).join(filename)
    }

    /// Where everything a job was given is kept.
    pub fn upload_folder(&self, job_id: uuid::Uuid) -> Path {
        self.prefix.clone().join("uploads").join(job_id.to_string())
    }

    /// Where a raster dataset's files are kept (one per job that stored one).
    pub fn raster_folder(&self, dataset_id: uuid::Uuid) -> Path {
        self.prefix.clone().join("rasters").join(dataset_id.to_string())
    }

    /// Where a cold dataset's archives are kept (one per archiving job).
    pub fn archive_folder(&self, dataset_id: uuid::Uuid) -> Path {
        self.prefix.clone().join("archives").join(dataset_id.to_string())
    }

    /// Where the exports (downloads) made of every dataset are kept.
    pub fn exports_root(&self) -> Path {
        self.prefix.clone().join("exports")
    }

    /// Where a dataset's exports are kept, one per data version and
    /// request, until `EXPORT_CACHE_DAYS` after they were made.
    pub fn export_folder(&self, dataset_id: uuid::Uuid) -> Path {
        self.exports_root().join(dataset_id.to_string())
    }

    /// The PMTiles archive of a dataset's vector tiles at a data version
    /// (among its exports, so it goes with them after `EXPORT_CACHE_DAYS`).
    pub fn tile_archive(&self, dataset_id: uuid::Uuid, data_version: i64) -> Path {
        self.export_folder(dataset_id)
            .join(format!("tiles-v{data_version}.pmtiles"))
    }

    /// Every folder holding objects a dataset owns: deleting the dataset
    /// empties them all.
    pub fn dataset_folders(&self, dataset_id: uuid::Uuid) -> [Path; 3] {
        [
            self.raster_folder(dataset_id),
            self.archive_folder(dataset_id),
            self.export_folder(dataset_id),
        ]
    }

    /// Deletes every object under `folder`; answers how many there were.
    pub async fn delete_folder(&self, folder: &Path) -> object_store::Result<u64> {
        use futures::TryStreamExt;
        let objects: Vec<Path> = self
            .store
            .list(Some(folder))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await?;
        for object in &objects {
            self.store.delete(object).await?;
        }
        Ok(objects.len() as u64)
    }

    /// The object's file on local disk, when the store is a local directory.
    pub fn local_file(&self, object: &Path) -> Option<PathBuf> {
        let root = self.local_root.as_ref()?;
        Some(object.parts().fold(root.clone(), |path, part| path.join(part.as_ref())))
    }

    /// Removes a local folder left empty by a write that never completed
    /// (its file is gone, so no delete cleans it up), and the folders above
    /// it that this leaves empty; a no-op elsewhere.
    pub fn remove_empty_folder(&self, folder: &Path) {
        let (Some(root), Some(mut dir)) = (self.local_root.as_deref(), self.local_file(folder)) else {
            return;
        };
        while dir.starts_with(root) && dir != root && std::fs::remove_dir(&dir).is_ok() {
            dir.pop();
        }
    }

    /// Round trip to the store, for readiness checks.
    pub async fn ping(&self) -> object_store::Result<()> {
        match self.store.head(&self.prefix.clone().join(".ready-probe")).await {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Whether an error (or one of its causes) is a write refused for want of
/// space, a full disk or a quota, which waiting alone will not cure.
pub fn is_out_of_space(error: &(dyn std::error::Error + 'static)) -> bool {
    has_io_kind(
        error,
        &[std::io::ErrorKind::StorageFull, std::io::ErrorKind::QuotaExceeded],
    )
}

/// Whether the store (or the local disk) refuses this service access:
/// permission denied, a read-only file system, or credentials the store
/// rejects. Like a full store, it lasts until an operator acts.
pub fn is_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        error.downcast_ref::<object_store::Error>(),
        Some(object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. })
    ) || has_io_kind(
        error,
        &[
            std::io::ErrorKind::PermissionDenied,
            std::io::ErrorKind::ReadOnlyFilesystem,
        ],
    )
}

/// Whether an error or one of its causes is an I/O error of one of `kinds`.
fn has_io_kind(error: &(dyn std::error::Error + 'static), kinds: &[std::io::ErrorKind]) -> bool {
    let mut source = Some(error);
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && kinds.contains(&io.kind())
        {
            return true;
        }
        source = error.source();
    }
    false
}

/// A file name that is safe as one object-store path segment and on local
/// disk: no directories, no control characters, a bounded length.
pub fn safe_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    let mut out: String = if cleaned.is_empty() {
        "upload".into()
    } else {
        cleaned.into()
    };
    if out.len() > 200 {
        let ext = out.rsplit_once('.').map(|(_, e)| e.to_string()).unwrap_or_default();
        out = format!("{}.{ext}", &out.chars().take(150).collect::<String>());
    }
    out
}
