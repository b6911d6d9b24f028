//! One Web Mercator tile of a raster: GDAL warps the tile's window from
//! the overview that fits (its `-ovr AUTO`), with the chosen resampling;
//! the bands are rescaled or coloured into RGBA, nodata and the area
//! outside the data transparent, and encoded by GDAL's PNG, WebP or JPEG
//! driver.
use std::sync::atomic::{AtomicU64, Ordering};

use gdal::{Dataset, DriverManager, raster::Buffer};

use crate::{RasterError, RasterInfo, ffi};

/// Half the width of the Web Mercator square, in metres.
const HALF_WORLD: f64 = 20_037_508.342_789_244;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileFormat {
    Png,
    Webp,
    Jpeg,
}

impl TileFormat {
    pub fn from_extension(ext: &str) -> Option<Self> {
        match ext {
            "png" => Some(TileFormat::Png),
            "webp" => Some(TileFormat::Webp),
            "jpg" | "jpeg" => Some(TileFormat::Jpeg),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            TileFormat::Png => "image/png",
            TileFormat::Webp => "image/webp",
            TileFormat::Jpeg => "image/jpeg",
        }
    }

    fn driver(self) -> (&'static str, &'static str, &'static [&'static str]) {
        match self {
            // Fast deflate: a tile is encoded once and then cached; level 6
            // took most of a tile's time for about 15% fewer bytes.
            TileFormat::Png => ("PNG", "png", &["ZLEVEL=1"]),
            TileFormat::Webp => ("WEBP", "webp", &["QUALITY=85"]),
            TileFormat::Jpeg => ("JPEG", "jpg", &["QUALITY=85"]),
        }
    }
}

/// Colour ramps for a single band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colormap {
    Viridis,
    Magma,
    Terrain,
    Greys,
    RdYlGn,
}

impl Colormap {
    pub const NAMES: [&'static str; 5] = ["viridis", "magma", "terrain", "greys", "rdylgn"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "viridis" => Some(Colormap::Viridis),
            "magma" => Some(Colormap::Magma),
            "terrain" => Some(Colormap::Terrain),
            "greys" => Some(Colormap::Greys),
            "rdylgn" => Some(Colormap::RdYlGn),
            _ => None,
        }
    }

    /// Evenly spaced stops of the ramp (matplotlib's, sampled).
    fn stops(self) -> &'static [[u8; 3]] {
        match self {
            Colormap::Viridis => &[
                [68, 1, 84],
                [59, 82, 139],
                [33, 145, 140],
                [94, 201, 98],
                [253, 231, 37],
            ],
            Colormap::Magma => &[
                [0, 0, 4],
                [81, 18, 124],
                [183, 55, 121],
                [252, 137, 97],
                [252, 253, 191],
            ],
            Colormap::Terrain => &[
                [51, 51, 153],
                [0, 153, 255],
                [0, 204, 102],
                [255, 255, 153],
                [128, 92, 84],
                [255, 255, 255],
            ],
            Colormap::Greys => &[[255, 255, 255], [0, 0, 0]],
            Colormap::RdYlGn => &[
                [165, 0, 38],
                [244, 109, 67],
                [254, 224, 139],
                [217, 239, 139],
                [102, 189, 99],
                [0, 104, 55],
            ],
        }
    }

    /// The colour at `t` in 0..=1.
    fn at(self, t: f64) -> [u8; 3] {
        let stops = self.stops();
        let scaled = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
        let i = (scaled.floor() as usize).min(stops.len() - 2);
        let f = scaled - i as f64;
        let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
        [
            mix(stops[i][0], stops[i + 1][0]),
            mix(stops[i][1], stops[i + 1][1]),
            mix(stops[i][2], stops[i + 1][2]),
        ]
    }
}

/// The tile grids tiles are cut on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Grid {
    /// Web Mercator (EPSG:3857), one tile at zoom 0: XYZ and OGC's
    /// WebMercatorQuad.
    WebMercator,
    /// Longitude and latitude (CRS84), two tiles side by side at zoom 0:
    /// OGC's WorldCRS84Quad.
    Crs84,
}

