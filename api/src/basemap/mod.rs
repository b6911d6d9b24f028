//! The built-in basemap, so that maps have land, borders and names to sit
//! on with nothing loaded from another site: a MapLibre style, its vector
//! tiles (Natural Earth 1:50m countries in PostGIS, `data`) and the glyphs
//! its labels and any map's labels are drawn with (`fonts`). Everyone may
//! read all three, as any basemap's tiles are public.
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use catalog_shared::AppError;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    access::{Caller, datasets::visible_collection},
    extract::Path,
    state::AppState,
    tile_cache::{Tile, TileKey},
};

pub mod data;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(style_json))
        .routes(routes!(tile))
        .routes(routes!(glyphs))
        .routes(routes!(dataset_style))
}

/// Where the built-in style is served, below `PUBLIC_URL`.
pub const STYLE_PATH: &str = "/api/basemap/style.json";
/// The deepest zoom the basemap's tiles are cut at; viewers over-zoom past it.
const MAX_ZOOM: u32 = 6;
const MVT_MEDIA_TYPE: &str = "application/vnd.mapbox-vector-tile";

/// Whether a map's `basemap_style` names this service's built-in basemap.
pub fn is_builtin(basemap_style: &str, public_url: &str) -> bool {
    basemap_style.strip_prefix(public_url) == Some(STYLE_PATH) || basemap_style == STYLE_PATH
}

/// The built-in basemap as a MapLibre style whose URLs start at `base`.
pub fn style(base: &str) -> Value {
    let font = json!([crate::glyphs::DEFAULT_FONTSTACK]);
    json!({
        "version": 8,
        "name": "Catalog basemap",
        "metadata": {"attribution": "Natural Earth (public domain)"},
        "glyphs": format!("{base}/api/basemap/fonts/{{fontstack}}/{{range}}.pbf"),
        "sources": {
            "countries": {
                "type": "vector",
                "tiles": [format!("{base}/api/basemap/tiles/{{z}}/{{x}}/{{y}}.pbf")],
                "minzoom": 0,
                "maxzoom": MAX_ZOOM,
                "attribution": "Made with Natural Earth",
            }
        },
        "layers": [
            {"id": "water", "type": "background", "paint": {"background-color": "#cddfea"}},
            {"id": "land", "type": "fill", "source": "countries", "source-layer": "earth",
             "paint": {"fill-color": "#f6f4ee"}},
            {"id": "coastline", "type": "line", "source": "countries", "source-layer": "earth",
             "paint": {"line-color": "#a7bfcf", "line-width": ["interpolate", ["linear"], ["zoom"], 0, 0.4, 6, 1.2]}},
            {"id": "boundary-country", "type": "line", "source": "countries", "source-layer": "boundary",
             "layout": {"line-join": "round"},
             "paint": {"line-color": "#a39fb0", "line-dasharray": [3, 2],
                       "line-width": ["interpolate", ["linear"], ["zoom"], 0, 0.5, 6, 1.4]}},
            {"id": "place-country", "type": "symbol", "source": "countries", "source-layer": "place",
             "filter": ["<=", ["get", "min_zoom"], ["zoom"]],
             "layout": {"text-field": ["get", "name"], "text-font": font, "text-max-width": 8,
                        "text-size": ["interpolate", ["linear"], ["zoom"], 1, 10, 6, 15]},
             "paint": {"text-color": "#5b5a63", "text-halo-color": "#ffffff", "text-halo-width": 1.2}}
        ]
    })
}

/// The built-in basemap: a MapLibre style (version 8) of land, national
/// borders and country names, drawn from this service's own tiles and glyphs.
#[utoipa::path(get, path = "/api/basemap/style.json", tag = "maps",
    responses((status = 200, description = "MapLibre style, version 8")))]
