//! The dataset record as the API reads it, for every module that serves
//! datasets (routes, OGC, tiles, records, the access rules, the cache).
use std::sync::{Arc, OnceLock};

use catalog_raster::RasterInfo;
use catalog_shared::AppError;
use catalog_shared::datasets::{
    ColumnInfo, ColumnType, DatasetKind, DatasetVisibility, GeometryType, PublicationStatus, StorageTier,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::types::Json as SqlJson;
use uuid::Uuid;

/// A dataset record.
#[derive(Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Dataset {
    pub(crate) id: Uuid,
    pub(crate) title: String,
    pub(crate) summary: Option<String>,
    schema_name: String,
    table_name: String,
    pub(crate) key_column: String,
    pub(crate) geometry_column: String,
    /// None for a raster dataset.
    pub(crate) geometry_type: Option<GeometryType>,
    /// The EPSG code of the data's CRS; null when none names it (the
    /// column keeps PostGIS's 0 for that, which is no CRS at all).
    #[serde(serialize_with = "epsg_code")]
    #[schema(value_type = Option<i32>, required = true)]
    pub(crate) srid: i32,
    pub(crate) source_srid: Option<i32>,
    /// `[west, south, east, north]`; west > east across the antimeridian (RFC 7946).
    pub(crate) extent_bbox: Option<Vec<f64>>,
    /// None for a raster dataset.
    pub(crate) feature_count: Option<i64>,
    /// Rows the load of the current version kept aside
    /// (`/api/datasets/{id}/quarantine`); they are not in `feature_count`.
    pub(crate) quarantined_count: i64,
    #[schema(value_type = Vec<ColumnInfo>)]
    pub(crate) column_info: SqlJson<Vec<ColumnInfo>>,
    #[schema(value_type = Object)]
    pub(crate) sample_values: SqlJson<Value>,
    /// `{linearized, source_curve_types}`: curves of the source stored as straight segments.
    #[schema(value_type = Object)]
    pub(crate) geometry_info: SqlJson<Value>,
    pub(crate) visibility: DatasetVisibility,
    pub(crate) status: PublicationStatus,
    pub(crate) publication_version: i32,
    /// Rolls with every write to the data; keys cached tiles.
    #[serde(skip)]
    pub(crate) data_version: i64,
    pub(crate) keywords: Vec<String>,
    /// The licence: an SPDX identifier (`CC-BY-4.0`), a URL or words.
    pub(crate) license: Option<String>,
    /// The credit maps show with the data.
    pub(crate) attribution: Option<String>,
    /// The column `datetime` filters the items on (detected at ingest, or
    /// set by PATCH); null when the data has no time axis.
    pub(crate) temporal_column: Option<String>,
    /// The first and last value of the time axis; null without one.
    pub(crate) temporal_extent: Option<Vec<DateTime<Utc>>>,
    pub(crate) source_format: Option<String>,
    pub(crate) source_filename: Option<String>,
    pub(crate) source_layer: Option<String>,
    pub(crate) is_registered: bool,
    /// `hot` (in PostGIS) or `cold` (archived in the object store; a read
    /// of its data brings it back).
    pub(crate) storage: StorageTier,
    /// `vector` (a table of features) or `raster` (a Cloud-Optimized GeoTIFF).
    pub(crate) kind: DatasetKind,
    /// For a raster: `{width, height, band_count, bands, resolution,
    /// geotransform, srid, crs_wkt, overview_count, is_cog, size_bytes}`;
    /// null for a vector dataset.
    #[schema(value_type = Option<Object>)]
    pub(crate) raster: Option<SqlJson<RasterInfo>>,
    /// Where a raster's file is in the object store.
    #[serde(skip)]
    pub(crate) raster_object: Option<String>,
    pub(crate) job_id: Option<Uuid>,
    pub(crate) created_by: Option<Uuid>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    /// The first zoom whose vector tiles hold every feature they meet;
    /// below it tiles (and pictures) draw an even selection, one feature
    /// in each 8-pixel cell that holds any (decisions: Generalized tiles).
    /// Null when the layer is not generalized (a raster, a registered
    /// table, one loaded before 0.3); 0 when every tile is complete.
    pub(crate) complete_zoom: Option<i16>,
    /// Cluster tiles below this zoom are read from the cells counted at
    /// load (`catalog_shared::generalize::Recorded::record`).
    #[serde(skip)]
    pub(crate) cluster_cells_zoom: Option<i16>,
    /// The SQL that cuts the dataset's vector (0), cluster (1), generalized
    /// vector (2) and counted cluster (3) tiles, with its digest, made on
    /// first use: a changed record is read anew, so neither outlives the
    /// record it was made from.
    #[serde(skip)]
    #[sqlx(skip)]
    pub(crate) tile_sql: TileSql,
}

