//! GeoTIFF in, Cloud-Optimized GeoTIFF out: what a source must be, the
//! conversion with the upload's options, and the checks of GDAL's COG
//! validator for files stored as uploaded (`strict_cog`).
use std::path::Path;

use gdal::{Dataset, Metadata, raster::GdalDataType};

use crate::{RasterError, ffi};

/// The media type of a stored raster, as downloads, STAC assets and OGC
/// links name it.
pub const MEDIA_TYPE: &str = "image/tiff; application=geotiff; profile=cloud-optimized";

/// Larger sources are refused: converting them would hold a worker for
/// hours (and a tiny file can claim any size in its header).
pub const MAX_PIXELS: usize = 1 << 32;

/// Overview resampling methods an upload may name.
pub const RESAMPLINGS: [&str; 5] = ["nearest", "bilinear", "cubic", "average", "mode"];
/// Compressions an upload may name.
pub const COMPRESSIONS: [&str; 6] = ["deflate", "lzw", "zstd", "webp", "jpeg", "none"];

/// How the stored COG is written.
#[derive(Clone, Debug, Default)]
pub struct CogOptions {
    /// One of `COMPRESSIONS`; None: deflate.
    pub compression: Option<String>,
    /// One of `RESAMPLINGS`; None: nearest for a band with a colour table,
    /// average otherwise.
    pub resampling: Option<String>,
    /// Replaces the source's nodata value.
    pub nodata: Option<f64>,
    /// Assigns this EPSG code as the CRS (never reprojects).
    pub srid: Option<i32>,
}

/// Refuses what cannot become a raster dataset, saying why.
pub fn check_source(ds: &Dataset, srid_override: Option<i32>) -> Result<(), RasterError> {
    let invalid = |why: String| Err(RasterError::Invalid(why));
    let (width, height) = ds.raster_size();
    if ds.raster_count() == 0 || width == 0 || height == 0 {
        return invalid("the file holds no raster band".into());
    }
    if width.saturating_mul(height) > MAX_PIXELS {
        return invalid(format!(
            "the raster is {width} x {height} pixels; at most {MAX_PIXELS} pixels per band are accepted"
        ));
    }
    for index in 1..=ds.raster_count() {
        let kind = ds.rasterband(index)?.band_type();
        if !matches!(
            kind,
            GdalDataType::UInt8
                | GdalDataType::UInt16
                | GdalDataType::Int16
                | GdalDataType::UInt32
                | GdalDataType::Int32
                | GdalDataType::Float32
                | GdalDataType::Float64
        ) {
            return invalid(format!(
                "band {index} holds {} values; only real numbers (8 to 32-bit integers, 32 or 64-bit floats) are supported",
                kind.name()
            ));
        }
    }
    let gt = match ds.geo_transform() {
        Ok(gt) if gt != [0.0, 1.0, 0.0, 0.0, 0.0, 1.0] => gt,
        _ => {
            return invalid(
                "the raster has no georeferencing (no geotransform); upload a GeoTIFF placed on the earth".into(),
            );
        }
    };
    if gt[2] != 0.0 || gt[4] != 0.0 {
        return invalid(
            "the raster's geotransform is rotated or sheared, which is not supported; warp it to a north-up grid first (gdalwarp)"
                .into(),
        );
    }
    let has_crs = ds
        .spatial_ref()
        .is_ok_and(|srs| srs.to_wkt().is_ok_and(|w| !w.is_empty()));
    if !has_crs && srid_override.is_none() {
        return invalid("the raster has no coordinate reference system; name one with srid_override".into());
    }
    Ok(())
}

/// Writes `src` as a COG at `dst` with internal tiles and overviews.
/// The share of a conversion's progress GDAL's COG driver spends on
/// overviews, which it builds before it writes the full-resolution image:
/// their pixels over all pixels written, halving until a side fits one
/// 512-pixel block.
pub fn overview_share(width: usize, height: usize) -> f64 {
    let full = (width as f64) * (height as f64);
    let (mut w, mut h, mut overviews) = (width, height, 0.0);
    while w.max(h) > 512 {
        w = w.div_ceil(2);
        h = h.div_ceil(2);
        overviews += (w as f64) * (h as f64);
    }
    overviews / (overviews + full)
}

