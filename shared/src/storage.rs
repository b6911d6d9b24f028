//! The object store holding uploads: a local directory by default, any
//! S3-compatible store through `STORAGE_URL=s3://bucket/prefix`.
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt, path::Path};
use url::Url;

pub type Store = Arc<dyn ObjectStore>;

pub fn open(storage_url: &str) -> anyhow::Result<(Store, Path)> {
    let url = Url::parse(storage_url).map_err(|e| anyhow::anyhow!("STORAGE_URL {storage_url:?} is not a URL: {e}"))?;
    if url.scheme() == "file" {
        let dir = url
            .to_file_path()
            .map_err(|_| anyhow::anyhow!("STORAGE_URL {storage_url:?} is not a local path"))?;
        std::fs::create_dir_all(&dir)?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(&dir)?;
        return Ok((Arc::new(store), Path::default()));
    }
    let options: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let (store, prefix) = object_store::parse_url_opts(&url, options)?;
    Ok((Arc::from(store), prefix))
}

/// Where the source file of a job is kept.
pub fn upload_path(prefix: &Path, job_id: uuid::Uuid, filename: &str) -> Path {
    prefix.clone().join("uploads").join(job_id.to_string()).join(filename)
}

/// Round trip to the store, for readiness checks.
pub async fn ping(store: &Store, prefix: &Path) -> object_store::Result<()> {
    match store.head(&prefix.clone().join(".ready-probe")).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
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