impl Grid {
    /// The CRS the grid's bounds are in, as gdalwarp takes it.
    fn srs(self) -> &'static str {
        match self {
            Grid::WebMercator => "EPSG:3857",
            Grid::Crs84 => "OGC:CRS84",
        }
    }

    /// Tile columns at zoom `z` (rows are `1 << z` on both).
    pub fn columns(self, z: u32) -> u64 {
        match self {
            Grid::WebMercator => 1 << z,
            Grid::Crs84 => 2 << z,
        }
    }

    /// The bounds of tile z/x/y, `[xmin, ymin, xmax, ymax]` in the grid's CRS.
    pub fn bounds(self, z: u8, x: u32, y: u32) -> [f64; 4] {
        match self {
            Grid::WebMercator => tile_bounds(z, x, y),
            Grid::Crs84 => {
                let span = 180.0 / f64::from(1u32 << z);
                let west = -180.0 + f64::from(x) * span;
                let north = 90.0 - f64::from(y) * span;
                [west, north - span, west + span, north]
            }
        }
    }

    /// The bounds of tile z/x/y in longitude and latitude.
    pub fn lon_lat_bounds(self, z: u8, x: u32, y: u32) -> [f64; 4] {
        match self {
            Grid::Crs84 => self.bounds(z, x, y),
            Grid::WebMercator => {
                let [xmin, ymin, xmax, ymax] = tile_bounds(z, x, y);
                let lon = |x: f64| x / HALF_WORLD * 180.0;
                let lat = |y: f64| (y / HALF_WORLD * std::f64::consts::PI).sinh().atan().to_degrees();
                [lon(xmin), lat(ymin), lon(xmax), lat(ymax)]
            }
        }
    }
}

/// What to draw.
#[derive(Clone, Debug)]
pub struct TileSpec {
    pub grid: Grid,
    /// `[xmin, ymin, xmax, ymax]` in the grid's CRS.
    pub bounds: [f64; 4],
    /// Pixels per side (256, or 512 for `@2x`).
    pub size: usize,
    /// 1 or 3 band indexes (1-based).
    pub bands: Vec<usize>,
    pub rescale: Option<(f64, f64)>,
    pub colormap: Option<Colormap>,
    /// `nearest`, `bilinear` or `cubic`.
    pub resampling: String,
    pub format: TileFormat,
}

/// How heights become colours in a terrain tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerrainEncoding {
    /// Mapbox Terrain-RGB: height = -10000 + (R * 65536 + G * 256 + B) * 0.1.
    Mapbox,
    /// Terrarium: height = (R * 256 + G + B / 256) - 32768.
    Terrarium,
}

impl TerrainEncoding {
    fn encode(self, height: f64) -> [u8; 4] {
        match self {
            TerrainEncoding::Mapbox => {
                let v = ((height + 10_000.0) * 10.0).round().clamp(0.0, 16_777_215.0) as u32;
                [(v >> 16) as u8, (v >> 8) as u8, v as u8, 255]
            }
            TerrainEncoding::Terrarium => {
                let v = (height + 32_768.0).clamp(0.0, 65_535.996);
                let whole = v.floor();
                [
                    (whole / 256.0) as u8,
                    (whole as u32 % 256) as u8,
                    ((v - whole) * 256.0) as u8,
                    255,
                ]
            }
        }
    }
}

/// A terrain tile of a single-band raster: heights in PNG colours, nodata
/// and the area outside the data as 0 m.
pub fn render_terrain(
    ds: &Dataset,
    bounds: [f64; 4],
    size: usize,
    resampling: &str,
    encoding: TerrainEncoding,
) -> Result<Vec<u8>, RasterError> {
    let warped = ffi::warp(ds, &warp_args(bounds, size, resampling))?;
    let read = |index: usize| -> Result<Vec<f64>, RasterError> {
        let band = warped.rasterband(index)?;
        let buffer = band.read_as::<f64>((0, 0), (size, size), (size, size), None)?;
        Ok(buffer.into_shape_and_vec().1)
    };
    let heights = read(1)?;
    let alpha = read(2)?;
    let rgba: Vec<[u8; 4]> = heights
        .iter()
        .zip(&alpha)
        .map(|(h, a)| encoding.encode(if *a > 0.0 && h.is_finite() { *h } else { 0.0 }))
        .collect();
    encode(&rgba, (size, size), TileFormat::Png)
}

