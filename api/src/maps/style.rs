//! MapLibre style documents (version 8) from maps, and maps from them.
//! What a style cannot express (layer display names, popups, basemap
//! settings) travels in `metadata`, so export → import → export gives the
//! same document.
use std::collections::HashMap;

use axum::{Json, extract::State, http::StatusCode, response::Response};
use catalog_shared::{
    AppError,
    datasets::{DatasetKind, GeometryType},
    maps::MapVisibility,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{
    basemap,
    model::{
        BasemapConfig, LayerType, MapInput, MapLayerInput, MapLayerResponse, MapResponse, Projection, Relief, Tone,
    },
    store::{insert_map, readable_map, with_etag},
};
use crate::{
    access::{
        Caller,
        datasets::visible_dataset,
        policy::readable_by_anyone,
        signed_tiles::{signed_query, template_expiry},
    },
    dataset_record::Dataset,
    extract::Path,
    state::AppState,
    tiles::{SOURCE_MAX_ZOOM, versioned_query},
};

const MAP_META: &str = "catalog:map";
const LAYER_META: &str = "catalog:layer";
/// Features a GeoJSON source (layer type `geojson`) fetches.
const GEOJSON_SOURCE_LIMIT: u32 = 1000;

/// Colours told apart at a glance, one per layer by its place in the map
/// (the web UI's editor starts layers from the same ones).
pub(crate) const LAYER_COLOURS: [&str; 12] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#1f78b4", "#a6761d", "#b15928", "#6a3d9a",
    "#33a02c", "#e31a1c",
];

fn default_paint(kind: &str, index: usize) -> Map<String, Value> {
    let colour = LAYER_COLOURS[index % LAYER_COLOURS.len()];
    let paint = match kind {
        "line" => json!({"line-color": colour, "line-width": 2}),
        "fill" => json!({"fill-color": colour, "fill-outline-color": "#1f2933"}),
        "raster" => json!({}),
        _ => {
            json!({"circle-color": colour, "circle-radius": 5, "circle-stroke-color": "#ffffff", "circle-stroke-width": 1})
        }
    };
    paint.as_object().cloned().unwrap_or_default()
}

/// The source a layer draws from (tile templates signed when a signature
/// is given, so viewers need no credential): a raster dataset's image
/// tiles; a vector dataset's vector tiles, or its GeoJSON items for layers
/// of type `geojson` and `raster_service`.
fn source_of(layer: &MapLayerResponse, base: &str, signature: Option<&String>) -> (String, Value) {
    let id = layer.dataset_id;
    if is_raster(layer) {
        let rendering = raster_rendering(layer.style_config.as_ref());
        let query = match (signature, rendering.is_empty()) {
            (Some(q), true) => format!("?{q}"),
            (Some(q), false) => format!("?{q}&{rendering}"),
            (None, true) => String::new(),
            (None, false) => format!("?{rendering}"),
        };
        let mut source = json!({
            "type": "raster",
            "tiles": [format!("{base}/api/tiles/{id}/{{z}}/{{x}}/{{y}}.png{query}")],
            "tileSize": 256,
        });
        stop_at_data(&mut source, layer.native_zoom, layer.dataset_extent_bbox.as_ref());
        return (format!("dataset-{id}-raster"), source);
    }
    if layer.layer_type == LayerType::VectorService {
        let query = signature.map(|q| format!("?{q}")).unwrap_or_default();
        let source = json!({
            "type": "vector",
            "tiles": [format!("{base}/api/tiles/{id}/{{z}}/{{x}}/{{y}}.pbf{query}")],
            "minzoom": 0,
            "maxzoom": SOURCE_MAX_ZOOM,
        });
        (format!("dataset-{id}"), source)
    } else {
        let data = format!("{base}/api/collections/{id}/items?limit={GEOJSON_SOURCE_LIMIT}");
        (
            format!("dataset-{id}-geojson"),
            json!({"type": "geojson", "data": data}),
        )
    }
}

