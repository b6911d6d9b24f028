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
    uploads::SourceFormat,
};
use gdal::{
    Dataset, DatasetOptions, GdalOpenFlags,
    spatial_ref::{AxisMappingStrategy, CoordTransform, SpatialRef},
    vector::LayerAccess,
};
use gdal_sys::{OGRFieldType, OGRwkbGeometryType as Gt};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{
    columns::{PgType, binary, column_names, ogr_type_name},
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

pub fn open(path: &str, format: SourceFormat) -> Result<Dataset, ReadError> {
    Dataset::open_ex(
        path,
        DatasetOptions {
            open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_READONLY,
            allowed_drivers: Some(drivers(format)),
            open_options: Some(&open_options(format)),
            sibling_files: None,
        },
    )
    .map_err(|e| ReadError::Invalid(format!("the file could not be read as {}: {e}", format.name())))
}

/// Layers that have a geometry; tables without one are not datasets.
pub fn spatial_layers(ds: &Dataset) -> Vec<(usize, String)> {
    ds.layers()
        .enumerate()
        // SAFETY: `layer` borrows `ds`, so its handle is a live OGRLayerH for this call, which only reads it.
        .filter(|(_, layer)| unsafe { gdal_sys::OGR_L_GetGeomType(layer.c_layer()) } != Gt::wkbNone)
        .map(|(i, layer)| (i, layer.name()))
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
    let source_srid = match layer.spatial_ref() {
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
) -> Result<Vec<serde_json::Map<String, Value>>, ReadError> {
    let ds = open(path, format)?;
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
    pub rows: u64,
    pub types_seen: BTreeSet<&'static str>,
    /// Curve types of the source that were stored as straight segments.
    pub curves_linearized: BTreeSet<&'static str>,
    pub extent: ExtentTracker,
    pub samples: Vec<Vec<Value>>,
}

const SAMPLES_PER_COLUMN: usize = 5;
const SAMPLE_TEXT_CHARS: usize = 200;
const CHUNK_BYTES: usize = 1 << 20;
const EWKB_SRID_FLAG: u32 = 0x2000_0000;
const WGS84: u32 = 4326;

/// Everything the reading thread needs; it opens its own dataset because
/// GDAL handles cannot cross threads.
pub struct ReadRequest {
    pub path: String,
    pub format: SourceFormat,
    pub plan: LayerPlan,
    pub target: GeomTarget,
    pub stop: Arc<AtomicBool>,
    /// Rows encoded so far, for progress reports.
    pub rows_read: Arc<AtomicU64>,
}

/// Streams the layer as COPY chunks (header first, trailer last) into `out`.
pub fn read_layer(req: ReadRequest, out: mpsc::Sender<Vec<u8>>) -> Result<ReadStats, ReadError> {
    let ds = open(&req.path, req.format)?;
    let layer = ds
        .layer(req.plan.index)
        .map_err(|e| ReadError::Invalid(format!("layer {} could not be opened: {e}", req.plan.name)))?;
    let transform = coordinate_transform(&layer, &req.plan)?;
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
    let mut wkb = Vec::new();
    let field_count = 2 + req.plan.fields.len();
    // SAFETY: `h_layer` is valid (see above); CPLErrorReset clears only this thread's error state.
    unsafe {
        gdal_sys::OGR_L_ResetReading(h_layer);
        gdal_sys::CPLErrorReset();
    }
    loop {
        // SAFETY: `h_layer` is valid; the feature returned (or null, checked next) is ours to free, which
        // `OwnedFeature` does once, on drop.
        let h_feature = unsafe { gdal_sys::OGR_L_GetNextFeature(h_layer) };
        if h_feature.is_null() {
            break;
        }
        let feature = OwnedFeature(h_feature);
        stats.rows += 1;
        binary::row_start(&mut chunk, field_count);
        binary::i64(&mut chunk, stats.rows as i64);
        // SAFETY: `feature.0` is a non-null feature we own and that lives across the call; `transform` outlives it.
        let outcome = unsafe {
            write_geometry(
                &mut chunk,
                &mut wkb,
                feature.0,
                transform.as_ref(),
                req.target,
                req.plan.has_z,
                &mut stats,
            )
        };
        if let Err(e) = outcome {
            return Err(match e {
                ReadError::Invalid(msg) => ReadError::Invalid(format!("feature {}: {msg}", stats.rows)),
                other => other,
            });
        }
        let texts = source_texts.get(stats.rows as usize - 1);
        let row = Row {
            feature: &feature,
            kept_as_text: &kept_as_text,
            texts,
        };
        write_attributes(&mut chunk, &row, &req.plan.fields, &mut stats.samples, &mut sample_keys);
        if chunk.len() >= CHUNK_BYTES {
            if req.stop.load(Ordering::Relaxed) {
                return Err(ReadError::Stopped);
            }
            req.rows_read.store(stats.rows, Ordering::Relaxed);
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES + 4096));
            out.blocking_send(full).map_err(|_| ReadError::Stopped)?;
        }
    }
    if let Some(msg) = gdal_failure() {
        return Err(ReadError::Invalid(format!(
            "reading stopped after {} features: {msg}",
            stats.rows
        )));
    }
    if !kept_as_text.is_empty() && source_texts.len() as u64 != stats.rows {
        return Err(ReadError::Invalid(format!(
            "GDAL read {} features but the file's text holds {}",
            stats.rows,
            source_texts.len()
        )));
    }
    chunk.extend_from_slice(binary::TRAILER);
    out.blocking_send(chunk).map_err(|_| ReadError::Stopped)?;
    Ok(stats)
}

