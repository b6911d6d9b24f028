//! Reads one layer through GDAL on a blocking thread and encodes its
//! features as PostgreSQL binary COPY rows (EWKB geometry, SRID 4326).
use std::{
    collections::{BTreeSet, HashSet},
    ffi::{CStr, c_char, c_int},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use catalog_shared::{
    datasets::{ColumnInfo, GeometryType},
    extent::ExtentTracker,
    ingest_report::{Example, IngestReport, Reason},
    uploads::SourceFormat,
};
use gdal::{
    Dataset, DatasetOptions, GdalOpenFlags,
    spatial_ref::{AxisMappingStrategy, CoordTransform, SpatialRef},
    vector::LayerAccess,
};
use gdal_sys::{OGRFieldType, OGRwkbGeometryType as Gt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::{
    columns::{PgType, binary, column_names, ogr_type_name},
    gdal_messages::Caught,
    plan::{FieldPlan, GeomTarget, LayerPlan, ReadError},
    source_text::{self, CSV_AS_TEXT},
};

/// The GDAL drivers that read a format.
fn drivers(format: SourceFormat) -> &'static [&'static str] {
    match format {
        SourceFormat::GeoPackage => &["GPKG"],
        SourceFormat::Shapefile => &["ESRI Shapefile"],
        SourceFormat::GeoJson => &["GeoJSON", "GeoJSONSeq"],
        SourceFormat::Csv => &["CSV"],
        SourceFormat::GeoTiff => &["GTiff"],
    }
}

fn open_options(format: SourceFormat) -> Vec<&'static str> {
    match format {
        SourceFormat::Csv => [CSV_AS_TEXT, &["AUTODETECT_TYPE=YES", "AUTODETECT_SIZE_LIMIT=0"]].concat(),
        _ => Vec::new(),
    }
}

/// Opens a source; a file GDAL cannot read is explained by GDAL's own
/// message of where it stopped (`At line 4, character 76: Unterminated
/// string`), named by `label` (the file, or the member of a zip).
pub fn open(path: &str, format: SourceFormat, label: &str) -> Result<Dataset, ReadError> {
    let caught = Caught::start();
    let since = caught.count();
    Dataset::open_ex(
        path,
        DatasetOptions {
            open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_READONLY,
            allowed_drivers: Some(drivers(format)),
            open_options: Some(&open_options(format)),
            sibling_files: None,
        },
    )
    .map_err(|_| {
        let why = caught
            .failure_since(since)
            .unwrap_or_else(|| format!("it holds no {} GDAL can read", format.name()));
        ReadError::Invalid(format!(
            "{label} could not be read as {}: {why} (is the file complete?)",
            format.name()
        ))
    })
}

/// The source's layers, by index and name, and whether each has a
/// geometry (tables without one are not datasets).
pub fn layers(ds: &Dataset) -> Vec<(usize, String, bool)> {
    ds.layers()
        .enumerate()
        .map(|(i, layer)| {
            // SAFETY: `layer` borrows `ds`, so its handle is a live OGRLayerH for this call, which only reads it.
            let geometry_type = unsafe { gdal_sys::OGR_L_GetGeomType(layer.c_layer()) };
            (i, layer.name(), geometry_type != Gt::wkbNone)
        })
        .collect()
}

pub fn plan_layer(ds: &Dataset, index: usize, srid_override: Option<i32>) -> Result<LayerPlan, ReadError> {
    let layer = ds
        .layer(index)
        .map_err(|e| ReadError::Invalid(format!("layer {index} could not be opened: {e}")))?;
    // SAFETY: `layer` (borrowed from `ds`) lives to the end of this function, so its handle is valid; the call only
    // reads it.
    let declared = unsafe { gdal_sys::OGR_L_GetGeomType(layer.c_layer()) };
    // SAFETY: OGR_GT_HasZ takes a geometry type by value and touches no memory.
    let has_z = unsafe { gdal_sys::OGR_GT_HasZ(declared) } != 0;
    // SAFETY: as above, the layer handle is valid; the definition it returns belongs to the layer (never freed
    // here) and lives as long as the layer does.
    let layer_defn = unsafe { gdal_sys::OGR_L_GetLayerDefn(layer.c_layer()) };
    let originals: Vec<(String, OGRFieldType::Type)> =
        layer.defn().fields().map(|f| (f.name(), f.field_type())).collect();
    let names = column_names(originals.iter().map(|(n, _)| n.as_str()));
    let fields = originals
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, ((original, ogr_type), name))| {
            // SAFETY: `layer_defn` is the live layer's own definition and `i` enumerates that same definition's
            // fields (`layer.defn().fields()`), so OGR_FD_GetFieldDefn returns a non-null field definition, which
            // OGR_Fld_GetSubType only reads.
            let sub = unsafe { gdal_sys::OGR_Fld_GetSubType(gdal_sys::OGR_FD_GetFieldDefn(layer_defn, i as c_int)) };
            FieldPlan {
                original,
                name,
                ogr_type,
                pg: PgType::from_ogr(ogr_type, sub),
                from_source_text: false,
            }
        })
        .collect();
    let declared_srs = layer.spatial_ref();
    let crs_assumed = declared_srs.is_none() && srid_override.is_none();
    let source_srid = match declared_srs {
        Some(srs) => epsg_of(&srs),
        None => Some(srid_override.unwrap_or(4326)),
    };
    Ok(LayerPlan {
        index,
        name: layer.name(),
        fields,
        target: target_for(declared),
        has_z,
        source_srid,
        crs_assumed,
        feature_count: layer.try_feature_count(),
    })
}

fn epsg_of(srs: &SpatialRef) -> Option<i32> {
    let mut srs = srs.clone();
    if srs.auth_name().as_deref() != Some("EPSG") {
        let _ = srs.auto_identify_epsg();
    }
    match srs.auth_name().as_deref() {
        Some("EPSG") => srs.auth_code().ok(),
        _ => None,
    }
}

