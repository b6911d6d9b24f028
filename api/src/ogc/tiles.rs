//! OGC API Tiles 1.0 on the collections: each dataset's tileset list, its
//! one tileset (WebMercatorQuad) with the limits that hold its data, and
//! its tiles: Mapbox Vector Tiles of a vector dataset, PNG (or JPEG, WebP)
//! of a raster. A tile here is the tile of `/api/tiles/...` at the same
//! address (row = y, column = x), through the same access check, cache and
//! ETag (`tiles::dataset_tile`).
use axum::{
    Json,
    extract::{OriginalUri, State},
    http::{
        HeaderMap,
        header::{USER_AGENT, VARY},
    },
    response::{IntoResponse, Response},
};
use catalog_shared::AppError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    common::link,
    crs::CRS84,
    tile_matrix_sets::{TileMatrixSet, limits},
};
use crate::{
    access::{Caller, datasets::visible_collection},
    dataset_record::{Dataset, json_schema_of, published_columns},
    extract::{LinkCredential, Path, Query},
    state::AppState,
    tiles::{
        MVT_MEDIA_TYPE, RasterTileQuery, SOURCE_MAX_ZOOM, TileRequest, TileVersion, complete_zoom, dataset_tile,
        native_zoom, tile_query,
    },
};

pub const REL_TILESETS_VECTOR: &str = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector";
pub const REL_TILESETS_MAP: &str = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map";
const REL_TILING_SCHEME: &str = "http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme";

/// The link from a collection to its tilesets. A vector collection's
/// names no media type: GDAL 3.6's `OGCAPI:` driver prefers a tileset link
/// typed `application/json` over the items, builds no layer from vector
/// tiles, and so opened no vector collection with its defaults; untyped,
/// it opens the items (the tileset list is JSON all the same).
pub fn tilesets_link(base: &str, dataset: &Dataset, credential: &LinkCredential) -> Value {
    let href = credential.on(format!("{base}/api/collections/{}/tiles", dataset.id));
    if dataset.is_raster() {
        return link(href, REL_TILESETS_MAP, "application/json", "map tilesets (PNG)");
    }
    json!({"href": href, "rel": REL_TILESETS_VECTOR, "title": "vector tilesets (Mapbox Vector Tiles)"})
}

fn data_type(dataset: &Dataset) -> &'static str {
    if dataset.is_raster() { "map" } else { "vector" }
}

/// The tile matrix sets a dataset has tiles on: vectors on WebMercatorQuad;
/// rasters on WorldCRS84Quad too, the set GDAL 3.6 opens a raster on
/// without being told its extent in metres.
fn tile_matrix_sets_of(dataset: &Dataset) -> &'static [TileMatrixSet] {
    if dataset.is_raster() {
        &TileMatrixSet::ALL
    } else {
        &TileMatrixSet::ALL[..1]
    }
}

/// The tile matrix set of a tileset path, which the dataset must have.
fn tileset_of(dataset: &Dataset, id: &str) -> Result<TileMatrixSet, AppError> {
    let tms = TileMatrixSet::named(id)?;
    if tile_matrix_sets_of(dataset).contains(&tms) {
        Ok(tms)
    } else {
        Err(AppError::not_found(format!(
            "collection {} has no tileset on {id}: vector tiles are on WebMercatorQuad",
            dataset.id
        )))
    }
}

/// The zooms a tileset lists: vectors from 0 to `SOURCE_MAX_ZOOM`, past
/// which viewers over-zoom; rasters from the first zoom where the data is
/// a pixel wide and high (GDAL 3.6 cannot open a raster whose coarsest
/// level is narrower) to the zoom of its own resolution.
fn zooms(dataset: &Dataset, tms: TileMatrixSet) -> std::ops::RangeInclusive<u32> {
    let Some(info) = dataset.raster.as_ref().map(|r| &r.0) else {
        return 0..=SOURCE_MAX_ZOOM;
    };
    let extent = dataset.extent_bbox.as_deref().unwrap_or(&[]);
    let finest = match tms {
        TileMatrixSet::WebMercatorQuad => native_zoom(dataset),
        TileMatrixSet::WorldCrs84Quad => info.native_crs84_zoom(extent),
    };
    let coarsest = (0..finest)
        .find(|&z| {
            let l = limits(tms, Some(extent), z);
            let [w, s, e, n] = tms.grid().lon_lat_bounds(z as u8, 0, 0);
            let (tile_width, tile_height) = (e - w, n - s);
            match extent {
                &[west, south, east, north] => {
                    let width = if west <= east { east - west } else { east - west + 360.0 };
                    // Mercator stretches latitudes: a tile's own height stands in.
                    let height_px = if tms == TileMatrixSet::WebMercatorQuad {
                        (l.max_row - l.min_row + 1) as f64
                    } else {
                        (north - south) / tile_height
                    };
                    width / tile_width * 256.0 >= 1.0 && height_px * 256.0 >= 1.0
                }
                _ => true,
            }
        })
        .unwrap_or(finest);
    coarsest..=finest
}

