//! A dataset as a STAC 1.0.0 Item of the collection of its kind. A raster
//! item carries its COG as the `data` asset (signed for data not everyone
//! may read), the projection and raster extensions, a PNG thumbnail (the
//! tile that holds its whole extent) and an `xyz` link on its tile
//! template; a vector item one asset per download format and a link to its
//! OGC API Features items.
use catalog_raster::{RasterInfo, cog::MEDIA_TYPE as COG_MEDIA_TYPE, export::ExportFormat};
use catalog_shared::datasets::DatasetKind;
use serde_json::{Map, Value, json};

use crate::{
    access::{
        Caller,
        signed_assets::{cog_href, download_href},
    },
    dataset_record::Dataset,
    state::AppState,
    tiles::tile_query,
};

/// The STAC version of every document of the API.
pub const STAC_VERSION: &str = "1.0.0";
const PROJECTION_EXTENSION: &str = "https://stac-extensions.github.io/projection/v2.0.0/schema.json";
const RASTER_EXTENSION: &str = "https://stac-extensions.github.io/raster/v1.1.0/schema.json";
const WEB_MAP_LINKS_EXTENSION: &str = "https://stac-extensions.github.io/web-map-links/v1.2.0/schema.json";

/// The address of an item.
fn item_href(base: &str, kind: DatasetKind, id: impl std::fmt::Display) -> String {
    format!("{base}/api/stac/collections/{kind}/items/{id}")
}

/// The dataset as a STAC Item, its links and assets written for `caller`.
pub fn item(state: &AppState, caller: &Caller, d: &Dataset) -> Value {
    let base = &state.config.public_url;
    let stac = format!("{base}/api/stac");
    let collection = format!("{stac}/collections/{}", d.kind);
    let mut properties = Map::new();
    // The record's last change is the item's one instant (STAC requires
    // a `datetime`); optional fields are left out rather than null, which
    // the core schema refuses for title and description.
    properties.insert("datetime".into(), json!(d.updated_at));
    properties.insert("created".into(), json!(d.created_at));
    properties.insert("updated".into(), json!(d.updated_at));
    properties.insert("title".into(), json!(d.title));
    if let Some(summary) = d.summary.as_deref().filter(|s| !s.is_empty()) {
        properties.insert("description".into(), json!(summary));
    }
    if !d.keywords.is_empty() {
        properties.insert("keywords".into(), json!(d.keywords));
    }
    let mut links = vec![
        json!({"rel": "self", "href": item_href(base, d.kind, d.id), "type": "application/geo+json"}),
        json!({"rel": "root", "href": stac, "type": "application/json"}),
        json!({"rel": "parent", "href": collection, "type": "application/json"}),
        json!({"rel": "collection", "href": collection, "type": "application/json"}),
    ];
    let mut extensions = Vec::new();
    let mut assets = Map::new();
    match &d.raster {
        Some(raster) => {
            let raster = &raster.0;
            properties.extend(projection(d, raster));
            extensions.extend([PROJECTION_EXTENSION, RASTER_EXTENSION, WEB_MAP_LINKS_EXTENSION]);
            let tiles = format!("{base}/api/tiles/{}", d.id);
            let signed = tile_query(state, caller, d);
            assets.insert(
                "data".into(),
                json!({
                    "href": cog_href(state, caller, d),
                    "type": COG_MEDIA_TYPE,
                    "title": "Cloud-Optimized GeoTIFF",
                    "roles": ["data"],
                    "raster:bands": raster.bands.iter().map(|b| band(b, raster)).collect::<Vec<_>>(),
                }),
            );
            let (z, x, y) = enclosing_tile(d.extent_bbox.as_deref(), raster);
            assets.insert(
                "thumbnail".into(),
                json!({
                    "href": format!("{tiles}/{z}/{x}/{y}.png{signed}"),
                    "type": "image/png",
                    "title": "The whole extent, one 256 px Web Mercator tile",
                    "roles": ["thumbnail"],
                }),
            );
            links.push(json!({
                "rel": "xyz",
                "href": format!("{tiles}/{{z}}/{{x}}/{{y}}.png{signed}"),
                "type": "image/png",
                "title": "Web Mercator image tiles",
            }));
        }
        None => {
            if let Some(geometry_type) = &d.geometry_type {
                properties.insert("geometry_type".into(), json!(geometry_type));
            }
            if let Some(count) = d.feature_count {
                properties.insert("feature_count".into(), json!(count));
            }
            for format in ExportFormat::ALL {
                let media_type = match format {
                    // The charset is the route's; a STAC client compares the type.
                    ExportFormat::Csv => "text/csv",
                    other => other.media_type(),
                };
                assets.insert(
                    format.name().into(),
                    json!({
                        "href": download_href(state, caller, d, &format!("format={}", format.name())),
                        "type": media_type,
                        "title": export_title(format),
                        "roles": ["data"],
                    }),
                );
            }
            links.push(json!({
                "rel": "items",
                "href": format!("{base}/api/collections/{}/items", d.id),
                "type": "application/geo+json",
                "title": "The features, through OGC API Features",
            }));
        }
    }
    let mut item = json!({
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "stac_extensions": extensions,
        "id": d.id,
        "collection": d.kind,
        "geometry": d.extent_bbox.as_deref().and_then(crate::bbox::geojson),
        "properties": properties,
        "links": links,
        "assets": assets,
    });
    // An item without a geometry has no bbox either (STAC core).
    if let Some(bbox) = d.extent_bbox.as_ref().filter(|b| b.len() == 4) {
        item["bbox"] = json!(bbox);
    }
    item
}

