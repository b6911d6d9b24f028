//! A vector dataset written out as a file for download, by GDAL from
//! PostGIS: GeoPackage, GeoJSON, CSV (geometry as WKT), a shapefile set or
//! FlatGeobuf. GeoParquet, which Debian's GDAL cannot write, is named here
//! too and written by the API itself.
//! Rows stream from the database into the file, so memory stays flat
//! however large the table.
use std::{
    fs::File,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use gdal::{Dataset, DatasetOptions, GdalOpenFlags};

use crate::RasterError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    GeoPackage,
    GeoJson,
    Csv,
    Shapefile,
    FlatGeobuf,
    GeoParquet,
}

impl ExportFormat {
    pub const ALL: [Self; 6] = [
        ExportFormat::GeoPackage,
        ExportFormat::GeoJson,
        ExportFormat::Csv,
        ExportFormat::Shapefile,
        ExportFormat::FlatGeobuf,
        ExportFormat::GeoParquet,
    ];
    pub const NAMES: [&'static str; 6] = ["gpkg", "geojson", "csv", "shp", "fgb", "parquet"];

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
            ExportFormat::FlatGeobuf => "fgb",
            ExportFormat::GeoParquet => "parquet",
        }
    }

    /// The media type of the downloaded file (a shapefile comes zipped).
    pub fn media_type(self) -> &'static str {
        match self {
            ExportFormat::GeoPackage => "application/geopackage+sqlite3",
            ExportFormat::GeoJson => "application/geo+json",
            ExportFormat::Csv => "text/csv; charset=utf-8",
            ExportFormat::Shapefile => "application/zip",
            ExportFormat::FlatGeobuf => "application/flatgeobuf",
            ExportFormat::GeoParquet => "application/vnd.apache.parquet",
        }
    }

    /// Whether the format keeps each feature's id (the dataset's key),
    /// rather than numbering features itself.
    pub fn keeps_ids(self) -> bool {
        matches!(self, ExportFormat::GeoPackage | ExportFormat::GeoJson)
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
            ExportFormat::FlatGeobuf => format!("{stem}.fgb"),
            ExportFormat::GeoParquet => format!("{stem}.parquet"),
        }
    }

    /// GDAL's driver of the format; None for GeoParquet, not GDAL's here.
    fn driver(self) -> Option<&'static str> {
        match self {
            ExportFormat::GeoPackage => Some("GPKG"),
            ExportFormat::GeoJson => Some("GeoJSON"),
            ExportFormat::Csv => Some("CSV"),
            ExportFormat::Shapefile => Some("ESRI Shapefile"),
            ExportFormat::FlatGeobuf => Some("FlatGeobuf"),
            ExportFormat::GeoParquet => None,
        }
    }

    /// GDAL's options for the format; GeoJSON is RFC 7946 when it is in
    /// WGS 84 and names its CRS (the 2008 form) when it is not; FlatGeobuf
    /// keeps an asked order by going without its spatial index, which
    /// would put the features in the order of a Hilbert curve.
    fn driver_args(self, driver: &'static str, wgs84: bool, ordered: bool) -> Vec<&'static str> {
        let mut args = vec!["-f", driver];
        args.extend(match self {
            ExportFormat::GeoJson if wgs84 => &["-lco", "RFC7946=YES"][..],
            ExportFormat::FlatGeobuf if ordered => &["-lco", "SPATIAL_INDEX=NO"],
            ExportFormat::Csv => &["-lco", "GEOMETRY=AS_WKT"],
            ExportFormat::Shapefile => &["-lco", "ENCODING=UTF-8"],
            _ => &[],
        });
        args
    }
}

