//! What a layer is to be loaded as, decided by reading it and refined by
//! its source text: the columns, the geometry column and how reading fails.
use gdal_sys::{OGRFieldType, OGRwkbGeometryType as Gt};

use crate::{columns::PgType, sources::Source};

/// A failure of reading, phrased for the person who uploaded the file.
#[derive(Debug)]
pub enum ReadError {
    Invalid(String),
    /// A geometry did not fit the column type chosen from the layer's
    /// declared type; the load is redone with a generic geometry column.
    GeometryMismatch,
    /// The consumer stopped (the COPY failed or the job was cancelled).
    Stopped,
}

#[derive(Clone, Debug)]
pub struct FieldPlan {
    pub original: String,
    pub name: String,
    pub ogr_type: OGRFieldType::Type,
    pub pg: PgType,
    /// Written from the source's own text: GDAL's parsed value would
    /// change it (see `source_text`).
    pub from_source_text: bool,
}

/// The geometry column a layer is loaded into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeomTarget {
    /// One type; single parts are promoted to multi where the type is multi.
    Fixed(Gt::Type),
    /// Any type (mixed or undeclared); settled after the load.
    Generic,
}

#[derive(Clone, Debug)]
pub struct LayerPlan {
    pub index: usize,
    pub name: String,
    pub fields: Vec<FieldPlan>,
    pub target: GeomTarget,
    pub has_z: bool,
    pub source_srid: Option<i32>,
    /// The source names no CRS and the sender gave none: WGS 84 assumed.
    pub crs_assumed: bool,
    pub feature_count: Option<u64>,
}

/// A layer of a source to load, by the name an upload asks for it
/// (`file:layer` in a zip of several files).
#[derive(Clone, Debug)]
pub struct LayerJob {
    pub source: Source,
    pub plan: LayerPlan,
    pub key: String,
}
