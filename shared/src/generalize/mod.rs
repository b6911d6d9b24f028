//! Generalized tiles (decisions: Generalized tiles): which features a
//! vector tile below the dataset's complete zoom carries. A feature has a
//! first zoom: the lowest at which it is the feature of least priority in
//! its cell (cells of 8 by 8 pixels, 64 a side of a 512-pixel tile, fewer
//! when features are heavy), or at which a line or polygon is a pixel
//! across. Priorities come from the key alone and the cells of zoom z + 1
//! lie inside those of zoom z, so a feature kept at zoom z is kept above
//! it, neighbouring tiles agree, and a feature's first zoom depends only
//! on the features of its zoom-0 cell (what an edit recomputes). The
//! complete zoom is the first at which every tile, holding every feature
//! it meets, stays within the tile bounds.
use std::collections::HashMap;

use futures::TryStreamExt;
use sqlx::{PgConnection, PgPool};

use crate::db::quote_ident;

mod clusters;
mod grid;
pub use clusters::{CLUSTER_GRID, ClusterCell, Move, recount_clusters};
pub use grid::{FIRST_ZOOM_COLUMN, Feature, MAX_ZOOM, WORLD_HALF_SIDE};
use grid::{LEVELS, MAX_CELL_BITS, Placed, cell_box, features_meeting, mercator, unmorton};

/// What one tile may carry at most (decisions).
pub const MAX_TILE_FEATURES: u64 = 100_000;
pub const MAX_TILE_BYTES: u64 = 2_000_000;
/// At least 8 cells a side, whatever the features weigh: never coarser
/// than the cluster grid, so a cluster cell's least feature is drawn at
/// its zoom (`recount_clusters` finds a lone member among those).
const MIN_CELL_BITS: u8 = 3;
const _: () = assert!(MIN_CELL_BITS >= clusters::CLUSTER_BITS);
/// A feature whose box covers more tiles than this at a zoom is counted
/// in every tile of that zoom.
const WIDE: u64 = 256;
/// Tiles counted one by one for features over several tiles, at most (about
/// 320 MB); past it they count in every tile, which can only make the
/// complete zoom higher.
const MAX_SPREAD_TILES: usize = 8_000_000;
/// A tile's buffer and the estimate of a feature's weight are not exact:
/// the complete zoom keeps a tenth of each bound spare.
const SPARE_NUMERATOR: u64 = 9;
const SPARE_DENOMINATOR: u64 = 10;

/// What a layer's low zooms need.
#[derive(Clone, Debug, PartialEq)]
pub struct Generalization {
    /// The first zoom whose tiles hold every feature they meet; `MAX_ZOOM
    /// + 1` when even zoom 16's do not.
    pub complete_zoom: u8,
    /// Cells a tile side below the complete zoom, as a power of two.
    pub cell_bits: u8,
    /// Each feature first drawn below the complete zoom, with that zoom.
    pub first_zooms: Vec<(i64, u8)>,
    /// The cluster tiles' cells below `cluster_cells_zoom` (at most the
    /// complete zoom).
    pub clusters: Vec<ClusterCell>,
    pub cluster_cells_zoom: u8,
}

/// The cells a tile side for features of `bytes_per_feature`: a tile of
/// one feature per cell stays within the byte bound.
pub fn cell_bits_for(bytes_per_feature: u64) -> u8 {
    let budget = MAX_TILE_BYTES * SPARE_NUMERATOR / SPARE_DENOMINATOR;
    (MIN_CELL_BITS..=MAX_CELL_BITS)
        .rev()
        .find(|bits| (1u64 << (2 * bits)) * bytes_per_feature.max(1) <= budget)
        .unwrap_or(MIN_CELL_BITS)
}

/// Features one complete tile may hold, given their weight.
pub fn tile_budget(bytes_per_feature: u64) -> u64 {
    MAX_TILE_FEATURES.min(MAX_TILE_BYTES / bytes_per_feature.max(1)) * SPARE_NUMERATOR / SPARE_DENOMINATOR
}

