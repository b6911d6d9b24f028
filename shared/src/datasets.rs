//! What the workers leave in the database about datasets and the API reads
//! back: the record's closed sets of names (visibility, publication
//! status, kind, storage), the description of each attribute column, the
//! names of tables still being loaded, and the announcement that a dataset
//! record changed. Both sides use these types so a name or a key cannot
//! drift on one side.
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text_enum::text_enum;

text_enum! {
    // `datasets.visibility`. The doc comment is the schema's description
    // in the OpenAPI document.
    /// Who may see a dataset.
    #[derive(Default, utoipa::ToSchema)]
    pub enum DatasetVisibility {
        // What a new dataset is unless told otherwise.
        #[default]
        Private = "private",
        Restricted = "restricted",
        Internal = "internal",
        Public = "public",
    }
}

text_enum! {
    // `datasets.status`. The doc comment is the schema's description in
    // the OpenAPI document.
    /// Whether a dataset is published: `ready`, or `unpublished` (seen only
    /// by its owner and admins).
    #[derive(utoipa::ToSchema)]
    pub enum PublicationStatus {
        Ready = "ready",
        Unpublished = "unpublished",
    }
}

text_enum! {
    /// What a dataset holds (`datasets.kind`): a table of features, or a
    /// Cloud-Optimized GeoTIFF in the object store.
    #[derive(utoipa::ToSchema)]
    pub enum DatasetKind {
        Vector = "vector",
        Raster = "raster",
    }
}

text_enum! {
    /// The type of a vector dataset's geometries (`datasets.geometry_type`),
    /// as GeoJSON spells it: one type, or `Geometry` for a mix.
    #[derive(utoipa::ToSchema)]
    pub enum GeometryType {
        Point = "Point",
        LineString = "LineString",
        Polygon = "Polygon",
        MultiPoint = "MultiPoint",
        MultiLineString = "MultiLineString",
        MultiPolygon = "MultiPolygon",
        GeometryCollection = "GeometryCollection",
        Geometry = "Geometry",
    }
}

impl GeometryType {
    /// The type of a PostGIS type name (`MULTIPOLYGON`, `POINTZ`,
    /// `CURVEPOLYGON`…), as a registered table's column declares it: a
    /// curve type, or one this service does not know, is `Geometry`.
    pub fn from_postgis(name: &str) -> Self {
        let upper = name.to_ascii_uppercase();
        let base = upper.trim_end_matches('M').trim_end_matches('Z');
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.as_str().eq_ignore_ascii_case(base))
            .unwrap_or(Self::Geometry)
    }

    /// 0 for points, 1 for lines, 2 for polygons; none for a mix.
    pub fn dimension(self) -> Option<u8> {
        match self {
            Self::Point | Self::MultiPoint => Some(0),
            Self::LineString | Self::MultiLineString => Some(1),
            Self::Polygon | Self::MultiPolygon => Some(2),
            Self::GeometryCollection | Self::Geometry => None,
        }
    }

    /// The MapLibre layer type that draws it: points (and a mix) as circles.
    pub fn maplibre_layer(self) -> &'static str {
        match self.dimension() {
            Some(1) => "line",
            Some(2) => "fill",
            _ => "circle",
        }
    }
}

text_enum! {
    /// Where a dataset's table is (`datasets.storage`): in PostGIS, or
    /// archived in the object store until a read brings it back.
    #[derive(utoipa::ToSchema)]
    pub enum StorageTier {
        Hot = "hot",
        Cold = "cold",
    }
}