fn export_title(format: ExportFormat) -> &'static str {
    match format {
        ExportFormat::GeoPackage => "GeoPackage",
        ExportFormat::GeoJson => "GeoJSON",
        ExportFormat::Csv => "CSV (geometry as WKT)",
        ExportFormat::Shapefile => "Shapefile (zipped)",
        ExportFormat::FlatGeobuf => "FlatGeobuf",
        ExportFormat::GeoParquet => "GeoParquet",
    }
}

/// The projection extension's fields (v2.0.0): the CRS by its EPSG code
/// (`proj:code`), else as WKT2; the grid's shape and, when the record
/// keeps it (or the CRS is the extent's own, EPSG:4326), its affine
/// transform and bounds.
fn projection(d: &Dataset, raster: &RasterInfo) -> Map<String, Value> {
    let mut fields = Map::new();
    match (raster.srid, &raster.crs_wkt) {
        (Some(srid), _) => {
            fields.insert("proj:code".into(), json!(format!("EPSG:{srid}")));
        }
        (None, Some(wkt)) => {
            fields.insert("proj:wkt2".into(), json!(wkt));
        }
        // No CRS at all: the extension says so with a null code.
        (None, None) => {
            fields.insert("proj:code".into(), Value::Null);
        }
    }
    fields.insert("proj:shape".into(), json!([raster.height, raster.width]));
    if let Some(gt) = geotransform(d, raster) {
        fields.insert(
            "proj:transform".into(),
            json!([gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]]),
        );
        // The grid's bounds when it is not rotated.
        if gt[2] == 0.0 && gt[4] == 0.0 {
            let (x1, y1) = (
                gt[0] + gt[1] * raster.width as f64,
                gt[3] + gt[5] * raster.height as f64,
            );
            fields.insert(
                "proj:bbox".into(),
                json!([gt[0].min(x1), gt[3].min(y1), gt[0].max(x1), gt[3].max(y1)]),
            );
        }
    }
    fields
}

/// The raster's geotransform: from the record, or, for records written
/// before it was kept, from the extent when that is in the raster's own
/// CRS (EPSG:4326, not across the antimeridian) and the grid is north up.
fn geotransform(d: &Dataset, raster: &RasterInfo) -> Option<[f64; 6]> {
    if raster.geotransform.is_some() {
        return raster.geotransform;
    }
    match d.extent_bbox.as_deref() {
        Some(&[west, _, east, north]) if raster.srid == Some(4326) && west <= east => {
            Some([west, raster.resolution[0], 0.0, north, 0.0, -raster.resolution[1]])
        }
        _ => None,
    }
}

