//! Vector basemaps. A map whose `basemap_style` is the URL of a MapLibre
//! style gets that style's sources and layers in its export, with the
//! basemap settings applied to them: labels, roads and boundaries full,
//! subtle or hidden, buildings shown or not, land and water toned, a master
//! opacity, and per-sublayer overrides. Layers are recognised by their
//! vector-tile source layer (OpenMapTiles, Shortbread and Protomaps names)
//! or their id. Styles are fetched by `remote_styles`; an unreachable
//! basemap leaves the export without it.
use serde_json::{Map, Value, json};

use super::model::{BasemapConfig, Prominence, SublayerOverride, Tone};

/// How much of its opacity a subtle label, road or boundary keeps.
const SUBTLE_LABELS: f64 = 0.6;
const SUBTLE_LINES: f64 = 0.4;
const SOURCE_PREFIX: &str = "basemap-";
const LAYER_PREFIX: &str = "basemap-";

/// Whether a `basemap_style` names a style document (not a raster tile template).
pub fn is_style_url(basemap_style: &str) -> bool {
    (basemap_style.starts_with("https://") || basemap_style.starts_with("http://")) && !basemap_style.contains("{z}")
}

/// What a basemap layer draws, by its source layer or id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Theme {
    Roads,
    Boundaries,
    Buildings,
    Water,
    Land,
    Other,
}

impl Theme {
    fn key(self) -> &'static str {
        match self {
            Theme::Roads => "roads",
            Theme::Boundaries => "boundaries",
            Theme::Buildings => "buildings",
            Theme::Water => "water",
            Theme::Land => "land",
            Theme::Other => "other",
        }
    }
}

fn theme_of(layer: &Value) -> Theme {
    let source_layer = layer["source-layer"].as_str().unwrap_or_default().to_ascii_lowercase();
    let id = layer["id"].as_str().unwrap_or_default().to_ascii_lowercase();
    let by_source = match source_layer.as_str() {
        "transportation"
        | "transportation_name"
        | "road"
        | "roads"
        | "streets"
        | "street_labels"
        | "street_polygons"
        | "street_labels_points"
        | "bridges"
        | "aeroway" => Some(Theme::Roads),
        "boundary" | "boundaries" | "boundary_labels" | "admin" => Some(Theme::Boundaries),
        "building" | "buildings" => Some(Theme::Buildings),
        "water"
        | "waterway"
        | "water_name"
        | "ocean"
        | "water_polygons"
        | "water_lines"
        | "water_polygons_labels"
        | "water_lines_labels" => Some(Theme::Water),
        "landcover" | "landuse" | "park" | "land" | "earth" | "natural" | "sites" | "landcover_labels" => {
            Some(Theme::Land)
        }
        _ => None,
    };
    by_source.unwrap_or_else(|| {
        let has = |words: &[&str]| words.iter().any(|w| id.contains(w));
        if has(&[
            "road", "street", "highway", "motorway", "bridge", "tunnel", "rail", "path",
        ]) {
            Theme::Roads
        } else if has(&["boundary", "admin"]) {
            Theme::Boundaries
        } else if has(&["building"]) {
            Theme::Buildings
        } else if has(&["water", "ocean", "river", "lake", "sea"]) {
            Theme::Water
        } else if has(&["land", "park", "forest", "wood", "grass", "earth"]) {
            Theme::Land
        } else {
            Theme::Other
        }
    })
}

fn is_label(layer: &Value) -> bool {
    layer["type"] == "symbol" && layer["layout"].get("text-field").is_some()
}

fn is_casing(layer: &Value) -> bool {
    let id = layer["id"].as_str().unwrap_or_default().to_ascii_lowercase();
    id.contains("casing") || id.contains("outline")
}

/// The paint properties that carry a layer's opacity.
fn opacity_properties(kind: &str) -> &'static [&'static str] {
    match kind {
        "fill" => &["fill-opacity"],
        "line" => &["line-opacity"],
        "symbol" => &["text-opacity", "icon-opacity"],
        "circle" => &["circle-opacity", "circle-stroke-opacity"],
        "raster" => &["raster-opacity"],
        "fill-extrusion" => &["fill-extrusion-opacity"],
        "background" => &["background-opacity"],
        "heatmap" => &["heatmap-opacity"],
        _ => &[],
    }
}

fn mentions_zoom(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.first() == Some(&json!("zoom")) || items.iter().any(mentions_zoom),
        Value::Object(map) => map.contains_key("stops") || map.values().any(mentions_zoom),
        _ => false,
    }
}

