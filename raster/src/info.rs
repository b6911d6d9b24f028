//! What a raster dataset's record says about its data (`raster` in the
//! record), read from the stored file.
use gdal::{
    Dataset,
    spatial_ref::{AxisMappingStrategy, CoordTransform, SpatialRef},
};
use serde::{Deserialize, Serialize};

use crate::RasterError;

/// Rasters larger than this (pixels per band) get approximate statistics,
/// read from an overview, instead of a pass over every pixel.
const EXACT_STATISTICS_MAX_PIXELS: usize = 25_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RasterInfo {
    pub width: usize,
    pub height: usize,
    pub band_count: usize,
    pub bands: Vec<BandInfo>,
    /// Pixel size in the raster's CRS units, `[x, y]`, both positive.
    pub resolution: [f64; 2],
    /// GDAL's affine geotransform (origin x, pixel width, row rotation,
    /// origin y, column rotation, pixel height), in the raster's CRS; None
    /// in records written before it was kept.
    #[serde(default)]
    pub geotransform: Option<[f64; 6]>,
    /// The CRS's EPSG code; None when it has none.
    pub srid: Option<i32>,
    /// The CRS as WKT2 (2019) when no EPSG code names it, so the record
    /// still says what it is; None when `srid` does (and in records
    /// written before it was kept).
    #[serde(default)]
    pub crs_wkt: Option<String>,
    pub overview_count: usize,
    pub is_cog: bool,
    pub size_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandInfo {
    /// 1-based, as GDAL and the tile routes' `bidx` count.
    pub index: usize,
    /// GDAL's name: Byte, Int16, UInt16, Int32, UInt32, Float32, Float64...
    pub data_type: String,
    pub nodata: Option<f64>,
    /// Over the valid pixels (nodata excluded).
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// GDAL's name: Gray, Red, Green, Blue, Alpha, Palette, Undefined...
    pub color_interpretation: String,
}

impl RasterInfo {
    /// Bands a tile shows by default: red, green, blue when the image has
    /// them, else the first band (a multispectral scene or a stack of
    /// measurements is not a colour image).
    pub fn default_bands(&self) -> Vec<usize> {
        let by_colour = |name: &str| {
            self.bands
                .iter()
                .find(|b| b.color_interpretation == name)
                .map(|b| b.index)
        };
        match (by_colour("Red"), by_colour("Green"), by_colour("Blue")) {
            (Some(r), Some(g), Some(b)) => vec![r, g, b],
            // Three byte bands that say nothing of their colours (and a
            // fourth, their alpha) are an image all the same, as QGIS and
            // titiler read them; more bands are not one.
            _ if matches!(self.bands.len(), 3 | 4)
                && self.bands[..3].iter().all(|b| {
                    b.data_type == "Byte" && matches!(b.color_interpretation.as_str(), "Undefined" | "Gray")
                }) =>
            {
                vec![1, 2, 3]
            }
            _ => vec![1],
        }
    }

    /// Whether the raster holds heights: a single band, the one kind that
    /// terrain tiles encode.
    pub fn is_dem(&self) -> bool {
        self.band_count == 1
    }

    /// The zoom whose Web Mercator pixels (256 px tiles) are about as fine
    /// as the raster's, measured at the middle of its extent (`[west,
    /// south, east, north]`, west > east across the antimeridian): where
    /// its tiles stop adding detail.
    pub fn native_zoom(&self, extent: &[f64]) -> u32 {
        const EQUATOR_METRES_PER_PIXEL_AT_ZOOM_0: f64 = 156_543.033_928;
        let [west, south, east, north] = extent else {
            return 0;
        };
        let width_degrees = if west <= east { east - west } else { east - west + 360.0 };
        let middle = ((south + north) / 2.0).to_radians().cos().max(0.01);
        let metres_per_pixel = width_degrees / self.width as f64 * 111_319.490_8 * middle;
        if metres_per_pixel <= 0.0 || !metres_per_pixel.is_finite() {
            return 0;
        }
        (EQUATOR_METRES_PER_PIXEL_AT_ZOOM_0 * middle / metres_per_pixel)
            .log2()
            .ceil()
            .clamp(0.0, 24.0) as u32
    }

    /// The zoom of OGC's WorldCRS84Quad grid (0.703125° per pixel at zoom
    /// 0, halving with each zoom) whose pixels are as fine as the raster's.
    pub fn native_crs84_zoom(&self, extent: &[f64]) -> u32 {
        let [west, _, east, _] = extent else {
            return 0;
        };
        let width_degrees = if west <= east { east - west } else { east - west + 360.0 };
        let degrees_per_pixel = width_degrees / self.width as f64;
        if degrees_per_pixel <= 0.0 || !degrees_per_pixel.is_finite() {
            return 0;
        }
        (0.703_125 / degrees_per_pixel).log2().ceil().clamp(0.0, 24.0) as u32
    }
}

/// Describes a stored raster.
pub fn describe(ds: &Dataset, size_bytes: u64, is_cog: bool) -> Result<RasterInfo, RasterError> {
    let (width, height) = ds.raster_size();
    let approx = width.saturating_mul(height) > EXACT_STATISTICS_MAX_PIXELS;
    let mut bands = Vec::new();
    for index in 1..=ds.raster_count() {
        let band = ds.rasterband(index)?;
        // A band with no valid pixel has no statistics.
        let (min, max) = match band.compute_raster_min_max(approx) {
            Ok(stats) if stats.min.is_finite() && stats.max.is_finite() => (Some(stats.min), Some(stats.max)),
            _ => (None, None),
        };
        bands.push(BandInfo {
            index,
            data_type: band.band_type().name(),
            nodata: band.no_data_value().filter(|v| v.is_finite()),
            min,
            max,
            color_interpretation: band.color_interpretation().name(),
        });
    }
    let gt = ds.geo_transform()?;
    let overview_count = ds.rasterband(1)?.overview_count()?.max(0) as usize;
    let srs = ds.spatial_ref().ok();
    let srid = srs.as_ref().and_then(epsg_code);
    Ok(RasterInfo {
        width,
        height,
        band_count: bands.len(),
        bands,
        resolution: [gt[1].abs(), gt[5].abs()],
        geotransform: Some(gt),
        srid,
        crs_wkt: srs.filter(|_| srid.is_none()).map(|srs| wkt2(&srs)).transpose()?,
        overview_count,
        is_cog,
        size_bytes,
    })
}

/// WKT2 (2019), which, unlike GDAL's default WKT1, holds every CRS PROJ
/// knows.
fn wkt2(srs: &SpatialRef) -> Result<String, RasterError> {
    gdal::config::set_thread_local_config_option("OSR_WKT_FORMAT", "WKT2_2019")?;
    let wkt = srs.to_wkt();
    gdal::config::clear_thread_local_config_option("OSR_WKT_FORMAT")?;
    Ok(wkt?)
}

fn epsg_code(srs: &SpatialRef) -> Option<i32> {
    match srs.auth_name() {
        Some(name) if name.eq_ignore_ascii_case("EPSG") => srs.auth_code().ok(),
        _ => None,
    }
}

/// The raster's extent in EPSG:4326, `[west, south, east, north]`; west
/// is greater than east when it crosses the antimeridian (RFC 7946).
pub fn extent_4326(ds: &Dataset) -> Result<[f64; 4], RasterError> {
    let gt = ds.geo_transform()?;
    let (width, height) = ds.raster_size();
    let (x0, x1) = (gt[0], gt[0] + gt[1] * width as f64);
    let (y0, y1) = (gt[3], gt[3] + gt[5] * height as f64);
    let bounds = [x0.min(x1), y0.min(y1), x0.max(x1), y0.max(y1)];
    let mut source = ds.spatial_ref()?;
    source.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    let mut wgs84 = SpatialRef::from_epsg(4326)?;
    wgs84.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    let [mut west, south, mut east, north] = CoordTransform::new(&source, &wgs84)?.transform_bounds(&bounds, 21)?;
    // Sources in 0..360 longitudes.
    if west > 180.0 {
        west -= 360.0;
    }
    if east > 180.0 {
        east -= 360.0;
    }
    if west < -180.0 {
        west += 360.0;
    }
    Ok([west, south.max(-90.0), east, north.min(90.0)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(bands: &[(&str, &str)]) -> RasterInfo {
        RasterInfo {
            width: 1,
            height: 1,
            band_count: bands.len(),
            bands: bands
                .iter()
                .enumerate()
                .map(|(i, (data_type, colour))| BandInfo {
                    index: i + 1,
                    data_type: (*data_type).into(),
                    nodata: None,
                    min: None,
                    max: None,
                    color_interpretation: (*colour).into(),
                })
                .collect(),
            resolution: [1.0, 1.0],
            geotransform: None,
            srid: None,
            crs_wkt: None,
            overview_count: 0,
            is_cog: true,
            size_bytes: 0,
        }
    }

    #[test]
    fn images_show_their_colour_bands_and_the_rest_their_first_band() {
        let rgb = info(&[("Byte", "Blue"), ("Byte", "Green"), ("Byte", "Red")]);
        assert_eq!(rgb.default_bands(), [3, 2, 1]);
        let unlabelled = info(&[
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
        ]);
        assert_eq!(unlabelled.default_bands(), [1, 2, 3]);
        let heights = info(&[("Float32", "Gray"), ("Float32", "Undefined"), ("Float32", "Undefined")]);
        assert_eq!(heights.default_bands(), [1]);
        assert_eq!(info(&[("Byte", "Gray"), ("Byte", "Undefined")]).default_bands(), [1]);
        let scene = info(&[
            ("Byte", "Gray"),
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
            ("Byte", "Undefined"),
        ]);
        assert_eq!(scene.default_bands(), [1], "five bands are not an RGB(A) image");
    }

    #[test]
    fn tiles_stop_adding_detail_at_the_rasters_own_resolution() {
        // 95 pixels over 0.79° at 50°N: about 600 m a pixel, zoom 8's 610 m.
        let dem = RasterInfo {
            width: 95,
            ..info(&[("Int16", "Gray")])
        };
        assert_eq!(dem.native_zoom(&[5.74, 49.44, 6.53, 50.19]), 8);
        // The same width of data across 180° is as fine.
        assert_eq!(dem.native_zoom(&[179.6, 49.44, -179.61, 50.19]), 8);
        let world = RasterInfo {
            width: 256,
            ..dem.clone()
        };
        assert_eq!(world.native_zoom(&[-180.0, -85.0, 180.0, 85.0]), 0);
        assert_eq!(dem.native_zoom(&[]), 0);
    }
}