/// The generalization of a whole layer whose features weigh about
/// `bytes_per_feature` each in a tile.
pub fn generalize(features: &[Feature], bytes_per_feature: u64) -> Generalization {
    generalize_placed(features.iter().filter_map(Placed::of).collect(), bytes_per_feature)
}

fn generalize_placed(mut placed: Vec<Placed>, bytes_per_feature: u64) -> Generalization {
    placed.sort_unstable_by_key(|p| p.code);
    let complete_zoom = complete_zoom(&placed, tile_budget(bytes_per_feature));
    let cell_bits = cell_bits_for(bytes_per_feature);
    let first_zooms = rank(&mut placed, complete_zoom, cell_bits);
    let (clusters, cluster_cells_zoom) = clusters::count_cells(&placed, complete_zoom);
    Generalization {
        complete_zoom,
        cell_bits,
        first_zooms,
        clusters,
        cluster_cells_zoom,
    }
}

/// The first zooms of `features` given the layer's complete zoom and cell
/// size: for all features of one or more zoom-0 cells (an edit's), the
/// same as `generalize` gives them for the whole layer.
pub fn first_zooms(features: &[Feature], complete_zoom: u8, cell_bits: u8) -> Vec<(i64, u8)> {
    rank(&mut place(features), complete_zoom, cell_bits)
}

/// The zoom-0 cell of a point, as `[west, south, east, north]` in WGS 84:
/// the features an edit there may change the first zoom of.
pub fn zoom_0_cell(lon: f64, lat: f64, cell_bits: u8) -> [f64; 4] {
    let (x, y) = mercator(lon, lat);
    let cells = f64::from(1u32 << cell_bits);
    cell_box(cell_bits, (x * cells).floor() as u32, (y * cells).floor() as u32)
}

/// A layer's generalization as its dataset records it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub complete_zoom: u8,
    pub cell_bits: u8,
    /// Features a tile of the complete zoom may hold (`tile_budget` of the
    /// table's bytes a feature when it was ranked): an edit that puts more
    /// in one raises the complete zoom (`overflows`).
    pub budget: u64,
    /// Features drawn below the complete zoom.
    pub kept: u64,
    /// Its cluster cells, of the zooms below `cluster_cells_zoom`
    /// (`record` writes them with the dataset).
    pub clusters: Vec<ClusterCell>,
    pub cluster_cells_zoom: u8,
}

impl Recorded {
    /// Writes this generalization with the dataset (complete zoom, cell
    /// size, budget) and replaces its cluster cells, in the transaction
    /// that publishes the table it was counted from (after the dataset row
    /// is written) or that changed it.
    pub async fn record(&self, conn: &mut PgConnection, dataset: uuid::Uuid) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE datasets SET complete_zoom = $2, thinning_cell_bits = $3, tile_budget = $4 WHERE id = $1")
            .bind(dataset)
            .bind(i16::from(self.complete_zoom))
            .bind(i16::from(self.cell_bits))
            .bind(i32::try_from(self.budget).unwrap_or(i32::MAX))
            .execute(&mut *conn)
            .await?;
        clusters::record_clusters(conn, dataset, (&self.clusters, self.cluster_cells_zoom)).await
    }
}

/// Generalizes a loaded table (`schema.table`, quoted; key `gid`, geometry
/// `geom` in WGS 84) before its indexes are built, so that writing the
/// first zooms maintains none: every feature's box is read once (binary
/// COPY), the first zooms go into the table's `__minzoom` column (null for
/// the others) in one statement; `low_zooms_index_sql` is the partial
/// index to build with the table's others.
pub async fn rank_table(pool: &PgPool, table: &str) -> Result<Recorded, sqlx::Error> {
    rank_on(&mut *pool.acquire().await?, table).await
}