text_enum! {
    /// The PostgreSQL type of an attribute column: what ingest writes
    /// (boolean, integer, bigint, double precision, text, date, time,
    /// timestamptz, bytea, jsonb), what table registration keeps of a
    /// registered table's types (`character varying` is text, `numeric` and
    /// `real` double precision, timestamps timestamptz), and `other` for
    /// any type beyond these (an array, `inet`…), whose own name is the
    /// column's `source_type`.
    #[derive(utoipa::ToSchema)]
    pub enum ColumnType {
        Boolean = "boolean",
        SmallInt = "smallint",
        Integer = "integer",
        BigInt = "bigint",
        Double = "double precision",
        Text = "text",
        Date = "date",
        Time = "time",
        TimestampTz = "timestamptz",
        Uuid = "uuid",
        Bytea = "bytea",
        Json = "json",
        Jsonb = "jsonb",
        // Also what a record written before this set existed reads as
        // when it names a type outside it.
        #[serde(other)]
        Other = "other",
    }
}

impl ColumnType {
    /// The type of a registered table's column, from `format_type`.
    pub fn from_postgres(format_type: &str) -> Self {
        match format_type {
            t if t.starts_with("character") || t == "text" => Self::Text,
            t if t.starts_with("timestamp") => Self::TimestampTz,
            t if t.starts_with("numeric") || t == "real" || t == "double precision" => Self::Double,
            "time without time zone" => Self::Time,
            t => Self::parse(t).filter(|t| *t != Self::Other).unwrap_or(Self::Other),
        }
    }

    pub fn is_number(self) -> bool {
        matches!(self, Self::SmallInt | Self::Integer | Self::BigInt | Self::Double)
    }

    /// Whether a column of this type can be a dataset's time axis.
    pub fn is_temporal(self) -> bool {
        matches!(self, Self::Date | Self::TimestampTz)
    }

    /// Whether its values have an order (`sortby`).
    pub fn is_ordered(self) -> bool {
        !matches!(self, Self::Bytea | Self::Json | Self::Jsonb | Self::Other)
    }
}

/// One attribute column of a dataset (an element of `datasets.column_info`):
/// written by ingest and reupload, by table registration and by adding a
/// column; read by every route that renders or filters features.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ColumnInfo {
    /// The column's name in the table.
    pub name: String,
    /// The attribute's name in the source, which users see and filter by.
    pub original_name: String,
    #[serde(rename = "type")]
    pub pg_type: ColumnType,
    /// The type in the source: an OGR field type, a registered table's
    /// PostgreSQL type, or `added` for a column added through the API.
    pub source_type: String,
}

impl ColumnInfo {
    /// The name of its type in SQL, for a cast: an `other` type's own name.
    pub fn sql_type(&self) -> &str {
        match self.pg_type {
            ColumnType::Other => &self.source_type,
            known => known.as_str(),
        }
    }
}

/// The time axis ingest gives a dataset: its one column of a date or time
/// type or, of several, the first whose name speaks of a date or time.
pub fn detect_temporal_column(columns: &[ColumnInfo]) -> Option<&ColumnInfo> {
    let temporal: Vec<&ColumnInfo> = columns.iter().filter(|c| c.pg_type.is_temporal()).collect();
    match temporal[..] {
        [one] => Some(one),
        _ => temporal.into_iter().find(|c| {
            let name = c.original_name.to_ascii_lowercase();
            name.contains("date") || name.contains("time")
        }),
    }
}

/// Sets a dataset's time axis (`column`, one of its columns, or none) and
/// its temporal extent, the first and last value of that column, inside
/// the caller's transaction.
pub async fn set_time_axis(
    connection: &mut sqlx::PgConnection,
    dataset_id: Uuid,
    (schema, table): (&str, &str),
    column: Option<&str>,
) -> sqlx::Result<()> {
    let extent = match column {
        Some(column) => format!(
            "(SELECT CASE WHEN count({c}) > 0 THEN ARRAY[min({c})::timestamptz, max({c})::timestamptz] END FROM {}.{})",
            crate::db::quote_ident(schema),
            crate::db::quote_ident(table),
            c = crate::db::quote_ident(column),
        ),
        None => "NULL".into(),
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE datasets SET temporal_column = $2, temporal_extent = {extent} WHERE id = $1"
    )))
    .bind(dataset_id)
    .bind(column)
    .execute(connection)
    .await?;
    Ok(())
}