fn target_for(declared: Gt::Type) -> GeomTarget {
    // SAFETY: OGR_GT_Flatten takes a geometry type by value and touches no memory.
    match unsafe { gdal_sys::OGR_GT_Flatten(declared) } {
        Gt::wkbPoint => GeomTarget::Fixed(Gt::wkbPoint),
        Gt::wkbMultiPoint => GeomTarget::Fixed(Gt::wkbMultiPoint),
        Gt::wkbLineString
        | Gt::wkbMultiLineString
        | Gt::wkbCircularString
        | Gt::wkbCompoundCurve
        | Gt::wkbMultiCurve => GeomTarget::Fixed(Gt::wkbMultiLineString),
        Gt::wkbPolygon | Gt::wkbMultiPolygon | Gt::wkbCurvePolygon | Gt::wkbMultiSurface => {
            GeomTarget::Fixed(Gt::wkbMultiPolygon)
        }
        _ => GeomTarget::Generic,
    }
}

/// The first `n` features' attributes as text, by column name (previews).
pub fn sample_rows(
    path: &str,
    format: SourceFormat,
    plan: &LayerPlan,
    n: usize,
) -> Result<Vec<Map<String, Value>>, ReadError> {
    let ds = open(path, format, path.rsplit('/').next().unwrap_or(path))?;
    let mut layer = ds
        .layer(plan.index)
        .map_err(|e| ReadError::Invalid(format!("layer {} could not be opened: {e}", plan.name)))?;
    // Columns kept as the source's text show that text, as they will hold it.
    let kept_as_text: Vec<usize> = (0..plan.fields.len())
        .filter(|&i| plan.fields[i].from_source_text)
        .collect();
    let mut source_texts: Vec<source_text::Texts> = Vec::new();
    if !kept_as_text.is_empty() {
        source_text::scan(path, format, plan, &kept_as_text, &mut |texts| {
            if source_texts.len() < n {
                source_texts.push(texts)
            }
        })?;
    }
    Ok(layer
        .features()
        .take(n)
        .enumerate()
        .map(|(row, feature)| {
            plan.fields
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    let text = match kept_as_text.iter().position(|&k| k == i) {
                        Some(k) => source_texts.get(row).and_then(|texts| texts[k].clone()),
                        None => feature.field_as_string(i).ok().flatten(),
                    };
                    (field.name.clone(), text.map_or(Value::Null, Value::String))
                })
                .collect()
        })
        .collect())
}

/// The geometry type a layer is loaded as.
pub fn target_type(target: GeomTarget) -> GeometryType {
    match target {
        GeomTarget::Fixed(t) => GeometryType::parse(postgis_type_name(t)).unwrap_or(GeometryType::Geometry),
        GeomTarget::Generic => GeometryType::Geometry,
    }
}

/// The PostGIS name of a flat geometry type, as used in column type modifiers.
pub fn postgis_type_name(t: Gt::Type) -> &'static str {
    match t {
        Gt::wkbPoint => "Point",
        Gt::wkbLineString => "LineString",
        Gt::wkbPolygon => "Polygon",
        Gt::wkbMultiPoint => "MultiPoint",
        Gt::wkbMultiLineString => "MultiLineString",
        Gt::wkbMultiPolygon => "MultiPolygon",
        Gt::wkbGeometryCollection => "GeometryCollection",
        Gt::wkbCircularString => "CircularString",
        Gt::wkbCompoundCurve => "CompoundCurve",
        Gt::wkbCurvePolygon => "CurvePolygon",
        Gt::wkbMultiCurve => "MultiCurve",
        Gt::wkbMultiSurface => "MultiSurface",
        _ => "Geometry",
    }
}

#[derive(Debug, Default)]
pub struct ReadStats {
    /// Rows read from the layer; the last row's number.
    pub read: u64,
    /// Rows written to the COPY (read and not quarantined).
    pub loaded: u64,
    pub types_seen: BTreeSet<&'static str>,
    /// Curve types of the source that were stored as straight segments.
    pub curves_linearized: BTreeSet<&'static str>,
    /// Single parts stored as the multi type of their layer.
    pub promoted: u64,
    /// Rows whose rings were closed (counted as repaired), by key.
    pub closed_rows: Vec<i64>,
    /// Text values whose bytes were not UTF-8, read as Latin-1.
    pub latin1_values: u64,
    pub extent: ExtentTracker,
    pub samples: Vec<Vec<Value>>,
    /// What reading did to the rows; the load adds the repairs.
    pub report: IngestReport,
}

const SAMPLES_PER_COLUMN: usize = 5;
const SAMPLE_TEXT_CHARS: usize = 200;
const CHUNK_BYTES: usize = 1 << 20;
/// Quarantined rows sent to the load at a time.
const QUARANTINE_BATCH: usize = 1000;
const EWKB_SRID_FLAG: u32 = 0x2000_0000;
const WGS84: u32 = 4326;

/// What the reading thread sends the load: rows for the COPY, or rows it
/// kept aside.
pub enum Chunk {
    Rows(Vec<u8>),
    Quarantined(Vec<QuarantinedRow>),
}

/// A row kept aside, with why, as it was read.
#[derive(Debug)]
pub struct QuarantinedRow {
    pub source_row: i64,
    pub fid: Option<i64>,
    pub reason: Reason,
    pub field: Option<String>,
    pub value: Option<String>,
    pub message: String,
    /// GeoJSON in WGS 84 (the source's own coordinates when it could not
    /// be reprojected); None for a row without one, or one JSON cannot
    /// hold (a NaN).
    pub geometry: Option<Value>,
    /// The row's attributes, by the source's column names.
    pub properties: Map<String, Value>,
}

/// Everything the reading thread needs; it opens its own dataset because
/// GDAL handles cannot cross threads.
pub struct ReadRequest {
    pub path: String,
    pub format: SourceFormat,
    /// The file (or zip member) as its sender named it, for messages.
    pub label: String,
    pub plan: LayerPlan,
    pub target: GeomTarget,
    pub stop: Arc<AtomicBool>,
    /// Rows read so far, for progress reports.
    pub rows_read: Arc<AtomicU64>,
}

/// What a row's geometry may be: the layer's column, and where its
/// coordinates may lie.
struct GeometryRules<'a> {
    transform: Option<&'a CoordTransform>,
    target: GeomTarget,
    has_z: bool,
    /// A projected source's area of use (widened by a tenth), in its own
    /// units, with its EPSG code: coordinates beyond it are no place the
    /// CRS describes, however they reproject.
    area: Option<(i32, [f64; 4])>,
}

/// Why one row cannot be loaded as it is.
struct RowIssue {
    reason: Reason,
    field: Option<String>,
    value: Option<String>,
    message: String,
    geometry: Option<Value>,
}

enum GeometryError {
    Row(Box<RowIssue>),
    Layer(ReadError),
}