/// `rank_table` on a connection: also an edit's, in its transaction, when
/// the complete zoom must rise (the table's indexes are then in place).
pub async fn rank_on(conn: &mut PgConnection, table: &str) -> Result<Recorded, sqlx::Error> {
    let placed = read_boxes(&mut *conn, table).await?;
    let count = placed.len() as u64;
    let table_bytes: i64 = sqlx::query_scalar("SELECT pg_table_size($1::regclass)")
        .bind(table)
        .fetch_one(&mut *conn)
        .await?;
    let bytes_per_feature = table_bytes.max(0) as u64 / count.max(1);
    let budget = tile_budget(bytes_per_feature);
    let g = generalize_placed(placed, bytes_per_feature);
    let had_ranks: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped)",
    )
    .bind(table)
    .bind(FIRST_ZOOM_COLUMN)
    .fetch_one(&mut *conn)
    .await?;
    if had_ranks {
        // A table copied from another (a restored version) brings its ranks.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {table} SET {FIRST_ZOOM_COLUMN} = NULL WHERE {FIRST_ZOOM_COLUMN} IS NOT NULL"
        )))
        .execute(&mut *conn)
        .await?;
    } else {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE {table} ADD COLUMN {FIRST_ZOOM_COLUMN} smallint"
        )))
        .execute(&mut *conn)
        .await?;
    }
    write_first_zooms(&mut *conn, table, "gid", &g.first_zooms).await?;
    Ok(Recorded {
        complete_zoom: g.complete_zoom,
        cell_bits: g.cell_bits,
        budget,
        kept: g.first_zooms.len() as u64,
        clusters: g.clusters,
        cluster_cells_zoom: g.cluster_cells_zoom,
    })
}

/// The partial spatial index, named `index`, over the features a ranked
/// table (`rank_table`) draws below its complete zoom.
pub fn low_zooms_index_sql(table: &str, index: &str) -> String {
    format!(
        "CREATE INDEX {} ON {table} USING gist (geom) WHERE {FIRST_ZOOM_COLUMN} IS NOT NULL",
        quote_ident(index)
    )
}

/// Every non-empty feature's key and box, placed, through a binary COPY
/// (a tenth of the driver's cost a row, which counts at 10,000,000 rows).
async fn read_boxes(conn: &mut PgConnection, table: &str) -> Result<Vec<Placed>, sqlx::Error> {
    let mut chunks = conn
        .copy_out_raw(&format!(
            "COPY (SELECT gid::bigint, ST_XMin(geom), ST_YMin(geom), ST_XMax(geom), ST_YMax(geom)
                   FROM {table} WHERE NOT ST_IsEmpty(geom)) TO STDOUT (FORMAT binary)"
        ))
        .await?;
    let mut reader = BoxReader::default();
    let mut placed = Vec::new();
    while let Some(chunk) = chunks.try_next().await? {
        reader.push(&chunk, &mut placed)?;
    }
    reader.finish()?;
    Ok(placed)
}

/// Every tile of zooms 0 to `max_zoom` that a feature of the table meets
/// with the tile buffer (`buffer` of 4096), by zoom; `None` when there
/// are more than `most`.
pub async fn tiles_with_data(
    conn: &mut PgConnection,
    table: &str,
    max_zoom: u8,
    (buffer, most): (u32, usize),
) -> Result<Option<Vec<(u8, u32, u32)>>, sqlx::Error> {
    let placed = read_boxes(conn, table).await?;
    Ok(tiles_of(&placed, max_zoom.min(MAX_ZOOM), (buffer, most)))
}

fn tiles_of(placed: &[Placed], max_zoom: u8, (buffer, most): (u32, usize)) -> Option<Vec<(u8, u32, u32)>> {
    let margin = f64::from(buffer) / 4096.0;
    let mut tiles = Vec::new();
    for z in 0..=max_zoom {
        let n = f64::from(1u32 << z);
        let last = (1u32 << z) - 1;
        let index = |v: f32, side: f64| ((f64::from(v) * n + side).floor().max(0.0) as u32).min(last);
        let mut zoom: std::collections::BTreeSet<(u32, u32)> = std::collections::BTreeSet::new();
        for p in placed {
            let (c0, c1) = (index(p.min.0, -margin), index(p.max.0, margin));
            let (r0, r1) = (index(p.min.1, -margin), index(p.max.1, margin));
            if u64::from(c1 - c0 + 1) * u64::from(r1 - r0 + 1) > most as u64 {
                return None;
            }
            for c in c0..=c1 {
                for r in r0..=r1 {
                    zoom.insert((c, r));
                }
            }
            if tiles.len() + zoom.len() > most {
                return None;
            }
        }
        tiles.extend(zoom.into_iter().map(|(x, y)| (z, x, y)));
    }
    Some(tiles)
}

