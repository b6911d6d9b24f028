//! Map request and response types, with the bounds of the specification.
use std::collections::BTreeMap;

use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, DatasetKind, DatasetVisibility, GeometryType, PublicationStatus},
    maps::MapVisibility,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Prominence {
    #[default]
    Full,
    Subtle,
    Hidden,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tone {
    #[default]
    Default,
    Muted,
    Contrast,
    Monochrome,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Relief {
    Soft,
    Standard,
    Strong,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Position {
    #[default]
    Bottom,
    Top,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Projection {
    #[default]
    Mercator,
    Globe,
}

fn default_true() -> bool {
    true
}
fn default_one() -> f64 {
    1.0
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SublayerOverride {
    #[schema(pattern = r"^#[0-9A-Fa-f]{6}$")]
    pub stroke_color: Option<String>,
    #[schema(minimum = 0, maximum = 20)]
    pub stroke_width: Option<f64>,
    #[schema(pattern = r"^#[0-9A-Fa-f]{6}$")]
    pub casing_color: Option<String>,
    #[schema(minimum = 0, maximum = 20)]
    pub casing_width: Option<f64>,
    #[schema(minimum = 0, maximum = 24)]
    pub min_zoom: Option<f64>,
    #[schema(minimum = 0, maximum = 24)]
    pub max_zoom: Option<f64>,
    #[schema(minimum = 0, maximum = 1)]
    pub opacity: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct BasemapConfig {
    #[serde(default)]
    pub label_mode: Prominence,
    #[serde(default)]
    pub road_visibility: Prominence,
    #[serde(default)]
    pub boundary_visibility: Prominence,
    #[serde(default = "default_true")]
    pub building_visibility: bool,
    #[serde(default)]
    pub land_water_tone: Tone,
    #[serde(default)]
    pub relief_contrast: Option<Relief>,
    #[serde(default = "default_one")]
    #[schema(minimum = 0, maximum = 1)]
    pub opacity: f64,
    #[serde(default)]
    pub background_color: Option<String>,
    #[serde(default)]
    pub sublayer_overrides: Option<BTreeMap<String, SublayerOverride>>,
    /// Null or absent is the default, and the default is what is answered.
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(value_type = Option<Position>)]
    pub basemap_position: Position,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(value_type = Option<Projection>)]
    pub projection: Projection,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Default for BasemapConfig {
    fn default() -> Self {
        serde_json::from_value(Value::Object(Map::new())).expect("defaults")
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct TerrainConfig {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub source_dataset_id: Option<Uuid>,
    #[serde(default = "default_one")]
    #[schema(minimum = 0, maximum = 3)]
    pub exaggeration: f64,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerType {
    #[default]
    VectorService,
    RasterService,
    Geojson,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct PopupConfig {
    pub enabled: bool,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub expression: Option<String>,
    #[serde(default)]
    #[schema(max_items = 100)]
    pub visible_fields: Option<Vec<String>>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct MapLayerInput {
    #[serde(default)]
    pub id: Option<Uuid>,
    /// A dataset the caller may read.
    pub dataset_id: Uuid,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 32767)]
    pub sort_order: i64,
    #[serde(default = "default_true")]
    pub visible: bool,
    #[serde(default = "default_one")]
    #[schema(minimum = 0, maximum = 1)]
    pub opacity: f64,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub paint: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub layout: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(max_length = 255)]
    pub display_name: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Vec<Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub label_config: Option<Map<String, Value>>,
    #[serde(default)]
    pub popup_config: Option<PopupConfig>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub style_config: Option<Map<String, Value>>,
    #[serde(default)]
    pub layer_type: Option<LayerType>,
    #[serde(default = "default_true")]
    pub show_in_legend: bool,
}

/// MapCreate and MapUpdate in one shape: create requires `name`; on update
/// every field is optional and an absent field keeps its value.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct MapInput {
    /// Not only blanks.
    #[schema(
        max_length = 255,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub name: Option<String>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(max_length = 50000)]
    pub notes: Option<String>,
    #[schema(minimum = -180, maximum = 180)]
    pub center_lng: Option<f64>,
    #[schema(minimum = -90, maximum = 90)]
    pub center_lat: Option<f64>,
    #[schema(minimum = 0, maximum = 24)]
    pub zoom: Option<f64>,
    #[schema(minimum = -180, maximum = 180)]
    pub bearing: Option<f64>,
    #[schema(minimum = 0, maximum = 85)]
    pub pitch: Option<f64>,
    #[schema(max_length = 2000)]
    pub basemap_style: Option<String>,
    pub show_basemap_labels: Option<bool>,
    pub basemap_config: Option<BasemapConfig>,
    pub terrain_config: Option<TerrainConfig>,
    pub visibility: Option<MapVisibility>,
    #[schema(max_items = 200)]
    pub layers: Option<Vec<MapLayerInput>>,
    #[schema(max_items = 50)]
    pub plugins: Option<Vec<String>>,
    #[schema(max_length = 120)]
    pub legend_title: Option<String>,
}

/// A new map: a [`MapInput`] with its name (the document's form of the
/// create route's body).
pub struct NewMap;

impl utoipa::PartialSchema for NewMap {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::openapi::object_of(
            "A new map: a `MapInput` with its name.",
            &[<MapInput as utoipa::PartialSchema>::schema()],
            &["name"],
        )
    }
}

impl utoipa::ToSchema for NewMap {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        <MapInput as utoipa::ToSchema>::schemas(schemas);
    }
}

fn max_chars(field: &str, value: &Option<String>, max: usize) -> Result<(), AppError> {
    match value {
        Some(v) if v.chars().count() > max => Err(AppError::invalid_field(field, &format!("at most {max} characters"))),
        _ => Ok(()),
    }
}

fn within(field: &str, value: Option<f64>, min: f64, max: f64) -> Result<(), AppError> {
    match value {
        Some(v) if !(v.is_finite() && v >= min && v <= max) => {
            Err(AppError::invalid_field(field, &format!("must be from {min} to {max}")))
        }
        _ => Ok(()),
    }
}

fn hex_color(field: &str, value: &Option<String>) -> Result<(), AppError> {
    match value {
        Some(v) if !(v.len() == 7 && v.starts_with('#') && v[1..].chars().all(|c| c.is_ascii_hexdigit())) => {
            Err(AppError::invalid_field(field, "must be a #RRGGBB colour"))
        }
        _ => Ok(()),
    }
}

pub const MAX_LAYERS: usize = 200;
pub const MAX_PLUGINS: usize = 50;

impl MapInput {
    pub fn validate(&self, creating: bool) -> Result<(), AppError> {
        match &self.name {
            Some(name) if name.trim().is_empty() => return Err(AppError::invalid_field("name", "must not be empty")),
            None if creating => return Err(AppError::invalid_field("name", "is required")),
            _ => {}
        }
        max_chars("name", &self.name, 255)?;
        max_chars("description", &self.description, 2000)?;
        max_chars("notes", &self.notes, 50_000)?;
        max_chars("basemap_style", &self.basemap_style, 2000)?;
        max_chars("legend_title", &self.legend_title, 120)?;
        within("zoom", self.zoom, 0.0, 24.0)?;
        within("pitch", self.pitch, 0.0, 85.0)?;
        within("bearing", self.bearing, -180.0, 180.0)?;
        within("center_lng", self.center_lng, -180.0, 180.0)?;
        within("center_lat", self.center_lat, -90.0, 90.0)?;
        if self.plugins.as_ref().is_some_and(|p| p.len() > MAX_PLUGINS) {
            return Err(AppError::invalid_field(
                "plugins",
                &format!("at most {MAX_PLUGINS} items"),
            ));
        }
        if let Some(b) = &self.basemap_config {
            within("basemap_config.opacity", Some(b.opacity), 0.0, 1.0)?;
            for (key, o) in b.sublayer_overrides.iter().flatten() {
                let f = |name: &str| format!("basemap_config.sublayer_overrides.{key}.{name}");
                hex_color(&f("stroke_color"), &o.stroke_color)?;
                hex_color(&f("casing_color"), &o.casing_color)?;
                within(&f("stroke_width"), o.stroke_width, 0.0, 20.0)?;
                within(&f("casing_width"), o.casing_width, 0.0, 20.0)?;
                within(&f("min_zoom"), o.min_zoom, 0.0, 24.0)?;
                within(&f("max_zoom"), o.max_zoom, 0.0, 24.0)?;
                within(&f("opacity"), o.opacity, 0.0, 1.0)?;
            }
        }
        if let Some(t) = &self.terrain_config {
            within("terrain_config.exaggeration", Some(t.exaggeration), 0.0, 3.0)?;
        }
        if let Some(layers) = &self.layers {
            if layers.len() > MAX_LAYERS {
                return Err(AppError::invalid_field(
                    "layers",
                    &format!("at most {MAX_LAYERS} items"),
                ));
            }
            for (i, l) in layers.iter().enumerate() {
                let f = |name: &str| format!("layers[{i}].{name}");
                if !(0..=32767).contains(&l.sort_order) {
                    return Err(AppError::invalid_field(&f("sort_order"), "must be from 0 to 32767"));
                }
                within(&f("opacity"), Some(l.opacity), 0.0, 1.0)?;
                max_chars(&f("display_name"), &l.display_name, 255)?;
                if let Some(p) = &l.popup_config {
                    max_chars(&f("popup_config.expression"), &p.expression, 500)?;
                    if p.visible_fields.as_ref().is_some_and(|v| v.len() > 100) {
                        return Err(AppError::invalid_field(
                            &f("popup_config.visible_fields"),
                            "at most 100 items",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MapLayerResponse {
    pub id: Uuid,
    pub dataset_id: Uuid,
    pub dataset_name: String,
    pub dataset_geometry_type: Option<GeometryType>,
    /// The paint the dataset's own default style (from its GeoPackage)
    /// became; the layer's `paint` goes over it.
    #[schema(value_type = Option<Object>)]
    pub dataset_default_paint: Option<Value>,
    /// `vector` or `raster`.
    #[serde(serialize_with = "or_empty")]
    #[schema(schema_with = empty_or::<DatasetKind>)]
    pub dataset_kind: Option<DatasetKind>,
    pub dataset_table_name: String,
    pub dataset_extent_bbox: Option<Vec<f64>>,
    pub dataset_column_info: Vec<ColumnInfo>,
    pub dataset_feature_count: Option<i64>,
    /// The zoom from which the layer's tiles hold every feature; below it
    /// they draw an even selection (the dataset's `complete_zoom`).
    pub dataset_complete_zoom: Option<i16>,
    #[schema(value_type = Object)]
    pub dataset_sample_values: Value,
    pub dataset_record_type: &'static str,
    /// False when the reader may not see the dataset: the layer then
    /// carries only its place in the map, nothing that describes the data.
    pub dataset_available: bool,
    #[serde(serialize_with = "or_unavailable")]
    #[schema(schema_with = unavailable_or::<DatasetVisibility>)]
    pub dataset_visibility: Option<DatasetVisibility>,
    #[serde(serialize_with = "or_unavailable")]
    #[schema(schema_with = unavailable_or::<PublicationStatus>)]
    pub dataset_status: Option<PublicationStatus>,
    pub dataset_attribution: Option<String>,
    pub display_name: Option<String>,
    pub sort_order: i32,
    pub visible: bool,
    pub opacity: f64,
    #[schema(value_type = Object)]
    pub paint: Value,
    #[schema(value_type = Object)]
    pub layout: Value,
    /// `raster_service` for a layer on a raster dataset, whatever was
    /// stored for it.
    pub layer_type: LayerType,
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub label_config: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub popup_config: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub style_config: Option<Value>,
    pub show_in_legend: bool,
    /// Whether the dataset's geometries have heights (Z), as loaded.
    pub is_3d: bool,
    /// Whether the dataset is a raster of heights: a single band, as its
    /// terrain tiles require.
    pub is_dem: bool,
    pub dem_vertical_units: Option<String>,
    /// A raster's bands; null for a vector dataset.
    pub band_count: Option<i32>,
    pub tile_version: i32,
    pub publication_version: i32,
    /// The dataset's data version, which its tile templates carry (`?v=`).
    #[serde(skip)]
    pub data_version: i64,
    /// A raster's native zoom (`RasterInfo::native_zoom`), where its style
    /// source stops.
    #[serde(skip)]
    pub native_zoom: Option<u32>,
}

/// What `dataset_status` and `dataset_visibility` say of a layer whose
/// dataset the reader may not see (`None` here).
const UNAVAILABLE: &str = "unavailable";

fn or_unavailable<T: Serialize, S: serde::Serializer>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => value.serialize(serializer),
        None => serializer.serialize_str(UNAVAILABLE),
    }
}

/// The schema of what `or_unavailable` and `or_empty` write: one of the
/// set's names, or the word that stands for none.
fn or_word<T: utoipa::ToSchema>(none: &str) -> utoipa::openapi::Schema {
    use utoipa::openapi::{ObjectBuilder, Ref, schema::Type};
    let one_of = utoipa::openapi::schema::OneOfBuilder::new()
        .item(Ref::from_schema_name(T::name()))
        .item(ObjectBuilder::new().schema_type(Type::String).enum_values(Some([none])));
    utoipa::openapi::Schema::OneOf(one_of.build())
}

fn unavailable_or<T: utoipa::ToSchema>() -> utoipa::openapi::Schema {
    or_word::<T>(UNAVAILABLE)
}

fn empty_or<T: utoipa::ToSchema>() -> utoipa::openapi::Schema {
    or_word::<T>("")
}

/// A layer whose dataset the reader may not see has an empty `dataset_kind`.
fn or_empty<T: Serialize, S: serde::Serializer>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => value.serialize(serializer),
        None => serializer.serialize_str(""),
    }
}

impl MapLayerResponse {
    /// A layer over a dataset the reader may not see: its place in the map
    /// and nothing else. The layer's own settings (names, filters, popups,
    /// labels, paint) are left out too, since they name the data's columns
    /// and values.
    pub fn unavailable(id: Uuid, dataset_id: Uuid, sort_order: i32) -> Self {
        Self {
            id,
            dataset_id,
            dataset_name: String::new(),
            dataset_geometry_type: None,
            dataset_default_paint: None,
            dataset_kind: None,
            dataset_table_name: String::new(),
            dataset_extent_bbox: None,
            dataset_column_info: Vec::new(),
            dataset_feature_count: None,
            dataset_complete_zoom: None,
            dataset_sample_values: Value::Object(Map::new()),
            dataset_record_type: "dataset",
            dataset_available: false,
            dataset_visibility: None,
            dataset_status: None,
            dataset_attribution: None,
            display_name: None,
            sort_order,
            visible: false,
            opacity: 0.0,
            paint: Value::Object(Map::new()),
            layout: Value::Object(Map::new()),
            layer_type: LayerType::default(),
            filter: None,
            label_config: None,
            popup_config: None,
            style_config: None,
            show_in_legend: false,
            is_3d: false,
            is_dem: false,
            dem_vertical_units: None,
            band_count: None,
            tile_version: 0,
            publication_version: 0,
            data_version: 0,
            native_zoom: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MapResponse {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub center_lng: Option<f64>,
    pub center_lat: Option<f64>,
    pub zoom: Option<f64>,
    pub bearing: f64,
    pub pitch: f64,
    pub basemap_style: String,
    pub show_basemap_labels: bool,
    pub basemap_config: BasemapConfig,
    pub terrain_config: Option<TerrainConfig>,
    pub visibility: MapVisibility,
    pub thumbnail_url: Option<String>,
    pub og_image_url: Option<String>,
    pub forked_from_id: Option<Uuid>,
    pub forked_from_name: Option<String>,
    pub created_by: Option<Uuid>,
    pub created_by_username: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub layers: Vec<MapLayerResponse>,
    pub layer_count: usize,
    pub plugins: Vec<String>,
    pub legend_title: Option<String>,
}
