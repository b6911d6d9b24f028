//! Maps as a reader sees them: loading a map with its layers (a layer whose
//! dataset the reader may not see is unavailable and undescribed) and the
//! map access checks, which ask `access::policy::map_decision`.
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_raster::RasterInfo;
use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, DatasetKind, DatasetVisibility, PublicationStatus},
    maps::MapVisibility,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, types::Json as SqlJson};
use uuid::Uuid;

use super::model::{BasemapConfig, LayerType, MapInput, MapLayerResponse, MapResponse, TerrainConfig};
use crate::{
    access::{
        Caller,
        policy::{MapAction, MapFacts, map_decision, visible_to_caller},
    },
    state::AppState,
};

#[derive(sqlx::FromRow)]
struct MapRow {
    id: Uuid,
    name: String,
    description: Option<String>,
    notes: Option<String>,
    center_lng: Option<f64>,
    center_lat: Option<f64>,
    zoom: Option<f64>,
    bearing: f64,
    pitch: f64,
    basemap_style: String,
    show_basemap_labels: bool,
    basemap_config: SqlJson<Value>,
    terrain_config: Option<SqlJson<Value>>,
    visibility: MapVisibility,
    thumbnail_url: Option<String>,
    og_image_url: Option<String>,
    plugins: Vec<String>,
    legend_title: Option<String>,
    forked_from_id: Option<Uuid>,
    forked_from_name: Option<String>,
    created_by: Option<Uuid>,
    created_by_username: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

const MAP_SELECT: &str =
    "SELECT m.id, m.name, m.description, m.notes, m.center_lng, m.center_lat, m.zoom, m.bearing, m.pitch,
        m.basemap_style, m.show_basemap_labels, m.basemap_config, m.terrain_config, m.visibility, m.thumbnail_url,
        m.og_image_url, m.plugins, m.legend_title, m.forked_from_id, f.name AS forked_from_name, m.created_by,
        u.username AS created_by_username, m.created_at, m.updated_at
     FROM maps m LEFT JOIN maps f ON f.id = m.forked_from_id LEFT JOIN users u ON u.id = m.created_by";

#[derive(sqlx::FromRow)]
struct LayerRow {
    map_id: Uuid,
    id: Uuid,
    dataset_id: Uuid,
    dataset_name: String,
    dataset_geometry_type: Option<catalog_shared::datasets::GeometryType>,
    dataset_default_paint: Option<Value>,
    dataset_kind: DatasetKind,
    dataset_table_name: String,
    dataset_extent_bbox: Option<Vec<f64>>,
    dataset_column_info: SqlJson<Vec<ColumnInfo>>,
    dataset_feature_count: Option<i64>,
    dataset_complete_zoom: Option<i16>,
    dataset_sample_values: SqlJson<Value>,
    dataset_visibility: DatasetVisibility,
    dataset_status: PublicationStatus,
    dataset_attribution: Option<String>,
    dataset_raster: Option<SqlJson<RasterInfo>>,
    publication_version: i32,
    data_version: i64,
    display_name: Option<String>,
    sort_order: i32,
    visible: bool,
    opacity: f64,
    paint: SqlJson<Value>,
    layout: SqlJson<Value>,
    filter: Option<SqlJson<Value>>,
    label_config: Option<SqlJson<Value>>,
    popup_config: Option<SqlJson<Value>>,
    style_config: Option<SqlJson<Value>>,
    layer_type: String,
    show_in_legend: bool,
    /// Whether the dataset's geometries have heights (its column's type,
    /// as ingest declares it: `geometry(PointZ, 4326)`).
    dataset_has_z: bool,
    /// Whether the reader may see the layer's dataset.
    readable: bool,
}

/// The map with its layers as `reader` may see them.
pub async fn load_map(
    db: &mut PgConnection,
    reader: &Caller,
    id: Uuid,
    base: &str,
) -> Result<Option<MapResponse>, AppError> {
    Ok(load_maps(db, reader, &[id], base).await?.pop())
}

/// Maps with their layers in two queries, in the order of `ids` (ids of
/// maps that do not exist are left out). A layer whose dataset `reader`
/// may not see is reported as unavailable and not described: a map is
/// not a way round the dataset's own visibility, whoever made it public.
pub async fn load_maps(
    db: &mut PgConnection,
    reader: &Caller,
    ids: &[Uuid],
    base: &str,
) -> Result<Vec<MapResponse>, AppError> {
    let sql = format!("{MAP_SELECT} WHERE m.id = ANY($1)");
    let rows: Vec<MapRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(ids)
        .fetch_all(&mut *db)
        .await?;
    let visible = visible_to_caller("d");
    let layers: Vec<LayerRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT l.map_id, l.id, l.dataset_id, d.title AS dataset_name, d.geometry_type AS dataset_geometry_type,
                d.default_paint AS dataset_default_paint,
                d.kind AS dataset_kind, d.table_name AS dataset_table_name, d.extent_bbox AS dataset_extent_bbox, d.column_info AS dataset_column_info,
                d.feature_count AS dataset_feature_count, d.complete_zoom AS dataset_complete_zoom, d.sample_values AS dataset_sample_values,
                d.visibility AS dataset_visibility, d.status AS dataset_status, d.attribution AS dataset_attribution, d.raster AS dataset_raster,
                d.publication_version, d.data_version,
                l.display_name, l.sort_order, l.visible, l.opacity, l.paint, l.layout, l.filter, l.label_config,
                l.popup_config, l.style_config, l.layer_type, l.show_in_legend,
                EXISTS (SELECT 1 FROM geometry_columns g WHERE g.f_table_schema = d.schema_name
                        AND g.f_table_name = d.table_name
                        AND (g.coord_dimension = 4 OR (g.coord_dimension = 3 AND g.type NOT LIKE '%M'))) AS dataset_has_z,
                {visible} AS readable
         FROM map_layers l JOIN datasets d ON d.id = l.dataset_id
         WHERE l.map_id = ANY($3) ORDER BY l.map_id, l.sort_order, l.id"
    )))
    .bind(reader.user_id())
    .bind(reader.is_admin())
    .bind(ids)
    .fetch_all(&mut *db)
    .await?;
    let mut layers_by_map: std::collections::HashMap<Uuid, Vec<MapLayerResponse>> = std::collections::HashMap::new();
    for layer in layers {
        // An embed token reads the layers its creator may still see.
        let readable = layer.readable || reader.capability_reads_dataset(layer.dataset_id);
        let map_id = layer.map_id;
        let response = if readable {
            layer_response(layer)
        } else {
            MapLayerResponse::unavailable(layer.id, layer.dataset_id, layer.sort_order)
        };
        layers_by_map.entry(map_id).or_default().push(response);
    }
    let mut rows_by_id: std::collections::HashMap<Uuid, MapRow> = rows.into_iter().map(|r| (r.id, r)).collect();
    Ok(ids
        .iter()
        .filter_map(|id| rows_by_id.remove(id))
        .map(|row| {
            let layers = layers_by_map.remove(&row.id).unwrap_or_default();
            map_response(row, layers, base)
        })
        .collect())
}