/// Parses PostgreSQL's binary COPY of rows (bigint, 4 x float8), as it
/// arrives in chunks that split rows anywhere.
#[derive(Default)]
struct BoxReader {
    pending: Vec<u8>,
    header_read: bool,
    ended: bool,
}

impl BoxReader {
    const SIGNATURE: &'static [u8] = b"PGCOPY\n\xff\r\n\0";

    fn push(&mut self, chunk: &[u8], placed: &mut Vec<Placed>) -> Result<(), sqlx::Error> {
        self.pending.extend_from_slice(chunk);
        let buf = &self.pending[..];
        let mut at = 0;
        let malformed = |what: &str| sqlx::Error::Protocol(format!("binary COPY of boxes: {what}"));
        if !self.header_read {
            // Signature, flags, then a header extension of the given length.
            let Some(extension) = buf.get(15..19) else {
                return Ok(());
            };
            if &buf[..11] != Self::SIGNATURE {
                return Err(malformed("no signature"));
            }
            let extension = u32::from_be_bytes(extension.try_into().expect("4 bytes")) as usize;
            if buf.len() < 19 + extension {
                return Ok(());
            }
            at = 19 + extension;
            self.header_read = true;
        }
        // A row: a field count, then each field's length and bytes (NULLs
        // never come: the boxes of non-empty geometries).
        const ROW: usize = 2 + 4 + 8 + 4 * (4 + 8);
        while let Some(count) = buf.get(at..at + 2) {
            let fields = i16::from_be_bytes([count[0], count[1]]);
            if fields == -1 {
                self.ended = true;
                at += 2;
                break;
            }
            if fields != 5 {
                return Err(malformed("a row of other than five fields"));
            }
            let Some(row) = buf.get(at..at + ROW) else { break };
            let field = |n: usize| -> Result<[u8; 8], sqlx::Error> {
                let start = 2 + n * 12;
                if row[start..start + 4] != 8i32.to_be_bytes() {
                    return Err(malformed("a field of other than eight bytes"));
                }
                Ok(row[start + 4..start + 12].try_into().expect("8 bytes"))
            };
            let number = |n: usize| field(n).map(f64::from_be_bytes);
            placed.extend(Placed::of(&Feature {
                key: i64::from_be_bytes(field(0)?),
                west: number(1)?,
                south: number(2)?,
                east: number(3)?,
                north: number(4)?,
            }));
            at += ROW;
        }
        self.pending.drain(..at);
        Ok(())
    }

    fn finish(&self) -> Result<(), sqlx::Error> {
        if self.ended && self.pending.is_empty() {
            Ok(())
        } else {
            Err(sqlx::Error::Protocol("binary COPY of boxes ended inside a row".into()))
        }
    }
}