/// What writing a row's geometry did.
struct Written {
    /// The row's geometry is in `wkb`, else it is null.
    has_geometry: bool,
    /// How it was repaired on the way (a ring closed).
    repaired: Option<String>,
}

/// Streams the layer as COPY chunks (header first, trailer last) into
/// `out`, with the rows it keeps aside; a row's key (`gid`) is its number
/// in the layer.
pub fn read_layer(req: ReadRequest, out: mpsc::Sender<Chunk>) -> Result<ReadStats, ReadError> {
    let caught = Caught::start();
    let ds = open(&req.path, req.format, &req.label)?;
    let layer = ds
        .layer(req.plan.index)
        .map_err(|e| ReadError::Invalid(format!("layer {} could not be opened: {e}", req.plan.name)))?;
    let transform = coordinate_transform(&layer, &req.plan)?;
    let rules = GeometryRules {
        transform: transform.as_ref(),
        target: req.target,
        has_z: req.plan.has_z,
        area: transform.as_ref().and(req.plan.source_srid).and_then(|srid| {
            catalog_raster::crs::facts(srid as u32)
                .filter(|f| !f.geographic)
                .and_then(|f| f.bounds)
                .map(|b| (srid, b))
        }),
    };
    // SAFETY: `c_layer` only hands out the raw handle; `layer` (and `ds`, which it borrows) lives to the end of
    // this function, so `h_layer` stays valid for every use below, all on this thread.
    let h_layer = unsafe { layer.c_layer() };
    let mut stats = ReadStats {
        samples: vec![Vec::new(); req.plan.fields.len()],
        ..Default::default()
    };
    let mut sample_keys: Vec<HashSet<String>> = vec![HashSet::new(); req.plan.fields.len()];
    let kept_as_text: Vec<usize> = (0..req.plan.fields.len())
        .filter(|&i| req.plan.fields[i].from_source_text)
        .collect();
    let mut source_texts: Vec<source_text::Texts> = Vec::new();
    if !kept_as_text.is_empty() {
        source_text::scan(&req.path, req.format, &req.plan, &kept_as_text, &mut |texts| {
            source_texts.push(texts)
        })?;
    }
    let mut chunk = Vec::with_capacity(CHUNK_BYTES + 4096);
    chunk.extend_from_slice(binary::HEADER);
    let mut row_bytes = Vec::with_capacity(4096);
    let mut wkb = Vec::new();
    let mut quarantined = Vec::new();
    let field_count = 2 + req.plan.fields.len();
    // SAFETY: `h_layer` is valid (see above); CPLErrorReset clears only this thread's error state.
    unsafe {
        gdal_sys::OGR_L_ResetReading(h_layer);
        gdal_sys::CPLErrorReset();
    }
    loop {
        let messages_before = caught.count();
        // SAFETY: `h_layer` is valid; the feature returned (or null, checked next) is ours to free, which
        // `OwnedFeature` does once, on drop.
        let h_feature = unsafe { gdal_sys::OGR_L_GetNextFeature(h_layer) };
        if caught.count() > messages_before
            && let Some(why) = caught.failure_since(messages_before)
        {
            return Err(ReadError::Invalid(format!(
                "{}, layer {}: reading stopped at feature {}: {why}",
                req.label,
                req.plan.name,
                stats.read + 1
            )));
        }
        if h_feature.is_null() {
            break;
        }
        let feature = OwnedFeature(h_feature);
        stats.read += 1;
        row_bytes.clear();
        binary::row_start(&mut row_bytes, field_count);
        binary::i64(&mut row_bytes, stats.read as i64);
        // SAFETY: `feature.0` is a non-null feature we own and that lives across the call; `transform` outlives it.
        let geometry = unsafe { write_geometry(&mut row_bytes, &mut wkb, feature.0, &rules, &mut stats) };
        let texts = source_texts.get(stats.read as usize - 1);
        let row = Row {
            feature: &feature,
            kept_as_text: &kept_as_text,
            texts,
        };
        let mut notes = RowNotes::default();
        let (outcome, has_geometry) = match geometry {
            Err(GeometryError::Layer(e)) => return Err(e),
            Err(GeometryError::Row(issue)) => (Err(issue), false),
            Ok(written) => {
                let has_geometry = written.has_geometry;
                let attributes = write_attributes(&mut row_bytes, &row, &req.plan.fields, &stats.samples, &mut notes);
                (attributes.map(|()| written), has_geometry)
            }
        };
        match outcome {
            Ok(written) => {
                chunk.extend_from_slice(&row_bytes);
                stats.loaded += 1;
                keep_samples(notes.samples, &mut stats.samples, &mut sample_keys);
                let noted = match (written.repaired, notes.latin1) {
                    (Some(repair), _) => {
                        stats.closed_rows.push(stats.read as i64);
                        Some((Reason::RepairedGeometry, None, None, repair))
                    }
                    (None, Some((i, text))) => {
                        stats.latin1_values += 1;
                        let field = &req.plan.fields[i].original;
                        let message = format!(
                            "the value of {field} is not valid UTF-8; read as Latin-1 (ISO-8859-1) as {text:?}"
                        );
                        Some((Reason::Encoding, Some(field.clone()), Some(text), message))
                    }
                    (None, None) => None,
                };
                if let Some((reason, field, value, message)) = noted {
                    stats.report.count(Example {
                        reason,
                        layer: req.plan.name.clone(),
                        row: Some(stats.read),
                        fid: fid_of(&feature),
                        field,
                        value,
                        message,
                    });
                }
            }
            Err(mut issue) => {
                if has_geometry {
                    // The row's geometry was written (its attributes failed): `wkb` holds it.
                    issue.geometry = geojson_of_wkb(&wkb);
                }
                let fid = fid_of(&feature);
                stats.report.count(Example {
                    reason: issue.reason,
                    layer: req.plan.name.clone(),
                    row: Some(stats.read),
                    fid,
                    field: issue.field.clone(),
                    value: issue.value.clone(),
                    message: issue.message.clone(),
                });
                quarantined.push(QuarantinedRow {
                    source_row: stats.read as i64,
                    fid,
                    reason: issue.reason,
                    field: issue.field,
                    value: issue.value,
                    message: issue.message,
                    geometry: issue.geometry,
                    properties: row_properties(&row, &req.plan.fields),
                });
                if quarantined.len() >= QUARANTINE_BATCH {
                    out.blocking_send(Chunk::Quarantined(std::mem::take(&mut quarantined)))
                        .map_err(|_| ReadError::Stopped)?;
                }
            }
        }
        if chunk.len() >= CHUNK_BYTES {
            if req.stop.load(Ordering::Relaxed) {
                return Err(ReadError::Stopped);
            }
            req.rows_read.store(stats.read, Ordering::Relaxed);
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES + 4096));
            out.blocking_send(Chunk::Rows(full)).map_err(|_| ReadError::Stopped)?;
        }
    }
    if let Some(why) = gdal_failure() {
        return Err(ReadError::Invalid(format!(
            "{}, layer {}: reading stopped after feature {}: {why}",
            req.label, req.plan.name, stats.read
        )));
    }
    if !kept_as_text.is_empty() && source_texts.len() as u64 != stats.read {
        return Err(ReadError::Invalid(format!(
            "{}, layer {}: GDAL read {} features but the file's text holds {}",
            req.label,
            req.plan.name,
            stats.read,
            source_texts.len()
        )));
    }
    if !quarantined.is_empty() {
        out.blocking_send(Chunk::Quarantined(quarantined))
            .map_err(|_| ReadError::Stopped)?;
    }
    chunk.extend_from_slice(binary::TRAILER);
    out.blocking_send(Chunk::Rows(chunk)).map_err(|_| ReadError::Stopped)?;
    stats.report.rows_read = stats.read;
    stats.report.rows_loaded = stats.loaded;
    Ok(stats)
}