fn layer_response(l: LayerRow) -> MapLayerResponse {
    let raster = l.dataset_raster.map(|r| r.0);
    // What a layer draws follows its dataset: a raster has only raster
    // tiles, whatever type the map stored for the layer.
    let layer_type = if raster.is_some() {
        LayerType::RasterService
    } else {
        serde_json::from_value(Value::String(l.layer_type)).unwrap_or_default()
    };
    let native_zoom = raster
        .as_ref()
        .zip(l.dataset_extent_bbox.as_deref())
        .map(|(r, extent)| r.native_zoom(extent));
    MapLayerResponse {
        id: l.id,
        dataset_id: l.dataset_id,
        dataset_name: l.dataset_name,
        dataset_geometry_type: l.dataset_geometry_type,
        dataset_default_paint: l.dataset_default_paint,
        dataset_kind: Some(l.dataset_kind),
        dataset_table_name: l.dataset_table_name,
        dataset_extent_bbox: l.dataset_extent_bbox,
        dataset_column_info: l.dataset_column_info.0,
        dataset_feature_count: l.dataset_feature_count,
        dataset_complete_zoom: l.dataset_complete_zoom,
        dataset_sample_values: l.dataset_sample_values.0,
        dataset_record_type: "dataset",
        dataset_available: true,
        dataset_visibility: Some(l.dataset_visibility),
        dataset_status: Some(l.dataset_status),
        dataset_attribution: l.dataset_attribution,
        display_name: l.display_name,
        sort_order: l.sort_order,
        visible: l.visible,
        opacity: l.opacity,
        paint: l.paint.0,
        layout: l.layout.0,
        layer_type,
        filter: l.filter.map(|v| v.0),
        label_config: l.label_config.map(|v| v.0),
        popup_config: l.popup_config.map(|v| v.0),
        style_config: l.style_config.map(|v| v.0),
        show_in_legend: l.show_in_legend,
        is_3d: l.dataset_has_z,
        is_dem: raster.as_ref().is_some_and(RasterInfo::is_dem),
        dem_vertical_units: None,
        band_count: raster.as_ref().map(|r| i32::try_from(r.band_count).unwrap_or(i32::MAX)),
        tile_version: l.publication_version,
        publication_version: l.publication_version,
        data_version: l.data_version,
        native_zoom,
    }
}