/// Sets `__minzoom` of the given keys, in one statement (one join, where
/// a statement per batch would scan an unindexed table each time).
async fn write_first_zooms(
    conn: &mut PgConnection,
    table: &str,
    key: &str,
    first_zooms: &[(i64, u8)],
) -> Result<(), sqlx::Error> {
    if first_zooms.is_empty() {
        return Ok(());
    }
    let keys: Vec<i64> = first_zooms.iter().map(|(k, _)| *k).collect();
    let zooms: Vec<i16> = first_zooms.iter().map(|(_, z)| i16::from(*z)).collect();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE {table} t SET {FIRST_ZOOM_COLUMN} = v.z FROM unnest($1::bigint[], $2::smallint[]) v(k, z)
         WHERE t.{} = v.k",
        quote_ident(key)
    )))
    .bind(keys)
    .bind(zooms)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether the tile of `complete_zoom` that holds `place` (longitude,
/// latitude: where an edit put a feature) now holds more than `budget`
/// features, counted as the load counts them (a feature in each tile its
/// box meets, no buffer): the complete zoom must then rise (`rank_on`). The
/// count stops at `budget + 1`, so a full tile costs what the budget does.
/// `table` is quoted, `geometry` a column name, the geometry in WGS 84.
pub async fn overflows(
    conn: &mut PgConnection,
    (table, geometry): (&str, &str),
    (complete_zoom, budget): (u8, u64),
    (lon, lat): (f64, f64),
) -> Result<bool, sqlx::Error> {
    if complete_zoom > MAX_ZOOM || !lon.is_finite() || !lat.is_finite() {
        return Ok(false);
    }
    let (x, y) = mercator(lon, lat);
    let tiles = f64::from(1u32 << complete_zoom);
    let [west, south, east, north] = cell_box(complete_zoom, (x * tiles) as u32, (y * tiles) as u32);
    let limit = i64::try_from(budget).unwrap_or(i64::MAX - 1) + 1;
    let held: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT FROM {table} WHERE {} && ST_MakeEnvelope($1, $2, $3, $4, 4326) LIMIT $5) t",
        quote_ident(geometry)
    )))
    .bind(west)
    .bind(south)
    .bind(east)
    .bind(north)
    .bind(limit)
    .fetch_one(&mut *conn)
    .await?;
    Ok(held >= limit)
}

/// After an edit: the first zooms of the features of the zoom-0 cells of
/// `places` (longitude, latitude: where edited features are and were), in
/// the edit's transaction. `table` is quoted, `key` and `geometry` are
/// column names, the geometry in WGS 84.
pub async fn regeneralize_around(
    conn: &mut PgConnection,
    (table, key, geometry): (&str, &str, &str),
    recorded: (u8, u8),
    places: &[(f64, f64)],
) -> Result<(), sqlx::Error> {
    let (complete_zoom, cell_bits) = recorded;
    let mut cells: Vec<[f64; 4]> = places
        .iter()
        .filter(|(lon, lat)| lon.is_finite() && lat.is_finite())
        .map(|&(lon, lat)| zoom_0_cell(lon, lat, cell_bits))
        .collect();
    cells.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    cells.dedup();
    let key_q = quote_ident(key);
    for cell in cells {
        let candidates = features_meeting(conn, (table, key, geometry), cell, None).await?;
        // Features ranked in this cell are those whose centre is in it.
        let inside: Vec<Feature> = candidates
            .into_iter()
            .filter(|f| zoom_0_cell((f.west + f.east) / 2.0, (f.south + f.north) / 2.0, cell_bits) == cell)
            .collect();
        let keys: Vec<i64> = inside.iter().map(|f| f.key).collect();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {table} SET {FIRST_ZOOM_COLUMN} = NULL WHERE {key_q} = ANY($1) AND {FIRST_ZOOM_COLUMN} IS NOT NULL"
        )))
        .bind(&keys)
        .execute(&mut *conn)
        .await?;
        write_first_zooms(conn, table, key, &first_zooms(&inside, complete_zoom, cell_bits)).await?;
    }
    Ok(())
}

fn place(features: &[Feature]) -> Vec<Placed> {
    let mut placed: Vec<Placed> = features.iter().filter_map(Placed::of).collect();
    placed.sort_unstable_by_key(|p| p.code);
    placed
}

/// The first zoom from 0 at which no tile holds more than `budget`
/// features: a feature counts in each tile its box meets (in every tile
/// when it meets more than `WIDE`).
fn complete_zoom(placed: &[Placed], budget: u64) -> u8 {
    (0..=MAX_ZOOM)
        .find(|&z| most_in_a_tile(placed, z) <= budget)
        .unwrap_or(MAX_ZOOM + 1)
}