/// The source's feature id, where it has one of its own.
fn fid_of(feature: &OwnedFeature) -> Option<i64> {
    // SAFETY: `feature.0` is a live feature we own; the call only reads it.
    let fid = unsafe { gdal_sys::OGR_F_GetFID(feature.0) };
    (fid >= 0).then_some(fid)
}

/// One feature being written, and where its kept-as-text columns come
/// from: the file's own text of that row.
struct Row<'a> {
    feature: &'a OwnedFeature,
    kept_as_text: &'a [usize],
    texts: Option<&'a source_text::Texts>,
}

/// What writing a row's attributes noticed.
#[derive(Default)]
struct RowNotes {
    /// Sample values, by column, kept if the row loads.
    samples: Vec<(usize, Value)>,
    /// The first value read as Latin-1, by column.
    latin1: Option<(usize, String)>,
}

/// Writes a row's attributes; a value its column cannot hold makes the
/// row's issue. Columns whose samples are not yet full give their value.
fn write_attributes(
    buf: &mut Vec<u8>,
    row: &Row,
    fields: &[FieldPlan],
    samples: &[Vec<Value>],
    notes: &mut RowNotes,
) -> Result<(), Box<RowIssue>> {
    for (i, field) in fields.iter().enumerate() {
        let sample = samples[i].len() < SAMPLES_PER_COLUMN;
        let value = match row.kept_as_text.iter().position(|&k| k == i) {
            Some(k) => {
                let text = row.texts.and_then(|texts| texts[k].as_deref());
                Ok(write_text(buf, field.pg, text, sample))
            }
            // SAFETY: `row.feature` is a live feature we own, and `i` is a field index of its layer's definition
            // (the plan's fields were made, in order, from the definition of this layer of the same file).
            None => unsafe { write_field(buf, row.feature.0, i as c_int, field, sample) },
        };
        match value {
            Ok(FieldValue { value, latin1 }) => {
                if let Some(text) = latin1
                    && notes.latin1.is_none()
                {
                    notes.latin1 = Some((i, text));
                }
                if let Some(value) = value {
                    notes.samples.push((i, value));
                }
            }
            Err(text) => {
                return Err(Box::new(RowIssue {
                    reason: Reason::ValueDoesNotFit,
                    field: Some(field.original.clone()),
                    message: format!(
                        "{text:?} in {} is not a {} (no real calendar date or time)",
                        field.original,
                        field.pg.sql()
                    ),
                    value: Some(text),
                    geometry: None,
                }));
            }
        }
    }
    Ok(())
}

/// Keeps each column's first distinct values as its samples.
fn keep_samples(values: Vec<(usize, Value)>, samples: &mut [Vec<Value>], sample_keys: &mut [HashSet<String>]) {
    for (i, value) in values {
        let value = match value {
            Value::String(text) if text.chars().count() > SAMPLE_TEXT_CHARS => sample_text(&text),
            value => value,
        };
        if samples[i].len() < SAMPLES_PER_COLUMN && sample_keys[i].insert(value.to_string()) {
            samples[i].push(value);
        }
    }
}

/// A quarantined row's attributes, as near their types as they read.
fn row_properties(row: &Row, fields: &[FieldPlan]) -> Map<String, Value> {
    let mut scratch = Vec::new();
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let value = match row.kept_as_text.iter().position(|&k| k == i) {
                Some(k) => row
                    .texts
                    .and_then(|texts| texts[k].clone())
                    .map_or(Value::Null, Value::String),
                // SAFETY: as in `write_attributes`: a live feature and one of its layer's field indices.
                None => match unsafe { write_field(&mut scratch, row.feature.0, i as c_int, field, true) } {
                    Ok(read) => read.value.unwrap_or(Value::Null),
                    Err(text) => Value::String(text),
                },
            };
            scratch.clear();
            (field.original.clone(), value)
        })
        .collect()
}

/// GDAL's last error, when it was a failure: reading stopped early.
fn gdal_failure() -> Option<String> {
    // SAFETY: CPLGetLastErrorType takes no argument and reads this thread's error state.
    let last_error = unsafe { gdal_sys::CPLGetLastErrorType() };
    (last_error == gdal_sys::CPLErr::CE_Failure || last_error == gdal_sys::CPLErr::CE_Fatal).then(|| {
        // SAFETY: CPLGetLastErrorMsg never returns null: it gives this thread's NUL-terminated error buffer (empty
        // when there is no error), copied here before any other GDAL call can change it.
        unsafe { CStr::from_ptr(gdal_sys::CPLGetLastErrorMsg()) }
            .to_string_lossy()
            .into_owned()
    })
}

struct OwnedFeature(gdal_sys::OGRFeatureH);

impl Drop for OwnedFeature {
    fn drop(&mut self) {
        // SAFETY: an `OwnedFeature` is only made from a non-null feature OGR_L_GetNextFeature handed us to free; it
        // is neither Clone nor Copy, so this is its one OGR_F_Destroy, after every borrow of it has ended.
        unsafe { gdal_sys::OGR_F_Destroy(self.0) }
    }
}