/// An SRID as an EPSG code: null for 0 (unknown), as `raster.srid` says it.
fn epsg_code<S: serde::Serializer>(srid: &i32, serializer: S) -> Result<S::Ok, S::Error> {
    Some(*srid).filter(|s| *s > 0).serialize(serializer)
}

/// SQL text and its digest, per kind of vector tile (whole, clustered,
/// generalized, clustered from counted cells).
#[derive(Clone, Default)]
pub struct TileSql(pub [OnceLock<(Arc<str>, [u8; 16])>; 4]);

pub(crate) const DATASET_COLUMNS: &str =
    "id, title, summary, schema_name, table_name, key_column, geometry_column, geometry_type, srid, source_srid, extent_bbox,
    feature_count, quarantined_count, column_info, sample_values, geometry_info, visibility, status, publication_version, data_version, keywords, license, attribution, temporal_column, temporal_extent, source_format,
    source_filename, source_layer, is_registered, storage, kind, raster, raster_object, job_id, created_by, created_at, updated_at,
    complete_zoom, cluster_cells_zoom";

/// The published attribute columns of a dataset.
pub fn published_columns(dataset: &Dataset) -> Vec<ColumnInfo> {
    dataset.column_info.0.clone()
}

/// The JSON Schema of a column's values, by its PostgreSQL type.
pub fn json_schema_of(pg_type: ColumnType) -> Value {
    match pg_type {
        ColumnType::SmallInt | ColumnType::Integer | ColumnType::BigInt => serde_json::json!({"type": "integer"}),
        ColumnType::Double => serde_json::json!({"type": "number"}),
        ColumnType::Boolean => serde_json::json!({"type": "boolean"}),
        ColumnType::Date => serde_json::json!({"type": "string", "format": "date"}),
        ColumnType::TimestampTz => serde_json::json!({"type": "string", "format": "date-time"}),
        ColumnType::Time => serde_json::json!({"type": "string", "format": "time"}),
        ColumnType::Uuid => serde_json::json!({"type": "string", "format": "uuid"}),
        ColumnType::Jsonb | ColumnType::Json => serde_json::json!({"type": "array"}),
        ColumnType::Text | ColumnType::Bytea | ColumnType::Other => serde_json::json!({"type": "string"}),
    }
}

impl Dataset {
    /// Whether tile zoom `z` is below the dataset's complete zoom, so its
    /// tiles and pictures draw the features ranked to appear by `z`.
    pub(crate) fn is_generalized_at(&self, z: u32) -> bool {
        self.complete_zoom
            .is_some_and(|complete| i64::from(z) < i64::from(complete))
    }

    /// Whether the cluster tiles of zoom `z` are read from counted cells.
    pub(crate) fn has_cluster_cells_at(&self, z: u32) -> bool {
        self.cluster_cells_zoom
            .is_some_and(|counted| i64::from(z) < i64::from(counted))
    }

    /// The schema and name of the dataset's table, for what names the
    /// table rather than reads its rows (labels, the catalog's checks, a
    /// delete): a read of the rows takes the table from `read_gate`.
    pub fn table_names(&self) -> (&str, &str) {
        (&self.schema_name, &self.table_name)
    }

    /// The name its vector tiles give their layer: the table's, as
    /// PostGIS tile servers do.
    pub fn layer_name(&self) -> &str {
        &self.table_name
    }

    /// The statement that drops the dataset's table.
    pub fn drop_table_sql(&self) -> String {
        format!(
            "DROP TABLE IF EXISTS {}.{}",
            catalog_shared::db::quote_ident(&self.schema_name),
            catalog_shared::db::quote_ident(&self.table_name)
        )
    }

    pub fn is_raster(&self) -> bool {
        match self.kind {
            DatasetKind::Raster => true,
            DatasetKind::Vector => false,
        }
    }
}

pub const TITLE_MAX: usize = 500;
pub const SUMMARY_MAX: usize = 5000;
pub const LICENSE_MAX: usize = 500;
pub const ATTRIBUTION_MAX: usize = 1000;

/// A text field within its length bounds (in characters), or a 422 naming it.
pub fn check_text(field: &str, value: &str, min: usize, max: usize) -> Result<(), AppError> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(AppError::unprocessable(format!(
            "{field} must be {min} to {max} characters long"
        )));
    }
    Ok(())
}