/// An opacity value times `factor`: numbers directly, zoom curves stop by
/// stop (a zoom expression may not be nested), other expressions wrapped.
fn scaled(value: Option<&Value>, factor: f64) -> Option<Value> {
    let Some(value) = value else { return Some(json!(factor)) };
    match value {
        Value::Number(n) => Some(json!(n.as_f64().unwrap_or(1.0) * factor)),
        Value::Array(items) if matches!(items.first().and_then(Value::as_str), Some("interpolate")) => {
            let mut items = items.clone();
            for i in (4..items.len()).step_by(2) {
                items[i] = scaled(Some(&items[i]), factor)?;
            }
            Some(Value::Array(items))
        }
        Value::Array(items) if matches!(items.first().and_then(Value::as_str), Some("step")) => {
            let mut items = items.clone();
            for i in (2..items.len()).step_by(2) {
                items[i] = scaled(Some(&items[i]), factor)?;
            }
            Some(Value::Array(items))
        }
        Value::Object(function) if function.contains_key("stops") => {
            let mut function = function.clone();
            if let Some(Value::Array(stops)) = function.get_mut("stops") {
                for stop in stops {
                    if let Some(v) = stop.get_mut(1) {
                        *v = scaled(Some(v), factor)?;
                    }
                }
            }
            Some(Value::Object(function))
        }
        other if !mentions_zoom(other) => Some(json!(["*", other, factor])),
        _ => None,
    }
}

fn scale_opacity(layer: &mut Value, factor: f64) {
    let kind = layer["type"].as_str().unwrap_or_default().to_string();
    for property in opacity_properties(&kind) {
        if let Some(v) = scaled(layer["paint"].get(*property), factor) {
            paint(layer).insert((*property).to_string(), v);
        }
    }
}

fn set_opacity(layer: &mut Value, opacity: f64) {
    let kind = layer["type"].as_str().unwrap_or_default().to_string();
    for property in opacity_properties(&kind) {
        paint(layer).insert((*property).to_string(), json!(opacity));
    }
}

fn paint(layer: &mut Value) -> &mut Map<String, Value> {
    member(layer, "paint")
}

fn member<'a>(layer: &'a mut Value, name: &str) -> &'a mut Map<String, Value> {
    if !layer[name].is_object() {
        layer[name] = json!({});
    }
    layer[name].as_object_mut().expect("just made an object")
}

fn hide(layer: &mut Value) {
    member(layer, "layout").insert("visibility".into(), json!("none"));
}

/// A colour toned: muted halfway to its grey, monochrome all the way,
/// contrast pushed away from mid-grey.
fn tone_color(color: &str, tone: Tone) -> Option<String> {
    let parsed = csscolorparser::parse(color).ok()?;
    let [r, g, b, _] = parsed.to_rgba8();
    let (r, g, b) = (f64::from(r), f64::from(g), f64::from(b));
    let grey = 0.299 * r + 0.587 * g + 0.114 * b;
    let map = |c: f64| -> f64 {
        let v = match tone {
            Tone::Muted => c + (grey - c) * 0.5,
            Tone::Monochrome => grey,
            Tone::Contrast => 128.0 + (c - 128.0) * 1.3,
            Tone::Default => c,
        };
        v.clamp(0.0, 255.0).round()
    };
    Some(format!(
        "rgba({}, {}, {}, {})",
        map(r),
        map(g),
        map(b),
        (f64::from(parsed.a) * 1000.0).round() / 1000.0
    ))
}