struct OwnedGeometry(gdal_sys::OGRGeometryH);

impl Drop for OwnedGeometry {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: non-null (checked); an `OwnedGeometry` holds a geometry we own (stolen from its feature, or made
            // by OGR_G_GetLinearGeometry or OGR_G_ForceTo), freed only here, once.
            unsafe { gdal_sys::OGR_G_DestroyGeometry(self.0) }
        }
    }
}

fn coordinate_transform(
    layer: &gdal::vector::Layer<'_>,
    plan: &LayerPlan,
) -> Result<Option<CoordTransform>, ReadError> {
    let mut source = match layer.spatial_ref() {
        Some(srs) => srs,
        None => match plan.source_srid {
            Some(4326) | None => return Ok(None),
            Some(code) => SpatialRef::from_epsg(code as u32)
                .map_err(|e| ReadError::Invalid(format!("EPSG:{code} is not a known coordinate system: {e}")))?,
        },
    };
    if plan.source_srid == Some(4326) {
        return Ok(None);
    }
    let mut target = SpatialRef::from_epsg(WGS84).map_err(|e| ReadError::Invalid(e.to_string()))?;
    source.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    target.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    CoordTransform::new(&source, &target).map(Some).map_err(|e| {
        ReadError::Invalid(format!(
            "the layer's coordinate system cannot be converted to EPSG:4326: {e}"
        ))
    })
}

fn is_multi_of(multi: Gt::Type, single: Gt::Type) -> bool {
    matches!(
        (multi, single),
        (Gt::wkbMultiPoint, Gt::wkbPoint)
            | (Gt::wkbMultiLineString, Gt::wkbLineString)
            | (Gt::wkbMultiPolygon, Gt::wkbPolygon)
    )
}

/// Writes the geometry column: EWKB in WGS 84 with the layer's
/// dimensions, or NULL for a feature without geometry. A geometry no
/// dataset may hold (`docs/decisions.md`, Values the service refuses) is
/// the row's issue; one with unclosed rings is closed.
unsafe fn write_geometry(
    buf: &mut Vec<u8>,
    wkb: &mut Vec<u8>,
    h_feature: gdal_sys::OGRFeatureH,
    rules: &GeometryRules,
    stats: &mut ReadStats,
) -> Result<Written, GeometryError> {
    let row_issue = |reason, value: Option<String>, message: String, geometry: Option<Value>| {
        GeometryError::Row(Box::new(RowIssue {
            reason,
            field: None,
            value,
            message,
            geometry,
        }))
    };
    // SAFETY: the caller passes a live feature it owns; its geometry, stolen into an `OwnedGeometry` (which frees
    // it), is null-checked before use. OGR_G_GetLinearGeometry's result is checked and replaces (frees) the curve.
    // OGR_G_ForceTo takes ownership of the old geometry, so `geom.0` is overwritten without a free; a null result
    // would fail `flat != wanted` (OGR_G_GetGeometryType answers wkbUnknown for null) before any other use.
    // `rules.transform` outlives the block. `wkb` is resized to OGR_G_WkbSize bytes before OGR_G_ExportToWkb
    // writes them.
    unsafe {
        let mut geom = OwnedGeometry(gdal_sys::OGR_F_StealGeometry(h_feature));
        if geom.0.is_null() {
            binary::null(buf);
            return Ok(Written {
                has_geometry: false,
                repaired: None,
            });
        }
        let source_type = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
        // Checked before anything else: GDAL takes a point with a NaN for
        // an empty one.
        if let Some(position) = first_position(geom.0, &|x, y, z| !(x.is_finite() && y.is_finite() && z.is_finite())) {
            return Err(row_issue(
                Reason::NonFiniteCoordinate,
                Some(position_text(position)),
                format!("the coordinate {} is not a finite number", position_text(position)),
                None,
            ));
        }
        if gdal_sys::OGR_G_IsEmpty(geom.0) != 0 {
            return Err(row_issue(
                Reason::EmptyGeometry,
                None,
                format!(
                    "its geometry is an empty {}; a row without a place has a null geometry",
                    postgis_type_name(source_type)
                ),
                None,
            ));
        }
        if let Some((srid, [west, south, east, north])) = rules.area
            && let Some(position) = first_position(geom.0, &|x, y, _| {
                !(west..=east).contains(&x) || !(south..=north).contains(&y)
            })
        {
            return Err(row_issue(
                Reason::CoordinateOutOfRange,
                Some(position_text(position)),
                format!(
                    "the coordinate {} lies outside the area EPSG:{srid} is defined for (x {west:.0} to {east:.0}, \
                     y {south:.0} to {north:.0}, its area of use widened by a tenth); is the layer's coordinate \
                     system declared right?",
                    position_text(position)
                ),
                None,
            ));
        }
        // GeoJSON, MVT and the export formats know no curves, so every
        // curve type is linearised here, once, whether or not it holds an
        // arc: a CompoundCurve of straight parts or a MultiSurface of plain
        // polygons is still a curve type that PostGIS cannot render.
        if gdal_sys::OGR_G_HasCurveGeometry(geom.0, 0) != 0 {
            let linear = gdal_sys::OGR_G_GetLinearGeometry(geom.0, 0.0, std::ptr::null_mut());
            if linear.is_null() {
                return Err(row_issue(
                    Reason::InvalidGeometry,
                    None,
                    format!(
                        "a {} could not be turned into straight segments",
                        postgis_type_name(source_type)
                    ),
                    None,
                ));
            }
            geom = OwnedGeometry(linear);
            stats.curves_linearized.insert(postgis_type_name(source_type));
        }
        if let Some(ct) = rules.transform {
            let first = first_position(geom.0, &|_, _, _| true);
            if gdal_sys::OGR_G_Transform(geom.0, ct.to_c_hct()) != gdal_sys::OGRErr::OGRERR_NONE {
                return Err(row_issue(
                    Reason::CoordinateOutOfRange,
                    first.map(position_text),
                    "the geometry could not be reprojected to WGS 84 (EPSG:4326): its coordinates lie where the \
                     layer's coordinate system has no place"
                        .into(),
                    None,
                ));
            }
        }
        let mut flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
        let mut promoted = false;
        if let GeomTarget::Fixed(wanted) = rules.target {
            if is_multi_of(wanted, flat) {
                geom.0 = gdal_sys::OGR_G_ForceTo(geom.0, wanted, std::ptr::null_mut());
                flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
                promoted = true;
            }
            if flat != wanted {
                return Err(GeometryError::Layer(ReadError::GeometryMismatch));
            }
        }
        if gdal_sys::OGR_G_IsMeasured(geom.0) != 0 {
            gdal_sys::OGR_G_SetMeasured(geom.0, 0);
        }
        let is_3d = gdal_sys::OGR_G_Is3D(geom.0) != 0;
        if rules.has_z && !is_3d {
            gdal_sys::OGR_G_Set3D(geom.0, 1);
        } else if !rules.has_z && is_3d {
            gdal_sys::OGR_G_FlattenTo2D(geom.0);
        }
        if let Some((x, y, _)) = first_position(geom.0, &|x, y, _| !catalog_shared::wgs84::contains(x, y)) {
            return Err(row_issue(
                Reason::CoordinateOutOfRange,
                Some(position_text((x, y, 0.0))),
                format!(
                    "the coordinate ({x:?}, {y:?}) lies outside WGS 84 (longitude -180 to 180, latitude -90 to 90); \
                     is the layer's coordinate system declared right?"
                ),
                geojson_of(geom.0),
            ));
        }
        // PostgreSQL refuses a ring that is not closed or a line of one
        // point (and with it the whole COPY): closed here, or kept aside.
        let mut unclosed = 0;
        if let Err(why) = check_structure(geom.0, &mut unclosed) {
            return Err(row_issue(Reason::InvalidGeometry, None, why, geojson_of(geom.0)));
        }
        let repaired = (unclosed > 0).then(|| {
            gdal_sys::OGR_G_CloseRings(geom.0);
            format!("{unclosed} ring(s) did not end where they began; each was closed with its first point")
        });
        stats.promoted += u64::from(promoted);
        stats.types_seen.insert(postgis_type_name(flat));
        add_to_extent(&mut stats.extent, geom.0);
        let size = gdal_sys::OGR_G_WkbSize(geom.0) as usize;
        wkb.clear();
        wkb.resize(size, 0);
        gdal_sys::OGR_G_ExportToWkb(geom.0, gdal_sys::OGRwkbByteOrder::wkbNDR, wkb.as_mut_ptr());
        // WKB → EWKB: flag the SRID in the type word and put it after it.
        let type_word = u32::from_le_bytes([wkb[1], wkb[2], wkb[3], wkb[4]]) | EWKB_SRID_FLAG;
        buf.extend_from_slice(&((size + 4) as i32).to_be_bytes());
        buf.push(1);
        buf.extend_from_slice(&type_word.to_le_bytes());
        buf.extend_from_slice(&WGS84.to_le_bytes());
        buf.extend_from_slice(&wkb[5..]);
        Ok(Written {
            has_geometry: true,
            repaired,
        })
    }
}