async fn style_json(State(state): State<AppState>) -> Response {
    let mut response = Json(style(&state.config.public_url)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    response
}

/// One vector tile of the built-in basemap: layers `earth` (countries,
/// with `name`), `boundary` (borders, `admin_level` 2) and `place` (a
/// point per country with `name`, `class` and `min_zoom`, the zoom from
/// which its label shows). Zoom 0 to 6; viewers over-zoom past it.
#[utoipa::path(get, path = "/api/basemap/tiles/{z}/{x}/{y}", tag = "maps",
    params(("z" = u32, Path, maximum = 6, description = "zoom, 0 to 6"), ("x" = u32, Path),
           ("y" = String, Path, pattern = r"^[0-9]+(\.pbf|\.mvt)?$", description = "row, with or without .pbf or .mvt")),
    responses((status = 200, description = "Mapbox Vector Tile", content_type = "application/vnd.mapbox-vector-tile"),
              (status = 204, description = "nothing in this tile"),
              (status = 400, description = "no tile of the basemap: a zoom above 6, a column or row outside the matrix, or not whole numbers", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn tile(
    State(state): State<AppState>,
    request: HeaderMap,
    Path((z, x, y)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    // What is no tile of the basemap's (a template's `{z}` sent as is, a
    // column outside the matrix, a zoom past 6, which its style's
    // `maxzoom` never asks for) is the caller's mistake: a 400, before any
    // query. Within the range every tile exists (204 when empty).
    let address = crate::tiles::tile_address(&z, &x, &y).map_err(|e| AppError::bad_request(e.problem.detail))?;
    let address = (address.z, address.x, address.y);
    if address.0 > MAX_ZOOM {
        return Err(AppError::bad_request(format!(
            "the basemap's tiles stop at zoom {MAX_ZOOM}; viewers over-zoom past it"
        )));
    }
    let key = TileKey::basemap(address, *data::DIGEST);
    let render = || async {
        let (_, tile) = state
            .db
            .catalog_reader()
            .tiles
            .tile(include_str!("tile.sql"), address, "", None)
            .await?;
        Ok(Tile::image(tile.unwrap_or_default(), MVT_MEDIA_TYPE))
    };
    state.tiles.respond_unchanging(&request, key, render).await
}

/// Glyphs for map labels: 256 code points of a font stack as signed
/// distance fields, as MapLibre's `glyphs` template asks for them. A stack
/// naming no font this service has gets its default font.
#[utoipa::path(get, path = "/api/basemap/fonts/{fontstack}/{range}", tag = "maps",
    params(("fontstack" = String, Path, description = "font names, comma-separated, such as DejaVu Sans Book"),
           ("range" = inline(crate::glyphs::GlyphRange), Path,
            description = "code points `start-end.pbf`: start a multiple of 256 below 65536, end start + 255")),
    responses((status = 200, description = "glyphs (protocol buffers)", content_type = "application/x-protobuf"),
              (status = 400, description = "not a glyph range: start a multiple of 256 below 65536, end start + 255", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "this service has no fonts (FONTS_DIR)", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn glyphs(
    State(state): State<AppState>,
    Path((stack, range)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let start = crate::glyphs::range_start(&range)?;
    let body = state.fonts.glyphs(&stack, start).await?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400")),
        ],
        body,
    )
        .into_response())
}

/// The layers that draw a dataset from the source `data`, as the web UI's
/// preview draws it: a raster as it is, polygons filled and outlined,
/// lines, and points as circles.
fn dataset_layers(dataset: &crate::dataset_record::Dataset) -> Value {
    const COLOUR: &str = "#c2410c";
    if dataset.is_raster() {
        return json!([{"id": "data", "type": "raster", "source": "data"}]);
    }
    let layer = |id: &str, kind: &str, paint: Value| json!({"id": id, "type": kind, "source": "data", "source-layer": dataset.layer_name(), "paint": paint});
    let dimension = dataset.geometry_type.and_then(|t| t.dimension());
    if dimension == Some(2) {
        json!([
            layer("data-fill", "fill", json!({"fill-color": COLOUR, "fill-opacity": 0.35})),
            layer("data-outline", "line", json!({"line-color": COLOUR, "line-width": 1})),
        ])
    } else if dimension == Some(1) {
        json!([layer(
            "data-line",
            "line",
            json!({"line-color": COLOUR, "line-width": 2})
        )])
    } else {
        json!([layer(
            "data-point",
            "circle",
            json!({"circle-color": COLOUR, "circle-radius": 4,
            "circle-stroke-color": "#ffffff", "circle-stroke-width": 1})
        )])
    }
}

/// A dataset drawn over the built-in basemap, as a MapLibre style (version
/// 8): open it in any MapLibre viewer, or in QGIS as a vector tile layer's
/// style. Its tiles are signed for a dataset not everyone may read, as in
/// its TileJSON.
#[utoipa::path(get, path = "/api/tiles/{dataset_id}/style.json", tag = "tiles", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, description = "MapLibre style, version 8"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn dataset_style(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let query = crate::tiles::tile_query(&state, &caller, &dataset);
    let mut style = style(base);
    style["name"] = json!(dataset.title);
    style["sources"]["data"] = json!({
        "type": if dataset.is_raster() { "raster" } else { "vector" },
        "url": format!("{base}/api/tiles/{}/tilejson.json{query}", dataset.id),
    });
    if dataset.is_raster() {
        style["sources"]["data"]["tileSize"] = json!(256);
    }
    let mut data = dataset_layers(&dataset);
    // The style the source brought (a GeoPackage's QGIS default: single
    // symbol, categorized, graduated) draws the data, as map layers start
    // from it; one the style spec refuses is left out.
    let kept: Option<Value> = sqlx::query_scalar("SELECT default_paint FROM datasets WHERE id = $1")
        .bind(dataset.id)
        .fetch_one(&state.pool)
        .await?;
    if let Some(kept) = kept
        .as_ref()
        .and_then(Value::as_object)
        .filter(|p| catalog_shared::paint::is_valid(p))
    {
        for layer in data.as_array_mut().into_iter().flatten() {
            let prefix = format!("{}-", layer["type"].as_str().unwrap_or_default());
            if let Some(paint) = layer["paint"].as_object_mut() {
                paint.extend(
                    kept.iter()
                        .filter(|(k, _)| k.starts_with(&prefix))
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
        }
    }
    if let (Some(layers), Value::Array(data)) = (style["layers"].as_array_mut(), data) {
        // Under the names, over the land and borders.
        let names = layers.len() - 1;
        layers.splice(names..names, data);
    }
    if let Some(bbox) = dataset.extent_bbox.as_ref().filter(|b| b.len() == 4 && b[0] <= b[2]) {
        style["center"] = json!([(bbox[0] + bbox[2]) / 2.0, (bbox[1] + bbox[3]) / 2.0]);
    }
    Ok(Json(style))
}
