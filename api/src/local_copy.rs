//! Objects of the store as files on local disk, for what reads files by
//! path and by range (GDAL, `ServeFile`): the object itself in a local
//! store, else a copy fetched once into this process's cache directory.
use std::path::{Path, PathBuf};

use catalog_shared::{AppError, storage::Storage};
use futures::StreamExt;
use object_store::{ObjectStoreExt, path::Path as ObjectPath};
use tokio::io::AsyncWriteExt;

/// Where this process keeps its copy of an object of a remote store.
fn cached_path(object: &ObjectPath) -> PathBuf {
    std::env::temp_dir()
        .join("catalog-store-cache")
        .join(object.as_ref().replace('/', "_"))
}

/// The object as a local file, fetched once when the store is remote.
pub async fn local_copy(storage: &Storage, object: &ObjectPath) -> Result<PathBuf, AppError> {
    if let Some(path) = storage.local_file(object) {
        return Ok(path);
    }
    let cached = cached_path(object);
    if tokio::fs::try_exists(&cached).await.unwrap_or(false) {
        return Ok(cached);
    }
    let partial = partial_beside(&cached).await?;
    let mut file = tokio::fs::File::create(&partial).await.map_err(AppError::internal)?;
    let mut stream = storage
        .store
        .get(object)
        .await
        .map_err(AppError::internal)?
        .into_stream();
    while let Some(bytes) = stream.next().await {
        file.write_all(&bytes.map_err(AppError::internal)?)
            .await
            .map_err(AppError::internal)?;
    }
    file.flush().await.map_err(AppError::internal)?;
    tokio::fs::rename(&partial, &cached).await.map_err(AppError::internal)?;
    Ok(cached)
}

/// Keeps `file`, just written to the store as `object`, as this process's
/// copy of it (a remote store), so its first reader does not fetch it back.
pub async fn keep_as_copy(storage: &Storage, object: &ObjectPath, file: &Path) -> Result<PathBuf, AppError> {
    if let Some(path) = storage.local_file(object) {
        return Ok(path);
    }
    let cached = cached_path(object);
    let partial = partial_beside(&cached).await?;
    // A copy, not a rename: `file`'s folder may be on another disk.
    tokio::fs::copy(file, &partial).await.map_err(AppError::internal)?;
    tokio::fs::rename(&partial, &cached).await.map_err(AppError::internal)?;
    Ok(cached)
}

/// A fresh name beside `cached`, its folder made: written aside and
/// renamed, so a reader never opens half a file.
async fn partial_beside(cached: &Path) -> Result<PathBuf, AppError> {
    tokio::fs::create_dir_all(cached.parent().expect("cache file has a folder"))
        .await
        .map_err(AppError::internal)?;
    Ok(cached.with_extension(format!("part-{}", uuid::Uuid::new_v4().simple())))
}