fn position_text((x, y, _): (f64, f64, f64)) -> String {
    format!("({x:?}, {y:?})")
}

/// The first position of `geom` for which `outside` holds, if any. Every
/// position is looked at (an envelope skips a NaN that is not first); a
/// point is read even when GDAL calls it empty, which it does for a NaN.
unsafe fn first_position(
    geom: gdal_sys::OGRGeometryH,
    outside: &dyn Fn(f64, f64, f64) -> bool,
) -> Option<(f64, f64, f64)> {
    // SAFETY: `geom` is a valid geometry and its parts live as long as it
    // does; the calls only read it.
    unsafe {
        let flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom));
        let parts = gdal_sys::OGR_G_GetGeometryCount(geom);
        if parts > 0 {
            return (0..parts).find_map(|i| first_position(gdal_sys::OGR_G_GetGeometryRef(geom, i), outside));
        }
        let count = if flat == Gt::wkbPoint {
            1
        } else if gdal_sys::OGR_GT_IsSubClassOf(flat, Gt::wkbCurve) != 0 {
            gdal_sys::OGR_G_GetPointCount(geom)
        } else {
            0
        };
        let empty_point = flat == Gt::wkbPoint && gdal_sys::OGR_G_IsEmpty(geom) != 0;
        (0..count).find_map(|i| {
            let position = (
                gdal_sys::OGR_G_GetX(geom, i),
                gdal_sys::OGR_G_GetY(geom, i),
                gdal_sys::OGR_G_GetZ(geom, i),
            );
            // An empty point made without coordinates reads as 0, 0.
            let nan_point = empty_point && (position.0.is_nan() || position.1.is_nan());
            ((!empty_point || nan_point) && outside(position.0, position.1, position.2)).then_some(position)
        })
    }
}

/// Why PostgreSQL would refuse the geometry's shape (a ring of fewer than
/// four positions, a line of fewer than two); counts its rings that do not
/// end where they begin, which closing repairs.
unsafe fn check_structure(geom: gdal_sys::OGRGeometryH, unclosed: &mut u32) -> Result<(), String> {
    // SAFETY: `geom` is a valid geometry; its rings and parts (indices below their count) live as long as it does;
    // the calls only read them.
    unsafe {
        let flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom));
        if flat == Gt::wkbPolygon {
            for r in 0..gdal_sys::OGR_G_GetGeometryCount(geom) {
                let ring = gdal_sys::OGR_G_GetGeometryRef(geom, r);
                let mut n = gdal_sys::OGR_G_GetPointCount(ring);
                let same = |i, j| {
                    gdal_sys::OGR_G_GetX(ring, i) == gdal_sys::OGR_G_GetX(ring, j)
                        && gdal_sys::OGR_G_GetY(ring, i) == gdal_sys::OGR_G_GetY(ring, j)
                        && gdal_sys::OGR_G_GetZ(ring, i) == gdal_sys::OGR_G_GetZ(ring, j)
                };
                if n > 0 && !same(0, n - 1) {
                    *unclosed += 1;
                    n += 1;
                }
                if n < 4 {
                    return Err(format!(
                        "ring {} of a polygon has {n} positions once closed; a ring needs at least four \
                         (three corners and the first again)",
                        r + 1
                    ));
                }
            }
        } else if flat == Gt::wkbLineString {
            let n = gdal_sys::OGR_G_GetPointCount(geom);
            if n < 2 {
                return Err(format!("a line has {n} position(s); it needs at least two"));
            }
        } else if gdal_sys::OGR_GT_IsSubClassOf(flat, Gt::wkbGeometryCollection) != 0 {
            for i in 0..gdal_sys::OGR_G_GetGeometryCount(geom) {
                check_structure(gdal_sys::OGR_G_GetGeometryRef(geom, i), unclosed)?;
            }
        }
        Ok(())
    }
}

