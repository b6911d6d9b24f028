//! GeoParquet 1.1 downloads, written by the service itself: Debian's GDAL
//! has no Parquet driver, and DuckDB, geopandas and Arrow users read
//! nothing else as well. The export's query is described first (its
//! columns' types make the file's schema), then its rows stream from
//! PostGIS, the geometry as ISO WKB with its box beside it (the `bbox`
//! covering struct), into row groups of at most `ROW_GROUP_ROWS` rows or
//! `ROW_GROUP_BYTES` bytes, so memory stays bounded and a reader with a box
//! skips the row groups that miss it (features without an asked order come
//! in PostGIS's spatial order for that reason). The `geo` metadata names
//! the geometry column, its types, box and CRS (PROJJSON).
use std::{
    collections::BTreeSet,
    fs::File,
    io::BufWriter,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use catalog_shared::{AppError, datasets::GeometryType, db::quote_ident};
use futures::TryStreamExt;
use parquet::{
    basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical},
    column::writer::ColumnWriter,
    data_type::ByteArray,
    file::{
        metadata::KeyValue,
        properties::{EnabledStatistics, WriterProperties},
        writer::SerializedFileWriter,
    },
    schema::types::{ColumnPath, Type},
};
use sqlx::{Column as _, Connection, Executor, PgConnection, Row, SqlSafeStr, TypeInfo, postgres::PgRow};

use crate::ogc::{crs::Crs, items::query_error};

/// Rows of one row group at most (the decisions' figure).
const ROW_GROUP_ROWS: usize = 100_000;
/// Bytes of values held before a row group is written, whatever its rows:
/// big polygons would otherwise hold hundreds of megabytes.
const ROW_GROUP_BYTES: usize = 64 << 20;

/// What the file's writer is given.
pub(super) struct GeoParquet<'a> {
    /// The database, as a URL (a connection of its own, not the pool's).
    pub database_url: &'a str,
    /// The export's query (`ogc::exports`), its rows in their order.
    pub sql: &'a str,
    /// The same query without its order, to sort spatially when no order
    /// was asked for.
    pub unordered_sql: &'a str,
    pub ordered: bool,
    /// The geometry column of the query's rows, if it selects one.
    pub geometry_column: Option<&'a str>,
    pub crs: Crs,
}

/// How a column of the query is read and written.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Boolean,
    SmallInt,
    Integer,
    BigInt,
    Real,
    Double,
    /// `numeric`: written as a double, as GDAL's formats take it.
    Numeric,
    Text,
    Json,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since midnight.
    Time,
    /// Microseconds since 1970-01-01; `true`: with a time zone (UTC).
    Timestamp(bool),
    Bytes,
    Geometry,
}

impl Kind {
    /// By the name sqlx gives the column's PostgreSQL type; anything else
    /// (an array, `inet`, a domain…) goes as its text.
    fn of(type_name: &str) -> Self {
        match type_name {
            "BOOL" => Kind::Boolean,
            "INT2" => Kind::SmallInt,
            "INT4" => Kind::Integer,
            "INT8" => Kind::BigInt,
            "FLOAT4" => Kind::Real,
            "FLOAT8" => Kind::Double,
            "NUMERIC" => Kind::Numeric,
            "JSON" | "JSONB" => Kind::Json,
            "DATE" => Kind::Date,
            "TIME" => Kind::Time,
            "TIMESTAMP" => Kind::Timestamp(false),
            "TIMESTAMPTZ" => Kind::Timestamp(true),
            "BYTEA" => Kind::Bytes,
            "geometry" => Kind::Geometry,
            _ => Kind::Text,
        }
    }

    /// The expression that reads the column `q.<name>` as this kind is
    /// decoded: infinite dates and times, which Parquet cannot hold, are
    /// nulls.
    fn select(self, name: &str) -> String {
        let column = format!("q.{}", quote_ident(name));
        match self {
            Kind::Numeric => format!("{column}::float8"),
            Kind::Text | Kind::Json => format!("{column}::text"),
            Kind::Date => format!("CASE WHEN isfinite({column}) THEN {column} - DATE '1970-01-01' END"),
            Kind::Time => format!("(extract(epoch FROM {column}) * 1000000)::int8"),
            Kind::Timestamp(_) => {
                format!("CASE WHEN isfinite({column}) THEN (extract(epoch FROM {column}) * 1000000)::int8 END")
            }
            Kind::Geometry => format!(
                "ST_AsBinary({column}), ST_XMin({column}), ST_YMin({column}), ST_XMax({column}), ST_YMax({column})"
            ),
            _ => column,
        }
    }

