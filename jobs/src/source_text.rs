//! The source's own text of attribute values, read beside GDAL's typed
//! reading. GDAL parses numbers as it reads (`00501` becomes 501, an
//! integer past int64 is clamped, long decimals are rounded to a double),
//! so whether a number column would keep every value can only be told, and
//! a column that would not can only be filled, from the text itself.
use std::{
    collections::HashMap,
    ffi::CString,
    fmt,
    io::{self, Read},
};

use catalog_shared::uploads::SourceFormat;
use gdal::{Dataset, DatasetOptions, GdalOpenFlags, vector::LayerAccess};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::{
    columns::{Fidelity, NumericFit, PgType},
    plan::{LayerPlan, ReadError},
};

/// The CSV options without type detection: the fields and geometry GDAL
/// finds with detection, every value as the text written in the file.
pub const CSV_AS_TEXT: &[&str] = &[
    "X_POSSIBLE_NAMES=lon,lng,long,longitude,x,xcoord,x_coord,easting",
    "Y_POSSIBLE_NAMES=lat,latitude,y,ycoord,y_coord,northing",
    "GEOM_POSSIBLE_NAMES=wkt,geom,geometry,the_geom,wkt_geom",
    "KEEP_GEOM_COLUMNS=NO",
    "EMPTY_STRING_AS_NULL=YES",
];

/// The texts of some fields of one feature, in the order asked for.
pub type Texts = Vec<Option<String>>;

/// How the format's values compare, or `None` when it stores typed values
/// that GDAL hands over unchanged (a GeoPackage's columns are typed).
pub fn fidelity(format: SourceFormat) -> Option<Fidelity> {
    match format {
        SourceFormat::Csv => Some(Fidelity::Text),
        SourceFormat::GeoJson | SourceFormat::Shapefile => Some(Fidelity::Number),
        SourceFormat::GeoPackage | SourceFormat::GeoTiff => None,
    }
}

/// Gives number fields that would change a value the type text, filled
/// from the source's own text; GeoJSON arrays are filled from it too.
pub fn keep_values(path: &str, format: SourceFormat, plan: &mut LayerPlan) -> Result<(), ReadError> {
    let Some(fidelity) = fidelity(format) else {
        return Ok(());
    };
    let numeric: Vec<usize> = plan
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.pg, PgType::Integer | PgType::BigInt | PgType::Double))
        .map(|(i, _)| i)
        .collect();
    // GeoJSON arrays go into jsonb as written: GDAL's lists clamp integers
    // past int64 and round decimals, while jsonb keeps every number exactly.
    let arrays: Vec<usize> = match format {
        SourceFormat::GeoJson => (0..plan.fields.len())
            .filter(|&i| plan.fields[i].pg == PgType::Jsonb)
            .collect(),
        _ => Vec::new(),
    };
    if numeric.is_empty() && arrays.is_empty() {
        return Ok(());
    }
    let mut fits = vec![NumericFit::default(); numeric.len()];
    let read = scan(path, format, plan, &numeric, &mut |texts| {
        for (fit, text) in fits.iter_mut().zip(texts) {
            if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
                fit.observe(&text, fidelity);
            }
        }
    })?;
    if !read {
        tracing::warn!(layer = %plan.name, "the source's own text could not be read; GDAL's number types are kept");
        return Ok(());
    }
    for (&i, fit) in numeric.iter().zip(&fits) {
        let field = &mut plan.fields[i];
        if !fit.holds(field.pg) {
            field.pg = PgType::Text;
            field.from_source_text = true;
        }
    }
    for i in arrays {
        plan.fields[i].from_source_text = true;
    }
    Ok(())
}

/// Calls `each` with the source's text of the chosen fields (indexes into
/// `plan.fields`) for every feature, in the order GDAL reads them. Answers
/// false when the text could not be read apart from GDAL (a GeoJSON
/// document that is not one JSON value per collection or feature).
pub fn scan(
    path: &str,
    format: SourceFormat,
    plan: &LayerPlan,
    chosen: &[usize],
    each: &mut dyn FnMut(Texts),
) -> Result<bool, ReadError> {
    match format {
        SourceFormat::Csv => scan_csv(path, plan, chosen, each).map(|()| true),
        SourceFormat::GeoJson => {
            let names: Vec<&str> = chosen.iter().map(|&i| plan.fields[i].original.as_str()).collect();
            scan_geojson(path, &names, each)
        }
        SourceFormat::Shapefile => scan_dbf(path, plan, chosen, each),
        SourceFormat::GeoPackage | SourceFormat::GeoTiff => Ok(false),
    }
}