fn most_in_a_tile(placed: &[Placed], z: u8) -> u64 {
    let tiles = f64::from(1u32 << z);
    let index = |v: f32| ((f64::from(v) * tiles) as u64).min((1 << z) - 1);
    let range = |p: &Placed| (index(p.min.0), index(p.max.0), index(p.min.1), index(p.max.1));
    // Features over more than one tile, counted in each (or everywhere).
    let mut spread: HashMap<(u64, u64), u64> = HashMap::new();
    let mut everywhere = 0u64;
    for p in placed {
        let (c0, c1, r0, r1) = range(p);
        let covered = (c1 - c0 + 1) * (r1 - r0 + 1);
        if covered > WIDE || (covered > 1 && spread.len() >= MAX_SPREAD_TILES) {
            everywhere += 1;
        } else if covered > 1 {
            for c in c0..=c1 {
                for r in r0..=r1 {
                    *spread.entry((c, r)).or_default() += 1;
                }
            }
        }
    }
    // Features in one tile are runs of the Morton order.
    let shift = 2 * u32::from(LEVELS - z);
    let mut most = spread.values().copied().max().unwrap_or(0);
    let mut runs = placed
        .iter()
        .filter(|p| {
            let (c0, c1, r0, r1) = range(p);
            c0 == c1 && r0 == r1
        })
        .map(|p| p.code >> shift)
        .peekable();
    while let Some(tile) = runs.next() {
        let mut n = 1;
        while runs.next_if_eq(&tile).is_some() {
            n += 1;
        }
        let (column, row) = unmorton(tile);
        let spread_here = spread.get(&(u64::from(column), u64::from(row))).copied().unwrap_or(0);
        most = most.max(n + spread_here);
    }
    most + everywhere
}