    /// The column's Parquet type: every column may be null.
    fn field(self, name: &str) -> Result<Type, parquet::errors::ParquetError> {
        let (physical, logical) = match self {
            Kind::Boolean => (Physical::BOOLEAN, None),
            Kind::SmallInt => (Physical::INT32, Some(LogicalType::integer(16, true))),
            Kind::Integer => (Physical::INT32, None),
            Kind::BigInt => (Physical::INT64, None),
            Kind::Real => (Physical::FLOAT, None),
            Kind::Double | Kind::Numeric => (Physical::DOUBLE, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Kind::Json => (Physical::BYTE_ARRAY, Some(LogicalType::Json)),
            Kind::Date => (Physical::INT32, Some(LogicalType::Date)),
            Kind::Time => (Physical::INT64, Some(LogicalType::time(false, TimeUnit::MICROS))),
            Kind::Timestamp(utc) => (Physical::INT64, Some(LogicalType::timestamp(utc, TimeUnit::MICROS))),
            Kind::Bytes | Kind::Geometry => (Physical::BYTE_ARRAY, None),
        };
        Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
    }
}

/// One column's values of the row group being gathered, with the
/// definition level of each row (0: null).
enum Values {
    Boolean(Vec<bool>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Bytes(Vec<ByteArray>),
}

struct Buffer {
    values: Values,
    levels: Vec<i16>,
}

impl Buffer {
    fn new(kind: Kind) -> Self {
        let values = match kind {
            Kind::Boolean => Values::Boolean(Vec::new()),
            Kind::SmallInt | Kind::Integer | Kind::Date => Values::Int32(Vec::new()),
            Kind::BigInt | Kind::Time | Kind::Timestamp(_) => Values::Int64(Vec::new()),
            Kind::Real => Values::Float(Vec::new()),
            Kind::Double | Kind::Numeric => Values::Double(Vec::new()),
            Kind::Text | Kind::Json | Kind::Bytes | Kind::Geometry => Values::Bytes(Vec::new()),
        };
        Buffer {
            values,
            levels: Vec::new(),
        }
    }

    /// Takes the row's value at `index`; answers the bytes it holds.
    fn push(&mut self, kind: Kind, row: &PgRow, index: usize) -> Result<usize, sqlx::Error> {
        let (present, size) = match (&mut self.values, kind) {
            (Values::Boolean(v), _) => keep(v, row.try_get::<Option<bool>, _>(index)?, 1),
            (Values::Int32(v), Kind::SmallInt) => keep(v, row.try_get::<Option<i16>, _>(index)?.map(i32::from), 4),
            (Values::Int32(v), _) => keep(v, row.try_get::<Option<i32>, _>(index)?, 4),
            (Values::Int64(v), _) => keep(v, row.try_get::<Option<i64>, _>(index)?, 8),
            (Values::Float(v), _) => keep(v, row.try_get::<Option<f32>, _>(index)?, 4),
            (Values::Double(v), _) => keep(v, row.try_get::<Option<f64>, _>(index)?, 8),
            (Values::Bytes(v), Kind::Text | Kind::Json) => {
                let text = row.try_get::<Option<String>, _>(index)?;
                let size = text.as_ref().map_or(0, String::len);
                keep(v, text.map(|t| ByteArray::from(t.into_bytes())), size)
            }
            (Values::Bytes(v), _) => {
                let bytes = row.try_get::<Option<Vec<u8>>, _>(index)?;
                let size = bytes.as_ref().map_or(0, Vec::len);
                keep(v, bytes.map(ByteArray::from), size)
            }
        };
        self.levels.push(i16::from(present));
        Ok(size)
    }

    fn clear(&mut self) {
        self.levels.clear();
        match &mut self.values {
            Values::Boolean(v) => v.clear(),
            Values::Int32(v) => v.clear(),
            Values::Int64(v) => v.clear(),
            Values::Float(v) => v.clear(),
            Values::Double(v) => v.clear(),
            Values::Bytes(v) => v.clear(),
        }
    }

