//! Raster tiles of raster datasets: GDAL cuts each tile from the stored
//! COG on a small pool of threads, each keeping its own open handles (a
//! GDAL dataset may not be shared between threads, and opening one per
//! request would cost more than the tile).
use std::{
    collections::HashMap,
    path::{Path as FilePath, PathBuf},
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
};

use axum::{http::HeaderMap, response::Response};
use catalog_raster::{
    RasterError, RasterInfo,
    tile::{self, Colormap, Grid, TerrainEncoding, TileFormat, TileSpec},
};
use catalog_shared::AppError;
use object_store::path::Path as ObjectPath;
use serde::Deserialize;

use super::version::Pinned;
use crate::{
    dataset_record::Dataset,
    state::AppState,
    tile_cache::{Tile, TileKey, TileRoute, recipe_digest},
};

/// Open datasets one thread keeps, at most.
const OPEN_PER_THREAD: usize = 64;
/// GDAL's block cache for the whole process, in MB.
const BLOCK_CACHE_MB: usize = 256;

/// The raster query of a tile route (ignored for vector tiles).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct RasterTileQuery {
    /// Raster: 1 or 3 band indexes, comma separated.
    bidx: Option<String>,
    /// Raster: `min,max` mapped to 0..255.
    rescale: Option<String>,
    /// Raster, one band: viridis, magma, terrain, greys or rdylgn.
    colormap: Option<String>,
    /// Raster: nearest (default), bilinear or cubic.
    resampling: Option<String>,
}

/// The query of a terrain tile.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct TerrainQuery {
    /// 512 (default) or 256 pixels.
    tile_size: Option<String>,
    /// `mapbox` (Terrain-RGB, default) or `terrarium`.
    encoding: Option<String>,
    /// bilinear (default), nearest or cubic.
    resampling: Option<String>,
}

type Work = Box<dyn FnOnce(&mut OpenRasters) + Send>;

struct RasterPool {
    threads: Vec<mpsc::Sender<Work>>,
    next: AtomicUsize,
}

/// One thread's open datasets, by file.
struct OpenRasters {
    open: HashMap<PathBuf, catalog_raster::Dataset>,
}

impl OpenRasters {
    fn get(&mut self, file: &FilePath) -> Result<&catalog_raster::Dataset, RasterError> {
        if !self.open.contains_key(file) {
            if self.open.len() >= OPEN_PER_THREAD {
                self.open.clear();
            }
            self.open.insert(file.to_path_buf(), catalog_raster::open(file)?);
        }
        Ok(&self.open[file])
    }
}

fn pool() -> &'static RasterPool {
    static POOL: OnceLock<RasterPool> = OnceLock::new();
    POOL.get_or_init(|| {
        catalog_raster::configure_for_serving(BLOCK_CACHE_MB);
        let count = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..count)
            .map(|n| {
                let (send, receive) = mpsc::channel::<Work>();
                std::thread::Builder::new()
                    .name(format!("raster-tiles-{n}"))
                    .spawn(move || {
                        let mut open = OpenRasters { open: HashMap::new() };
                        for work in receive {
                            work(&mut open);
                        }
                    })
                    .expect("raster tile thread starts");
                send
            })
            .collect();
        RasterPool {
            threads,
            next: AtomicUsize::new(0),
        }
    })
}

async fn on_pool<T: Send + 'static>(work: impl FnOnce(&mut OpenRasters) -> T + Send + 'static) -> Result<T, AppError> {
    let pool = pool();
    let (send, receive) = tokio::sync::oneshot::channel();
    let thread = pool.next.fetch_add(1, Ordering::Relaxed) % pool.threads.len();
    pool.threads[thread]
        .send(Box::new(move |open| {
            let _ = send.send(work(open));
        }))
        .map_err(|_| AppError::internal("the raster tile threads stopped"))?;
    receive
        .await
        .map_err(|_| AppError::internal("a raster tile thread failed"))
}

/// A tile's format and size from its last path segment: `12.png`,
/// `12@2x.webp`, `12.jpg`.
pub fn image_row(y: &str) -> Option<(&str, TileFormat, usize)> {
    let (row, extension) = y.rsplit_once('.')?;
    let format = TileFormat::from_extension(extension)?;
    Some(match row.strip_suffix("@2x") {
        Some(row) => (row, format, 512),
        None => (row, format, 256),
    })
}

/// Whether the area of tile z/x/y of `grid` meets the raster's extent
/// (`[west, south, east, north]`, west > east across the antimeridian).
fn meets_extent(extent: &[f64], grid: Grid, z: u32, x: u32, y: u32) -> bool {
    let [west, south, east, north] = extent else {
        return true;
    };
    let [tile_west, tile_south, tile_east, tile_north] = grid.lon_lat_bounds(z as u8, x, y);
    let overlaps = |w: f64, e: f64| tile_west <= e && tile_east >= w;
    let across = if west <= east {
        overlaps(*west, *east)
    } else {
        overlaps(*west, 180.0) || overlaps(-180.0, *east)
    };
    across && tile_south <= *north && tile_north >= *south
}