fn map_response(row: MapRow, layers: Vec<MapLayerResponse>, base: &str) -> MapResponse {
    MapResponse {
        id: row.id,
        name: row.name,
        description: row.description,
        notes: row.notes,
        center_lng: row.center_lng,
        center_lat: row.center_lat,
        zoom: row.zoom,
        bearing: row.bearing,
        pitch: row.pitch,
        basemap_style: row.basemap_style,
        show_basemap_labels: row.show_basemap_labels,
        basemap_config: serde_json::from_value(row.basemap_config.0).unwrap_or_default(),
        terrain_config: row
            .terrain_config
            .and_then(|t| serde_json::from_value::<TerrainConfig>(t.0).ok()),
        visibility: row.visibility,
        // The map's own picture, unless one was set.
        thumbnail_url: row
            .thumbnail_url
            .or_else(|| Some(format!("{base}/api/maps/{}/thumbnail.png", row.id))),
        og_image_url: row.og_image_url,
        forked_from_id: row.forked_from_id,
        forked_from_name: row.forked_from_name,
        created_by: row.created_by,
        created_by_username: row.created_by_username,
        created_at: row.created_at,
        updated_at: row.updated_at,
        layer_count: layers.len(),
        layers,
        plugins: row.plugins,
        legend_title: row.legend_title,
    }
}

fn facts(map: &MapResponse) -> MapFacts {
    MapFacts {
        id: map.id,
        owner: map.created_by,
        visibility: map.visibility,
    }
}

/// The map for an action of the caller; 404 when it may not see it.
async fn map_for(state: &AppState, caller: &Caller, id: Uuid, action: MapAction) -> Result<MapResponse, AppError> {
    let mut conn = state.pool.acquire().await?;
    let map = load_map(&mut conn, caller, id, &state.config.public_url)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no map {id}")))?;
    map_decision(caller, &facts(&map), action)?;
    Ok(map)
}

/// The map when the caller may see it; 404 otherwise.
pub async fn readable_map(state: &AppState, caller: &Caller, id: Uuid) -> Result<MapResponse, AppError> {
    map_for(state, caller, id, MapAction::Read).await
}

/// The map when the caller may change it: its owner (editor or admin role) or an admin.
pub async fn writable_map(state: &AppState, caller: &Caller, id: Uuid) -> Result<MapResponse, AppError> {
    map_for(state, caller, id, MapAction::Write).await
}

pub fn version_tag(map: &MapResponse) -> String {
    format!("\"{}\"", map.updated_at.timestamp_micros())
}