/// The CSV opened again without type detection: every value as written.
fn scan_csv(path: &str, plan: &LayerPlan, chosen: &[usize], each: &mut dyn FnMut(Texts)) -> Result<(), ReadError> {
    let ds = Dataset::open_ex(
        path,
        DatasetOptions {
            open_flags: GdalOpenFlags::GDAL_OF_VECTOR | GdalOpenFlags::GDAL_OF_READONLY,
            allowed_drivers: Some(&["CSV"]),
            open_options: Some(CSV_AS_TEXT),
            sibling_files: None,
        },
    )
    .map_err(|e| ReadError::Invalid(format!("the file could not be read as csv: {e}")))?;
    let mut layer = ds
        .layer(plan.index)
        .map_err(|e| ReadError::Invalid(format!("layer {} could not be opened: {e}", plan.name)))?;
    for feature in layer.features() {
        each(
            chosen
                .iter()
                .map(|&i| feature.field_as_string(i).ok().flatten())
                .collect(),
        );
    }
    Ok(())
}

/// A file read through GDAL's virtual file system, so members of a zip
/// (`/vsizip/...`) read like plain files.
struct VsiFile(*mut gdal_sys::VSILFILE);

impl VsiFile {
    fn open(path: &str) -> Option<Self> {
        let path = CString::new(path).ok()?;
        // SAFETY: both arguments are NUL-terminated C strings (`path` lives to the end of this function, "rb" is
        // static) that VSIFOpenL only reads; a null result (checked next) means the file did not open.
        let handle = unsafe { gdal_sys::VSIFOpenL(path.as_ptr(), c"rb".as_ptr()) };
        (!handle.is_null()).then_some(VsiFile(handle))
    }
}

impl Read for VsiFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `self.0` is a non-null handle from VSIFOpenL, open until `drop`, and used only by the thread that
        // owns this `VsiFile` (its raw pointer makes it neither Send nor Sync); VSIFReadL writes at most
        // `buf.len()` one-byte items into `buf`, which is valid for writes of that length.
        let read = unsafe { gdal_sys::VSIFReadL(buf.as_mut_ptr().cast(), 1, buf.len(), self.0) };
        // Nothing read is the end of the file only when GDAL says so; else the
        // read failed (a cut archive, a store gone), which a short sample must not hide.
        // SAFETY: `self.0` is the open handle, as above; VSIFEofL only reads its state.
        if read == 0 && !buf.is_empty() && unsafe { gdal_sys::VSIFEofL(self.0) } == 0 {
            return Err(io::Error::other("the file could not be read to its end"));
        }
        Ok(read)
    }
}

impl Drop for VsiFile {
    fn drop(&mut self) {
        // SAFETY: `self.0` is the non-null handle VSIFOpenL gave us (a `VsiFile` is made only then); `VsiFile` is
        // neither Clone nor Copy, so it is closed exactly once, here.
        unsafe {
            gdal_sys::VSIFCloseL(self.0);
        }
    }
}

fn open_file(path: &str) -> Result<io::BufReader<VsiFile>, ReadError> {
    VsiFile::open(path)
        .map(|f| io::BufReader::with_capacity(1 << 16, f))
        .ok_or_else(|| ReadError::Invalid(format!("{path} could not be opened")))
}

/// A GeoJSON FeatureCollection, a lone Feature, or a sequence of Features
/// (GeoJSONSeq, newline-delimited), streamed: only one feature's
/// properties are held at a time.
fn scan_geojson(path: &str, names: &[&str], each: &mut dyn FnMut(Texts)) -> Result<bool, ReadError> {
    let mut de = serde_json::Deserializer::from_reader(open_file(path)?);
    loop {
        if de.end().is_ok() {
            return Ok(true);
        }
        if let Err(e) = (TopLevel {
            names,
            each: &mut *each,
        })
        .deserialize(&mut de)
        {
            tracing::warn!(error = %e, "GeoJSON could not be read as JSON values");
            return Ok(false);
        }
    }
}

