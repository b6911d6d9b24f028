//! The SQL that cuts a dataset's vector tiles, shared by the API (which
//! serves them) and the worker (which writes them into a PMTiles archive),
//! so both make the same bytes. Every statement takes the tile's `$1, $2,
//! $3` (z, x, y) and the layer's name `$4`.
use crate::{
    datasets::{ColumnInfo, ColumnType, GeometryType},
    db::quote_ident,
    generalize::{self, WORLD_HALF_SIDE},
};

/// Tile coordinates a side, and the buffer around them.
pub const EXTENT: u32 = 4096;
pub const BUFFER: u32 = 64;
/// Features one tile carries at most (decisions: Generalized tiles).
pub const MAX_FEATURES_PER_TILE: u64 = generalize::MAX_TILE_FEATURES;
/// The download route's `format` for the PMTiles archive of the tiles.
pub const ARCHIVE_FORMAT: &str = "pmtiles";

/// What the tile SQL needs of a dataset.
pub struct TileLayer<'a> {
    /// The table, schema-qualified and quoted (a reader's, from the read gate).
    pub table: &'a str,
    pub key_column: &'a str,
    pub geometry_column: &'a str,
    pub geometry_type: Option<GeometryType>,
    pub srid: i32,
    /// The box the storage CRS's coordinates lie in (easting first).
    pub storage_bounds: [f64; 4],
    /// The data's extent in degrees, cut to the world.
    pub extent: Option<[f64; 4]>,
    /// The attributes a tile carries.
    pub columns: &'a [ColumnInfo],
}

/// An extent (west, south, east, north in degrees; west above east when
/// it crosses the antimeridian) cut to the world, as anything that frames
/// or clips by it needs it; `None` when it is not four finite numbers (an
/// extent counted from values no CRS has, written by hand).
pub fn extent_in_world(bbox: &[f64]) -> Option<[f64; 4]> {
    let &[west, south, east, north] = bbox.get(..4)? else {
        return None;
    };
    [west, south, east, north].iter().all(|v| v.is_finite()).then(|| {
        [
            west.clamp(-180.0, 180.0),
            south.clamp(-90.0, 90.0),
            east.clamp(-180.0, 180.0),
            north.clamp(-90.0, 90.0),
        ]
    })
}

/// SQL that is true when `geometry` (a geometry of a column of type
/// `geometry_type` in `srid`) lies within `bounds` and holds no NaN. Its
/// box, kept with it, is compared first: PostGIS's box operators take a NaN
/// for inside (C's comparisons), SQL's take it for above every number, so
/// the box's top and right are compared in SQL too, which leaves out a
/// point with a NaN. The box of a line, a polygon or a collection skips a
/// NaN that is not its first position, so theirs are measured as well: a
/// length over a NaN is NaN, which SQL puts above infinity.
pub fn drawable(geometry_type: Option<GeometryType>, srid: i32, bounds: [f64; 4], geometry: &str) -> String {
    let [west, south, east, north] = bounds;
    let finite = match geometry_type {
        Some(GeometryType::Point) => String::new(),
        Some(t) if t.dimension().is_some_and(|d| d > 0) => {
            format!(" AND ST_Length({geometry}) + ST_Perimeter({geometry}) < 'Infinity'")
        }
        _ => format!(" AND ST_Length(ST_LineFromMultiPoint(ST_Points({geometry}))) < 'Infinity'"),
    };
    format!(
        "({geometry} @ ST_MakeEnvelope({west:?}, {south:?}, {east:?}, {north:?}, {srid}) \
         AND ST_XMax({geometry}) <= {east:?} AND ST_YMax({geometry}) <= {north:?}{finite})",
        srid = srid.max(0)
    )
}

/// A column's value as a tile carries it.
pub fn tile_value(column: &ColumnInfo) -> String {
    let name = quote_ident(&column.name);
    match column.pg_type {
        ColumnType::SmallInt | ColumnType::Integer | ColumnType::BigInt | ColumnType::Boolean | ColumnType::Text => {
            format!("t.{name}")
        }
        // A registered table's numeric or real column is recorded as double.
        ColumnType::Double => format!("t.{name}::float8 AS {name}"),
        _ => format!("t.{name}::text AS {name}"),
    }
}

