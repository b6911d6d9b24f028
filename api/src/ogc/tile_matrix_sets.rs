//! The tile matrix sets of OGC API Tiles: `WebMercatorQuad`, the grid of
//! every tile route (`/api/tiles/...` as XYZ), and `WorldCRS84Quad` for
//! rasters, whose tiles are cut in longitude and latitude. Definitions are
//! served in the OGC Two Dimensional Tile Matrix Set 2.0 encoding and, in
//! the same document, in the 1.0 encoding (`type`, `identifier`,
//! `supportedCRS`, `tileMatrix`), the only one GDAL 3.6's OGC API driver
//! reads.
use axum::{Json, extract::State};
use catalog_raster::tile::Grid;
use catalog_shared::AppError;
use serde_json::{Value, json};

use super::crs::CRS84;
use crate::{extract::Path, state::AppState, tiles::MAX_ZOOM};

pub const EPSG_3857: &str = "http://www.opengis.net/def/crs/EPSG/0/3857";

/// Half the side of Web Mercator's square world, in metres.
const HALF_SIDE: f64 = 20_037_508.342_789_244;
/// Metres of one degree along the equator of Web Mercator's sphere.
const METRES_PER_DEGREE: f64 = 111_319.490_793_273_57;
const TILE_SIZE: u32 = 256;
/// The standardized rendering pixel size (0.28 mm) that turns cell sizes
/// into scale denominators.
const PIXEL_SIZE_METRES: f64 = 0.000_28;

/// A tile matrix set of this service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileMatrixSet {
    WebMercatorQuad,
    WorldCrs84Quad,
}

impl TileMatrixSet {
    pub const ALL: [TileMatrixSet; 2] = [TileMatrixSet::WebMercatorQuad, TileMatrixSet::WorldCrs84Quad];

    pub fn id(self) -> &'static str {
        match self {
            Self::WebMercatorQuad => "WebMercatorQuad",
            Self::WorldCrs84Quad => "WorldCRS84Quad",
        }
    }

    pub fn uri(self) -> String {
        format!("http://www.opengis.net/def/tilematrixset/OGC/1.0/{}", self.id())
    }

    pub fn crs(self) -> &'static str {
        match self {
            Self::WebMercatorQuad => EPSG_3857,
            Self::WorldCrs84Quad => CRS84,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::WebMercatorQuad => "Google Maps Compatible for the World",
            Self::WorldCrs84Quad => "CRS84 for the World",
        }
    }

    pub fn grid(self) -> Grid {
        match self {
            Self::WebMercatorQuad => Grid::WebMercator,
            Self::WorldCrs84Quad => Grid::Crs84,
        }
    }

    /// The set an id names.
    pub fn named(id: &str) -> Result<Self, AppError> {
        Self::ALL.into_iter().find(|t| t.id() == id).ok_or_else(|| {
            AppError::not_found(format!(
                "no tile matrix set {id:?}: there are WebMercatorQuad and WorldCRS84Quad"
            ))
        })
    }

    pub fn href(self, base: &str) -> String {
        format!("{base}/api/tileMatrixSets/{}", self.id())
    }

    /// The definition, both encodings in one document.
    pub fn definition(self, base: &str) -> Value {
        let (origin, lower, cell_size_0, metres_per_unit) = match self {
            Self::WebMercatorQuad => (
                [-HALF_SIDE, HALF_SIDE],
                [-HALF_SIDE, -HALF_SIDE],
                2.0 * HALF_SIDE / f64::from(TILE_SIZE),
                1.0,
            ),
            Self::WorldCrs84Quad => (
                [-180.0, 90.0],
                [-180.0, -90.0],
                180.0 / f64::from(TILE_SIZE),
                METRES_PER_DEGREE,
            ),
        };
        let grid = self.grid();
        let matrices: Vec<(String, f64, f64, u64, u64)> = (0..=MAX_ZOOM)
            .map(|z| {
                let cell_size = cell_size_0 / f64::from(1u32 << z);
                let scale = cell_size * metres_per_unit / PIXEL_SIZE_METRES;
                (z.to_string(), cell_size, scale, grid.columns(z), 1u64 << z)
            })
            .collect();
        let mut document = json!({
            "id": self.id(),
            "title": self.title(),
            "uri": self.uri(),
            "crs": self.crs(),
            "orderedAxes": if self == Self::WebMercatorQuad { ["X", "Y"] } else { ["Lon", "Lat"] },
            "tileMatrices": matrices.iter().map(|(id, cell_size, scale, width, height)| json!({
                "id": id,
                "scaleDenominator": scale,
                "cellSize": cell_size,
                "cornerOfOrigin": "topLeft",
                "pointOfOrigin": origin,
                "tileWidth": TILE_SIZE,
                "tileHeight": TILE_SIZE,
                "matrixWidth": width,
                "matrixHeight": height,
            })).collect::<Vec<_>>(),
            // The 1.0 encoding (OGC 17-083r2), for GDAL 3.6.
            "type": "TileMatrixSetType",
            "identifier": self.id(),
            "supportedCRS": self.crs(),
            "boundingBox": {
                "type": "BoundingBoxType",
                "crs": self.crs(),
                "lowerCorner": lower,
                "upperCorner": [-lower[0], -lower[1]],
            },
            "tileMatrix": matrices.iter().map(|(id, _, scale, width, height)| json!({
                "type": "TileMatrixType",
                "identifier": id,
                "scaleDenominator": scale,
                "topLeftCorner": origin,
                "tileWidth": TILE_SIZE,
                "tileHeight": TILE_SIZE,
                "matrixWidth": width,
                "matrixHeight": height,
            })).collect::<Vec<_>>(),
            "links": [
                {"rel": "self", "href": self.href(base), "type": "application/json", "title": "this tile matrix set"},
            ],
        });
        if self == Self::WebMercatorQuad {
            document["wellKnownScaleSet"] = json!("http://www.opengis.net/def/wkss/OGC/1.0/GoogleMapsCompatible");
        }
        document
    }
}