/// Every colour literal (hex, rgb, hsl) inside a colour property's value,
/// toned. Named colours are left alone: inside expressions such words are
/// as likely match labels or property names.
fn tone_value(value: &mut Value, tone: Tone) {
    match value {
        Value::String(s) => {
            let literal = s.starts_with('#') || s.starts_with("rgb") || s.starts_with("hsl");
            if let Some(toned) = tone_color(s, tone).filter(|_| literal) {
                *s = toned;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| tone_value(v, tone)),
        Value::Object(map) => {
            if let Some(Value::Array(stops)) = map.get_mut("stops") {
                for stop in stops {
                    if let Some(v) = stop.get_mut(1) {
                        tone_value(v, tone);
                    }
                }
            }
        }
        _ => {}
    }
}

fn tone_layer(layer: &mut Value, tone: Tone) {
    for (property, value) in paint(layer).iter_mut() {
        if property.ends_with("-color") {
            tone_value(value, tone);
        }
    }
}

fn apply_override(layer: &mut Value, o: &SublayerOverride) {
    let kind = layer["type"].as_str().unwrap_or_default().to_string();
    let casing = is_casing(layer);
    let (color, width) = if casing {
        (&o.casing_color, o.casing_width)
    } else {
        (&o.stroke_color, o.stroke_width)
    };
    match kind.as_str() {
        "line" => {
            if let Some(c) = color {
                paint(layer).insert("line-color".into(), json!(c));
            }
            if let Some(w) = width {
                paint(layer).insert("line-width".into(), json!(w));
            }
        }
        "fill" => {
            if let Some(c) = &o.stroke_color {
                paint(layer).insert("fill-outline-color".into(), json!(c));
            }
        }
        "symbol" => {
            if let Some(c) = &o.stroke_color {
                paint(layer).insert("text-color".into(), json!(c));
            }
            if let Some(c) = &o.casing_color {
                paint(layer).insert("text-halo-color".into(), json!(c));
            }
        }
        _ => {}
    }
    if let Some(z) = o.min_zoom {
        layer["minzoom"] = json!(z);
    }
    if let Some(z) = o.max_zoom {
        layer["maxzoom"] = json!(z);
    }
    if let Some(opacity) = o.opacity {
        set_opacity(layer, opacity);
    }
}

/// A basemap made ready for a map: sources and layers renamed so they
/// cannot clash with the map's own, settings applied.
pub struct PreparedBasemap {
    pub sources: Map<String, Value>,
    pub layers: Vec<Value>,
    pub glyphs: Option<Value>,
    pub sprite: Option<Value>,
}

/// A URL of the basemap style made absolute against the style's own URL,
/// by hand so that template braces (`{z}`, `{fontstack}`) stay as they are.
fn absolute(style_url: &str, value: &str) -> String {
    if value.contains("://") || value.starts_with("mapbox:") {
        return value.to_string();
    }
    let Ok(base) = url::Url::parse(style_url) else {
        return value.to_string();
    };
    if let Some(path) = value.strip_prefix('/') {
        return format!("{}/{path}", base.origin().ascii_serialization());
    }
    let directory = style_url.split(['?', '#']).next().unwrap_or(style_url);
    let directory = &directory[..directory.rfind('/').map_or(directory.len(), |i| i + 1)];
    format!("{directory}{value}")
}

fn absolute_source(style_url: &str, source: &Value) -> Value {
    let mut source = source.clone();
    if let Some(url) = source["url"].as_str() {
        source["url"] = json!(absolute(style_url, url));
    }
    if let Some(data) = source["data"].as_str() {
        source["data"] = json!(absolute(style_url, data));
    }
    if let Some(tiles) = source["tiles"].as_array() {
        let tiles: Vec<Value> = tiles
            .iter()
            .map(|t| t.as_str().map_or(t.clone(), |t| json!(absolute(style_url, t))))
            .collect();
        source["tiles"] = Value::Array(tiles);
    }
    source
}

fn absolute_sprite(style_url: &str, sprite: &Value) -> Option<Value> {
    match sprite {
        Value::String(url) => Some(json!(absolute(style_url, url))),
        Value::Array(sprites) => Some(Value::Array(
            sprites
                .iter()
                .filter_map(|s| {
                    let (id, url) = (s["id"].as_str()?, s["url"].as_str()?);
                    Some(json!({"id": id, "url": absolute(style_url, url)}))
                })
                .collect(),
        )),
        _ => None,
    }
}

/// The basemap style at `style_url`, ready to merge. Entries that are not
/// layer objects are dropped; layers without a string id are named by
/// their position.
pub fn prepare(style: &Value, style_url: &str, config: &BasemapConfig, show_labels: bool) -> PreparedBasemap {
    let sources = style["sources"]
        .as_object()
        .map(|s| {
            s.iter()
                .filter(|(_, source)| source.is_object())
                .map(|(id, source)| (format!("{SOURCE_PREFIX}{id}"), absolute_source(style_url, source)))
                .collect()
        })
        .unwrap_or_default();
    let mut layers = Vec::new();
    for (index, original) in style["layers"].as_array().into_iter().flatten().enumerate() {
        if !original.is_object() || !original["type"].is_string() {
            continue;
        }
        let mut layer = original.clone();
        let theme = theme_of(original);
        let label = is_label(original);
        let original_id = original["id"]
            .as_str()
            .map_or_else(|| format!("layer-{index}"), String::from);
        layer["id"] = json!(format!("{LAYER_PREFIX}{original_id}"));
        if let Some(source) = original["source"].as_str() {
            layer["source"] = json!(format!("{SOURCE_PREFIX}{source}"));
        }
        if layer["type"] == "background"
            && let Some(color) = &config.background_color
        {
            paint(&mut layer).insert("background-color".into(), json!(color));
        }
        let land_or_water = (matches!(theme, Theme::Water | Theme::Land) && !label) || layer["type"] == "background";
        if config.land_water_tone != Tone::Default && land_or_water {
            tone_layer(&mut layer, config.land_water_tone);
        }
        let prominence = match theme {
            Theme::Roads => config.road_visibility,
            Theme::Boundaries => config.boundary_visibility,
            _ => Prominence::Full,
        };
        match prominence {
            Prominence::Hidden => hide(&mut layer),
            Prominence::Subtle => scale_opacity(&mut layer, SUBTLE_LINES),
            Prominence::Full => {}
        }
        if label {
            match (show_labels, config.label_mode) {
                (false, _) | (_, Prominence::Hidden) => hide(&mut layer),
                (true, Prominence::Subtle) => scale_opacity(&mut layer, SUBTLE_LABELS),
                (true, Prominence::Full) => {}
            }
        }
        if theme == Theme::Buildings && !config.building_visibility {
            hide(&mut layer);
        }
        if config.opacity < 1.0 {
            scale_opacity(&mut layer, config.opacity);
        }
        if let Some(overrides) = &config.sublayer_overrides {
            // From the broadest key to the most specific: the theme, labels,
            // the source layer, then the layer's own id.
            let source_layer = original["source-layer"].as_str().unwrap_or_default();
            let keys = [
                theme.key(),
                if label { "labels" } else { "" },
                source_layer,
                &original_id,
            ];
            for key in keys.iter().filter(|k| !k.is_empty()) {
                if let Some(o) = overrides.get(*key) {
                    apply_override(&mut layer, o);
                }
            }
        }
        layers.push(layer);
    }
    PreparedBasemap {
        sources,
        layers,
        glyphs: style["glyphs"].as_str().map(|g| json!(absolute(style_url, g))),
        sprite: absolute_sprite(style_url, &style["sprite"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_recognised_by_source_layer_or_id() {
        assert_eq!(
            theme_of(&json!({"id": "x", "source-layer": "transportation"})),
            Theme::Roads
        );
        assert_eq!(
            theme_of(&json!({"id": "admin-1", "source-layer": "places"})),
            Theme::Boundaries
        );
        assert_eq!(theme_of(&json!({"id": "building-3d"})), Theme::Buildings);
        assert_eq!(
            theme_of(&json!({"id": "place-city", "source-layer": "place"})),
            Theme::Other
        );
    }

    #[test]
    fn opacities_scale_without_nesting_zoom_expressions() {
        assert_eq!(scaled(None, 0.5), Some(json!(0.5)));
        assert_eq!(scaled(Some(&json!(0.8)), 0.5), Some(json!(0.4)));
        assert_eq!(
            scaled(Some(&json!(["interpolate", ["linear"], ["zoom"], 5, 0.2, 10, 1])), 0.5),
            Some(json!(["interpolate", ["linear"], ["zoom"], 5, 0.1, 10, 0.5]))
        );
        assert_eq!(
            scaled(Some(&json!({"stops": [[5, 0.2], [10, 1]]})), 0.5),
            Some(json!({"stops": [[5, 0.1], [10, 0.5]]}))
        );
        assert_eq!(
            scaled(Some(&json!(["get", "o"])), 0.5),
            Some(json!(["*", ["get", "o"], 0.5]))
        );
        assert_eq!(scaled(Some(&json!(["case", ["<", ["zoom"], 4], 0, 1])), 0.5), None);
    }

    #[test]
    fn odd_styles_are_tidied_not_trusted() {
        let style = json!({
            "version": 8,
            "sources": {"base": {"type": "vector", "url": "tiles.json"}, "bad": 3},
            "glyphs": "/fonts/{fontstack}/{range}.pbf",
            "sprite": "sprites/basic",
            "layers": [1, null, {"type": "background"}, {"id": 7, "type": "fill", "source": "base"}, {"id": "x"}]
        });
        let prepared = prepare(
            &style,
            "https://maps.example/styles/basic/style.json",
            &BasemapConfig::default(),
            true,
        );
        let ids: Vec<&str> = prepared.layers.iter().map(|l| l["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["basemap-layer-2", "basemap-layer-3"]);
        assert_eq!(prepared.sources.len(), 1);
        assert_eq!(
            prepared.sources["basemap-base"]["url"],
            "https://maps.example/styles/basic/tiles.json"
        );
        assert_eq!(
            prepared.glyphs,
            Some(json!("https://maps.example/fonts/{fontstack}/{range}.pbf"))
        );
        assert_eq!(
            prepared.sprite,
            Some(json!("https://maps.example/styles/basic/sprites/basic"))
        );
    }

    #[test]
    fn named_colours_in_expressions_are_left_alone() {
        let mut value = json!(["match", ["get", "class"], "red", "#ff0000", "tan"]);
        tone_value(&mut value, Tone::Monochrome);
        assert_eq!(
            value,
            json!(["match", ["get", "class"], "red", "rgba(76, 76, 76, 1)", "tan"])
        );
    }

    #[test]
    fn tones_move_colours_towards_grey() {
        assert_eq!(tone_color("#ff0000", Tone::Monochrome).unwrap(), "rgba(76, 76, 76, 1)");
        assert_eq!(
            tone_color("hsl(0, 100%, 50%)", Tone::Muted).unwrap(),
            "rgba(166, 38, 38, 1)"
        );
        assert!(tone_color("get", Tone::Muted).is_none());
    }
}