/// Writes `src` as a COG at `dst`, telling `progress` the share done.
pub fn convert(
    src: &Dataset,
    dst: &Path,
    options: &CogOptions,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(), RasterError> {
    let palette = src.rasterband(1)?.color_table().is_some();
    let resampling = options
        .resampling
        .clone()
        .unwrap_or_else(|| if palette { "nearest" } else { "average" }.into());
    let compression = options.compression.as_deref().unwrap_or("deflate").to_ascii_uppercase();
    let mut args: Vec<String> = [
        "-of",
        "COG",
        "-co",
        "BLOCKSIZE=512",
        "-co",
        "BIGTIFF=IF_SAFER",
        "-co",
        "NUM_THREADS=ALL_CPUS",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["-co".into(), format!("COMPRESS={compression}")]);
    args.extend(["-co".into(), format!("RESAMPLING={}", resampling.to_ascii_uppercase())]);
    if matches!(compression.as_str(), "DEFLATE" | "LZW" | "ZSTD") {
        args.extend(["-co".into(), "PREDICTOR=YES".into()]);
    }
    if let Some(nodata) = options.nodata {
        args.extend(["-a_nodata".into(), nodata.to_string()]);
    }
    if let Some(srid) = options.srid {
        args.extend(["-a_srs".into(), format!("EPSG:{srid}")]);
    }
    let dst = dst
        .to_str()
        .ok_or_else(|| RasterError::Invalid("the work path is not UTF-8".into()))?;
    ffi::translate(src, dst, &args, progress)
}

/// Where the main IFD of a COG starts: right after the TIFF header (8
/// bytes, 16 for BigTIFF), or after the structural-metadata block GDAL's
/// COG driver writes there (`GDAL_STRUCTURAL_METADATA_SIZE=nnnnnn bytes`).
fn first_ifd_offset(path: &Path) -> Result<u64, RasterError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(1024).read_to_end(&mut head))
        .map_err(|e| RasterError::Gdal(e.to_string()))?;
    let header = if head.get(2..4) == Some(&[43, 0]) || head.get(2..4) == Some(&[0, 43]) {
        16
    } else {
        8
    };
    const MARKER: &[u8] = b"GDAL_STRUCTURAL_METADATA_SIZE=";
    let Some(rest) = head.get(header..).filter(|r| r.starts_with(MARKER)) else {
        return Ok(header as u64);
    };
    let digits: String = rest[MARKER.len()..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| b as char)
        .collect();
    let line_end = rest.iter().position(|&b| b == b'\n');
    match (digits.parse::<u64>(), line_end) {
        // TIFF places IFDs on even offsets.
        (Ok(size), Some(end)) => Ok(((header + end + 1) as u64 + size).next_multiple_of(2)),
        _ => Ok(header as u64),
    }
}

/// What keeps a file from being a valid COG, by the checks of GDAL's
/// `validate_cloud_optimized_geotiff.py`: tiled, overviews inside the
/// file, the main IFD first and the IFDs in order, the image data after
/// the overviews' data. Empty when it is one.
pub fn cog_problems(path: &Path) -> Result<Vec<String>, RasterError> {
    let ds = Dataset::open(path)?;
    let mut problems = Vec::new();
    if ds.driver().short_name() != "GTiff" {
        return Ok(vec!["it is not a GeoTIFF".into()]);
    }
    let (width, height) = ds.raster_size();
    let band = ds.rasterband(1)?;
    let (block_x, block_y) = band.block_size();
    let large = width > 512 || height > 512;
    if large && (block_x == width || block_y == 1) {
        problems.push(format!(
            "it is not tiled (blocks of {block_x} x {block_y}); a COG larger than 512 pixels has internal tiles"
        ));
    }
    let external = |ext: &str| Path::new(&format!("{}.{ext}", path.display())).exists();
    if external("ovr") || external("OVR") {
        problems.push("its overviews are in an external .ovr file; a COG holds them inside".into());
    }
    let overview_count = band.overview_count()?.max(0) as usize;
    if large && overview_count == 0 {
        problems.push("it has no internal overviews; a COG larger than 512 pixels has them".into());
    }
    let offset = |b: &gdal::raster::RasterBand, item: &str| -> Option<u64> {
        b.metadata_item(item, "TIFF").and_then(|v| v.parse().ok())
    };
    let mut ifds = vec![offset(&band, "IFD_OFFSET")];
    let mut data = vec![offset(&band, "BLOCK_OFFSET_0_0")];
    for i in 0..overview_count {
        let overview = band.overview(i)?;
        ifds.push(offset(&overview, "IFD_OFFSET"));
        data.push(offset(&overview, "BLOCK_OFFSET_0_0"));
    }
    if let Some(Some(main)) = ifds.first()
        && *main != first_ifd_offset(path)?
    {
        problems.push(format!(
            "its main IFD is at byte {main}, not at the start of the file (after the header and GDAL's structural metadata, if any)"
        ));
    }
    for i in 1..ifds.len() {
        if let (Some(before), Some(this)) = (ifds[i - 1], ifds[i])
            && this < before
        {
            problems.push(format!(
                "the IFD of overview {i} comes before the one of the level above it"
            ));
        }
    }
    // Data of smaller levels first: each level's first block after the
    // next smaller one's (0 marks a sparse block, which has no place).
    for i in 0..data.len().saturating_sub(1) {
        if let (Some(this), Some(smaller)) = (data[i], data[i + 1])
            && this != 0
            && smaller != 0
            && this < smaller
        {
            let level = if i == 0 {
                "the full-resolution image".to_string()
            } else {
                format!("overview {i}")
            };
            problems.push(format!(
                "the data of {level} comes before the data of overview {}; a COG stores the smallest overview first",
                i + 1
            ));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overviews_take_their_share_of_the_pixels_written() {
        assert_eq!(overview_share(512, 300), 0.0);
        assert!((overview_share(1024, 1024) - 0.2).abs() < 1e-12);
        let large = overview_share(40_000, 30_000);
        assert!((0.24..0.25).contains(&large), "{large}");
    }

    #[test]
    fn files_written_by_the_cog_driver_pass_the_checks() {
        // Relative to the package, where `cargo test` runs unit tests: a
        // path fixed at build time breaks when another clone shares the
        // build cache.
        let source = Dataset::open("../tests/data/raster/elev_luxembourg.tif").unwrap();
        let out = std::env::temp_dir().join(format!("cog-check-{}.tif", std::process::id()));
        convert(&source, &out, &CogOptions::default(), &mut |_| true).unwrap();
        let problems = cog_problems(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
    }
}