/// A geometry as GeoJSON, unless JSON cannot hold it (NaN, infinities).
unsafe fn geojson_of(geom: gdal_sys::OGRGeometryH) -> Option<Value> {
    // SAFETY: `geom` is a valid geometry; the string OGR_G_ExportToJson returns (null-checked) is ours, copied and
    // then freed with VSIFree, as GDAL asks.
    unsafe {
        let json = gdal_sys::OGR_G_ExportToJson(geom);
        if json.is_null() {
            return None;
        }
        let value = serde_json::from_slice(CStr::from_ptr(json).to_bytes()).ok();
        gdal_sys::VSIFree(json.cast());
        value
    }
}

/// A geometry written as WKB, as GeoJSON.
fn geojson_of_wkb(wkb: &[u8]) -> Option<Value> {
    let mut geom: gdal_sys::OGRGeometryH = std::ptr::null_mut();
    // SAFETY: `wkb` is a WKB buffer of `wkb.len()` bytes that GDAL only reads; the geometry it makes (null-checked)
    // is ours and freed once by `OwnedGeometry`.
    unsafe {
        let made = gdal_sys::OGR_G_CreateFromWkbEx(wkb.as_ptr().cast(), std::ptr::null_mut(), &mut geom, wkb.len());
        if made != gdal_sys::OGRErr::OGRERR_NONE || geom.is_null() {
            return None;
        }
        let geom = OwnedGeometry(geom);
        geojson_of(geom.0)
    }
}

/// Adds each part of a multi-part geometry on its own: the envelope of a
/// feature with parts on both sides of the antimeridian spans the world,
/// while its parts show the data crossing it.
unsafe fn add_to_extent(extent: &mut ExtentTracker, geom: gdal_sys::OGRGeometryH) {
    // SAFETY: the caller passes a live geometry; the parts OGR_G_GetGeometryRef returns (indices below the count)
    // are non-null and owned by it, live while it is; `env` is a local that OGR_G_GetEnvelope writes.
    unsafe {
        if gdal_sys::OGR_G_IsEmpty(geom) != 0 {
            return;
        }
        let kind = gdal_sys::OGR_G_GetGeometryType(geom);
        if gdal_sys::OGR_GT_IsSubClassOf(kind, Gt::wkbGeometryCollection) != 0 {
            for i in 0..gdal_sys::OGR_G_GetGeometryCount(geom) {
                add_to_extent(extent, gdal_sys::OGR_G_GetGeometryRef(geom, i));
            }
            return;
        }
        let mut env = gdal_sys::OGREnvelope {
            MinX: 0.0,
            MaxX: 0.0,
            MinY: 0.0,
            MaxY: 0.0,
        };
        gdal_sys::OGR_G_GetEnvelope(geom, &mut env);
        extent.add(env.MinX, env.MaxX, env.MinY, env.MaxY);
    }
}

/// Text from GDAL as UTF-8, and whether it had to be read as Latin-1.
/// GDAL recodes sources with a declared encoding; bytes that are still
/// not UTF-8 are taken as Latin-1, the usual encoding of legacy files,
/// rather than dropped (and the report says so).
///
/// # Safety
/// `ptr` is null or a NUL-terminated string that stays valid for the call
/// (one GDAL has just returned, before any other call on its feature).
unsafe fn text_of(ptr: *const c_char) -> (String, bool) {
    if ptr.is_null() {
        return (String::new(), false);
    }
    // SAFETY: `ptr` is non-null (checked above) and, as the caller
    // promises, NUL-terminated and valid for this call.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (bytes.iter().map(|&b| b as char).collect(), true),
    }
}

fn sample_text(s: &str) -> Value {
    Value::String(s.chars().take(SAMPLE_TEXT_CHARS).collect())
}

/// What writing one attribute gave: its value as JSON when asked for it,
/// and its text when that had to be read as Latin-1.
#[derive(Default)]
struct FieldValue {
    value: Option<Value>,
    latin1: Option<String>,
}

impl FieldValue {
    fn of(value: Option<Value>) -> Self {
        Self { value, latin1: None }
    }
}

/// Writes an attribute from the source's own text: a text column, or a
/// jsonb one when the text is a JSON array.
fn write_text(buf: &mut Vec<u8>, pg: PgType, text: Option<&str>, want: bool) -> FieldValue {
    let Some(text) = text else {
        binary::null(buf);
        return FieldValue::default();
    };
    if pg == PgType::Jsonb {
        // A lone string where the others are arrays comes decoded; it goes
        // in as a JSON string.
        let value: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
        match value {
            Value::String(_) => binary::jsonb(buf, &value.to_string()),
            _ => binary::jsonb(buf, text),
        }
        return FieldValue::of(want.then_some(value));
    }
    binary::bytes(buf, text.as_bytes());
    FieldValue::of(want.then(|| Value::String(text.to_string())))
}