/// The tile matrix sets the tilesets of this service are on.
#[utoipa::path(get, path = "/api/tileMatrixSets", tag = "ogc",
    responses((status = 200, description = "the tile matrix sets (reads no credential)", content_type = "application/json")))]
pub async fn tile_matrix_sets(State(state): State<AppState>) -> Json<Value> {
    let base = &state.config.public_url;
    Json(json!({
        "tileMatrixSets": TileMatrixSet::ALL.iter().map(|t| json!({
            "id": t.id(),
            "title": t.title(),
            "uri": t.uri(),
            "crs": t.crs(),
            "links": [{"rel": "self", "href": t.href(base), "type": "application/json", "title": "the definition"}],
        })).collect::<Vec<_>>(),
        "links": [{"rel": "self", "href": format!("{base}/api/tileMatrixSets"), "type": "application/json", "title": "this document"}],
    }))
}

/// One tile matrix set's definition.
#[utoipa::path(get, path = "/api/tileMatrixSets/{tileMatrixSetId}", tag = "ogc",
    params(("tileMatrixSetId" = inline(crate::openapi::names::TileMatrixSetId), Path)),
    responses((status = 200, description = "the definition, in the 2.0 and 1.0 encodings (reads no credential)", content_type = "application/json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn tile_matrix_set(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<Value>, AppError> {
    Ok(Json(TileMatrixSet::named(&id)?.definition(&state.config.public_url)))
}

/// A zoom's range of tile columns and rows.
pub struct Limits {
    pub min_col: u64,
    pub max_col: u64,
    pub min_row: u64,
    pub max_row: u64,
}

/// The tile columns and rows of `tms` at zoom `z` that hold `extent`
/// (`[west, south, east, north]` in WGS 84, west > east across the
/// antimeridian, which takes every column): every tile with data is
/// inside them, so a client that asks only for those finds every feature.
pub fn limits(tms: TileMatrixSet, extent: Option<&[f64]>, z: u32) -> Limits {
    const MAX_LATITUDE: f64 = 85.051_128_779_806_59;
    let columns = tms.grid().columns(z);
    let rows = 1u64 << z;
    let index = |fraction: f64, count: u64| (fraction * count as f64).floor().clamp(0.0, (count - 1) as f64) as u64;
    let column = |lon: f64| index((lon + 180.0) / 360.0, columns);
    let row = |lat: f64| match tms {
        TileMatrixSet::WebMercatorQuad => {
            let lat = lat.clamp(-MAX_LATITUDE, MAX_LATITUDE).to_radians();
            index((1.0 - lat.tan().asinh() / std::f64::consts::PI) / 2.0, rows)
        }
        TileMatrixSet::WorldCrs84Quad => index((90.0 - lat) / 180.0, rows),
    };
    match extent {
        Some(&[west, south, east, north]) => {
            let (min_col, max_col) = if west <= east {
                (column(west), column(east))
            } else {
                (0, columns - 1)
            };
            Limits {
                min_col,
                max_col,
                min_row: row(north),
                max_row: row(south),
            }
        }
        _ => Limits {
            min_col: 0,
            max_col: columns - 1,
            min_row: 0,
            max_row: rows - 1,
        },
    }
}

impl Limits {
    pub fn json(&self, z: u32) -> Value {
        json!({
            "tileMatrix": z.to_string(),
            "minTileRow": self.min_row,
            "maxTileRow": self.max_row,
            "minTileCol": self.min_col,
            "maxTileCol": self.max_col,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits_at(tms: TileMatrixSet, extent: &[f64], z: u32) -> [u64; 4] {
        let l = limits(tms, Some(extent), z);
        [l.min_col, l.max_col, l.min_row, l.max_row]
    }

    #[test]
    fn limits_hold_the_extent_and_stay_in_the_matrix() {
        let world = [-180.0, -90.0, 180.0, 90.0];
        assert_eq!(limits_at(TileMatrixSet::WebMercatorQuad, &world, 2), [0, 3, 0, 3]);
        assert_eq!(limits_at(TileMatrixSet::WorldCrs84Quad, &world, 2), [0, 7, 0, 3]);
        // Scotland at zoom 5: column 15, rows 9-10.
        let scotland = [-8.7, 54.6, -0.7, 60.9];
        assert_eq!(limits_at(TileMatrixSet::WebMercatorQuad, &scotland, 5), [15, 15, 9, 10]);
        // Across the antimeridian: every column.
        let fiji = [177.0, -20.0, -178.0, -15.0];
        assert_eq!(limits_at(TileMatrixSet::WebMercatorQuad, &fiji, 3)[..2], [0, 7]);
    }

    #[test]
    fn cell_sizes_halve_with_each_zoom() {
        for tms in TileMatrixSet::ALL {
            let definition = tms.definition("");
            let cell = |z: usize| definition["tileMatrices"][z]["cellSize"].as_f64().unwrap();
            assert!((cell(24) * f64::from(1u32 << 24) - cell(0)).abs() < 1e-6);
            assert_eq!(definition["tileMatrix"][3]["matrixHeight"], json!(8));
        }
        let mercator = TileMatrixSet::WebMercatorQuad.definition("");
        assert!((mercator["tileMatrices"][0]["cellSize"].as_f64().unwrap() - 156_543.033_928_041).abs() < 1e-6);
        let crs84 = TileMatrixSet::WorldCrs84Quad.definition("");
        assert_eq!(crs84["tileMatrix"][0]["matrixWidth"], json!(2));
        // The scale of zoom 0 in the standard's own table.
        assert!((crs84["tileMatrix"][0]["scaleDenominator"].as_f64().unwrap() - 279_541_132.014_358).abs() < 1.0);
    }
}
