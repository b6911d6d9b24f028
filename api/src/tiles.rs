//! Vector tiles (Mapbox Vector Tile 2.1) of datasets, cut by PostGIS; a
//! point-cluster variant; TileJSON; and signed tile templates: tile URLs
//! carrying `scope`, `exp` and `sig` that serve one dataset's tiles with no
//! credential until they expire or the dataset's publication version rolls
//! (a change of visibility or publication status).
use std::sync::Arc;

use axum::{
    Json,
    extract::{OriginalUri, State},
    http::HeaderMap,
    response::Response,
};
use catalog_raster::tile::Grid;
use catalog_shared::{
    AppError,
    datasets::ColumnInfo,
    tile_sql::{self, TileLayer},
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use tower_http::compression::CompressionLayer;
use utoipa_axum::{
    router::{OpenApiRouter, UtoipaMethodRouterExt},
    routes,
};
use uuid::Uuid;

use crate::{
    access::{
        Caller, Capability,
        datasets::visible_collection,
        policy::readable_by_anyone,
        signed_assets::cog_href,
        signed_tiles::{now_secs, signed_query, template_expiry},
    },
    dataset_record::{Dataset, json_schema_of, published_columns},
    extract::{Path, Query},
    state::AppState,
    tile_cache::{Tile, TileKey, TileRoute, recipe_digest},
};

mod raster;
mod version;

pub(crate) use raster::RasterTileQuery;
use raster::TerrainQuery;
pub use raster::{native_zoom, raster_file};
pub use version::{Pinned, TileRequest, TileVersion, versioned_query};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(vector_tile).layer(CompressionLayer::new()))
        .routes(routes!(cluster_tile).layer(CompressionLayer::new()))
        .routes(routes!(terrain_tile))
        .routes(routes!(tilejson))
        .routes(routes!(tile_token))
}

pub(crate) const MVT_MEDIA_TYPE: &str = "application/vnd.mapbox-vector-tile";
pub const MAX_ZOOM: u32 = 24;
/// The zoom past which viewers over-zoom instead of asking for more tiles.
pub const SOURCE_MAX_ZOOM: u32 = 16;

/// A tile address, checked against the tile matrix of its zoom.
#[derive(Clone, Copy)]
pub struct TileAddress {
    pub z: u32,
    pub x: u32,
    pub y: u32,
}

pub fn tile_address(z: &str, x: &str, y: &str) -> Result<TileAddress, AppError> {
    grid_tile_address(Grid::WebMercator, z, x, y)
}

/// A tile address on `grid`, checked against the tile matrix of its zoom.
pub fn grid_tile_address(grid: Grid, z: &str, x: &str, y: &str) -> Result<TileAddress, AppError> {
    let y = y.strip_suffix(".pbf").or_else(|| y.strip_suffix(".mvt")).unwrap_or(y);
    // Only whole numbers name a tile: anything else (a template's `{z}`, a
    // negative row, digits past u32) is a 404 like a tile outside the matrix.
    let number = |name: &str, v: &str| {
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AppError::not_found(format!(
                "no tile there: {name} must be a whole number, not {v:?}"
            )));
        }
        Ok(v.parse::<u32>().unwrap_or(u32::MAX))
    };
    let (z, x, y) = (number("z", z)?, number("x", x)?, number("y", y)?);
    if z > MAX_ZOOM || u64::from(x) >= grid.columns(z) || y >= 1 << z {
        return Err(AppError::not_found(format!(
            "tile {z}/{x}/{y} does not exist (zoom 0 to {MAX_ZOOM}, x below {} and y below 2^zoom)",
            if grid == Grid::Crs84 { "2^(zoom+1)" } else { "2^zoom" }
        )));
    }
    Ok(TileAddress { z, x, y })
}

/// What the shared tile SQL needs of `dataset`, read from `table`.
pub(crate) fn tile_layer<'a>(dataset: &'a Dataset, table: &'a str, columns: &'a [ColumnInfo]) -> TileLayer<'a> {
    TileLayer {
        table,
        key_column: &dataset.key_column,
        geometry_column: &dataset.geometry_column,
        geometry_type: dataset.geometry_type,
        srid: dataset.srid,
        storage_bounds: crate::coordinates::bounds(dataset),
        extent: dataset.extent_bbox.as_deref().and_then(tile_sql::extent_in_world),
        columns,
    }
}