/// Writes one attribute, with its value as JSON when `want`; a value its
/// column cannot hold is the error, as the source's text.
unsafe fn write_field(
    buf: &mut Vec<u8>,
    h: gdal_sys::OGRFeatureH,
    i: c_int,
    field: &FieldPlan,
    want: bool,
) -> Result<FieldValue, String> {
    // SAFETY: the caller passes a live feature (`h`) and a field index `i` of its definition. The strings, lists
    // and binaries GDAL returns belong to the feature and are copied here before the next call on it; the binary
    // is read only when non-null, for the `len` bytes GDAL reports.
    unsafe {
        if gdal_sys::OGR_F_IsFieldSetAndNotNull(h, i) == 0 {
            binary::null(buf);
            return Ok(FieldValue::default());
        }
        Ok(match field.pg {
            PgType::Boolean => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger(h, i) != 0;
                binary::bool(buf, v);
                FieldValue::of(want.then(|| Value::Bool(v)))
            }
            PgType::Integer => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger(h, i);
                binary::i32(buf, v);
                FieldValue::of(want.then(|| Value::from(v)))
            }
            PgType::BigInt => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger64(h, i);
                binary::i64(buf, v);
                FieldValue::of(want.then(|| Value::from(v)))
            }
            PgType::Double => {
                let v = gdal_sys::OGR_F_GetFieldAsDouble(h, i);
                binary::f64(buf, v);
                FieldValue::of(if want {
                    serde_json::Number::from_f64(v).map(Value::Number)
                } else {
                    None
                })
            }
            PgType::Text => {
                let (s, latin1) = text_of(gdal_sys::OGR_F_GetFieldAsString(h, i));
                binary::bytes(buf, s.as_bytes());
                FieldValue {
                    latin1: latin1.then(|| s.clone()),
                    value: want.then_some(Value::String(s)),
                }
            }
            PgType::Bytea => {
                let mut len: c_int = 0;
                let ptr = gdal_sys::OGR_F_GetFieldAsBinary(h, i, &mut len);
                let data = if ptr.is_null() {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(ptr, len.max(0) as usize)
                };
                binary::bytes(buf, data);
                FieldValue::default()
            }
            PgType::Jsonb => {
                let (value, latin1) = list_value(h, i, field.ogr_type);
                binary::jsonb(buf, &value.to_string());
                FieldValue {
                    latin1: latin1.then(|| value.to_string()),
                    value: want.then_some(value),
                }
            }
            PgType::Date | PgType::Time | PgType::TimestampTz => {
                return write_temporal(buf, h, i, field.pg, want);
            }
        })
    }
}

/// A list attribute as a JSON array, and whether a string of it had to be
/// read as Latin-1.
unsafe fn list_value(h: gdal_sys::OGRFeatureH, i: c_int, ogr_type: OGRFieldType::Type) -> (Value, bool) {
    // SAFETY: the caller passes a live feature and one of its field indices. Each list GDAL returns belongs to the
    // feature and is copied out at once: a numeric one through `slice_or_empty` with the length GDAL wrote, the
    // string list walked (null-checked) up to its terminating null.
    unsafe {
        let mut len: c_int = 0;
        match ogr_type {
            OGRFieldType::OFTIntegerList => {
                let p = gdal_sys::OGR_F_GetFieldAsIntegerList(h, i, &mut len);
                (Value::from(slice_or_empty(p, len).to_vec()), false)
            }
            OGRFieldType::OFTInteger64List => {
                let p = gdal_sys::OGR_F_GetFieldAsInteger64List(h, i, &mut len);
                (Value::from(slice_or_empty(p, len).to_vec()), false)
            }
            OGRFieldType::OFTRealList => {
                let p = gdal_sys::OGR_F_GetFieldAsDoubleList(h, i, &mut len);
                let items = slice_or_empty(p, len)
                    .iter()
                    .map(|v| serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number))
                    .collect();
                (Value::Array(items), false)
            }
            _ => {
                let mut p = gdal_sys::OGR_F_GetFieldAsStringList(h, i);
                let mut items = Vec::new();
                let mut any_latin1 = false;
                while !p.is_null() && !(*p).is_null() {
                    let (text, latin1) = text_of(*p);
                    any_latin1 |= latin1;
                    items.push(Value::String(text));
                    p = p.add(1);
                }
                (Value::Array(items), any_latin1)
            }
        }
    }
}

unsafe fn slice_or_empty<'a, T>(p: *const T, len: c_int) -> &'a [T] {
    if p.is_null() || len <= 0 {
        &[]
    } else {
        // SAFETY: `p` is non-null and `len` positive (checked); the caller promises that `p` points to `len`
        // initialised, aligned values that live for `'a` (a GDAL list owned by a live feature).
        unsafe { std::slice::from_raw_parts(p, len as usize) }
    }
}

/// Dates, times and timestamps; a value that is no real calendar date or
/// time (a zero month, say) is the error, as the source's text: it does
/// not fit the column, and is never stored as something else.
unsafe fn write_temporal(
    buf: &mut Vec<u8>,
    h: gdal_sys::OGRFeatureH,
    i: c_int,
    pg: PgType,
    want: bool,
) -> Result<FieldValue, String> {
    let (mut y, mut mo, mut d, mut hh, mut mi, mut tz) = (0, 0, 0, 0, 0, 0);
    let mut sec: f32 = 0.0;
    // SAFETY: the caller passes a live feature and one of its field indices; the out-pointers are locals.
    let ok = unsafe {
        gdal_sys::OGR_F_GetFieldAsDateTimeEx(h, i, &mut y, &mut mo, &mut d, &mut hh, &mut mi, &mut sec, &mut tz)
    } != 0;
    let micros_of_day = ((hh as i64 * 60 + mi as i64) * 60) * 1_000_000 + (sec as f64 * 1_000_000.0).round() as i64;
    // SAFETY: `h` and `i` are valid for this whole function and the closure is only called in it; `text_of` copies
    // the string GDAL returns at once.
    let text = || unsafe { text_of(gdal_sys::OGR_F_GetFieldAsString(h, i)) }.0;
    let days = || {
        (pg != PgType::Time)
            .then(|| binary::days_since_pg_epoch(y, mo as u32, d as u32))
            .flatten()
    };
    let time_of_day = ok && (0..24).contains(&hh) && (0..60).contains(&mi) && (0.0..61.0).contains(&sec);
    match (pg, days()) {
        (PgType::Time, _) if time_of_day => binary::i64(buf, micros_of_day),
        (PgType::Date, Some(days)) if ok => binary::i32(buf, days),
        (PgType::TimestampTz, Some(days)) if time_of_day => {
            // GDAL's tz flag: 0 unknown and 1 local (both taken as UTC),
            // 100 UTC, otherwise 15-minute steps away from 100.
            let offset_minutes = if tz > 1 { (tz as i64 - 100) * 15 } else { 0 };
            binary::i64(
                buf,
                days as i64 * 86_400_000_000 + micros_of_day - offset_minutes * 60_000_000,
            );
        }
        _ => return Err(text()),
    }
    Ok(FieldValue::of(want.then(|| Value::String(text()))))
}

/// Column descriptions recorded on the dataset.
pub fn column_info(plan: &LayerPlan) -> Vec<ColumnInfo> {
    plan.fields
        .iter()
        .map(|f| ColumnInfo {
            name: f.name.clone(),
            original_name: f.original.clone(),
            pg_type: f.pg.column_type(),
            source_type: ogr_type_name(f.ogr_type).to_string(),
        })
        .collect()
}