/// Who reads a raster tileset's limits. GDAL 3.0 to 3.7's OGC API driver
/// sizes a raster's grid from every row whatever the limits say and takes
/// no first column (OSGeo/gdal#8130, fixed in 3.8): given the rows and
/// columns that hold the data, it opens the raster at another pixel size.
/// Those versions send no User-Agent (3.6) or `GDAL/3.7.x`; they get every
/// row and the columns from the first, a superset of the data's tiles.
#[derive(Clone, Copy, PartialEq)]
enum LimitsReader {
    Exact,
    GdalBefore38,
}

impl LimitsReader {
    fn of(headers: &HeaderMap) -> Self {
        let agent = headers.get(USER_AGENT).map(|v| v.as_bytes());
        let old_gdal = |a: &[u8]| {
            a.strip_prefix(b"GDAL/3.")
                .is_some_and(|rest| matches!(rest, [b'0'..=b'7', b'.', ..]))
        };
        match agent {
            None => Self::GdalBefore38,
            Some(a) if old_gdal(a) => Self::GdalBefore38,
            Some(_) => Self::Exact,
        }
    }
}

/// `tileMatrixSetLimits`: the tiles that hold the data at each zoom; for a
/// raster read by GDAL before 3.8, every row and the columns from the first.
fn tileset_limits(dataset: &Dataset, tms: TileMatrixSet, reader: LimitsReader) -> Vec<Value> {
    let extent = dataset.extent_bbox.as_deref();
    zooms(dataset, tms)
        .map(|z| {
            let mut l = limits(tms, extent, z);
            if dataset.is_raster() && reader == LimitsReader::GdalBefore38 {
                l.min_col = 0;
                l.min_row = 0;
                l.max_row = (1u64 << z) - 1;
            }
            l.json(z)
        })
        .collect()
}

/// The tile template of a dataset's tileset, signed when not everyone may
/// read the dataset, as TileJSON's is.
fn tile_template(state: &AppState, caller: &Caller, dataset: &Dataset, tms: TileMatrixSet) -> String {
    format!(
        "{}/api/collections/{}/tiles/{}/{{tileMatrix}}/{{tileRow}}/{{tileCol}}{}",
        state.config.public_url,
        dataset.id,
        tms.id(),
        tile_query(state, caller, dataset)
    )
}

fn tile_media_type(dataset: &Dataset) -> &'static str {
    if dataset.is_raster() {
        "image/png"
    } else {
        MVT_MEDIA_TYPE
    }
}

fn tileset_href(base: &str, dataset: &Dataset, tms: TileMatrixSet, credential: &LinkCredential) -> String {
    credential.on(format!("{base}/api/collections/{}/tiles/{}", dataset.id, tms.id()))
}

/// The tilesets of a collection.
#[utoipa::path(get, path = "/api/collections/{collectionId}/tiles", operation_id = "collection_tilesets", tag = "ogc",
    params(("collectionId" = String, Path)),
    responses((status = 200, description = "the collection's tilesets: WebMercatorQuad, and for a raster WorldCRS84Quad too", content_type = "application/json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn tilesets(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    Path(id): Path<String>,
) -> Result<Json<Value>, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let list = credential.on(format!("{base}/api/collections/{}/tiles", dataset.id));
    let tilesets: Vec<Value> = tile_matrix_sets_of(&dataset)
        .iter()
        .map(|&tms| {
            json!({
                "title": format!("{} ({})", dataset.title, tms.id()),
                "dataType": data_type(&dataset),
                "crs": tms.crs(),
                "tileMatrixSetURI": tms.uri(),
                "links": [
                    link(tileset_href(base, &dataset, tms, &credential), "self", "application/json", "the tileset"),
                    link(tms.href(base), REL_TILING_SCHEME, "application/json", "the tile matrix set"),
                    {"rel": "item", "href": tile_template(&state, &caller, &dataset, tms), "templated": true,
                     "type": tile_media_type(&dataset), "title": "a tile"},
                ],
            })
        })
        .collect();
    Ok(Json(json!({
        "tilesets": tilesets,
        "links": [
            link(list, "self", "application/json", "this document"),
            link(credential.on(format!("{base}/api/collections/{}", dataset.id)), "collection", "application/json", "the collection"),
        ],
    })))
}