/// Tables a job is still loading, in the `data` schema, start with this and
/// the job's id; the API never offers them for registration, and the
/// worker's sweeper drops those whose job is no longer running.
pub const STAGING_PREFIX: &str = "_staging_";

/// The name prefix of one job's staging tables: `_staging_` and the job id
/// in simple form (hex without hyphens, as SQL's `replace(id::text, '-', '')`).
pub fn staging_prefix(job_id: Uuid) -> String {
    format!("{STAGING_PREFIX}{}", job_id.simple())
}

/// That a dataset record was inserted, updated or deleted. The database
/// sends it itself (the `announce_dataset_change` trigger), at commit, with
/// the id as the whole payload; every API process forgets its cached copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatasetChanged {
    pub dataset_id: Uuid,
}

impl DatasetChanged {
    /// The PostgreSQL NOTIFY channel the trigger sends on.
    pub const CHANNEL: &'static str = "dataset_changed";

    /// The announcement in a NOTIFY payload, when it is one.
    pub fn from_payload(payload: &str) -> Option<Self> {
        payload.parse().ok().map(|dataset_id| Self { dataset_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, pg_type: &str) -> ColumnInfo {
        ColumnInfo {
            name: name.into(),
            original_name: name.into(),
            pg_type: ColumnType::parse(pg_type).unwrap(),
            source_type: String::new(),
        }
    }

    #[test]
    fn the_time_axis_is_the_one_temporal_column_or_the_one_named_so() {
        let name = |columns: &[ColumnInfo]| detect_temporal_column(columns).map(|c| c.name.clone());
        assert_eq!(
            name(&[column("a", "text"), column("seen", "date")]),
            Some("seen".into())
        );
        assert_eq!(
            name(&[column("built", "timestamptz"), column("updated_time", "timestamptz")]),
            Some("updated_time".into())
        );
        assert_eq!(name(&[column("a", "text")]), None);
        assert_eq!(name(&[column("x", "date"), column("y", "date")]), None);
    }

    #[test]
    fn registered_types_fall_into_the_closed_set_and_old_records_still_read() {
        assert_eq!(ColumnType::from_postgres("character varying(20)"), ColumnType::Text);
        assert_eq!(ColumnType::from_postgres("numeric(10,2)"), ColumnType::Double);
        assert_eq!(
            ColumnType::from_postgres("timestamp without time zone"),
            ColumnType::TimestampTz
        );
        assert_eq!(ColumnType::from_postgres("uuid"), ColumnType::Uuid);
        assert_eq!(ColumnType::from_postgres("integer[]"), ColumnType::Other);
        // A record naming a type outside the set (a registered `inet`
        // column before the set existed) reads as `other`, its SQL name
        // kept in `source_type`.
        let old: ColumnInfo = serde_json::from_value(serde_json::json!(
            {"name": "ip", "original_name": "ip", "type": "inet", "source_type": "inet"}
        ))
        .unwrap();
        assert_eq!((old.pg_type, old.sql_type()), (ColumnType::Other, "inet"));
        assert_eq!(serde_json::to_value(ColumnType::Double).unwrap(), "double precision");
    }

    #[test]
    fn staging_prefix_is_the_job_id_without_hyphens() {
        let id = Uuid::parse_str("0192f6e4-8a7b-7c3d-9e1f-a2b3c4d5e6f7").unwrap();
        assert_eq!(staging_prefix(id), "_staging_0192f6e48a7b7c3d9e1fa2b3c4d5e6f7");
    }

    #[test]
    fn announcements_carry_the_dataset_id() {
        let id = Uuid::now_v7();
        assert_eq!(
            DatasetChanged::from_payload(&id.to_string()),
            Some(DatasetChanged { dataset_id: id })
        );
        assert_eq!(DatasetChanged::from_payload("not an id"), None);
    }
}