/// One band as the raster extension (v1.1.0) describes it.
fn band(b: &catalog_raster::BandInfo, raster: &RasterInfo) -> Value {
    let mut band = Map::new();
    band.insert("data_type".into(), json!(stac_data_type(&b.data_type)));
    if let Some(nodata) = b.nodata {
        band.insert("nodata".into(), json!(nodata));
    }
    if let (Some(minimum), Some(maximum)) = (b.min, b.max) {
        band.insert("statistics".into(), json!({"minimum": minimum, "maximum": maximum}));
    }
    // Square pixels have one resolution; the extension has one number.
    if raster.resolution[0] == raster.resolution[1] {
        band.insert("spatial_resolution".into(), json!(raster.resolution[0]));
    }
    Value::Object(band)
}

/// GDAL's name of a data type as the raster extension names it.
fn stac_data_type(gdal: &str) -> &'static str {
    match gdal {
        "Byte" => "uint8",
        "Int8" => "int8",
        "UInt16" => "uint16",
        "Int16" => "int16",
        "UInt32" => "uint32",
        "Int32" => "int32",
        "UInt64" => "uint64",
        "Int64" => "int64",
        "Float16" => "float16",
        "Float32" => "float32",
        "Float64" => "float64",
        "CInt16" => "cint16",
        "CInt32" => "cint32",
        "CFloat32" => "cfloat32",
        "CFloat64" => "cfloat64",
        _ => "other",
    }
}

/// The deepest Web Mercator tile, no finer than the raster's own
/// resolution, that holds the whole extent: `(z, x, y)`; the world's
/// tile for an extent across the antimeridian or none.
fn enclosing_tile(extent: Option<&[f64]>, raster: &RasterInfo) -> (u32, u32, u32) {
    let Some(&[west, south, east, north]) = extent else {
        return (0, 0, 0);
    };
    if west > east {
        return (0, 0, 0);
    }
    // The Mercator latitude limit: tiles end there.
    const MAX_LATITUDE: f64 = 85.051_128_779_806_59;
    let tile = |lon: f64, lat: f64, z: u32| {
        let n = f64::from(1u32 << z);
        let lat = lat.clamp(-MAX_LATITUDE, MAX_LATITUDE).to_radians();
        let x = ((lon + 180.0) / 360.0 * n).floor().clamp(0.0, n - 1.0);
        let y = ((1.0 - (lat.tan() + 1.0 / lat.cos()).ln() / std::f64::consts::PI) / 2.0 * n)
            .floor()
            .clamp(0.0, n - 1.0);
        (x as u32, y as u32)
    };
    (0..=raster
        .native_zoom(&[west, south, east, north])
        .min(crate::tiles::SOURCE_MAX_ZOOM))
        .rev()
        .find_map(|z| {
            let (x, y) = tile(west, north, z);
            (tile(east, south, z) == (x, y)).then_some((z, x, y))
        })
        .unwrap_or((0, 0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raster(width: usize) -> RasterInfo {
        RasterInfo {
            width,
            height: width,
            band_count: 1,
            bands: Vec::new(),
            resolution: [1.0, 1.0],
            geotransform: None,
            srid: Some(4326),
            crs_wkt: None,
            overview_count: 0,
            is_cog: true,
            size_bytes: 0,
        }
    }

    #[test]
    fn thumbnails_are_the_deepest_tile_holding_the_extent() {
        // Luxembourg at about 1 km a pixel: zoom 7 holds it whole.
        let luxembourg = [5.74, 49.44, 6.53, 50.19];
        let (z, x, y) = enclosing_tile(Some(&luxembourg), &raster(95));
        assert_eq!((z, x, y), (7, 66, 43));
        // A coarse raster (one pixel: zoom 1) stops at its own zoom.
        assert_eq!(enclosing_tile(Some(&luxembourg), &raster(1)), (1, 1, 0));
        assert_eq!(
            enclosing_tile(Some(&[170.0, 0.0, -170.0, 10.0]), &raster(95)),
            (0, 0, 0)
        );
        assert_eq!(enclosing_tile(None, &raster(95)), (0, 0, 0));
        // Across the prime meridian, no tile below zoom 1 holds both sides.
        assert_eq!(enclosing_tile(Some(&[-1.0, 40.0, 1.0, 41.0]), &raster(10_000)).0, 0);
    }

    #[test]
    fn data_types_take_the_raster_extensions_names() {
        assert_eq!(stac_data_type("Byte"), "uint8");
        assert_eq!(stac_data_type("Float32"), "float32");
        assert_eq!(stac_data_type("CFloat64"), "cfloat64");
        assert_eq!(stac_data_type("Unknown"), "other");
    }
}