/// The rendering the map editor chose for a raster layer (its
/// `style_config`: `bidx`, `rescale` as `[min, max]`, `colormap`) as a tile
/// query; what is not of its kind is left out, and the tile route checks
/// the rest against the raster.
fn raster_rendering(config: Option<&Value>) -> String {
    let mut pairs = url::form_urlencoded::Serializer::new(String::new());
    let Some(config) = config else {
        return String::new();
    };
    if let Some(band) = config.get("bidx").and_then(Value::as_u64) {
        pairs.append_pair("bidx", &band.to_string());
    }
    if let Some([low, high]) = config
        .get("rescale")
        .and_then(Value::as_array)
        .and_then(|r| r.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
        .as_deref()
    {
        pairs.append_pair("rescale", &format!("{low},{high}"));
    }
    if let Some(name) = config.get("colormap").and_then(Value::as_str) {
        pairs.append_pair("colormap", name);
    }
    pairs.finish()
}

/// Where a raster source's tiles stop: `maxzoom`, past which MapLibre
/// over-zooms the last tiles instead of asking for finer ones the raster
/// does not have, and `bounds`, the data's extent, outside which it asks
/// for none. An extent across the antimeridian gives no bounds: MapLibre
/// asks for no tile at all inside bounds that wrap.
fn stop_at_data(source: &mut Value, maxzoom: Option<u32>, extent: Option<&Vec<f64>>) {
    if let Some(maxzoom) = maxzoom {
        source["maxzoom"] = json!(maxzoom);
    }
    if let Some(bounds) = extent.filter(|b| b.len() == 4 && b[0] <= b[2]) {
        source["bounds"] = json!(bounds);
    }
}

fn is_raster(layer: &MapLayerResponse) -> bool {
    match layer.dataset_kind {
        Some(DatasetKind::Raster) => true,
        Some(DatasetKind::Vector) | None => false,
    }
}

/// A data layer as a style layer, the map's settings for it kept in its
/// metadata so an exported style imports back unchanged.
fn style_layer_of(index: usize, place: usize, layer: &MapLayerResponse, source_id: &str) -> Value {
    let kind = if is_raster(layer) {
        "raster"
    } else {
        layer
            .dataset_geometry_type
            .map_or("circle", GeometryType::maplibre_layer)
    };
    // The dataset's own style first (its GeoPackage's default), then the
    // layer's paint over it.
    let mut paint = default_paint(kind, place);
    // One the style spec refuses (kept before paints were checked) is left
    // out: it would make MapLibre refuse the whole map.
    if let Some(own) = layer
        .dataset_default_paint
        .as_ref()
        .and_then(Value::as_object)
        .filter(|p| catalog_shared::paint::is_valid(p))
    {
        paint.extend(own.clone());
    }
    if let Some(custom) = layer.paint.as_object() {
        paint.extend(custom.clone());
    }
    paint.entry(format!("{kind}-opacity")).or_insert(json!(layer.opacity));
    let mut layout = layer.layout.as_object().cloned().unwrap_or_default();
    layout.insert(
        "visibility".into(),
        json!(if layer.visible { "visible" } else { "none" }),
    );
    let mut style_layer = json!({
        "id": format!("layer-{index}"),
        "type": kind,
        "source": source_id,
        "paint": paint,
        "layout": layout,
        "metadata": {LAYER_META: {
            "dataset_id": layer.dataset_id,
            "display_name": layer.display_name,
            "sort_order": layer.sort_order,
            "opacity": layer.opacity,
            "visible": layer.visible,
            "paint": layer.paint,
            "layout": layer.layout,
            "label_config": layer.label_config,
            "popup_config": layer.popup_config,
            "style_config": layer.style_config,
            "layer_type": layer.layer_type,
            "show_in_legend": layer.show_in_legend,
        }},
    });
    // Read-only, for the style's reader: below this zoom the layer's tiles
    // draw an even selection of its features, not all of them.
    if let Some(complete) = layer.dataset_complete_zoom.filter(|z| *z > 0) {
        style_layer["metadata"][LAYER_META]["complete_zoom"] = json!(complete);
    }
    if is_raster(layer) {
        return style_layer;
    }
    if layer.layer_type == LayerType::VectorService {
        style_layer["source-layer"] = json!(layer.dataset_table_name);
    }
    if let Some(filter) = &layer.filter {
        style_layer["filter"] = filter.clone();
    }
    style_layer
}

/// The layer of a raster (tile URL template) basemap, which can only be
/// toned as a whole.
fn raster_basemap_layer(config: &BasemapConfig) -> Value {
    let mut paint = json!({"raster-opacity": config.opacity});
    match config.land_water_tone {
        Tone::Muted => paint["raster-saturation"] = json!(-0.5),
        Tone::Monochrome => paint["raster-saturation"] = json!(-1),
        Tone::Contrast => paint["raster-contrast"] = json!(0.3),
        Tone::Default => {}
    }
    json!({"id": "basemap", "type": "raster", "source": "basemap", "paint": paint})
}

/// The style of a map. `signatures` holds, by dataset, the query string
/// of its tile URLs (its data version, and a signature for datasets the
/// reader may see but not everyone);
/// `basemap` the vector basemap style its `basemap_style` names, if loaded;
/// `dem` the record of its terrain's dataset, when the reader may see it.
pub fn style_of(
    map: &MapResponse,
    base: &str,
    signatures: &HashMap<Uuid, String>,
    basemap: Option<&Value>,
    dem: Option<&Dataset>,
) -> Value {
    let mut sources = Map::new();
    let mut data_layers = Vec::new();
    // Layers the reader may not see are left out: a style names the
    // dataset's table and the author's settings for its columns.
    // A layer's default colour goes by its place among all the map's layers,
    // so it is the same whoever reads the map.
    let readable = map.layers.iter().enumerate().filter(|(_, l)| l.dataset_available);
    for (index, (place, layer)) in readable.enumerate() {
        let (source_id, mut source) = source_of(layer, base, signatures.get(&layer.dataset_id));
        // The credit MapLibre shows for the data.
        if let Some(attribution) = &layer.dataset_attribution {
            source["attribution"] = json!(attribution);
        }
        data_layers.push(style_layer_of(index, place, layer, &source_id));
        sources.entry(source_id).or_insert(source);
    }
    let config = &map.basemap_config;
    let background = config.background_color.clone().unwrap_or_else(|| "#f4f4f2".into());
    let mut layers = vec![json!({"id": "background", "type": "background", "paint": {"background-color": background}})];
    let mut basemap_layers = Vec::new();
    if map.basemap_style.contains("{z}") {
        sources.insert(
            "basemap".into(),
            json!({"type": "raster", "tiles": [map.basemap_style], "tileSize": 256}),
        );
        basemap_layers.push(raster_basemap_layer(config));
    }
    let vector_basemap =
        basemap.map(|style| basemap::prepare(style, &map.basemap_style, config, map.show_basemap_labels));
    if let Some(prepared) = &vector_basemap {
        sources.extend(prepared.sources.clone());
        basemap_layers.extend(prepared.layers.iter().cloned());
    }
    let terrain = map
        .terrain_config
        .as_ref()
        .filter(|t| t.enabled)
        .and_then(|t| t.source_dataset_id.map(|dem| (t, dem)));
    if let (Some(relief), Some(_)) = (config.relief_contrast, terrain) {
        let exaggeration = match relief {
            Relief::Soft => 0.25,
            Relief::Standard => 0.5,
            Relief::Strong => 0.8,
        };
        basemap_layers.push(json!({"id": "relief", "type": "hillshade", "source": "terrain", "paint": {"hillshade-exaggeration": exaggeration}}));
    }
    if config.basemap_position == super::model::Position::Top {
        layers.extend(data_layers);
        // A basemap's own background drawn over the data would hide it.
        layers.extend(basemap_layers.into_iter().filter(|l| l["type"] != "background"));
    } else {
        layers.extend(basemap_layers);
        layers.extend(data_layers);
    }
    let mut style = json!({
        "version": 8,
        "name": map.name,
        "metadata": {MAP_META: {
            "description": map.description,
            "notes": map.notes,
            "basemap_style": map.basemap_style,
            "show_basemap_labels": map.show_basemap_labels,
            "basemap_config": map.basemap_config,
            "terrain_config": map.terrain_config,
            "visibility": map.visibility,
            "plugins": map.plugins,
            "legend_title": map.legend_title,
        }},
        "sprite": sprite_of(vector_basemap.as_ref().and_then(|b| b.sprite.as_ref()), base),
        "bearing": map.bearing,
        "pitch": map.pitch,
        "sources": sources,
        "layers": layers,
    });
    if let (Some(lng), Some(lat)) = (map.center_lng, map.center_lat) {
        style["center"] = json!([lng, lat]);
    }
    if let Some(zoom) = map.zoom {
        style["zoom"] = json!(zoom);
    }
    if let Some((terrain, dem_id)) = terrain {
        let query = signatures.get(&dem_id).map(|q| format!("?{q}")).unwrap_or_default();
        let mut source = json!({
            "type": "raster-dem",
            "tiles": [format!("{base}/api/tiles/{dem_id}/terrain/{{z}}/{{x}}/{{y}}.png{query}")],
            "tileSize": 512,
            "encoding": "mapbox",
        });
        if let Some(dem) = dem.filter(|d| d.id == dem_id) {
            // 512 px tiles are as fine one zoom before the raster's 256 px ones.
            let maxzoom = dem
                .raster
                .as_ref()
                .zip(dem.extent_bbox.as_deref())
                .map(|(r, extent)| r.0.native_zoom(extent).saturating_sub(1));
            stop_at_data(&mut source, maxzoom, dem.extent_bbox.as_ref());
        }
        style["sources"]["terrain"] = source;
        style["terrain"] = json!({"source": "terrain", "exaggeration": terrain.exaggeration});
    }
    if config.projection == Projection::Globe {
        style["projection"] = json!({"type": "globe"});
    }
    if let Some(glyphs) = vector_basemap.and_then(|b| b.glyphs) {
        style["glyphs"] = glyphs;
    }
    style
}

/// The sprite, always as an array of `{id, url}`: a vector basemap's own
/// (its icons keep their names), else the service's empty default.
fn sprite_of(basemap_sprite: Option<&Value>, base: &str) -> Value {
    match basemap_sprite {
        Some(Value::String(url)) => json!([{"id": "default", "url": url}]),
        Some(Value::Array(sprites)) if !sprites.is_empty() => Value::Array(sprites.clone()),
        _ => json!([{"id": "default", "url": format!("{base}/api/maps/sprites/default")}]),
    }
}

/// The map as a complete MapLibre style.
#[utoipa::path(get, path = "/api/maps/{map_id}/style.json", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 200, description = "MapLibre style, version 8")))]
pub async fn export_style(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, AppError> {
    let map = readable_map(&state, &caller, id).await?;
    let dem = terrain_dataset(&state, &caller, &map).await?;
    let mut signatures = tile_signatures(&state, &caller, &map);
    if let Some(dem) = &dem {
        signatures.insert(dem.id, terrain_signature(&state, &caller, dem));
    }
    let basemap = if crate::basemap::is_builtin(&map.basemap_style, &state.config.public_url) {
        Some(std::sync::Arc::new(crate::basemap::style(&state.config.public_url)))
    } else if basemap::is_style_url(&map.basemap_style) {
        state.basemaps.fetch(&state.outbound, &map.basemap_style).await
    } else {
        None
    };
    Ok(Json(style_of(
        &map,
        &state.config.public_url,
        &signatures,
        basemap.as_deref(),
        dem.as_ref(),
    )))
}

/// The query of each tiled layer's tile template, by dataset: the data
/// version (`v`, so a CDN may keep the tiles), and a signature for a
/// dataset the reader may see but not everyone (the map's layers say
/// which, see `load_maps`): a style loaded in a browser then draws them
/// with no credential. A reader through an embed token gets no signature:
/// its page sends the token with every request, so that revoking the token
/// stops the tiles at once.
fn tile_signatures(state: &AppState, caller: &Caller, map: &MapResponse) -> HashMap<Uuid, String> {
    let exp = template_expiry(chrono::Utc::now().timestamp());
    map.layers
        .iter()
        .filter(|l| l.dataset_available && (l.layer_type == LayerType::VectorService || is_raster(l)))
        .map(|l| {
            let public = l
                .dataset_visibility
                .zip(l.dataset_status)
                .is_some_and(|(visibility, status)| readable_by_anyone(visibility, status));
            let signature = (caller.capability.is_none() && !public)
                .then(|| signed_query(&state.config.jwt_secret, l.dataset_id, l.publication_version, exp));
            (l.dataset_id, versioned_query(l.data_version, signature.as_deref()))
        })
        .collect()
}

/// The record of the map's terrain dataset, when it has terrain and the
/// reader may see that dataset.
async fn terrain_dataset(state: &AppState, caller: &Caller, map: &MapResponse) -> Result<Option<Dataset>, AppError> {
    let Some(dem) = map
        .terrain_config
        .as_ref()
        .filter(|t| t.enabled)
        .and_then(|t| t.source_dataset_id)
    else {
        return Ok(None);
    };
    match visible_dataset(state, caller, dem).await {
        Ok(dataset) => Ok(Some(dataset)),
        Err(e) if e.status() == StatusCode::NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    }
}

/// The query of the map's terrain source, by the same rule as its layers'.
fn terrain_signature(state: &AppState, caller: &Caller, dem: &Dataset) -> String {
    let signature = (caller.capability.is_none() && !readable_by_anyone(dem.visibility, dem.status)).then(|| {
        let exp = template_expiry(chrono::Utc::now().timestamp());
        signed_query(&state.config.jwt_secret, dem.id, dem.publication_version, exp)
    });
    versioned_query(dem.data_version, signature.as_deref())
}

/// A MapInput that recreates this map (fork).
pub fn input_of(map: &MapResponse, name: String) -> MapInput {
    let layers = map
        .layers
        .iter()
        .map(|l| MapLayerInput {
            id: None,
            dataset_id: l.dataset_id,
            sort_order: l.sort_order as i64,
            visible: l.visible,
            opacity: l.opacity,
            paint: l.paint.as_object().cloned(),
            layout: l.layout.as_object().cloned(),
            display_name: l.display_name.clone(),
            filter: l.filter.as_ref().and_then(|f| f.as_array().cloned()),
            label_config: l.label_config.as_ref().and_then(|v| v.as_object().cloned()),
            popup_config: l
                .popup_config
                .as_ref()
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
            style_config: l.style_config.as_ref().and_then(|v| v.as_object().cloned()),
            layer_type: Some(l.layer_type),
            show_in_legend: l.show_in_legend,
        })
        .collect();
    MapInput {
        name: Some(name),
        description: map.description.clone(),
        notes: map.notes.clone(),
        center_lng: map.center_lng,
        center_lat: map.center_lat,
        zoom: map.zoom,
        bearing: Some(map.bearing),
        pitch: Some(map.pitch),
        basemap_style: Some(map.basemap_style.clone()),
        show_basemap_labels: Some(map.show_basemap_labels),
        basemap_config: Some(map.basemap_config.clone()),
        terrain_config: map.terrain_config.clone(),
        visibility: Some(MapVisibility::Private),
        layers: Some(layers),
        plugins: Some(map.plugins.clone()),
        legend_title: map.legend_title.clone(),
    }
}

fn bad(detail: impl Into<String>) -> AppError {
    AppError::unprocessable(detail)
}

/// The dataset a style layer draws: from our metadata, else from a source
/// that points at one of this service's collections.
fn dataset_of(layer: &Value, sources: &Map<String, Value>) -> Option<Uuid> {
    if let Some(id) = layer["metadata"][LAYER_META]["dataset_id"].as_str() {
        return id.parse().ok();
    }
    let source_id = layer["source"].as_str()?;
    if let Some(id) = source_id.strip_prefix("dataset-").and_then(|rest| rest.get(..36)) {
        return id.parse().ok();
    }
    let source = sources.get(source_id)?;
    let rest = match source["type"].as_str()? {
        "geojson" => source["data"].as_str()?.split("/collections/").nth(1)?,
        "vector" => source["tiles"][0].as_str()?.split("/tiles/").nth(1)?,
        _ => return None,
    };
    rest.split('/').next()?.parse().ok()
}

fn map_input_from_style(style: &Value) -> Result<MapInput, AppError> {
    if style["version"] != 8 {
        return Err(bad("version: a MapLibre style must have version 8"));
    }
    match &style["sprite"] {
        Value::Null | Value::String(_) => {}
        Value::Array(items) if items.iter().all(|s| s["id"].is_string() && s["url"].is_string()) => {}
        _ => return Err(bad("sprite: must be a URL or an array of {id, url}")),
    }
    let layers_in = style["layers"]
        .as_array()
        .ok_or_else(|| bad("layers: a style needs a layers array"))?;
    let sources = style["sources"].as_object().cloned().unwrap_or_default();
    let meta = &style["metadata"][MAP_META];
    let mut layers = Vec::new();
    for layer in layers_in {
        let Some(dataset_id) = dataset_of(layer, &sources) else {
            continue;
        };
        let stored = &layer["metadata"][LAYER_META];
        let input = if stored.is_object() {
            let mut stored = stored.clone();
            stored["dataset_id"] = json!(dataset_id);
            stored["filter"] = layer["filter"].clone();
            serde_json::from_value::<MapLayerInput>(stored).map_err(|e| bad(format!("layers: {e}")))?
        } else {
            let kind = layer["type"].as_str().unwrap_or("circle");
            let mut paint = layer["paint"].as_object().cloned().unwrap_or_default();
            let opacity = paint
                .remove(&format!("{kind}-opacity"))
                .and_then(|v| v.as_f64())
                .unwrap_or(1.0);
            let mut layout = layer["layout"].as_object().cloned().unwrap_or_default();
            let visible = layout.remove("visibility").is_none_or(|v| v != "none");
            MapLayerInput {
                id: None,
                dataset_id,
                sort_order: layers.len() as i64,
                visible,
                opacity,
                paint: Some(paint),
                layout: Some(layout),
                display_name: layer["id"].as_str().map(String::from),
                filter: layer["filter"].as_array().cloned(),
                label_config: None,
                popup_config: None,
                style_config: None,
                layer_type: None,
                show_in_legend: true,
            }
        };
        layers.push(input);
    }
    let field = |name: &str| meta.get(name).filter(|v| !v.is_null()).cloned();
    Ok(MapInput {
        name: Some(
            style["name"]
                .as_str()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or("Imported map")
                .to_string(),
        ),
        description: field("description").and_then(|v| v.as_str().map(String::from)),
        notes: field("notes").and_then(|v| v.as_str().map(String::from)),
        center_lng: style["center"][0].as_f64(),
        center_lat: style["center"][1].as_f64(),
        zoom: style["zoom"].as_f64(),
        bearing: style["bearing"].as_f64(),
        pitch: style["pitch"].as_f64(),
        basemap_style: field("basemap_style").and_then(|v| v.as_str().map(String::from)),
        show_basemap_labels: field("show_basemap_labels").and_then(|v| v.as_bool()),
        basemap_config: meta_field(meta, "basemap_config")?,
        terrain_config: meta_field(meta, "terrain_config")?,
        visibility: field("visibility")
            .as_ref()
            .and_then(Value::as_str)
            .map(|name| {
                MapVisibility::parse(name).ok_or_else(|| bad("visibility: must be private, internal or public"))
            })
            .transpose()?,
        layers: Some(layers),
        plugins: meta_field(meta, "plugins")?,
        legend_title: field("legend_title").and_then(|v| v.as_str().map(String::from)),
    })
}

fn meta_field<T: serde::de::DeserializeOwned>(meta: &Value, name: &str) -> Result<Option<T>, AppError> {
    match meta.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| bad(format!("metadata.{name}: {e}"))),
    }
}