/// Each feature's first zoom below `complete_zoom`: the lowest at which it
/// has the least priority of its cell, or at which it is a pixel across.
fn rank(placed: &mut [Placed], complete_zoom: u8, cell_bits: u8) -> Vec<(i64, u8)> {
    let mut first = vec![u8::MAX; placed.len()];
    for z in 0..complete_zoom.min(MAX_ZOOM + 1) {
        let level = z + cell_bits;
        let shift = 2 * u32::from(LEVELS.saturating_sub(level));
        let mut start = 0;
        while start < placed.len() {
            let cell = placed[start].code >> shift;
            let mut end = start;
            let mut least = start;
            while end < placed.len() && placed[end].code >> shift == cell {
                if placed[end].priority() < placed[least].priority() {
                    least = end;
                }
                end += 1;
            }
            first[least] = first[least].min(z);
            start = end;
        }
    }
    // A pixel of a 512-pixel tile at zoom z is 2^-(z + 9) of the world.
    for (p, first) in placed.iter().zip(first.iter_mut()) {
        let across = f64::from(p.across);
        if across > 0.0 {
            let z = (-(across.log2()) - 9.0).ceil().max(0.0);
            if z < f64::from(*first) {
                *first = z as u8;
            }
        }
    }
    placed
        .iter()
        .zip(first)
        .filter(|(_, z)| *z < complete_zoom)
        .map(|(p, z)| (p.key, z))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::grid::{morton, point};
    use super::*;

    /// A grid of `n` by `n` points over a box.
    fn grid(n: i64, [west, south, east, north]: [f64; 4]) -> Vec<Feature> {
        (0..n * n)
            .map(|i| {
                let (c, r) = ((i % n) as f64, (i / n) as f64);
                point(
                    i,
                    west + (east - west) * (c + 0.5) / n as f64,
                    south + (north - south) * (r + 0.5) / n as f64,
                )
            })
            .collect()
    }

    #[test]
    fn morton_codes_round_trip() {
        for (x, y) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (123_456, 3_999_999),
            ((1 << 22) - 1, (1 << 22) - 1),
        ] {
            assert_eq!(unmorton(morton(x, y)), (x, y));
        }
    }

    #[test]
    fn a_small_layer_is_complete_at_zoom_0_and_keeps_no_rank() {
        let features = grid(100, [-10.0, -10.0, 10.0, 10.0]);
        let g = generalize(&features, 100);
        assert_eq!(g.complete_zoom, 0);
        assert!(g.first_zooms.is_empty());
    }

    #[test]
    fn a_dense_layer_keeps_one_feature_in_every_cell_that_holds_one() {
        // 400 x 400 points over Europe: 160,000, more than a tile holds.
        let features = grid(400, [-10.0, 35.0, 30.0, 60.0]);
        let g = generalize(&features, 100);
        assert!(g.complete_zoom > 0, "{}", g.complete_zoom);
        assert_eq!(g.cell_bits, 6);
        let kept: HashMap<i64, u8> = g.first_zooms.iter().copied().collect();
        for z in 0..g.complete_zoom {
            let cells = f64::from(1u32 << (z + g.cell_bits));
            let cell_of = |f: &Feature| {
                let (x, y) = mercator(f.west, f.south);
                ((x * cells) as u64, (y * cells) as u64)
            };
            let mut with_data = std::collections::BTreeSet::new();
            let mut drawn = std::collections::BTreeMap::new();
            for f in &features {
                with_data.insert(cell_of(f));
                if kept.get(&f.key).is_some_and(|&first| first <= z) {
                    *drawn.entry(cell_of(f)).or_insert(0) += 1;
                }
            }
            assert_eq!(
                drawn.keys().copied().collect::<std::collections::BTreeSet<_>>(),
                with_data,
                "zoom {z}"
            );
            assert!(drawn.values().all(|&n| n == 1), "zoom {z}: one feature a cell");
        }
    }

    #[test]
    fn a_feature_kept_at_a_zoom_is_kept_above_and_an_edit_region_ranks_alike() {
        let features = grid(300, [0.0, 40.0, 20.0, 55.0]);
        let g = generalize(&features, 100);
        // Recomputed for the features of one zoom-0 cell, the ranks agree.
        let cell = zoom_0_cell(5.0, 45.0, g.cell_bits);
        let inside: Vec<Feature> = features
            .iter()
            .copied()
            .filter(|f| f.west >= cell[0] && f.west < cell[2] && f.south >= cell[1] && f.south < cell[3])
            .collect();
        assert!(!inside.is_empty());
        let mut again = first_zooms(&inside, g.complete_zoom, g.cell_bits);
        again.sort();
        let keys: std::collections::BTreeSet<i64> = inside.iter().map(|f| f.key).collect();
        let mut whole: Vec<(i64, u8)> = g
            .first_zooms
            .iter()
            .copied()
            .filter(|(k, _)| keys.contains(k))
            .collect();
        whole.sort();
        assert_eq!(again, whole);
    }

    #[test]
    fn lines_a_pixel_across_are_kept_and_the_heavy_get_coarser_cells() {
        // A line a degree long is over a pixel across from zoom 0.
        let line = Feature {
            key: 7,
            west: 0.0,
            south: 0.0,
            east: 1.0,
            north: 0.0,
        };
        let mut features = grid(400, [-10.0, 35.0, 30.0, 60.0]);
        for f in &mut features {
            f.key += 100;
        }
        features.push(line);
        let g = generalize(&features, 100);
        assert!(g.first_zooms.contains(&(7, 0)), "{:?}", &g.first_zooms[..5]);
        assert_eq!(cell_bits_for(100), 6);
        assert_eq!(cell_bits_for(1_000), 5);
        assert_eq!(cell_bits_for(1_000_000), 3);
        assert_eq!(tile_budget(100), 18_000);
        assert_eq!(tile_budget(1), 90_000);
    }

    #[test]
    fn a_pile_at_one_place_never_completes() {
        let features: Vec<Feature> = (0..200_000).map(|k| point(k, 2.35, 48.85)).collect();
        let g = generalize(&features, 10);
        assert_eq!(g.complete_zoom, MAX_ZOOM + 1);
        // One cell at every zoom: one feature drawn from zoom 0 to 16.
        assert_eq!(g.first_zooms.len(), 1);
    }

    #[test]
    fn impossible_boxes_neither_panic_nor_rank() {
        let mut features = grid(50, [0.0, 0.0, 10.0, 10.0]);
        let wild = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e308,
            -1e308,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        for (i, &v) in wild.iter().enumerate() {
            let key = 10_000 + i as i64;
            features.push(point(key, v, v));
            features.push(Feature {
                key: key + 100,
                west: -v,
                south: -v,
                east: v,
                north: v,
            });
        }
        let g = generalize(&features, 100);
        assert_eq!(g.complete_zoom, 0);
        let ranked: Vec<i64> = first_zooms(&features, 3, 6).into_iter().map(|(k, _)| k).collect();
        for (i, &v) in wild.iter().enumerate() {
            let key = 10_000 + i as i64;
            // Finite ones are placed (on the world's edge); others never.
            assert_eq!(Placed::of(&point(key, v, v)).is_some(), v.is_finite(), "{v}");
            assert!(v.is_finite() || !ranked.contains(&key), "{v}");
        }
        // The grid's 10 degrees still hold a feature in each of zoom 2's
        // 1.4-degree cells.
        assert!(ranked.len() >= 49, "{}", ranked.len());
    }

    /// Binary COPY of `(bigint, 4 x float8)` rows, as PostgreSQL sends it.
    fn binary_copy(rows: &[Feature]) -> Vec<u8> {
        let mut out = BoxReader::SIGNATURE.to_vec();
        out.extend(0u32.to_be_bytes());
        out.extend(4u32.to_be_bytes());
        out.extend(b"ext!");
        for f in rows {
            out.extend(5i16.to_be_bytes());
            out.extend(8i32.to_be_bytes());
            out.extend(f.key.to_be_bytes());
            for v in [f.west, f.south, f.east, f.north] {
                out.extend(8i32.to_be_bytes());
                out.extend(v.to_be_bytes());
            }
        }
        out.extend((-1i16).to_be_bytes());
        out
    }

    #[test]
    fn binary_copy_of_boxes_is_read_whatever_the_chunks() {
        let features = grid(7, [-170.0, -80.0, 170.0, 80.0]);
        let bytes = binary_copy(&features);
        let expected: Vec<(u64, i64)> = features
            .iter()
            .filter_map(Placed::of)
            .map(|p| (p.code, p.key))
            .collect();
        for size in [1, 2, 5, 61, 62, 63, 1000, bytes.len()] {
            let (mut reader, mut placed) = (BoxReader::default(), Vec::new());
            for chunk in bytes.chunks(size) {
                reader.push(chunk, &mut placed).unwrap();
            }
            reader.finish().unwrap();
            let got: Vec<(u64, i64)> = placed.iter().map(|p| (p.code, p.key)).collect();
            assert_eq!(got, expected, "chunks of {size}");
        }
        // A stream cut inside a row is an error, not fewer features.
        let (mut reader, mut placed) = (BoxReader::default(), Vec::new());
        reader.push(&bytes[..bytes.len() - 30], &mut placed).unwrap();
        assert!(reader.finish().is_err());
        let mut wrong = bytes.clone();
        wrong[0] = b'X';
        assert!(BoxReader::default().push(&wrong, &mut Vec::new()).is_err());
    }

    #[test]
    fn tiles_with_data_are_those_a_feature_meets_with_the_buffer() {
        // A point at the middle of tile 1/0/0's right edge meets both
        // zoom-1 tiles of its row through the buffer.
        let placed: Vec<Placed> = [point(1, 0.0, 40.0), point(2, -100.0, -60.0)]
            .iter()
            .filter_map(Placed::of)
            .collect();
        let tiles = tiles_of(&placed, 2, (64, 1000)).unwrap();
        assert!(tiles.contains(&(0, 0, 0)));
        assert!(tiles.contains(&(1, 0, 0)) && tiles.contains(&(1, 1, 0)));
        assert!(tiles.contains(&(1, 0, 1)), "the southern point");
        assert!(!tiles.contains(&(1, 1, 1)), "nothing in the south-east");
        // Too many tiles is None, never fewer tiles.
        assert_eq!(tiles_of(&placed, 2, (64, 3)), None);
    }
}