    fn write(&self, writer: &mut ColumnWriter<'_>) -> Result<(), parquet::errors::ParquetError> {
        let levels = Some(&self.levels[..]);
        match (&self.values, writer) {
            (Values::Boolean(v), ColumnWriter::BoolColumnWriter(w)) => w.write_batch(v, levels, None),
            (Values::Int32(v), ColumnWriter::Int32ColumnWriter(w)) => w.write_batch(v, levels, None),
            (Values::Int64(v), ColumnWriter::Int64ColumnWriter(w)) => w.write_batch(v, levels, None),
            (Values::Float(v), ColumnWriter::FloatColumnWriter(w)) => w.write_batch(v, levels, None),
            (Values::Double(v), ColumnWriter::DoubleColumnWriter(w)) => w.write_batch(v, levels, None),
            (Values::Bytes(v), ColumnWriter::ByteArrayColumnWriter(w)) => w.write_batch(v, levels, None),
            _ => {
                return Err(parquet::errors::ParquetError::General(
                    "a column's values and type differ".into(),
                ));
            }
        }
        .map(drop)
    }
}

/// Keeps a value, if there is one; answers whether there was and its size.
fn keep<T>(values: &mut Vec<T>, value: Option<T>, size: usize) -> (bool, usize) {
    match value {
        Some(value) => {
            values.push(value);
            (true, size)
        }
        None => (false, 0),
    }
}

/// What the `geo` metadata says of the geometry column, gathered row by row.
#[derive(Default)]
struct Extent {
    types: BTreeSet<String>,
    bbox: Option<[f64; 4]>,
}

impl Extent {
    fn add(&mut self, wkb: Option<&ByteArray>, bbox: Option<[f64; 4]>) {
        if let Some(kind) = wkb.and_then(|w| wkb_type(w.data())) {
            self.types.insert(kind);
        }
        if let Some(b) = bbox {
            self.bbox = Some(match self.bbox {
                None => b,
                Some(a) => [a[0].min(b[0]), a[1].min(b[1]), a[2].max(b[2]), a[3].max(b[3])],
            });
        }
    }
}

/// The GeoParquet name of an ISO WKB geometry's type (`Point Z`…): codes
/// 1 to 7 are the shared types in their order, plus 1000 for Z, 2000 for M
/// and 3000 for both.
fn wkb_type(wkb: &[u8]) -> Option<String> {
    let header: [u8; 4] = wkb.get(1..5)?.try_into().ok()?;
    let code = match wkb.first()? {
        0 => u32::from_be_bytes(header),
        _ => u32::from_le_bytes(header),
    };
    let dimensions = ["", " Z", " M", " ZM"].get((code / 1000) as usize)?;
    let base = ((code % 1000) as usize).checked_sub(1)?;
    let kind = GeometryType::ALL.get(base).filter(|k| **k != GeometryType::Geometry)?;
    Some(format!("{kind}{dimensions}"))
}

impl GeoParquet<'_> {
    /// Writes `<stem>.parquet` into `dir`, stopping with an error as soon
    /// as `cancelled` is set. Runs on a blocking thread: it drives the
    /// database's stream with the runtime's handle and compresses between.
    pub(super) fn write(
        &self,
        runtime: &tokio::runtime::Handle,
        dir: &Path,
        stem: &str,
        cancelled: &AtomicBool,
    ) -> Result<PathBuf, AppError> {
        runtime.block_on(async {
            let mut connection = PgConnection::connect(self.database_url).await?;
            let described = connection
                .describe(sqlx::AssertSqlSafe(self.sql.to_string()).into_sql_str())
                .await?;
            let columns: Vec<(String, Kind)> = described
                .columns()
                .iter()
                .map(|c| {
                    let kind = match Kind::of(c.type_info().name()) {
                        Kind::Geometry if Some(c.name()) != self.geometry_column => Kind::Bytes,
                        kind => kind,
                    };
                    (c.name().to_string(), kind)
                })
                .collect();
            let geometry = columns
                .iter()
                .find(|(_, kind)| *kind == Kind::Geometry)
                .map(|(n, _)| n.clone());
            let select: Vec<String> = columns.iter().map(|(name, kind)| kind.select(name)).collect();
            let sql = match (&geometry, self.ordered) {
                (Some(g), false) => format!(
                    "SELECT {} FROM ({}) q ORDER BY q.{}",
                    select.join(", "),
                    self.unordered_sql,
                    quote_ident(g)
                ),
                _ => format!("SELECT {} FROM ({}) q", select.join(", "), self.sql),
            };
            let covering = covering_name(&columns);
            let schema = schema(&columns, covering.as_deref()).map_err(parquet_error)?;
            let target = dir.join(format!("{stem}.parquet"));
            let file = File::create(&target).map_err(AppError::internal)?;
            let mut writer =
                SerializedFileWriter::new(BufWriter::new(file), Arc::new(schema), properties(geometry.as_deref()))
                    .map_err(parquet_error)?;
            let mut buffers: Vec<Buffer> = columns.iter().map(|(_, kind)| Buffer::new(*kind)).collect();
            let mut boxes = BoxBuffer::default();
            let mut extent = Extent::default();
            let (mut rows, mut bytes) = (0usize, 0usize);
            let mut stream = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut connection);
            // A value the filter cannot read fails here, as in items: the caller's 400.
            while let Some(row) = stream.try_next().await.map_err(query_error)? {
                if cancelled.load(Ordering::Relaxed) {
                    return Err(AppError::internal("export stopped: the client left"));
                }
                let mut index = 0;
                for ((_, kind), buffer) in columns.iter().zip(&mut buffers) {
                    bytes += buffer.push(*kind, &row, index)?;
                    index += 1;
                    if *kind == Kind::Geometry {
                        let corners: [Option<f64>; 4] = [
                            row.try_get(index)?,
                            row.try_get(index + 1)?,
                            row.try_get(index + 2)?,
                            row.try_get(index + 3)?,
                        ];
                        index += 4;
                        let bbox = match corners {
                            [Some(a), Some(b), Some(c), Some(d)] => Some([a, b, c, d]),
                            _ => None,
                        };
                        let wkb = match (&buffer.values, buffer.levels.last()) {
                            (Values::Bytes(v), Some(1)) => v.last(),
                            _ => None,
                        };
                        extent.add(wkb, bbox);
                        boxes.push(bbox);
                    }
                }
                rows += 1;
                if rows == ROW_GROUP_ROWS || bytes >= ROW_GROUP_BYTES {
                    write_group(&mut writer, &mut buffers, &mut boxes, covering.is_some())?;
                    (rows, bytes) = (0, 0);
                }
            }
            drop(stream);
            if rows > 0 {
                write_group(&mut writer, &mut buffers, &mut boxes, covering.is_some())?;
            }
            if let Some(g) = &geometry {
                let metadata = geo_metadata(g, covering.as_deref(), &extent, self.crs)?;
                writer.append_key_value_metadata(KeyValue::new("geo".into(), metadata));
            }
            writer.close().map_err(parquet_error)?;
            connection.close().await?;
            Ok(target)
        })
    }
}