fn warp_args(bounds: [f64; 4], size: usize, resampling: &str) -> Vec<String> {
    let [xmin, ymin, xmax, ymax] = bounds;
    let size = size.to_string();
    let mut args: Vec<String> = vec!["-t_srs".into(), "EPSG:3857".into(), "-te".into()];
    args.extend([xmin, ymin, xmax, ymax].map(|v| v.to_string()));
    args.extend(["-ts".into(), size.clone(), size, "-r".into(), resampling.to_string()]);
    args.extend(["-dstalpha", "-nomd", "-wo", "NUM_THREADS=1"].map(String::from));
    args
}

/// The EPSG:3857 bounds of tile z/x/y.
pub fn tile_bounds(z: u8, x: u32, y: u32) -> [f64; 4] {
    let span = 2.0 * HALF_WORLD / f64::from(1u32 << z);
    let xmin = -HALF_WORLD + f64::from(x) * span;
    let ymax = HALF_WORLD - f64::from(y) * span;
    [xmin, ymax - span, xmin + span, ymax]
}

/// The encoded tile.
pub fn render(ds: &Dataset, info: &RasterInfo, spec: &TileSpec) -> Result<Vec<u8>, RasterError> {
    let [xmin, ymin, xmax, ymax] = spec.bounds;
    let size = spec.size.to_string();
    let mut args: Vec<String> = vec!["-t_srs".into(), spec.grid.srs().into(), "-te".into()];
    args.extend([xmin, ymin, xmax, ymax].map(|v| v.to_string()));
    args.extend(["-ts".into(), size.clone(), size, "-r".into(), spec.resampling.clone()]);
    args.extend(["-dstalpha", "-nomd", "-wo", "NUM_THREADS=1"].map(String::from));
    let warped = ffi::warp(ds, &args)?;
    let pixels = spec.size * spec.size;
    let read = |index: usize| -> Result<Vec<f64>, RasterError> {
        let band = warped.rasterband(index)?;
        let buffer = band.read_as::<f64>((0, 0), (spec.size, spec.size), (spec.size, spec.size), None)?;
        Ok(buffer.into_shape_and_vec().1)
    };
    let alpha = read(info.band_count + 1)?;
    let mut rgba = vec![[0u8; 4]; pixels];
    if let [band] = spec.bands[..] {
        let values = read(band)?;
        let palette = palette_of(ds, band)?;
        let (low, high) = spec.rescale.unwrap_or_else(|| default_range(info, band));
        for (i, value) in values.iter().enumerate() {
            if alpha[i] <= 0.0 || value.is_nan() {
                continue;
            }
            rgba[i] = match &palette {
                Some(colours) => colours.get(*value as usize).copied().unwrap_or([0; 4]),
                None => {
                    let t = if high > low { (value - low) / (high - low) } else { 0.0 };
                    let [r, g, b] = match spec.colormap {
                        Some(map) => map.at(t),
                        None => [byte(t); 3],
                    };
                    [r, g, b, 255]
                }
            };
        }
    } else {
        let mut channels = Vec::new();
        for &band in &spec.bands {
            channels.push((read(band)?, spec.rescale.unwrap_or_else(|| default_range(info, band))));
        }
        for i in 0..pixels {
            if alpha[i] <= 0.0 {
                continue;
            }
            let mut pixel = [0, 0, 0, 255];
            for (c, (values, (low, high))) in channels.iter().enumerate() {
                if values[i].is_nan() {
                    pixel[3] = 0;
                }
                pixel[c] = if high > low {
                    byte((values[i] - low) / (high - low))
                } else {
                    0
                };
            }
            rgba[i] = pixel;
        }
    }
    encode(&rgba, (spec.size, spec.size), spec.format)
}