impl TileLayer<'_> {
    /// The vector tile query; `generalized` below the dataset's complete zoom.
    pub fn vector_tile_sql(&self, generalized: bool) -> String {
        let attributes: String = self.columns.iter().map(|c| format!(", {}", tile_value(c))).collect();
        let key = quote_ident(self.key_column);
        let points = self.geometry_type.is_some_and(|t| t.dimension() == Some(0));
        let mvt =
            |geometry: &str| format!("ST_AsMVTGeom({geometry}, ST_TileEnvelope($1, $2, $3), {EXTENT}, {BUFFER}, true)");
        let (mvt_geometry, thinning, order) = if generalized {
            let mvt_geometry = if points {
                mvt(&self.geometry_3857())
            } else {
                // Half a pixel of a 512-pixel tile at zoom $1, in metres.
                let simplified = format!(
                    "ST_Simplify({}, {} / (1024 * power(2, $1)), true)",
                    self.geometry_3857(),
                    2.0 * WORLD_HALF_SIDE
                );
                format!("coalesce({}, {})", mvt(&simplified), mvt(&self.geometry_3857()))
            };
            let first_zoom = generalize::FIRST_ZOOM_COLUMN;
            (
                mvt_geometry,
                format!(" AND t.{first_zoom} <= $1"),
                format!("ORDER BY t.{first_zoom}, hashint8(t.{key}::bigint) "),
            )
        } else {
            (mvt(&self.geometry_3857()), String::new(), String::new())
        };
        format!(
            include_str!("tile_sql/vector_tile.sql"),
            attributes = attributes,
            key = key,
            geom = quote_ident(self.geometry_column),
            mvt_geometry = mvt_geometry,
            table = self.table,
            area = self.tile_area_in_storage_crs(),
            thinning = thinning,
            order = order,
            extent = EXTENT,
            max_features = MAX_FEATURES_PER_TILE,
        )
    }

    /// The cluster tile query, of `generalize::CLUSTER_GRID` cells a tile
    /// side: from the dataset's counted cells where it has them
    /// (`counted`), and then taking `$5`, the dataset's id.
    pub fn cluster_tile_sql(&self, counted: bool) -> String {
        let key = quote_ident(self.key_column);
        if counted {
            // Points are counted where they are; other features at the
            // centre of their box, which their own position would belie.
            let lone_position = if self.geometry_type == Some(GeometryType::Point) {
                format!(
                    "(SELECT {} FROM {} t WHERE t.{key} = cells.lone)",
                    self.geometry_3857(),
                    self.table
                )
            } else {
                "NULL::geometry".to_string()
            };
            return format!(
                include_str!("tile_sql/counted_cluster_tile.sql"),
                lone_position = lone_position,
                extent = EXTENT,
                buffer = BUFFER,
                grid = generalize::CLUSTER_GRID,
            );
        }
        format!(
            include_str!("tile_sql/cluster_tile.sql"),
            key = key,
            geom = quote_ident(self.geometry_column),
            geometry = self.geometry_3857(),
            table = self.table,
            area = self.tile_area_in_storage_crs(),
            extent = EXTENT,
            buffer = BUFFER,
            grid = generalize::CLUSTER_GRID,
        )
    }

    /// The geometry column as EPSG:3857, null where it is not drawable.
    fn geometry_3857(&self) -> String {
        let column = format!("t.{}", quote_ident(self.geometry_column));
        let transformed = if self.srid == 3857 {
            return column;
        } else if self.srid <= 0 {
            format!("ST_Transform(ST_SetSRID({column}, 4326), 3857)")
        } else {
            format!("ST_Transform({column}, 3857)")
        };
        // A coordinate no CRS has (written by hand) would fail the tile.
        format!(
            "CASE WHEN {} THEN {transformed} END",
            drawable(self.geometry_type, self.srid, self.storage_bounds, &column)
        )
    }

    /// The tile's buffered area in the storage CRS.
    fn tile_area_in_storage_crs(&self) -> String {
        match self.srid {
            3857 => format!(
                "ST_TileEnvelope($1, $2, $3, margin => {})",
                f64::from(BUFFER) / f64::from(EXTENT)
            ),
            4326 => tile_area_4326(),
            srid if srid <= 0 => format!("ST_SetSRID({}, 0)", tile_area_4326()),
            srid => {
                // A projected CRS (a registered table) holds only its own part of
                // the world, and a box far outside it transforms to nonsense or
                // fails: the area is first cut to the data's extent, and its
                // edges densified so that their curves survive the transform.
                // An extent counted from values no CRS has is cut to the world
                // (or is the world) before it is written into SQL.
                let [west, south, east, north] = match self.extent {
                    Some([w, s, e, n]) if w <= e => [w, s, e, n],
                    Some([_, s, _, n]) => [-180.0, s, 180.0, n],
                    None => [-180.0, -90.0, 180.0, 90.0],
                };
                format!(
                    "ST_Transform(ST_Segmentize(ST_ClipByBox2D({}, ST_MakeEnvelope({west}, {south}, {east}, {north}, 4326)), 0.5), {srid})",
                    tile_area_4326()
                )
            }
        }
    }
}

/// The tile's area with its buffer in WGS 84, a scalar subquery on the
/// tile's `$1, $2, $3`: the buffered Mercator envelope cut at the world's
/// edges, reaching the poles on the first and last rows. Transforming the
/// buffered envelope itself wraps corners past ±180° to the far side of the
/// world (tile 1/0/0 became 2.8°E to 177°E) and leaves out what lies beyond
/// ±85.05°.
fn tile_area_4326() -> String {
    let margin = f64::from(BUFFER) / f64::from(EXTENT);
    let lat = |y: &str| format!("degrees(2 * atan(exp({y} / 6378137.0)) - pi() / 2)");
    format!(
        "(SELECT ST_MakeEnvelope(greatest(-180, ST_XMin(e) * 180 / {WORLD_HALF_SIDE}), \
           CASE WHEN ST_YMin(e) <= -{WORLD_HALF_SIDE} THEN -90 ELSE {south} END, \
           least(180, ST_XMax(e) * 180 / {WORLD_HALF_SIDE}), \
           CASE WHEN ST_YMax(e) >= {WORLD_HALF_SIDE} THEN 90 ELSE {north} END, 4326) \
         FROM (SELECT ST_TileEnvelope($1, $2, $3, margin => {margin}) AS e) tile)",
        south = lat("ST_YMin(e)"),
        north = lat("ST_YMax(e)"),
    )
}
