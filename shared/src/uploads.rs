//! Which files can become datasets, told by their names alone: the API
//! refuses anything else before storing an upload, and the worker reads
//! what is accepted with the driver of its format. One list, so the two
//! never disagree about a file.

/// The kinds of file read; their names are recorded as a dataset's `source_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    GeoPackage,
    Shapefile,
    GeoJson,
    Csv,
    GeoTiff,
}

impl SourceFormat {
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::GeoPackage => "gpkg",
            SourceFormat::Shapefile => "shapefile",
            SourceFormat::GeoJson => "geojson",
            SourceFormat::Csv => "csv",
            SourceFormat::GeoTiff => "geotiff",
        }
    }
}

/// What may be uploaded, for messages.
pub const ACCEPTED: &str =
    ".gpkg, .geojson, .json, .csv, .tif/.tiff (GeoTIFF), or .zip (holding a shapefile set or any of those)";

/// The format a file name announces, if any.
pub fn format_of(name: &str) -> Option<SourceFormat> {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "gpkg" => Some(SourceFormat::GeoPackage),
        "geojson" | "json" | "geojsonl" | "geojsons" => Some(SourceFormat::GeoJson),
        "csv" => Some(SourceFormat::Csv),
        "shp" => Some(SourceFormat::Shapefile),
        "tif" | "tiff" => Some(SourceFormat::GeoTiff),
        _ => None,
    }
}

/// Whether a file of this name may be uploaded: a zip, or a single file of
/// a format that needs no sidecar files (a shapefile comes zipped).
pub fn is_accepted_upload(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".zip") || matches!(format_of(&lower), Some(f) if f != SourceFormat::Shapefile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_recognised_by_extension() {
        assert!(is_accepted_upload("World.GPKG"));
        assert!(is_accepted_upload("a.zip"));
        assert!(is_accepted_upload("dem.TIF") && is_accepted_upload("dem.tiff"));
        assert!(!is_accepted_upload("a.shp"));
        assert!(!is_accepted_upload("notes.txt"));
        assert!(!is_accepted_upload("noext"));
    }
}