/// A collection's tileset: the tile template, the tile matrices that hold
/// data, and for vectors the layer and its fields.
#[utoipa::path(get, path = "/api/collections/{collectionId}/tiles/{tileMatrixSetId}", operation_id = "collection_tileset", tag = "ogc",
    params(("collectionId" = String, Path), ("tileMatrixSetId" = inline(crate::openapi::names::TileMatrixSetId), Path)),
    responses((status = 200, description = "tileset metadata", content_type = "application/json"),
              (status = 404, description = "no such collection, or no tileset on that tile matrix set (vectors: WebMercatorQuad only)",
               body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn tileset(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    headers: HeaderMap,
    Path((id, tms)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let tms = tileset_of(&dataset, &tms)?;
    let base = &state.config.public_url;
    let mut document = json!({
        "title": dataset.title,
        "description": dataset.summary.clone().unwrap_or_default(),
        "dataType": data_type(&dataset),
        "crs": tms.crs(),
        "tileMatrixSetURI": tms.uri(),
        "tileMatrixSetLimits": tileset_limits(&dataset, tms, LimitsReader::of(&headers)),
        "links": [
            link(tileset_href(base, &dataset, tms, &credential), "self", "application/json", "this tileset"),
            link(tms.href(base), REL_TILING_SCHEME, "application/json", "the tile matrix set"),
            link(credential.on(format!("{base}/api/collections/{}", dataset.id)), "collection", "application/json", "the collection"),
            {"rel": "item", "href": tile_template(&state, &caller, &dataset, tms), "templated": true,
             "type": tile_media_type(&dataset), "title": "a tile"},
        ],
    });
    if let Some(&[west, south, east, north]) = dataset.extent_bbox.as_deref() {
        document["boundingBox"] = json!({"lowerLeft": [west, south], "upperRight": [east, north], "crs": CRS84});
    }
    if !dataset.is_raster() {
        let properties: serde_json::Map<String, Value> = published_columns(&dataset)
            .iter()
            .map(|c| (c.name.clone(), json_schema_of(c.pg_type)))
            .collect();
        let mut layer = json!({
            "id": dataset.layer_name(),
            "title": dataset.title,
            "dataType": "vector",
            "minTileMatrix": "0",
            "maxTileMatrix": SOURCE_MAX_ZOOM.to_string(),
            // Below it, tiles are generalized (decisions: Generalized tiles).
            "complete_zoom": complete_zoom(&dataset),
            "propertiesSchema": {"type": "object", "properties": properties},
        });
        if let Some(dimension) = dataset.geometry_type.and_then(|t| t.dimension()) {
            layer["geometryDimension"] = json!(dimension);
        }
        document["layers"] = json!([layer]);
    }
    // The limits depend on the reader (`LimitsReader`).
    Ok(([(VARY, "User-Agent")], Json(document)).into_response())
}
/// The encoding of a tile: `mvt` for a vector dataset; `png` (default),
/// `jpeg` or `webp` for a raster.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TileFormatQuery {
    #[param(value_type = Option<crate::openapi::names::TileEncoding>, inline)]
    f: Option<String>,
}

/// The encoding and data version a tile is asked for at.
#[derive(Deserialize)]
pub struct TileQuery {
    #[serde(flatten)]
    format: TileFormatQuery,
    #[serde(flatten)]
    version: TileVersion,
}

/// One tile of a collection's tileset.
#[utoipa::path(get, path = "/api/collections/{collectionId}/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}", operation_id = "collection_tile", tag = "ogc",
    params(("collectionId" = String, Path), ("tileMatrixSetId" = inline(crate::openapi::names::TileMatrixSetId), Path),
           ("tileMatrix" = String, Path, pattern = "^[0-9]{1,2}$", description = "zoom, 0 to 24"),
           ("tileRow" = u32, Path, description = "row, below 2^tileMatrix"), ("tileCol" = u32, Path, description = "column, below 2^tileMatrix"),
           ("scope" = Option<String>, Query, description = "signed template: dataset:<id>"),
           ("exp" = Option<String>, Query, description = "signed template: expiry, Unix seconds"),
           ("sig" = Option<String>, Query, description = "signed template: signature"),
           TileFormatQuery, RasterTileQuery, TileVersion),
    responses((status = 200, description = "a Mapbox Vector Tile, or a raster's image",
                content(("application/vnd.mapbox-vector-tile"), ("image/png"), ("image/jpeg"), ("image/webp"))),
              (status = 204, description = "nothing in this tile"),
              (status = 307, description = "`v` names an older data version: the same tile at the current one", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 304, description = "not modified (If-None-Match)"),
              (status = 400, description = "an encoding the dataset has not", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn tile(
    State(state): State<AppState>,
    caller: Caller,
    request: HeaderMap,
    OriginalUri(uri): OriginalUri,
    Path((id, tms, z, row, col)): Path<(String, String, String, String, String)>,
    Query(TileQuery { format, version }): Query<TileQuery>,
    Query(query): Query<RasterTileQuery>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let tms = tileset_of(&dataset, &tms)?;
    let row = match (dataset.is_raster(), format.f.as_deref()) {
        (false, None | Some("mvt")) => row,
        (true, None | Some("png")) => format!("{row}.png"),
        (true, Some("jpeg")) => format!("{row}.jpg"),
        (true, Some("webp")) => format!("{row}.webp"),
        (raster, Some(f)) => {
            return Err(AppError::bad_request(format!(
                "f={f:?}: the tiles of this {} are {}",
                if raster { "raster" } else { "vector dataset" },
                if raster { "png, jpeg or webp" } else { "mvt" }
            )));
        }
    };
    let address = (tms.grid(), z.as_str(), col.as_str(), row.as_str());
    let asked = TileRequest {
        headers: &request,
        uri: &uri,
        version: &version,
    };
    dataset_tile(&state, &caller, &asked, dataset, address, &query).await
}