pub fn with_etag(map: MapResponse, status: StatusCode) -> Response {
    let tag = version_tag(&map);
    let mut response = (status, Json(map)).into_response();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

/// Every layer's dataset must be one the caller can see.
pub async fn check_layer_datasets(state: &AppState, caller: &Caller, input: &MapInput) -> Result<(), AppError> {
    let Some(layers) = &input.layers else { return Ok(()) };
    let ids: Vec<Uuid> = layers.iter().map(|l| l.dataset_id).collect();
    let visible = visible_to_caller("datasets");
    let sql = format!("SELECT id FROM datasets WHERE {visible} AND id = ANY($3)");
    let visible: Vec<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(&ids)
        .fetch_all(&state.pool)
        .await?;
    if let Some((i, l)) = layers
        .iter()
        .enumerate()
        .find(|(_, l)| !visible.contains(&l.dataset_id))
    {
        return Err(AppError::unprocessable(format!(
            "layers[{i}].dataset_id: no dataset {} that you can see",
            l.dataset_id
        )));
    }
    Ok(())
}

/// Writes the map's fields (absent ones keep their value) and, when given,
/// replaces its layers.
pub async fn write_map(tx: &mut PgConnection, id: Uuid, input: &MapInput) -> Result<(), AppError> {
    sqlx::query(
        "UPDATE maps SET name = coalesce($2, name), description = coalesce($3, description), notes = coalesce($4, notes),
            center_lng = coalesce($5, center_lng), center_lat = coalesce($6, center_lat), zoom = coalesce($7, zoom),
            bearing = coalesce($8, bearing), pitch = coalesce($9, pitch), basemap_style = coalesce($10, basemap_style),
            show_basemap_labels = coalesce($11, show_basemap_labels), basemap_config = coalesce($12, basemap_config),
            terrain_config = coalesce($13, terrain_config), visibility = coalesce($14, visibility),
            plugins = coalesce($15, plugins), legend_title = coalesce($16, legend_title), updated_at = clock_timestamp()
         WHERE id = $1",
    )
    .bind(id)
    .bind(input.name.as_deref().map(str::trim))
    .bind(&input.description)
    .bind(&input.notes)
    .bind(input.center_lng)
    .bind(input.center_lat)
    .bind(input.zoom)
    .bind(input.bearing)
    .bind(input.pitch)
    .bind(&input.basemap_style)
    .bind(input.show_basemap_labels)
    .bind(input.basemap_config.as_ref().map(SqlJson))
    .bind(input.terrain_config.as_ref().map(SqlJson))
    .bind(input.visibility)
    .bind(&input.plugins)
    .bind(&input.legend_title)
    .execute(&mut *tx)
    .await?;
    if let Some(layers) = &input.layers {
        sqlx::query("DELETE FROM map_layers WHERE map_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        for l in layers {
            sqlx::query(
                "INSERT INTO map_layers (id, map_id, dataset_id, sort_order, visible, opacity, paint, layout, display_name,
                     filter, label_config, popup_config, style_config, layer_type, show_in_legend)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(Uuid::now_v7())
            .bind(id)
            .bind(l.dataset_id)
            .bind(l.sort_order as i32)
            .bind(l.visible)
            .bind(l.opacity)
            .bind(SqlJson(l.paint.clone().unwrap_or_default()))
            .bind(SqlJson(l.layout.clone().unwrap_or_default()))
            .bind(&l.display_name)
            .bind(l.filter.as_ref().map(SqlJson))
            .bind(l.label_config.as_ref().map(SqlJson))
            .bind(l.popup_config.as_ref().map(SqlJson))
            .bind(l.style_config.as_ref().map(SqlJson))
            .bind(serde_json::to_value(l.layer_type.unwrap_or_default()).ok().and_then(|v| v.as_str().map(String::from)))
            .bind(l.show_in_legend)
            .execute(&mut *tx)
            .await?;
        }
    }
    Ok(())
}

/// Creates a map owned by the caller; shared by create, fork and import.
pub async fn insert_map(
    state: &AppState,
    caller: &Caller,
    input: &MapInput,
    forked_from: Option<Uuid>,
) -> Result<MapResponse, AppError> {
    let user = caller.editor()?;
    input.validate(true)?;
    check_layer_datasets(state, caller, input).await?;
    let id = Uuid::now_v7();
    let mut tx = state.pool.begin().await?;
    sqlx::query("INSERT INTO maps (id, name, created_by, forked_from_id, basemap_config) VALUES ($1, '', $2, $3, $4)")
        .bind(id)
        .bind(user.id)
        .bind(forked_from)
        .bind(SqlJson(BasemapConfig::default()))
        .execute(&mut *tx)
        .await?;
    write_map(&mut tx, id, input).await?;
    let map = load_map(&mut tx, caller, id, &state.config.public_url)
        .await?
        .ok_or_else(|| AppError::internal("the new map vanished"))?;
    tx.commit().await?;
    Ok(map)
}
