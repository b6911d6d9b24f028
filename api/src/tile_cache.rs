//! One byte-bounded cache of encoded tiles (vector, cluster, raster and
//! terrain) per API process. A key names the dataset, its data version
//! (rolled by every write to its data), its publication version (rolled by
//! visibility and publication changes), the route, the tile address and a
//! digest of everything else that shapes the bytes (the SQL that cuts a
//! vector tile, a raster's stored file and query). A cached tile therefore
//! never outlives the data it was cut from: a write makes new keys, and the
//! old entries age out of the least-recently-used end.
//!
//! The same key gives the ETag, so a conditional request is answered 304
//! before any lookup of the tile itself.
use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{
    body::Bytes,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_shared::AppError;
use quick_cache::{Weighter, sync::Cache};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::dataset_record::Dataset;

/// Tiles of a table registered from outside are cut from data the service
/// does not write, so no data version follows it: they stay this long.
const REGISTERED_TABLE_TILE_LIFETIME: Duration = Duration::from_secs(60);
/// The average tile, for sizing the cache's index.
const TYPICAL_TILE_BYTES: u64 = 16 * 1024;

/// The routes whose tiles are cached.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TileRoute {
    Vector,
    Cluster,
    Raster,
    Terrain,
    /// The built-in basemap's tiles (no dataset).
    Basemap,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TileKey {
    dataset: Uuid,
    data_version: i64,
    publication_version: i32,
    route: TileRoute,
    address: (u32, u32, u32),
    /// SHA-256 of the tile's recipe, truncated to 128 bits.
    recipe: [u8; 16],
}

/// The digest of a tile recipe: SHA-256 truncated to 128 bits.
pub fn recipe_digest(recipe: &str) -> [u8; 16] {
    let digest = Sha256::digest(recipe.as_bytes());
    let mut truncated = [0; 16];
    truncated.copy_from_slice(&digest[..16]);
    truncated
}

impl TileKey {
    /// The key of tile `address` of `dataset` on `route`, cut by the recipe
    /// of this digest (everything besides these that changes the bytes).
    pub fn new(dataset: &Dataset, route: TileRoute, address: (u32, u32, u32), recipe: [u8; 16]) -> Self {
        Self {
            dataset: dataset.id,
            data_version: dataset.data_version,
            publication_version: dataset.publication_version,
            route,
            address,
            recipe,
        }
    }

    /// The key of the built-in basemap's tile `address`, cut from the data
    /// and SQL of this digest.
    pub fn basemap(address: (u32, u32, u32), recipe: [u8; 16]) -> Self {
        Self {
            dataset: Uuid::nil(),
            data_version: 0,
            publication_version: 0,
            route: TileRoute::Basemap,
            address,
            recipe,
        }
    }

    /// A weak validator: equal keys give equal tiles up to the order
    /// PostGIS wrote features in.
    fn etag(&self) -> String {
        let mut digest = Sha256::new();
        digest.update(self.dataset.as_bytes());
        digest.update(self.data_version.to_be_bytes());
        digest.update(self.publication_version.to_be_bytes());
        digest.update(format!("{:?}", self.route));
        digest.update(self.address.0.to_be_bytes());
        digest.update(self.address.1.to_be_bytes());
        digest.update(self.address.2.to_be_bytes());
        digest.update(self.recipe);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut etag = String::with_capacity(28);
        etag.push_str("W/\"");
        for byte in &digest.finalize()[..12] {
            etag.push(char::from(HEX[usize::from(byte >> 4)]));
            etag.push(char::from(HEX[usize::from(byte & 15)]));
        }
        etag.push('"');
        etag
    }
}

/// An encoded tile, or an empty one (answered 204).
#[derive(Clone)]
pub struct Tile {
    body: Bytes,
    content_type: Option<&'static str>,
    made: Instant,
}

impl Tile {
    pub fn image(body: impl Into<Bytes>, content_type: &'static str) -> Self {
        let body = body.into();
        if body.is_empty() {
            return Self::empty();
        }
        Self {
            body,
            content_type: Some(content_type),
            made: Instant::now(),
        }
    }

    pub fn empty() -> Self {
        Self {
            body: Bytes::new(),
            content_type: None,
            made: Instant::now(),
        }
    }
}

#[derive(Clone)]
struct TileWeight;

impl Weighter<TileKey, Tile> for TileWeight {
    fn weight(&self, _key: &TileKey, tile: &Tile) -> u64 {
        // The entry's own bookkeeping counts too, so empty tiles are not free.
        tile.body.len() as u64 + 128
    }
}

#[derive(Clone)]
pub struct TileCache {
    tiles: Option<Arc<Cache<TileKey, Tile, TileWeight>>>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    hits: AtomicU64,
    misses: AtomicU64,
    not_modified: AtomicU64,
}

/// What the cache holds and how its lookups went, for the metrics.
pub struct CacheFigures {
    pub hits: u64,
    pub misses: u64,
    pub not_modified: u64,
    pub used_bytes: u64,
    pub capacity_bytes: u64,
}

impl TileCache {
    /// A cache holding up to `bytes` of tiles; none at all for 0.
    pub fn new(bytes: u64) -> Self {
        let tiles = (bytes > 0).then(|| {
            let items = usize::try_from(bytes / TYPICAL_TILE_BYTES)
                .unwrap_or(usize::MAX)
                .max(16);
            Arc::new(Cache::with_weighter(items, bytes, TileWeight))
        });
        Self {
            tiles,
            counts: Default::default(),
        }
    }

    pub fn figures(&self) -> CacheFigures {
        let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CacheFigures {
            hits: count(&self.counts.hits),
            misses: count(&self.counts.misses),
            not_modified: count(&self.counts.not_modified),
            used_bytes: self.tiles.as_ref().map_or(0, |t| t.weight()),
            capacity_bytes: self.tiles.as_ref().map_or(0, |t| t.capacity()),
        }
    }

    /// The tile under `key`, rendered by `render` when no fresh copy is
    /// kept. Concurrent requests for one missing tile render it once.
    ///
    /// `render` makes its future only on a miss, and that future lives on
    /// the heap: a rendering future (a database query, a GDAL read) is tens
    /// of kilobytes, which every request, hit or miss, would otherwise copy
    /// as its handler's future is built and moved.
    async fn get_or_render<F: Future<Output = Result<Tile, AppError>>>(
        &self,
        key: TileKey,
        lifetime: Option<Duration>,
        render: impl FnOnce() -> F,
    ) -> Result<Tile, AppError> {
        let Some(tiles) = &self.tiles else {
            self.counts.misses.fetch_add(1, Ordering::Relaxed);
            return Box::pin(render()).await;
        };
        let fresh = |tile: &Tile| lifetime.is_none_or(|l| tile.made.elapsed() < l);
        let found = tiles.get_value_or_guard_async(&key).await;
        let counter = match &found {
            Ok(tile) if fresh(tile) => &self.counts.hits,
            _ => &self.counts.misses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        match found {
            Ok(tile) if fresh(&tile) => Ok(tile),
            Ok(_) => {
                let tile = Box::pin(render()).await?;
                tiles.insert(key, tile.clone());
                Ok(tile)
            }
            Err(guard) => {
                let tile = Box::pin(render()).await?;
                let _ = guard.insert(tile.clone());
                Ok(tile)
            }
        }
    }

    /// The response for tile `key` of `dataset`: 304 when the request's
    /// `If-None-Match` already names it, else the cached or rendered tile;
    /// `cache_control` is what the access policy lets other caches do
    /// (`access::policy::cache_control`).
    pub async fn respond<F: Future<Output = Result<Tile, AppError>>>(
        &self,
        request: &HeaderMap,
        dataset: &Dataset,
        key: TileKey,
        cache_control: &'static str,
        render: impl FnOnce() -> F,
    ) -> Result<Response, AppError> {
        let lifetime = dataset.is_registered.then_some(REGISTERED_TABLE_TILE_LIFETIME);
        self.respond_with(request, key, (lifetime, cache_control), render).await
    }

    /// The response for tile `key` of data that changes only with its key
    /// and that anyone may read (the built-in basemap's).
    pub async fn respond_unchanging<F: Future<Output = Result<Tile, AppError>>>(
        &self,
        request: &HeaderMap,
        key: TileKey,
        render: impl FnOnce() -> F,
    ) -> Result<Response, AppError> {
        self.respond_with(request, key, (None, "public, max-age=86400"), render)
            .await
    }

    /// `respond`, given how long a cached tile stays fresh here (`None`:
    /// as long as its key lives) and what the answer says to other caches.
    async fn respond_with<F: Future<Output = Result<Tile, AppError>>>(
        &self,
        request: &HeaderMap,
        key: TileKey,
        (lifetime, cache_control): (Option<Duration>, &'static str),
        render: impl FnOnce() -> F,
    ) -> Result<Response, AppError> {
        let etag = key.etag();
        let mut response = if names_etag(request, &etag) {
            self.counts.not_modified.fetch_add(1, Ordering::Relaxed);
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let tile = self.get_or_render(key, lifetime, render).await?;
            match tile.content_type {
                Some(content_type) => (
                    [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
                    tile.body,
                )
                    .into_response(),
                None => StatusCode::NO_CONTENT.into_response(),
            }
        };
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
        if let Ok(etag) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, etag);
        }
        Ok(response)
    }
}

/// Whether `If-None-Match` lists `etag` (weak comparison) or is `*`.
pub(crate) fn names_etag(request: &HeaderMap, etag: &str) -> bool {
    let bare = etag.trim_start_matches("W/");
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_in_lists() {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\", \"abc\""));
        assert!(names_etag(&headers, "W/\"abc\""));
        assert!(!names_etag(&headers, "W/\"abd\""));
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(names_etag(&headers, "W/\"x\""));
        assert!(!names_etag(&HeaderMap::new(), "W/\"x\""));
    }
}