/// The zoom where the raster's tiles stop adding detail, for TileJSON's
/// `maxzoom` (`RasterInfo::native_zoom`).
pub fn native_zoom(dataset: &Dataset) -> u32 {
    match (dataset.raster.as_ref(), dataset.extent_bbox.as_deref()) {
        (Some(info), Some(extent)) => info.0.native_zoom(extent),
        _ => 0,
    }
}

/// One raster tile, or 204 when it lies wholly outside the data.
pub async fn raster_tile(
    state: &AppState,
    request: &HeaderMap,
    dataset: &Dataset,
    (grid, z, x, y): (Grid, u32, u32, u32),
    (format, size): (TileFormat, usize),
    query: &RasterTileQuery,
    pinned: Pinned,
) -> Result<Response, AppError> {
    let info = dataset
        .raster
        .as_ref()
        .map(|r| r.0.clone())
        .ok_or_else(|| AppError::internal("a raster dataset without its description"))?;
    let spec = tile_spec(&info, query, (grid, grid.bounds(z as u8, x, y)), size, format)?;
    let recipe = format!("{:?} {grid:?} {format:?} {size} {query:?}", dataset.raster_object);
    let cut = Cut {
        grid,
        route: TileRoute::Raster,
        address: (z, x, y),
        pinned,
        recipe,
        content_type: format.content_type(),
    };
    serve_cut(state, request, dataset, cut, move |ds| tile::render(ds, &info, &spec)).await
}

/// The raster query a tile template carries (TileJSON's `tiles`): checked
/// as a tile checks it, written back in one order; empty when none is asked.
pub fn template_query(dataset: &Dataset, query: &RasterTileQuery) -> Result<String, AppError> {
    let info = dataset
        .raster
        .as_ref()
        .map(|r| r.0.clone())
        .ok_or_else(|| AppError::internal("a raster dataset without its description"))?;
    let grid = Grid::WebMercator;
    tile_spec(&info, query, (grid, grid.bounds(0, 0, 0)), 256, TileFormat::Png)?;
    let mut pairs = url::form_urlencoded::Serializer::new(String::new());
    let asked = [
        ("bidx", &query.bidx),
        ("rescale", &query.rescale),
        ("colormap", &query.colormap),
        ("resampling", &query.resampling),
    ];
    for (name, value) in asked {
        if let Some(value) = value {
            pairs.append_pair(name, value.trim());
        }
    }
    Ok(pairs.finish())
}

/// Whether a query asks for any raster rendering.
pub fn asks_rendering(query: &RasterTileQuery) -> bool {
    query.bidx.is_some() || query.rescale.is_some() || query.colormap.is_some() || query.resampling.is_some()
}

/// A raster or terrain tile to serve: where, and what shapes its bytes.
struct Cut {
    grid: Grid,
    route: TileRoute,
    address: (u32, u32, u32),
    pinned: Pinned,
    recipe: String,
    content_type: &'static str,
}

/// The tile `render` cuts from the dataset's file on the raster threads,
/// through the tile cache; empty (204) wholly outside the data.
async fn serve_cut(
    state: &AppState,
    request: &HeaderMap,
    dataset: &Dataset,
    cut: Cut,
    render: impl FnOnce(&catalog_raster::Dataset) -> Result<Vec<u8>, RasterError> + Send + 'static,
) -> Result<Response, AppError> {
    let (z, x, y) = cut.address;
    let key = TileKey::new(dataset, cut.route, cut.address, recipe_digest(&cut.recipe));
    state
        .tiles
        .respond(
            request,
            dataset,
            key,
            crate::access::policy::cache_control(dataset, cut.pinned == Pinned::Current),
            move || async move {
                if !dataset
                    .extent_bbox
                    .as_deref()
                    .is_none_or(|e| meets_extent(e, cut.grid, z, x, y))
                {
                    return Ok(Tile::empty());
                }
                let file = raster_file(state, dataset).await?;
                let encoded = on_pool(move |open| render(open.get(&file)?))
                    .await?
                    .map_err(|e| AppError::internal(format!("{:?} tile: {e}", cut.route)))?;
                Ok(Tile::image(encoded, cut.content_type))
            },
        )
        .await
}

/// One terrain tile of a single-band raster, or 204 outside its data.
pub async fn terrain_tile(
    state: &AppState,
    request: &HeaderMap,
    dataset: &Dataset,
    (z, x, y): (u32, u32, u32),
    query: &TerrainQuery,
    pinned: Pinned,
) -> Result<Response, AppError> {
    let single_band = dataset.raster.as_ref().is_some_and(|r| r.0.is_dem());
    if !single_band {
        return Err(AppError::unprocessable(format!(
            "dataset {} is not a single-band raster; terrain tiles encode one band of heights",
            dataset.id
        )));
    }
    let size = match query.tile_size.as_deref() {
        None | Some("512") => 512,
        Some("256") => 256,
        Some(_) => return Err(AppError::bad_request("tile_size must be 256 or 512")),
    };
    let encoding = match query.encoding.as_deref() {
        None | Some("mapbox") => TerrainEncoding::Mapbox,
        Some("terrarium") => TerrainEncoding::Terrarium,
        Some(_) => return Err(AppError::bad_request("encoding must be mapbox or terrarium")),
    };
    let resampling = match query.resampling.as_deref() {
        None | Some("bilinear") => "bilinear",
        Some("nearest") => "near",
        Some("cubic") => "cubic",
        Some(_) => return Err(AppError::bad_request("resampling must be bilinear, nearest or cubic")),
    };
    let recipe = format!("{:?} {size} {encoding:?} {resampling}", dataset.raster_object);
    let cut = Cut {
        grid: Grid::WebMercator,
        route: TileRoute::Terrain,
        address: (z, x, y),
        pinned,
        recipe,
        content_type: "image/png",
    };
    let bounds = tile::tile_bounds(z as u8, x, y);
    serve_cut(state, request, dataset, cut, move |ds| {
        tile::render_terrain(ds, bounds, size, resampling, encoding)
    })
    .await
}

