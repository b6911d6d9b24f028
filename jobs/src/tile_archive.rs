//! A dataset's vector pyramid as one PMTiles v3 archive (decisions:
//! Generalized tiles): every tile the service serves from zoom 0 to the
//! complete zoom, cut by the same SQL (`catalog_shared::tile_sql`) from one
//! snapshot, gzip-compressed, kept in the object store at the data version
//! it was read at, where the download route serves it with ranges.
use std::io::BufWriter;

use catalog_shared::{
    datasets::{ColumnInfo, GeometryType},
    db::quote_ident,
    generalize, tile_sql, wgs84,
};
use pmtiles::{PmTilesWriter, TileCoord, TileId, TileType};
use serde_json::json;
use sqlx::types::Json;
use uuid::Uuid;

use crate::context::{JobContext, JobError};

/// Tiles one archive holds at most: a pyramid past it is refused, never cut short.
const MOST_TILES: usize = 2_000_000;

#[derive(sqlx::FromRow)]
struct Layer {
    schema_name: String,
    table_name: String,
    key_column: String,
    geometry_column: String,
    geometry_type: Option<GeometryType>,
    srid: i32,
    extent_bbox: Option<Vec<f64>>,
    column_info: Json<Vec<ColumnInfo>>,
    complete_zoom: Option<i16>,
    data_version: i64,
    title: String,
    storage: String,
}

pub async fn run(ctx: &JobContext, dataset_id: Uuid) -> Result<(), JobError> {
    ctx.progress("reading", None, None).await?;
    // One snapshot: every tile and the version they are kept under agree.
    let mut tx = ctx.deps.pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let layer: Layer = sqlx::query_as(
        "SELECT schema_name, table_name, key_column, geometry_column, geometry_type, srid, extent_bbox, column_info,
                complete_zoom, data_version, title, storage
         FROM datasets WHERE id = $1 AND kind = 'vector'",
    )
    .bind(dataset_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| JobError::Invalid(format!("vector dataset {dataset_id} was deleted")))?;
    let complete_zoom = match layer.complete_zoom {
        Some(z) if layer.srid == 4326 => z.clamp(0, i16::from(generalize::MAX_ZOOM)) as u8,
        _ => {
            return Err(JobError::Invalid(
                "the dataset is not generalized (a registered table, or loaded before 0.3): reupload it first".into(),
            ));
        }
    };
    if layer.storage != "hot" {
        return Err(JobError::Invalid(
            "the dataset is archived: read it once to bring it back".into(),
        ));
    }
    let object = ctx.deps.storage.tile_archive(dataset_id, layer.data_version);
    let table = format!("{}.{}", quote_ident(&layer.schema_name), quote_ident(&layer.table_name));
    let mut tiles = generalize::tiles_with_data(&mut tx, &table, complete_zoom, (tile_sql::BUFFER, MOST_TILES))
        .await?
        .ok_or_else(|| {
            JobError::Invalid(format!(
                "the pyramid to zoom {complete_zoom} has more than {MOST_TILES} tiles: too big for one archive"
            ))
        })?;
    // In tile id order (zoom, then the Hilbert curve): a clustered archive.
    tiles.sort_by_cached_key(|&(z, x, y)| {
        TileCoord::new(z, x, y)
            .map(|c| TileId::from(c).value())
            .unwrap_or(u64::MAX)
    });
    let extent = layer.extent_bbox.as_deref().and_then(tile_sql::extent_in_world);
    let source = tile_sql::TileLayer {
        table: &table,
        key_column: &layer.key_column,
        geometry_column: &layer.geometry_column,
        geometry_type: layer.geometry_type,
        srid: layer.srid,
        storage_bounds: wgs84::BOUNDS,
        extent,
        columns: &layer.column_info.0,
    };
    let (generalized, complete) = (source.vector_tile_sql(true), source.vector_tile_sql(false));

    let [west, south, east, north] = extent.unwrap_or(wgs84::BOUNDS);
    let fields: serde_json::Map<String, serde_json::Value> = layer
        .column_info
        .0
        .iter()
        .map(|c| (c.name.clone(), json!(tile_field_type(c))))
        .collect();
    let metadata = json!({
        "name": layer.title,
        "format": "pbf",
        "complete_zoom": complete_zoom,
        "data_version": layer.data_version,
        "vector_layers": [{"id": layer.table_name, "fields": fields, "minzoom": 0, "maxzoom": complete_zoom}],
    });
    let scratch = tempfile::tempdir()?;
    let path = scratch.path().join("tiles.pmtiles");
    let mut writer = PmTilesWriter::new(TileType::Mvt)
        .min_zoom(0)
        .max_zoom(complete_zoom)
        .bounds(west, south, east, north)
        .center((west + east) / 2.0, (south + north) / 2.0)
        .center_zoom(0)
        .metadata(metadata.to_string())
        .create(BufWriter::new(std::fs::File::create(&path)?))
        .map_err(archive_error)?;
    let total = tiles.len() as i64;
    for (done, &(z, x, y)) in tiles.iter().enumerate() {
        if done % 500 == 0 {
            ctx.progress("cutting tiles", Some(done as i64), Some(total)).await?;
        }
        let sql = if z < complete_zoom { &generalized } else { &complete };
        let tile: Option<Vec<u8>> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(i32::from(z))
            .bind(x as i32)
            .bind(y as i32)
            .bind(&layer.table_name)
            .fetch_one(&mut *tx)
            .await?;
        if let Some(tile) = tile.filter(|t| !t.is_empty()) {
            let coord = TileCoord::new(z, x, y).map_err(archive_error)?;
            writer.add_tile(coord, &tile).map_err(archive_error)?;
        }
    }
    tx.commit().await?;
    writer.finalize().map_err(archive_error)?;
    ctx.progress("storing", Some(total), Some(total)).await?;
    crate::raster::store(ctx, &path, &object).await?;
    tracing::info!(job_id = %ctx.job_id, %dataset_id, tiles = total, complete_zoom, "tile archive made");
    Ok(())
}

/// A field's type as TileJSON's `vector_layers` names it.
fn tile_field_type(column: &ColumnInfo) -> &'static str {
    use catalog_shared::datasets::ColumnType;
    match column.pg_type {
        ColumnType::SmallInt | ColumnType::Integer | ColumnType::BigInt | ColumnType::Double => "Number",
        ColumnType::Boolean => "Boolean",
        _ => "String",
    }
}

fn archive_error(e: pmtiles::PmtError) -> JobError {
    JobError::Internal(format!("writing the PMTiles archive: {e}"))
}