/// What to write: the rows `sql` selects from the database at
/// `connection` (libpq's keywords and values), as `layer`, in `format`.
/// A column `ID_COLUMN` in the selection becomes each feature's id where
/// the format keeps ids.
pub struct Export<'a> {
    pub connection: &'a [(String, String)],
    pub sql: &'a str,
    pub layer: &'a str,
    pub format: ExportFormat,
    /// Whether the selected geometries are WGS 84 longitude/latitude.
    pub wgs84: bool,
    /// Whether the order of the features was asked for.
    pub ordered: bool,
    /// The geometry type the layer declares (`-nlt`), e.g. `MultiPolygon`
    /// or `PointZ`; None leaves it to GDAL (a query's column: Unknown).
    pub geometry_type: Option<&'a str>,
    /// The QGIS styles the layer keeps, written into a GeoPackage's
    /// `layer_styles` table (QGIS opens the layer with its default one).
    pub styles: &'a [LayerStyle],
}

/// A QGIS style of the layer, as a GeoPackage's `layer_styles` row holds it.
pub struct LayerStyle {
    pub name: String,
    pub description: Option<String>,
    pub qml: Option<String>,
    pub sld: Option<String>,
    pub is_default: bool,
}

/// The column of a selection GDAL reads as each feature's id (its
/// PostgreSQL driver's default FID name).
pub const ID_COLUMN: &str = "ogc_fid";

/// The name of the database's entry in an export's service file.
const SERVICE: &str = "catalog_export";

/// libpq's service file: one `[SERVICE]` entry of keyword=value lines.
fn write_service_file(path: &Path, connection: &[(String, String)]) -> Result<(), RasterError> {
    let mut text = format!("[{SERVICE}]\n");
    for (key, value) in connection {
        if [key, value].iter().any(|v| v.contains(['\n', '\r'])) || key.contains('=') {
            return Err(RasterError::Invalid(format!(
                "the database setting {key} holds a line break"
            )));
        }
        text.push_str(&format!("{key}={value}\n"));
    }
    let failed = |e: std::io::Error| RasterError::Gdal(format!("writing the export's service file: {e}"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)
}

/// What ogr2ogr said of its failure: its ERROR lines (the last 4 KB of them).
fn errors_in(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("ERROR")).collect();
    let message = if errors.is_empty() {
        text.trim().to_string()
    } else {
        errors.join("; ")
    };
    let start = message.len().saturating_sub(4096);
    match message.get(start..) {
        Some(tail) if !tail.is_empty() => tail.to_string(),
        _ => "ogr2ogr failed and said nothing".into(),
    }
}