fn tile_spec(
    info: &RasterInfo,
    query: &RasterTileQuery,
    (grid, bounds): (Grid, [f64; 4]),
    size: usize,
    format: TileFormat,
) -> Result<TileSpec, AppError> {
    let bands = match &query.bidx {
        None => info.default_bands(),
        Some(list) => {
            let bands: Option<Vec<usize>> = list.split(',').map(|b| b.trim().parse().ok()).collect();
            match bands {
                Some(b) if matches!(b.len(), 1 | 3) && b.iter().all(|i| (1..=info.band_count).contains(i)) => b,
                _ => {
                    return Err(AppError::bad_request(format!(
                        "bidx must be 1 or 3 band indexes from 1 to {}, comma separated",
                        info.band_count
                    )));
                }
            }
        }
    };
    let rescale = match &query.rescale {
        None => None,
        Some(pair) => {
            // Every item must be a number: one that is not is refused, never
            // skipped (`0,abc,255` is not `0,255`).
            let values: Option<Vec<f64>> = pair.split(',').map(|v| v.trim().parse().ok()).collect();
            match values.as_deref() {
                Some(&[low, high]) if low.is_finite() && high.is_finite() && low < high => Some((low, high)),
                _ => {
                    return Err(AppError::bad_request(
                        "rescale must be two finite numbers, min,max, with min below max",
                    ));
                }
            }
        }
    };
    let colormap =
        match &query.colormap {
            None => None,
            Some(name) => Some(Colormap::from_name(name).ok_or_else(|| {
                AppError::bad_request(format!("colormap must be one of {}", Colormap::NAMES.join(", ")))
            })?),
        };
    if colormap.is_some() && bands.len() != 1 {
        return Err(AppError::bad_request(
            "a colormap colours one band; ask for one with bidx",
        ));
    }
    let resampling = query.resampling.clone().unwrap_or_else(|| "nearest".into());
    if !matches!(resampling.as_str(), "nearest" | "bilinear" | "cubic") {
        return Err(AppError::bad_request("resampling must be nearest, bilinear or cubic"));
    }
    Ok(TileSpec {
        grid,
        bounds,
        size,
        bands,
        rescale,
        colormap,
        resampling: if resampling == "nearest" {
            "near".into()
        } else {
            resampling
        },
        format,
    })
}

/// The raster's file on local disk (`local_copy`).
pub async fn raster_file(state: &AppState, dataset: &Dataset) -> Result<PathBuf, AppError> {
    let key = dataset
        .raster_object
        .as_deref()
        .ok_or_else(|| AppError::internal("a raster dataset without its file"))?;
    crate::local_copy::local_copy(&state.storage, &ObjectPath::from(key)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_rows_name_format_and_size() {
        assert_eq!(image_row("12.png").map(|r| (r.0, r.2)), Some(("12", 256)));
        assert_eq!(image_row("12@2x.webp").map(|r| (r.0, r.2)), Some(("12", 512)));
        assert!(image_row("12.jpg").is_some_and(|r| r.1 == TileFormat::Jpeg));
        assert!(image_row("12.pbf").is_none() && image_row("12").is_none());
    }

    #[test]
    fn tiles_meet_extents_across_the_antimeridian() {
        let luxembourg = [5.74, 49.44, 6.53, 50.19];
        assert!(meets_extent(&luxembourg, Grid::WebMercator, 0, 0, 0));
        assert!(meets_extent(&luxembourg, Grid::WebMercator, 8, 132, 86));
        assert!(!meets_extent(&luxembourg, Grid::WebMercator, 8, 10, 86));
        // On WorldCRS84Quad, zoom 0 has a western and an eastern tile.
        assert!(meets_extent(&luxembourg, Grid::Crs84, 0, 1, 0));
        assert!(!meets_extent(&luxembourg, Grid::Crs84, 0, 0, 0));
        let fiji = [177.0, -19.0, -178.0, -16.0];
        assert!(meets_extent(&fiji, Grid::WebMercator, 4, 0, 8) && meets_extent(&fiji, Grid::WebMercator, 4, 15, 8));
        assert!(!meets_extent(&fiji, Grid::WebMercator, 4, 8, 8));
    }
}