/// The zoom from which a dataset's tiles hold every feature they meet (0
/// for a layer not generalized: it is never thinned, only bounded).
pub(crate) fn complete_zoom(dataset: &Dataset) -> i16 {
    dataset.complete_zoom.unwrap_or(0)
}

/// A vector tile cut by `sql`; empty when the tile holds nothing. It is
/// cut on a replica that has the data version the record names, or on the
/// primary, and the version read in the same snapshot must be that one:
/// the tile is cached, and may be kept a year, under it.
async fn render(
    state: &AppState,
    data: &crate::read_gate::Data<'_>,
    sql: &str,
    dataset: &Dataset,
    at: TileAddress,
) -> Result<Tile, AppError> {
    let reader = data.reader().await;
    // The tile layer is named after the table, as PostGIS tile servers do.
    let (seen, tile) = reader
        .tiles
        .tile(sql, (at.z, at.x, at.y), dataset.layer_name(), Some(dataset.id))
        .await?;
    if seen != Some(dataset.data_version) {
        state.datasets.forget(dataset.id);
        return Err(AppError::unavailable(format!(
            "dataset {} changed while its tile was cut; ask again",
            dataset.id
        )));
    }
    Ok(Tile::image(tile.unwrap_or_default(), MVT_MEDIA_TYPE))
}

/// A dataset's tile query beside the data version it reads, in one
/// snapshot (`$5` is the dataset's id).
fn with_data_version(tile_sql: &str) -> String {
    format!("SELECT (SELECT data_version FROM datasets WHERE id = $5), (\n{tile_sql}\n)")
}