type Properties = HashMap<String, Box<RawValue>>;

fn texts_of(properties: Option<Properties>, names: &[&str]) -> Texts {
    let properties = properties.unwrap_or_default();
    names
        .iter()
        .map(|name| {
            let raw = properties.get(*name)?.get();
            match raw.as_bytes().first() {
                Some(b'"') => serde_json::from_str::<String>(raw).ok(),
                _ if raw == "null" => None,
                _ => Some(raw.to_string()),
            }
        })
        .collect()
}

/// The document's top level: its `features`, or its own `properties`
/// when it is a lone Feature.
struct TopLevel<'a, 'f> {
    names: &'a [&'a str],
    each: &'f mut dyn FnMut(Texts),
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a GeoJSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut collection = false;
        let mut own = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "features" => {
                    collection = true;
                    map.next_value_seed(FeatureList {
                        names: self.names,
                        each: &mut *self.each,
                    })?;
                }
                "properties" => own = Some(map.next_value::<Option<Properties>>()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !collection {
            (self.each)(texts_of(own.flatten(), self.names));
        }
        Ok(())
    }
}

struct FeatureList<'a, 'f> {
    names: &'a [&'a str],
    each: &'f mut dyn FnMut(Texts),
}

impl<'de> DeserializeSeed<'de> for FeatureList<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FeatureList<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of features")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(properties) = seq.next_element::<FeatureProperties>()? {
            (self.each)(texts_of(properties.properties, self.names));
        }
        Ok(())
    }
}

#[derive(serde::Deserialize)]
struct FeatureProperties {
    properties: Option<Properties>,
}

/// A shapefile's attributes straight from its DBF: numbers are stored
/// there as fixed-width text. GDAL skips deleted records, and so does this.
fn scan_dbf(path: &str, plan: &LayerPlan, chosen: &[usize], each: &mut dyn FnMut(Texts)) -> Result<bool, ReadError> {
    let stem = path
        .strip_suffix(".shp")
        .or_else(|| path.strip_suffix(".SHP"))
        .unwrap_or(path);
    let Some(file) = [".dbf", ".DBF"]
        .iter()
        .find_map(|ext| VsiFile::open(&format!("{stem}{ext}")))
    else {
        return Ok(false);
    };
    let mut file = io::BufReader::with_capacity(1 << 16, file);
    let bad = |e: io::Error| ReadError::Invalid(format!("the .dbf could not be read: {e}"));
    let mut header = [0u8; 32];
    file.read_exact(&mut header).map_err(bad)?;
    let records = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let header_len = u16::from_le_bytes([header[8], header[9]]) as usize;
    let record_len = u16::from_le_bytes([header[10], header[11]]) as usize;
    let mut rest = vec![0u8; header_len.saturating_sub(32)];
    file.read_exact(&mut rest).map_err(bad)?;
    // Field descriptors: 32 bytes each, ended by 0x0D; the length is byte 16.
    let mut spans = Vec::new();
    let mut offset = 1;
    for descriptor in rest.chunks_exact(32).take_while(|d| d[0] != 0x0D) {
        let len = descriptor[16] as usize;
        spans.push((offset, offset + len));
        offset += len;
    }
    if spans.len() != plan.fields.len() || offset > record_len {
        return Ok(false);
    }
    let mut record = vec![0u8; record_len];
    for _ in 0..records {
        match file.read_exact(&mut record) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(bad(e)),
        }
        if record[0] == b'*' {
            continue;
        }
        each(
            chosen
                .iter()
                .map(|&i| {
                    let (start, end) = spans[i];
                    let text = String::from_utf8_lossy(&record[start..end]);
                    let text = text.trim();
                    (!text.is_empty()).then(|| text.to_string())
                })
                .collect(),
        );
    }
    Ok(true)
}
