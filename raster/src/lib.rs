//! Raster work on GDAL, shared by the workers (checking a GeoTIFF,
//! converting it to a Cloud-Optimized GeoTIFF, describing it) and the API
//! (cutting Web Mercator tiles from it, drawing a dataset's picture), and what the API asks PROJ about
//! coordinate reference systems (`crs`). GDAL datasets are `Send` but not
//! `Sync`: callers keep one open handle per thread.
pub mod cog;
pub mod crs;
pub mod export;
mod ffi;
pub mod info;
pub mod picture;
pub mod tile;

pub use info::{BandInfo, RasterInfo};

/// A GDAL failure, with GDAL's own message.
#[derive(Debug, thiserror::Error)]
pub enum RasterError {
    /// What the file or the request is wrong about; said to the user.
    #[error("{0}")]
    Invalid(String),
    #[error("GDAL: {0}")]
    Gdal(String),
}

impl From<gdal::errors::GdalError> for RasterError {
    fn from(e: gdal::errors::GdalError) -> Self {
        RasterError::Gdal(e.to_string())
    }
}

pub use gdal::Dataset;

/// Opens a raster file (read-only).
pub fn open(path: &std::path::Path) -> Result<Dataset, RasterError> {
    Ok(Dataset::open(path)?)
}

/// Sets GDAL's process-wide options for serving tiles; call before the
/// first dataset opens. `cache_mb`: the block cache for all threads.
pub fn configure_for_serving(cache_mb: usize) {
    for (key, value) in [
        ("GDAL_CACHEMAX", cache_mb.to_string()),
        // No .aux.xml files beside stored rasters.
        ("GDAL_PAM_ENABLED", "NO".to_string()),
        ("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR".to_string()),
    ] {
        // Only fails on a NUL in the strings above.
        let _ = gdal::config::set_config_option(key, &value);
    }
}