/// One vector tile of a dataset's features (layer named after its table),
/// or one image tile of a raster dataset.
#[utoipa::path(get, path = "/api/tiles/{dataset_id}/{z}/{x}/{y}", tag = "tiles",
    params(("dataset_id" = Uuid, Path), ("z" = u32, Path, maximum = 24, description = "zoom, 0 to 24"), ("x" = u32, Path),
           ("y" = String, Path, pattern = r"^[0-9]+(\.pbf|\.mvt|(@2x)?\.(png|webp|jpg))?$",
            description = "row, with or without .pbf or .mvt; for a raster dataset with .png, .webp or .jpg (@2x before it for 512 px)"),
           ("scope" = Option<String>, Query, description = "signed template: dataset:<id>"),
           ("exp" = Option<String>, Query, description = "signed template: expiry, Unix seconds (a template that does not verify signs nothing)"),
           ("sig" = Option<String>, Query, description = "signed template: signature"),
           RasterTileQuery, TileVersion),
    responses((status = 200, description = "Mapbox Vector Tile, or a raster dataset's image", content_type = "application/vnd.mapbox-vector-tile"),
              (status = 204, description = "nothing in this tile"),
              (status = 307, description = "`v` names an older data version: the same tile at the current one", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn vector_tile(
    State(state): State<AppState>,
    caller: Caller,
    request: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path(address): Path<(String, String, String, String)>,
    Query(query): Query<RasterTileQuery>,
    Query(version): Query<TileVersion>,
) -> Result<Response, AppError> {
    let (id, z, x, y) = &address;
    let dataset = visible_collection(&state, &caller, id).await?;
    let asked = TileRequest {
        headers: &request,
        uri: &uri,
        version: &version,
    };
    let address = (Grid::WebMercator, z.as_str(), x.as_str(), y.as_str());
    dataset_tile(&state, &caller, &asked, dataset, address, &query).await
}

/// One tile of `dataset` at z/x/y (y with its extension): the one tile
/// path of the XYZ and OGC API Tiles routes, so both answer the same bytes
/// from the same cache.
pub(crate) async fn dataset_tile(
    state: &AppState,
    caller: &Caller,
    asked: &TileRequest<'_>,
    dataset: Arc<Dataset>,
    (grid, z, x, y): (Grid, &str, &str, &str),
    query: &RasterTileQuery,
) -> Result<Response, AppError> {
    if dataset.is_raster() {
        let (row, format, size) = raster::image_row(y).ok_or_else(|| {
            AppError::unprocessable(format!(
                "dataset {} is a raster: ask for its tiles as .png, .webp or .jpg (@2x for 512 px)",
                dataset.id
            ))
        })?;
        let at = grid_tile_address(grid, z, x, row)?;
        let (dataset, pinned) = asked.version.resolve(state, caller, asked.uri, dataset).await?;
        // Boxed: the raster path's state would otherwise enlarge every vector tile's future.
        return Box::pin(raster::raster_tile(
            state,
            asked.headers,
            &dataset,
            (grid, at.z, at.x, at.y),
            (format, size),
            query,
            pinned,
        ))
        .await;
    }
    if grid != Grid::WebMercator {
        return Err(AppError::not_found("vector tiles are cut on WebMercatorQuad only"));
    }
    serve_tile(
        state,
        caller,
        asked,
        (dataset, (z, x, y)),
        TileRoute::Vector,
        |d, table, generalized| tile_layer(d, table, &published_columns(d)).vector_tile_sql(generalized),
    )
    .await
}

/// One tile of a dataset's features gathered into clusters.
#[utoipa::path(get, path = "/api/tiles/{dataset_id}/cluster/{z}/{x}/{y}", tag = "tiles",
    params(("dataset_id" = Uuid, Path), ("z" = u32, Path, maximum = 24), ("x" = u32, Path),
           ("y" = String, Path, pattern = r"^[0-9]+(\.pbf|\.mvt)?$", description = "row, with or without .pbf or .mvt"), TileVersion),
    responses((status = 200, description = "Mapbox Vector Tile of points with point_count", content_type = "application/vnd.mapbox-vector-tile"),
              (status = 204, description = "nothing in this tile"),
              (status = 307, description = "`v` names an older data version: the same tile at the current one", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn cluster_tile(
    State(state): State<AppState>,
    caller: Caller,
    request: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path((id, z, x, y)): Path<(String, String, String, String)>,
    Query(version): Query<TileVersion>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let asked = TileRequest {
        headers: &request,
        uri: &uri,
        version: &version,
    };
    serve_tile(
        &state,
        &caller,
        &asked,
        (dataset, (&z, &x, &y)),
        TileRoute::Cluster,
        |d, table, counted| tile_layer(d, table, &[]).cluster_tile_sql(counted),
    )
    .await
}

/// One terrain tile (Mapbox Terrain-RGB or Terrarium) of a single-band
/// raster dataset: 512 px unless `tile_size=256`, nodata as 0 m.
#[utoipa::path(get, path = "/api/tiles/{dataset_id}/terrain/{z}/{x}/{y}", tag = "tiles",
    params(("dataset_id" = Uuid, Path), ("z" = u32, Path, maximum = 24), ("x" = u32, Path),
           ("y" = String, Path, pattern = r"^[0-9]+\.png$", description = "row, with .png"), TerrainQuery, TileVersion),
    responses((status = 200, description = "PNG of encoded heights", content_type = "image/png"),
              (status = 204, description = "outside the raster's extent"),
              (status = 307, description = "`v` names an older data version: the same tile at the current one", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, description = "not a single-band raster", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn terrain_tile(
    State(state): State<AppState>,
    caller: Caller,
    request: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path((id, z, x, y)): Path<(String, String, String, String)>,
    Query(query): Query<TerrainQuery>,
    Query(version): Query<TileVersion>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    if !dataset.is_raster() {
        return Err(AppError::unprocessable(format!(
            "dataset {id} is not a raster; terrain tiles come from single-band rasters"
        )));
    }
    let row = y
        .strip_suffix(".png")
        .ok_or_else(|| AppError::not_found("terrain tiles are PNG: ask for {y}.png"))?;
    let at = tile_address(&z, &x, row)?;
    let (dataset, pinned) = version.resolve(&state, &caller, &uri, dataset).await?;
    raster::terrain_tile(&state, &request, &dataset, (at.z, at.x, at.y), &query, pinned).await
}

/// A vector tile of `dataset` at (z, x, y) on `route`, cut by the SQL
/// `sql_of` writes (told whether the load's work serves the zoom: the
/// ranks below the complete zoom, or the counted cluster cells), from the
/// tile cache when it holds it.
async fn serve_tile(
    state: &AppState,
    caller: &Caller,
    asked: &TileRequest<'_>,
    (dataset, (z, x, y)): (Arc<Dataset>, (&str, &str, &str)),
    route: TileRoute,
    sql_of: impl Fn(&Dataset, &str, bool) -> String,
) -> Result<Response, AppError> {
    let at = tile_address(z, x, y)?;
    let (dataset, pinned) = asked.version.resolve(state, caller, asked.uri, dataset).await?;
    let data = crate::read_gate::open(state, caller, &dataset).await?;
    let precomputed = match route {
        TileRoute::Cluster => dataset.has_cluster_cells_at(at.z),
        _ => dataset.is_generalized_at(at.z),
    };
    let memo = &dataset.tile_sql.0[match route {
        TileRoute::Cluster if precomputed => 3,
        TileRoute::Cluster => 1,
        _ if precomputed => 2,
        _ => 0,
    }];
    let (sql, digest) = memo.get_or_init(|| {
        let sql = with_data_version(&sql_of(&dataset, data.table(), precomputed));
        let digest = recipe_digest(&sql);
        (sql.into(), digest)
    });
    let key = TileKey::new(&dataset, route, (at.z, at.x, at.y), *digest);
    state
        .tiles
        .respond(
            asked.headers,
            &dataset,
            key,
            crate::access::policy::cache_control(&dataset, pinned == Pinned::Current),
            || render(state, &data, sql, &dataset, at),
        )
        .await
}

/// TileJSON 3.0 of a dataset's tiles (signed for datasets not everyone may
/// read). For a raster, the rendering asked here (bands, stretch, colour
/// map, resampling, checked as a tile checks them) goes into the template.
#[utoipa::path(get, path = "/api/tiles/{dataset_id}/tilejson.json", tag = "tiles", params(("dataset_id" = Uuid, Path), RasterTileQuery),
    responses((status = 200, description = "TileJSON 3.0.0"),
              (status = 400, description = "a rendering a raster cannot have, or any rendering for vector tiles", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn tilejson(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(render): Query<RasterTileQuery>,
) -> Result<Json<Value>, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let query = tile_query(&state, &caller, &dataset);
    let mut document = if dataset.is_raster() {
        let maxzoom = native_zoom(&dataset);
        let rendering = raster::template_query(&dataset, &render)?;
        let query = if rendering.is_empty() {
            query
        } else {
            format!("{query}&{rendering}")
        };
        json!({
            "tilejson": "3.0.0",
            "name": dataset.title,
            "description": dataset.summary,
            "tiles": [format!("{base}/api/tiles/{}/{{z}}/{{x}}/{{y}}.png{query}", dataset.id)],
            "format": "png",
            "minzoom": 0,
            "maxzoom": maxzoom,
            // The data itself, read in place (signed when not everyone may read it).
            "links": [{"rel": "enclosure", "href": cog_href(&state, &caller, &dataset), "type": catalog_raster::cog::MEDIA_TYPE}],
        })
    } else if raster::asks_rendering(&render) {
        return Err(AppError::bad_request(
            "bidx, rescale, colormap and resampling are for raster datasets; this one is a vector dataset",
        ));
    } else {
        vector_tilejson(&dataset, base, &query)
    };
    if let Some(attribution) = &dataset.attribution {
        document["attribution"] = json!(attribution);
    }
    // TileJSON bounds cannot cross the antimeridian: such data gets none.
    if let Some(bbox) = dataset.extent_bbox.as_ref().filter(|b| b.len() == 4 && b[0] <= b[2]) {
        document["bounds"] = json!(bbox);
    }
    Ok(Json(document))
}

/// The query of `dataset`'s tile URLs for `caller`, with its leading `?`:
/// the data version, and a signature when not everyone may read it.
pub fn tile_query(state: &AppState, caller: &Caller, dataset: &Dataset) -> String {
    // Tiles not everyone may read come signed, so a viewer given this
    // document needs no credential; an embedding page sends its token. A
    // document read through a signed template hands back that template's
    // expiry: a capability never buys a longer-lived one. The data
    // version goes first, so a CDN may keep the tiles (`version`).
    let expires = match caller.capability {
        _ if readable_by_anyone(dataset.visibility, dataset.status) => None,
        Some(Capability::Embed { .. } | Capability::Asset { .. } | Capability::Metrics) => None,
        Some(Capability::Tiles { expires, .. }) => Some(expires),
        None => Some(template_expiry(now_secs())),
    };
    let signature =
        expires.map(|exp| signed_query(&state.config.jwt_secret, dataset.id, dataset.publication_version, exp));
    format!("?{}", versioned_query(dataset.data_version, signature.as_deref()))
}

fn vector_tilejson(dataset: &Dataset, base: &str, query: &str) -> Value {
    let fields: serde_json::Map<String, Value> = published_columns(dataset)
        .iter()
        .map(|c| {
            let kind = match json_schema_of(c.pg_type)["type"].as_str() {
                Some("integer" | "number") => "Number",
                Some("boolean") => "Boolean",
                _ => "String",
            };
            (c.name.clone(), json!(kind))
        })
        .collect();
    json!({
        "tilejson": "3.0.0",
        "name": dataset.title,
        "description": dataset.summary,
        "tiles": [format!("{base}/api/tiles/{}/{{z}}/{{x}}/{{y}}.pbf{query}", dataset.id)],
        "minzoom": 0,
        "maxzoom": SOURCE_MAX_ZOOM,
        "vector_layers": [{"id": dataset.layer_name(), "fields": fields, "minzoom": 0, "maxzoom": SOURCE_MAX_ZOOM,
                           "complete_zoom": complete_zoom(dataset)}],
    })
}

#[derive(Serialize, utoipa::ToSchema)]
struct TileToken {
    dataset_id: Uuid,
    scope: String,
    /// Tile URL template, signed: vector tiles, or a raster's PNG tiles.
    tile_url: String,
    /// Cluster tile URL template, signed; null for a raster.
    cluster_tile_url: Option<String>,
    /// Terrain-RGB template of a single-band raster, signed; else null.
    terrain_tile_url: Option<String>,
    expires_at: DateTime<Utc>,
    /// Seconds until the templates expire.
    expires_in: i64,
}

/// Signed tile URL templates of a dataset the caller may read; they work
/// without a credential until `expires_at`, or until the dataset's
/// visibility or publication status changes.
#[utoipa::path(get, path = "/api/tiles/token/{dataset_id}", tag = "tiles", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = TileToken), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn tile_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TileToken>, AppError> {
    let dataset: Arc<Dataset> = visible_collection(&state, &caller, &id).await?;
    let now = now_secs();
    let exp = template_expiry(now);
    let query = versioned_query(
        dataset.data_version,
        Some(&signed_query(
            &state.config.jwt_secret,
            dataset.id,
            dataset.publication_version,
            exp,
        )),
    );
    let base = format!("{}/api/tiles/{}", state.config.public_url, dataset.id);
    Ok(Json(TileToken {
        dataset_id: dataset.id,
        scope: format!("dataset:{}", dataset.id),
        tile_url: if dataset.is_raster() {
            format!("{base}/{{z}}/{{x}}/{{y}}.png?{query}")
        } else {
            format!("{base}/{{z}}/{{x}}/{{y}}.pbf?{query}")
        },
        cluster_tile_url: (!dataset.is_raster()).then(|| format!("{base}/cluster/{{z}}/{{x}}/{{y}}.pbf?{query}")),
        terrain_tile_url: dataset
            .raster
            .as_ref()
            .filter(|r| r.0.is_dem())
            .map(|_| format!("{base}/terrain/{{z}}/{{x}}/{{y}}.png?{query}")),
        expires_at: DateTime::from_timestamp(exp, 0).unwrap_or_default(),
        expires_in: exp - now,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_stay_inside_the_tile_matrix() {
        assert!(tile_address("0", "0", "0.pbf").is_ok());
        assert!(tile_address("3", "7", "7.mvt").is_ok());
        assert_eq!(
            tile_address("3", "8", "0").err().map(|e| e.status().as_u16()),
            Some(404)
        );
        assert_eq!(
            tile_address("25", "0", "0").err().map(|e| e.status().as_u16()),
            Some(404)
        );
        // Not an address at all: no such resource, as the OpenAPI document says.
        assert_eq!(
            tile_address("a", "0", "0").err().map(|e| e.status().as_u16()),
            Some(404)
        );
    }
}