/// One feature being written, and where its kept-as-text columns come
/// from: the file's own text of that row.
struct Row<'a> {
    feature: &'a OwnedFeature,
    kept_as_text: &'a [usize],
    texts: Option<&'a source_text::Texts>,
}

/// Writes a row's attributes, and keeps each column's first distinct
/// values as its samples.
fn write_attributes(
    chunk: &mut Vec<u8>,
    row: &Row,
    fields: &[FieldPlan],
    samples: &mut [Vec<Value>],
    sample_keys: &mut [HashSet<String>],
) {
    for (i, field) in fields.iter().enumerate() {
        let sample = samples[i].len() < SAMPLES_PER_COLUMN;
        let value = match row.kept_as_text.iter().position(|&k| k == i) {
            Some(k) => {
                let text = row.texts.and_then(|texts| texts[k].as_deref());
                write_text(chunk, field.pg, text, sample)
            }
            // SAFETY: `row.feature` is a live feature we own, and `i` is a field index of its layer's definition
            // (the plan's fields were made, in order, from the definition of this layer of the same file).
            None => unsafe { write_field(chunk, row.feature.0, i as c_int, field, sample) },
        };
        if let Some(value) = value
            && sample_keys[i].insert(value.to_string())
        {
            samples[i].push(value);
        }
    }
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
/// dimensions, or NULL for a feature without geometry.
unsafe fn write_geometry(
    buf: &mut Vec<u8>,
    wkb: &mut Vec<u8>,
    h_feature: gdal_sys::OGRFeatureH,
    transform: Option<&CoordTransform>,
    target: GeomTarget,
    has_z: bool,
    stats: &mut ReadStats,
) -> Result<(), ReadError> {
    // SAFETY: the caller passes a live feature it owns; its geometry, stolen into an `OwnedGeometry` (which frees
    // it), is null-checked before use. OGR_G_GetLinearGeometry's result is checked and replaces (frees) the curve.
    // OGR_G_ForceTo takes ownership of the old geometry, so `geom.0` is overwritten without a free; a null result
    // would fail `flat != wanted` (OGR_G_GetGeometryType answers wkbUnknown for null) before any other use.
    // `transform` outlives the block. `wkb` is resized to OGR_G_WkbSize bytes before OGR_G_ExportToWkb writes them.
    unsafe {
        let mut geom = OwnedGeometry(gdal_sys::OGR_F_StealGeometry(h_feature));
        if geom.0.is_null() {
            binary::null(buf);
            return Ok(());
        }
        // GeoJSON, MVT and the export formats know no curves, so every
        // curve type is linearised here, once, whether or not it holds an
        // arc: a CompoundCurve of straight parts or a MultiSurface of plain
        // polygons is still a curve type that PostGIS cannot render.
        let source_type = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
        if gdal_sys::OGR_G_HasCurveGeometry(geom.0, 0) != 0 {
            let linear = gdal_sys::OGR_G_GetLinearGeometry(geom.0, 0.0, std::ptr::null_mut());
            if linear.is_null() {
                return Err(ReadError::Invalid(format!(
                    "a {} could not be turned into straight segments",
                    postgis_type_name(source_type)
                )));
            }
            geom = OwnedGeometry(linear);
            stats.curves_linearized.insert(postgis_type_name(source_type));
        }
        if let Some(ct) = transform
            && gdal_sys::OGR_G_Transform(geom.0, ct.to_c_hct()) != gdal_sys::OGRErr::OGRERR_NONE
        {
            return Err(ReadError::Invalid(
                "the geometry could not be reprojected to EPSG:4326".into(),
            ));
        }
        let mut flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
        if let GeomTarget::Fixed(wanted) = target {
            if is_multi_of(wanted, flat) {
                let promoted = gdal_sys::OGR_G_ForceTo(geom.0, wanted, std::ptr::null_mut());
                geom.0 = promoted;
                flat = gdal_sys::OGR_GT_Flatten(gdal_sys::OGR_G_GetGeometryType(geom.0));
            }
            if flat != wanted {
                return Err(ReadError::GeometryMismatch);
            }
        }
        if gdal_sys::OGR_G_IsMeasured(geom.0) != 0 {
            gdal_sys::OGR_G_SetMeasured(geom.0, 0);
        }
        let is_3d = gdal_sys::OGR_G_Is3D(geom.0) != 0;
        if has_z && !is_3d {
            gdal_sys::OGR_G_Set3D(geom.0, 1);
        } else if !has_z && is_3d {
            gdal_sys::OGR_G_FlattenTo2D(geom.0);
        }
        // A coordinate WGS 84 does not have would break every read that
        // transforms or draws it (`docs/decisions.md`, Values the service
        // refuses).
        if gdal_sys::OGR_G_IsEmpty(geom.0) != 0 {
            return Err(ReadError::Invalid(format!(
                "its geometry is an empty {}, which is not stored (a missing geometry is null)",
                postgis_type_name(flat)
            )));
        }
        if let Some((x, y)) = position_outside_wgs84(geom.0) {
            return Err(ReadError::Invalid(format!(
                "the coordinate ({x:?}, {y:?}) lies outside WGS 84 (longitude -180 to 180, latitude -90 to 90); \
                 is the layer's coordinate system declared right?"
            )));
        }
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
        Ok(())
    }
}

/// The first position of `geom` (in EPSG:4326) that is not a finite
/// longitude in [-180, 180] and latitude in [-90, 90] (with
/// `wgs84::SLACK_DEGREES`), if any. Every
/// position is looked at: an envelope skips a NaN that is not first.
unsafe fn position_outside_wgs84(geom: gdal_sys::OGRGeometryH) -> Option<(f64, f64)> {
    // SAFETY: `geom` is a valid geometry and its parts live as long as it
    // does; the calls only read it.
    unsafe {
        let parts = gdal_sys::OGR_G_GetGeometryCount(geom);
        if parts > 0 {
            return (0..parts).find_map(|i| position_outside_wgs84(gdal_sys::OGR_G_GetGeometryRef(geom, i)));
        }
        (0..gdal_sys::OGR_G_GetPointCount(geom)).find_map(|i| {
            let (x, y) = (gdal_sys::OGR_G_GetX(geom, i), gdal_sys::OGR_G_GetY(geom, i));
            (!catalog_shared::wgs84::contains(x, y)).then_some((x, y))
        })
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

/// Text from GDAL as UTF-8. GDAL recodes sources with a declared
/// encoding; bytes that are still not UTF-8 are taken as Latin-1, the
/// usual encoding of legacy files, rather than dropped.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string that stays valid for the call
/// (one GDAL has just returned, before any other call on its feature).
unsafe fn text_of(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: `ptr` is non-null (checked above) and, as the caller
    // promises, NUL-terminated and valid for this call.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

fn sample_text(s: &str) -> Value {
    Value::String(s.chars().take(SAMPLE_TEXT_CHARS).collect())
}

/// Writes an attribute from the source's own text: a text column, or a
/// jsonb one when the text is a JSON array.
fn write_text(buf: &mut Vec<u8>, pg: PgType, text: Option<&str>, sample: bool) -> Option<Value> {
    let Some(text) = text else {
        binary::null(buf);
        return None;
    };
    if pg == PgType::Jsonb {
        // A lone string where the others are arrays comes decoded; it goes
        // in as a JSON string.
        let value: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
        match value {
            Value::String(_) => binary::jsonb(buf, &value.to_string()),
            _ => binary::jsonb(buf, text),
        }
        return sample.then_some(value);
    }
    binary::bytes(buf, text.as_bytes());
    sample.then(|| sample_text(text))
}

/// Writes one attribute; returns its value as JSON when asked for a sample.
unsafe fn write_field(
    buf: &mut Vec<u8>,
    h: gdal_sys::OGRFeatureH,
    i: c_int,
    field: &FieldPlan,
    sample: bool,
) -> Option<Value> {
    // SAFETY: the caller passes a live feature (`h`) and a field index `i` of its definition. The strings, lists
    // and binaries GDAL returns belong to the feature and are copied here before the next call on it; the binary
    // is read only when non-null, for the `len` bytes GDAL reports.
    unsafe {
        if gdal_sys::OGR_F_IsFieldSetAndNotNull(h, i) == 0 {
            binary::null(buf);
            return None;
        }
        match field.pg {
            PgType::Boolean => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger(h, i) != 0;
                binary::bool(buf, v);
                sample.then(|| Value::Bool(v))
            }
            PgType::Integer => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger(h, i);
                binary::i32(buf, v);
                sample.then(|| Value::from(v))
            }
            PgType::BigInt => {
                let v = gdal_sys::OGR_F_GetFieldAsInteger64(h, i);
                binary::i64(buf, v);
                sample.then(|| Value::from(v))
            }
            PgType::Double => {
                let v = gdal_sys::OGR_F_GetFieldAsDouble(h, i);
                binary::f64(buf, v);
                if sample {
                    serde_json::Number::from_f64(v).map(Value::Number)
                } else {
                    None
                }
            }
            PgType::Text => {
                let s = text_of(gdal_sys::OGR_F_GetFieldAsString(h, i));
                binary::bytes(buf, s.as_bytes());
                sample.then(|| sample_text(&s))
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
                None
            }
            PgType::Jsonb => {
                let value = list_value(h, i, field.ogr_type);
                binary::jsonb(buf, &value.to_string());
                sample.then_some(value)
            }
            PgType::Date | PgType::Time | PgType::TimestampTz => write_temporal(buf, h, i, field.pg, sample),
        }
    }
}

unsafe fn list_value(h: gdal_sys::OGRFeatureH, i: c_int, ogr_type: OGRFieldType::Type) -> Value {
    // SAFETY: the caller passes a live feature and one of its field indices. Each list GDAL returns belongs to the
    // feature and is copied out at once: a numeric one through `slice_or_empty` with the length GDAL wrote, the
    // string list walked (null-checked) up to its terminating null.
    unsafe {
        let mut len: c_int = 0;
        match ogr_type {
            OGRFieldType::OFTIntegerList => {
                let p = gdal_sys::OGR_F_GetFieldAsIntegerList(h, i, &mut len);
                Value::from(slice_or_empty(p, len).to_vec())
            }
            OGRFieldType::OFTInteger64List => {
                let p = gdal_sys::OGR_F_GetFieldAsInteger64List(h, i, &mut len);
                Value::from(slice_or_empty(p, len).to_vec())
            }
            OGRFieldType::OFTRealList => {
                let p = gdal_sys::OGR_F_GetFieldAsDoubleList(h, i, &mut len);
                Value::Array(
                    slice_or_empty(p, len)
                        .iter()
                        .map(|v| serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number))
                        .collect(),
                )
            }
            _ => {
                let mut p = gdal_sys::OGR_F_GetFieldAsStringList(h, i);
                let mut items = Vec::new();
                while !p.is_null() && !(*p).is_null() {
                    items.push(Value::String(text_of(*p)));
                    p = p.add(1);
                }
                Value::Array(items)
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

/// Dates, times and timestamps; a value that is not a real calendar date
/// (a zero month, say) is stored as NULL rather than failing the load.
unsafe fn write_temporal(
    buf: &mut Vec<u8>,
    h: gdal_sys::OGRFeatureH,
    i: c_int,
    pg: PgType,
    sample: bool,
) -> Option<Value> {
    let (mut y, mut mo, mut d, mut hh, mut mi, mut tz) = (0, 0, 0, 0, 0, 0);
    let mut sec: f32 = 0.0;
    // SAFETY: the caller passes a live feature and one of its field indices; the out-pointers are locals.
    let ok = unsafe {
        gdal_sys::OGR_F_GetFieldAsDateTimeEx(h, i, &mut y, &mut mo, &mut d, &mut hh, &mut mi, &mut sec, &mut tz)
    } != 0;
    let micros_of_day = ((hh as i64 * 60 + mi as i64) * 60) * 1_000_000 + (sec as f64 * 1_000_000.0).round() as i64;
    // SAFETY: `h` and `i` are valid for this whole function and the closure is only called in it; `text_of` copies
    // the string GDAL returns at once.
    let text = || unsafe { text_of(gdal_sys::OGR_F_GetFieldAsString(h, i)) };
    match pg {
        PgType::Time if ok => {
            binary::i64(buf, micros_of_day);
            sample.then(|| Value::String(text()))
        }
        PgType::Date if ok => match binary::days_since_pg_epoch(y, mo as u32, d as u32) {
            Some(days) => {
                binary::i32(buf, days);
                sample.then(|| Value::String(text()))
            }
            None => {
                binary::null(buf);
                None
            }
        },
        PgType::TimestampTz if ok => match binary::days_since_pg_epoch(y, mo as u32, d as u32) {
            Some(days) => {
                // GDAL's tz flag: 0 unknown and 1 local (both taken as UTC),
                // 100 UTC, otherwise 15-minute steps away from 100.
                let offset_minutes = if tz > 1 { (tz as i64 - 100) * 15 } else { 0 };
                let micros = days as i64 * 86_400_000_000 + micros_of_day - offset_minutes * 60_000_000;
                binary::i64(buf, micros);
                sample.then(|| Value::String(text()))
            }
            None => {
                binary::null(buf);
                None
            }
        },
        _ => {
            binary::null(buf);
            None
        }
    }
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
