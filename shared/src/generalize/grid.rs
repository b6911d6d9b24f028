//! The world's grid as generalization sees it: Web Mercator as fractions
//! of the world, features placed on it by the Morton code of their centre,
//! and the boxes of its cells, shared by the ranking (`super`) and the
//! cluster cells (`super::clusters`).
use futures::TryStreamExt;
use sqlx::PgConnection;

use crate::db::quote_ident;

/// Tiles are cut up to this zoom and over-zoomed past it.
pub const MAX_ZOOM: u8 = 16;
/// The column of a loaded table that holds a kept feature's first zoom
/// (null for a feature first drawn at the complete zoom).
pub const FIRST_ZOOM_COLUMN: &str = "__minzoom";
/// Cells a tile side at most: 8-pixel cells of a 512-pixel tile.
pub(super) const MAX_CELL_BITS: u8 = 6;
/// Half the side of Web Mercator's square world, in metres.
pub const WORLD_HALF_SIDE: f64 = 20_037_508.342_789_244;
/// Bits of a centre's position on each axis.
pub(super) const LEVELS: u8 = MAX_ZOOM + MAX_CELL_BITS;
/// A feature as generalization sees it: its key and its box in WGS 84.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feature {
    pub key: i64,
    pub west: f64,
    pub south: f64,
    pub east: f64,
    pub north: f64,
}

/// A point feature, as the tests place them.
#[cfg(test)]
pub(super) fn point(key: i64, lon: f64, lat: f64) -> Feature {
    Feature {
        key,
        west: lon,
        south: lat,
        east: lon,
        north: lat,
    }
}

/// A feature placed on Web Mercator: the Morton code of its centre at
/// `LEVELS` bits, its box as fractions of the world (x east, y south; in
/// single precision, a few metres, as the counts need: 40 bytes a feature,
/// so 10,000,000 of them take 400 MB while a layer is ranked).
pub(super) struct Placed {
    pub(super) code: u64,
    pub(super) key: i64,
    pub(super) min: (f32, f32),
    pub(super) max: (f32, f32),
    /// Width or height, the larger, taken before rounding to single precision.
    pub(super) across: f32,
}

impl Placed {
    pub(super) fn of(f: &Feature) -> Option<Self> {
        if ![f.west, f.south, f.east, f.north].iter().all(|v| v.is_finite()) {
            return None;
        }
        let (x0, y1) = mercator(f.west.min(f.east), f.south.min(f.north));
        let (x1, y0) = mercator(f.west.max(f.east), f.south.max(f.north));
        // The centre in degrees, as an edit's cell is found (`zoom_0_cell`).
        let (cx, cy) = mercator((f.west + f.east) / 2.0, (f.south + f.north) / 2.0);
        let side = f64::from(1u32 << LEVELS);
        let cell = |v: f64| ((v * side) as u64).min((1 << LEVELS) - 1) as u32;
        Some(Placed {
            code: morton(cell(cx), cell(cy)),
            key: f.key,
            min: (x0 as f32, y0 as f32),
            max: (x1 as f32, y1 as f32),
            across: (x1 - x0).max(y1 - y0) as f32,
        })
    }

    /// A well-mixed priority from the key: spatially random, fixed.
    pub(super) fn priority(&self) -> (u64, i64) {
        (splitmix64(self.key as u64), self.key)
    }
}

/// The box, as `[west, south, east, north]` in WGS 84, of the cell at
/// `column`, `row` of the grid of `2^level` cells a side over the world.
/// Cells on the world's edges reach past it: features beyond 85.05° or
/// 180° are placed (clamped) in them.
pub(super) fn cell_box(level: u8, column: u32, row: u32) -> [f64; 4] {
    let cells = f64::from(1u32 << level);
    let (column, row) = (f64::from(column), f64::from(row));
    let lon_of = |x: f64| x * 360.0 - 180.0;
    let lat_of = |y: f64| (std::f64::consts::PI * (1.0 - 2.0 * y)).sinh().atan().to_degrees();
    let last = cells - 1.0;
    [
        if column == 0.0 { -360.0 } else { lon_of(column / cells) },
        if row == last {
            -90.0
        } else {
            lat_of((row + 1.0) / cells)
        },
        if column == last {
            360.0
        } else {
            lon_of((column + 1.0) / cells)
        },
        if row == 0.0 { 90.0 } else { lat_of(row / cells) },
    ]
}

/// Every non-empty feature of `table` (quoted; `key` and `geometry` are
/// column names, the geometry in WGS 84) whose box meets `area` (west,
/// south, east, north), and with `drawn_at`, only those drawn at that zoom.
pub(super) async fn features_meeting(
    conn: &mut PgConnection,
    (table, key, geometry): (&str, &str, &str),
    [west, south, east, north]: [f64; 4],
    drawn_at: Option<u8>,
) -> Result<Vec<Feature>, sqlx::Error> {
    let (key_q, geom_q) = (quote_ident(key), quote_ident(geometry));
    let drawn = if drawn_at.is_some() {
        format!(" AND {FIRST_ZOOM_COLUMN} <= $5")
    } else {
        String::new()
    };
    let mut query = sqlx::query_as::<_, (i64, f64, f64, f64, f64)>(sqlx::AssertSqlSafe(format!(
        "SELECT {key_q}::bigint, ST_XMin({geom_q}), ST_YMin({geom_q}), ST_XMax({geom_q}), ST_YMax({geom_q})
         FROM {table} WHERE {geom_q} && ST_MakeEnvelope($1, $2, $3, $4, 4326) AND NOT ST_IsEmpty({geom_q}){drawn}"
    )))
    .bind(west)
    .bind(south)
    .bind(east)
    .bind(north);
    if let Some(zoom) = drawn_at {
        query = query.bind(i16::from(zoom));
    }
    query
        .fetch(&mut *conn)
        .map_ok(|(key, west, south, east, north)| Feature {
            key,
            west,
            south,
            east,
            north,
        })
        .try_collect()
        .await
}

/// Web Mercator as fractions of the world: x east from 180° W, y south
/// from 85.05° N, both in [0, 1).
pub(super) fn mercator(lon: f64, lat: f64) -> (f64, f64) {
    const MAX_LATITUDE: f64 = 85.051_128_779_806_59;
    let x = (lon.clamp(-180.0, 180.0) + 180.0) / 360.0;
    let lat = lat.clamp(-MAX_LATITUDE, MAX_LATITUDE).to_radians();
    let y = (1.0 - lat.tan().asinh() / std::f64::consts::PI) / 2.0;
    let below_one = 1.0 - f64::EPSILON;
    (x.clamp(0.0, below_one), y.clamp(0.0, below_one))
}

pub(super) fn morton(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
        v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
        v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

pub(super) fn unmorton(code: u64) -> (u32, u32) {
    fn squeeze(mut v: u64) -> u32 {
        v &= 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
        v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff;
        v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff;
        ((v | (v >> 16)) & 0x0000_0000_ffff_ffff) as u32
    }
    (squeeze(code), squeeze(code >> 1))
}

/// A well-mixed priority from a key: spatially random, fixed per feature.
pub(super) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
