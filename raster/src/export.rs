//! A vector dataset written out as a file for download, by GDAL from
//! PostGIS: GeoPackage, GeoJSON (RFC 7946), CSV (geometry as WKT) or a
//! shapefile set. Rows stream from the database into the file, so memory
//! stays flat however large the table.
use std::path::{Path, PathBuf};

use gdal::{Dataset, DatasetOptions, GdalOpenFlags};

use crate::{RasterError, ffi};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    GeoPackage,
    GeoJson,
    Csv,
    Shapefile,
}

impl ExportFormat {
    pub const ALL: [Self; 4] = [
        ExportFormat::GeoPackage,
        ExportFormat::GeoJson,
        ExportFormat::Csv,
        ExportFormat::Shapefile,
    ];
    pub const NAMES: [&'static str; 4] = ["gpkg", "geojson", "csv", "shp"];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name the download route's `format` takes.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::GeoPackage => "gpkg",
            ExportFormat::GeoJson => "geojson",
            ExportFormat::Csv => "csv",
            ExportFormat::Shapefile => "shp",
        }
    }

    /// The media type of the downloaded file (a shapefile comes zipped).
    pub fn media_type(self) -> &'static str {
        match self {
            ExportFormat::GeoPackage => "application/geopackage+sqlite3",
            ExportFormat::GeoJson => "application/geo+json",
            ExportFormat::Csv => "text/csv; charset=utf-8",
            ExportFormat::Shapefile => "application/zip",
        }
    }

    /// The downloaded file's name: a shapefile's set comes as one zip.
    pub fn download_name(self, stem: &str) -> String {
        match self {
            ExportFormat::Shapefile => format!("{stem}.zip"),
            other => other.file_name(stem),
        }
    }

    /// What the written file (a folder for shapefiles) is called.
    pub fn file_name(self, stem: &str) -> String {
        match self {
            ExportFormat::GeoPackage => format!("{stem}.gpkg"),
            ExportFormat::GeoJson => format!("{stem}.geojson"),
            ExportFormat::Csv => format!("{stem}.csv"),
            ExportFormat::Shapefile => stem.to_string(),
        }
    }

    fn driver_args(self) -> &'static [&'static str] {
        match self {
            ExportFormat::GeoPackage => &["-f", "GPKG"],
            ExportFormat::GeoJson => &["-f", "GeoJSON", "-lco", "RFC7946=YES"],
            ExportFormat::Csv => &["-f", "CSV", "-lco", "GEOMETRY=AS_WKT"],
            ExportFormat::Shapefile => &["-f", "ESRI Shapefile", "-lco", "ENCODING=UTF-8"],
        }
    }
}

/// Writes the rows `sql` selects from the database at `connection` (a
/// libpq URI) into `dir` as `layer`; answers the written path.
pub fn export(
    connection: &str,
    sql: &str,
    layer: &str,
    format: ExportFormat,
    dir: &Path,
) -> Result<PathBuf, RasterError> {
    let source = Dataset::open_ex(
        format!("PG:{connection}"),
        DatasetOptions {
            open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_READONLY,
            ..Default::default()
        },
    )
    .map_err(|_| RasterError::Gdal("the database could not be opened for the export".into()))?;
    let target = dir.join(format.file_name(layer));
    let mut args: Vec<String> = format.driver_args().iter().map(|a| a.to_string()).collect();
    args.extend(["-sql".into(), sql.to_string(), "-nln".into(), layer.to_string()]);
    let path = target
        .to_str()
        .ok_or_else(|| RasterError::Invalid("the export path is not UTF-8".into()))?;
    ffi::vector_translate(&source, path, &args)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_once_as_the_download_route_takes_it() {
        assert_eq!(ExportFormat::ALL.map(ExportFormat::name), ExportFormat::NAMES);
        for format in ExportFormat::ALL {
            assert_eq!(ExportFormat::from_name(format.name()), Some(format));
        }
    }
}