/// Creates a map from a MapLibre style (sprite as a URL or an array).
#[utoipa::path(post, path = "/api/maps/import", tag = "maps", request_body(content = Object, description = "a MapLibre style document"),
    responses((status = 201, body = MapResponse), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn import_style(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::Json(style): crate::extract::Json<Value>,
) -> Result<Response, AppError> {
    let input = map_input_from_style(&style)?;
    let map = insert_map(&state, &caller, &input, None).await?;
    Ok(with_etag(map, StatusCode::CREATED))
}

/// A 1 x 1 image for the empty default sprite.
const SPRITE_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f, 0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba,
    0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The sprite every exported style names: empty until maps carry icons,
/// so viewers load styles without a failed request.
#[utoipa::path(get, path = "/api/maps/sprites/{file}", tag = "maps", params(("file" = String, Path, description = "default.json, default.png and their @2x forms")),
    responses((status = 200, description = "sprite index or image"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn sprite(Path(file): Path<String>) -> Result<Response, AppError> {
    use axum::response::IntoResponse;
    match file.as_str() {
        "default.json" | "default@2x.json" => Ok(Json(json!({})).into_response()),
        "default.png" | "default@2x.png" => {
            Ok(([(axum::http::header::CONTENT_TYPE, "image/png")], SPRITE_PNG.to_vec()).into_response())
        }
        _ => Err(AppError::not_found(format!("no sprite file {file}"))),
    }
}