impl Export<'_> {
    /// Writes the file into `dir` with GDAL's `ogr2ogr` in a child
    /// process, so what GDAL holds while it writes (FlatGeobuf's spatial
    /// index keeps every feature's box in memory) is never the API's, and
    /// a client that leaves kills the work; answers the file's path. The
    /// connection reaches the child through a service file in `dir` (mode
    /// 0600), never its command line.
    pub fn write(&self, dir: &Path, cancelled: &AtomicBool) -> Result<PathBuf, RasterError> {
        let driver = self
            .format
            .driver()
            .ok_or_else(|| RasterError::Invalid(format!("GDAL does not write {} here", self.format.name())))?;
        let service = dir.join("pg_service.conf");
        write_service_file(&service, self.connection)?;
        let target = dir.join(self.format.file_name(self.layer));
        let mut args: Vec<String> = self
            .format
            .driver_args(driver, self.wgs84, self.ordered)
            .iter()
            .map(|a| a.to_string())
            .collect();
        args.extend([
            "-sql".into(),
            self.sql.to_string(),
            "-nln".into(),
            self.layer.to_string(),
        ]);
        if self.format.keeps_ids() {
            args.push("-preserve_fid".into());
        }
        if let Some(kind) = self.geometry_type {
            args.extend(["-nlt".into(), kind.to_string()]);
        }
        let log = dir.join("ogr2ogr.log");
        let failed = |e: std::io::Error| RasterError::Gdal(format!("running ogr2ogr: {e}"));
        // The child sees none of the API's secrets: only what locates
        // programs, data files and GDAL's own settings.
        let passed = std::env::vars_os().filter(|(name, _)| {
            let name = name.to_string_lossy();
            ["PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME"].contains(&name.as_ref())
                || ["GDAL_", "CPL_", "OGR_", "PROJ_"].iter().any(|p| name.starts_with(p))
        });
        let mut child = Command::new("ogr2ogr")
            .args(&args)
            .arg(&target)
            .arg(format!("PG:service={SERVICE}"))
            .env_clear()
            .envs(passed)
            .env("PGSERVICEFILE", &service)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).map_err(failed)?)
            .spawn()
            .map_err(failed)?;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(failed)? {
                break status;
            }
            if cancelled.load(Ordering::Relaxed) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RasterError::Gdal("the export stopped: the client left".into()));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = std::fs::remove_file(&service);
        if !status.success() {
            return Err(RasterError::Gdal(errors_in(&log)));
        }
        // (A layer of that very name would be the styles table itself.)
        if self.format == ExportFormat::GeoPackage && !self.styles.is_empty() && self.layer != "layer_styles" {
            self.write_styles(&target)?;
        }
        Ok(target)
    }

    /// The `layer_styles` table as QGIS writes it (an attributes table of
    /// the GeoPackage), one row per kept style of the layer.
    fn write_styles(&self, gpkg: &Path) -> Result<(), RasterError> {
        use gdal::vector::{Feature, LayerAccess, LayerOptions, OGRFieldType, OGRwkbGeometryType};
        let failed = |e: gdal::errors::GdalError| RasterError::Gdal(format!("writing the layer's styles: {e}"));
        let mut dataset = Dataset::open_ex(
            gpkg,
            DatasetOptions {
                open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_UPDATE,
                ..Default::default()
            },
        )
        .map_err(failed)?;
        let geometry_column = dataset
            .layer_by_name(self.layer)
            .map_err(failed)?
            .defn()
            .geom_fields()
            .next()
            .map(|field| field.name())
            .unwrap_or_default();
        let layer = dataset
            .create_layer(LayerOptions {
                name: "layer_styles",
                ty: OGRwkbGeometryType::wkbNone,
                // Its key is `id`, as in the table QGIS makes.
                options: Some(&["FID=id"]),
                ..Default::default()
            })
            .map_err(failed)?;
        const TEXT: [&str; 9] = [
            "f_table_catalog",
            "f_table_schema",
            "f_table_name",
            "f_geometry_column",
            "styleName",
            "styleQML",
            "styleSLD",
            "description",
            "owner",
        ];
        let mut fields: Vec<(&str, OGRFieldType::Type)> = TEXT.iter().map(|n| (*n, OGRFieldType::OFTString)).collect();
        fields.insert(7, ("useAsDefault", OGRFieldType::OFTInteger));
        fields.push(("ui", OGRFieldType::OFTString));
        fields.push(("update_time", OGRFieldType::OFTDateTime));
        layer.create_defn_fields(&fields).map_err(failed)?;
        for style in self.styles {
            let mut feature = Feature::new(layer.defn()).map_err(failed)?;
            let mut text = |name: &str, value: Option<&str>| -> Result<(), RasterError> {
                if let Some(value) = value {
                    let index = feature.field_index(name).map_err(failed)?;
                    feature.set_field_string(index, value).map_err(failed)?;
                }
                Ok(())
            };
            text("f_table_catalog", Some(""))?;
            text("f_table_schema", Some(""))?;
            text("f_table_name", Some(self.layer))?;
            text("f_geometry_column", Some(&geometry_column))?;
            text("styleName", Some(&style.name))?;
            text("styleQML", style.qml.as_deref())?;
            text("styleSLD", style.sld.as_deref())?;
            text("description", style.description.as_deref())?;
            let index = feature.field_index("useAsDefault").map_err(failed)?;
            feature
                .set_field_integer(index, i32::from(style.is_default))
                .map_err(failed)?;
            feature.create(&layer).map_err(failed)?;
        }
        Ok(())
    }
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