fn byte(t: f64) -> u8 {
    (t.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// The band's statistics, or 0..255 for bytes (and when it has none).
fn default_range(info: &RasterInfo, band: usize) -> (f64, f64) {
    match info.bands.get(band - 1) {
        Some(b) if b.data_type != "Byte" => match (b.min, b.max) {
            (Some(min), Some(max)) => (min, max),
            _ => (0.0, 255.0),
        },
        _ => (0.0, 255.0),
    }
}

/// The band's own colour table, as RGBA by value.
fn palette_of(ds: &Dataset, band: usize) -> Result<Option<Vec<[u8; 4]>>, RasterError> {
    let source = ds.rasterband(band)?;
    let Some(table) = source.color_table() else {
        return Ok(None);
    };
    let clamp = |v: i16| v.clamp(0, 255) as u8;
    Ok(Some(
        (0..table.entry_count())
            .map(|i| {
                table
                    .entry_as_rgb(i)
                    .map_or([0; 4], |e| [clamp(e.r), clamp(e.g), clamp(e.b), clamp(e.a)])
            })
            .collect(),
    ))
}

/// Encodes RGBA pixels (JPEG drops alpha; transparent pixels are black).
pub(crate) fn encode(rgba: &[[u8; 4]], size: (usize, usize), format: TileFormat) -> Result<Vec<u8>, RasterError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let (driver, extension, options) = format.driver();
    let channels = if format == TileFormat::Jpeg { 3 } else { 4 };
    let mem = DriverManager::get_driver_by_name("MEM")?;
    let image = mem.create_with_band_type::<u8, _>("", size.0, size.1, channels)?;
    for c in 0..channels {
        let data: Vec<u8> = rgba.iter().map(|p| if p[3] == 0 && c < 3 { 0 } else { p[c] }).collect();
        image
            .rasterband(c + 1)?
            .write((0, 0), size, &mut Buffer::new(size, data))?;
    }
    let path = format!("/vsimem/tile-{}.{extension}", NEXT.fetch_add(1, Ordering::Relaxed));
    let encoder = DriverManager::get_driver_by_name(driver)?;
    let options = gdal::cpl::CslStringList::from_iter(options.iter().copied());
    drop(image.create_copy(&encoder, &path, &options)?);
    Ok(gdal::vsi::get_vsi_mem_file_bytes_owned(&path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crs84_tiles_split_the_world_in_two_at_zoom_zero() {
        assert_eq!(Grid::Crs84.bounds(0, 0, 0), [-180.0, -90.0, 0.0, 90.0]);
        assert_eq!(Grid::Crs84.bounds(1, 3, 1), [90.0, -90.0, 180.0, 0.0]);
        assert_eq!(Grid::Crs84.columns(1), 4);
        let [w, s, e, n] = Grid::WebMercator.lon_lat_bounds(1, 1, 0);
        assert!(
            (w - 0.0).abs() < 1e-9 && s.abs() < 1e-9 && (e - 180.0).abs() < 1e-9 && (n - 85.051_128_78).abs() < 1e-6
        );
    }

    #[test]
    fn tile_bounds_cover_the_world_at_zoom_zero() {
        let [xmin, ymin, xmax, ymax] = tile_bounds(0, 0, 0);
        assert!((xmin + HALF_WORLD).abs() < 1e-6 && (ymax - HALF_WORLD).abs() < 1e-6);
        assert!((xmax - HALF_WORLD).abs() < 1e-6 && (ymin + HALF_WORLD).abs() < 1e-6);
        let [xmin, _, _, ymax] = tile_bounds(1, 1, 1);
        assert!(xmin.abs() < 1e-6 && ymax.abs() < 1e-6);
    }

    #[test]
    fn heights_round_trip_through_both_encodings() {
        for height in [-412.3, 0.0, 8848.9] {
            let [r, g, b, _] = TerrainEncoding::Mapbox.encode(height);
            let back = -10_000.0 + (f64::from(r) * 65_536.0 + f64::from(g) * 256.0 + f64::from(b)) * 0.1;
            assert!((back - height).abs() < 0.051, "{height} {back}");
            let [r, g, b, _] = TerrainEncoding::Terrarium.encode(height);
            let back = f64::from(r) * 256.0 + f64::from(g) + f64::from(b) / 256.0 - 32_768.0;
            assert!((back - height).abs() < 0.004, "{height} {back}");
        }
    }

    #[test]
    fn ramps_run_from_first_to_last_stop() {
        assert_eq!(Colormap::Viridis.at(0.0), [68, 1, 84]);
        assert_eq!(Colormap::Viridis.at(1.0), [253, 231, 37]);
        assert_eq!(Colormap::Greys.at(0.5), [128, 128, 128]);
        assert_eq!(Colormap::Magma.at(7.0), [252, 253, 191]);
    }
}