/// The covering struct's name: `bbox`, unless a column is called that.
fn covering_name(columns: &[(String, Kind)]) -> Option<String> {
    let geometry = columns.iter().find(|(_, kind)| *kind == Kind::Geometry)?;
    let taken = |name: &str| columns.iter().any(|(n, _)| n == name);
    Some(if taken("bbox") {
        format!("{}_bbox", geometry.0)
    } else {
        "bbox".into()
    })
}

fn schema(columns: &[(String, Kind)], covering: Option<&str>) -> Result<Type, parquet::errors::ParquetError> {
    let mut fields = columns
        .iter()
        .map(|(name, kind)| kind.field(name).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(covering) = covering {
        let corners = CORNERS
            .iter()
            .map(|corner| {
                Type::primitive_type_builder(corner, Physical::DOUBLE)
                    .with_repetition(Repetition::REQUIRED)
                    .build()
                    .map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        fields.push(Arc::new(
            Type::group_type_builder(covering)
                .with_repetition(Repetition::OPTIONAL)
                .with_fields(corners)
                .build()?,
        ));
    }
    Type::group_type_builder("schema").with_fields(fields).build()
}

const CORNERS: [&str; 4] = ["xmin", "ymin", "xmax", "ymax"];

/// Snappy pages with statistics (a reader's box skips row groups by the
/// covering's); the WKB column without a dictionary or statistics, which
/// say nothing of bytes that differ row by row.
fn properties(geometry: Option<&str>) -> Arc<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    if let Some(geometry) = geometry {
        let path = ColumnPath::new(vec![geometry.to_string()]);
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_statistics_enabled(path, EnabledStatistics::None);
    }
    Arc::new(builder.build())
}

/// The boxes of the row group being gathered: four columns of one struct.
#[derive(Default)]
struct BoxBuffer {
    corners: [Vec<f64>; 4],
    levels: Vec<i16>,
}

impl BoxBuffer {
    fn push(&mut self, bbox: Option<[f64; 4]>) {
        self.levels.push(i16::from(bbox.is_some()));
        if let Some(bbox) = bbox {
            for (values, value) in self.corners.iter_mut().zip(bbox) {
                values.push(value);
            }
        }
    }
}

fn write_group(
    writer: &mut SerializedFileWriter<BufWriter<File>>,
    buffers: &mut [Buffer],
    boxes: &mut BoxBuffer,
    covering: bool,
) -> Result<(), AppError> {
    let mut group = writer.next_row_group().map_err(parquet_error)?;
    for buffer in buffers.iter() {
        let mut column = group
            .next_column()
            .map_err(parquet_error)?
            .ok_or_else(|| AppError::internal("GeoParquet: fewer columns than the schema's"))?;
        buffer.write(column.untyped()).map_err(parquet_error)?;
        column.close().map_err(parquet_error)?;
    }
    if covering {
        for values in &boxes.corners {
            let mut column = group
                .next_column()
                .map_err(parquet_error)?
                .ok_or_else(|| AppError::internal("GeoParquet: the box's columns are missing"))?;
            match column.untyped() {
                ColumnWriter::DoubleColumnWriter(w) => w.write_batch(values, Some(&boxes.levels), None),
                _ => return Err(AppError::internal("GeoParquet: a box column is not a double")),
            }
            .map_err(parquet_error)?;
            column.close().map_err(parquet_error)?;
        }
    }
    group.close().map_err(parquet_error)?;
    buffers.iter_mut().for_each(Buffer::clear);
    boxes.corners.iter_mut().for_each(Vec::clear);
    boxes.levels.clear();
    Ok(())
}

/// The file's `geo` key (GeoParquet 1.1).
fn geo_metadata(geometry: &str, covering: Option<&str>, extent: &Extent, crs: Crs) -> Result<String, AppError> {
    let definition = match crs {
        Crs::Crs84 => "OGC:CRS84".to_string(),
        Crs::Epsg(code) => format!("EPSG:{code}"),
    };
    let projjson = catalog_raster::crs::projjson(&definition)
        .ok_or_else(|| AppError::internal(format!("PROJ has no PROJJSON for {definition}")))?;
    let mut projjson: serde_json::Value = serde_json::from_str(&projjson).map_err(AppError::internal)?;
    // GDAL 3.6 leaves CRS84's identifier out; readers recognise it by it.
    if crs == Crs::Crs84 && projjson.get("id").is_none() {
        projjson["id"] = serde_json::json!({"authority": "OGC", "code": "CRS84"});
    }
    let mut column = serde_json::json!({
        "encoding": "WKB",
        "geometry_types": extent.types.iter().collect::<Vec<_>>(),
        "crs": projjson,
    });
    if let Some(bbox) = extent.bbox {
        column["bbox"] = serde_json::json!(bbox);
    }
    if let Some(covering) = covering {
        column["covering"] = serde_json::json!({"bbox": {
            "xmin": [covering, "xmin"], "ymin": [covering, "ymin"],
            "xmax": [covering, "xmax"], "ymax": [covering, "ymax"],
        }});
    }
    Ok(serde_json::json!({
        "version": "1.1.0",
        "primary_column": geometry,
        "columns": {geometry: column},
    })
    .to_string())
}

fn parquet_error(e: parquet::errors::ParquetError) -> AppError {
    AppError::internal(format!("GeoParquet: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_wkb_headers_name_their_types_and_dimensions() {
        assert_eq!(wkb_type(&[1, 1, 0, 0, 0]).as_deref(), Some("Point"));
        assert_eq!(wkb_type(&[0, 0, 0, 0, 6]).as_deref(), Some("MultiPolygon"));
        assert_eq!(wkb_type(&[1, 0xE9, 0x03, 0, 0]).as_deref(), Some("Point Z"));
        assert_eq!(wkb_type(&[1, 0xEB, 0x03, 0, 0]).as_deref(), Some("Polygon Z"));
        assert_eq!(wkb_type(&[1, 0xBA, 0x0B, 0, 0]).as_deref(), Some("LineString ZM"));
        assert_eq!(wkb_type(&[1, 0, 0, 0, 0]), None);
        assert_eq!(wkb_type(&[1, 8, 0, 0, 0]), None);
        assert_eq!(wkb_type(&[1, 1]), None);
    }
}
