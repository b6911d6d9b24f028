//! Cluster tiles below the complete zoom (decisions: Generalized tiles).
//! A cluster tile groups a tile's features in an 8 by 8 grid of cells, and
//! below the complete zoom one cell may hold a continent's features: too
//! many to count while a map waits. So a layer keeps, for each zoom below
//! its complete zoom, every non-empty cell's count, the sum of its
//! members' centres and its lone member's key (`cluster_cells`), counted
//! at load from the boxes the ranking reads and changed by each edit in
//! its transaction. The counts are every feature's: a cluster of 3,000
//! says 3,000, however few of them the thinned tile draws.
use sqlx::PgConnection;
use uuid::Uuid;

use super::grid::{Feature, LEVELS, MAX_ZOOM, Placed, WORLD_HALF_SIDE, cell_box, features_meeting, unmorton};

/// Cells a cluster tile side, as a power of two (8 cells of 64 pixels).
pub const CLUSTER_BITS: u8 = 3;
/// Cells a cluster tile side.
pub const CLUSTER_GRID: u32 = 1 << CLUSTER_BITS;
/// Rows a statement writes at most while a layer's cells are recorded.
const BATCH: usize = 200_000;

/// One non-empty cell of a cluster tile's grid at `zoom`: column and row
/// of the grid at zoom + `CLUSTER_BITS` over the whole world.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterCell {
    pub zoom: u8,
    pub column: u32,
    pub row: u32,
    pub features: i64,
    /// The sum of the members' centres, in EPSG:3857 metres.
    pub sum_x: f64,
    pub sum_y: f64,
    /// The key of the cell's only member.
    pub lone: Option<i64>,
}

/// A feature's centre as its cell sees it (the centre of its Morton
/// cell, a few metres at most from its box's), in EPSG:3857 metres: an
/// edit adds and takes away exactly what the load counted.
fn centre_3857(code: u64) -> (f64, f64) {
    let (column, row) = unmorton(code);
    let side = f64::from(1u32 << LEVELS);
    let fraction = |v: u32| (f64::from(v) + 0.5) / side;
    let half = WORLD_HALF_SIDE;
    (
        (2.0 * fraction(column) - 1.0) * half,
        (1.0 - 2.0 * fraction(row)) * half,
    )
}

fn shift(zoom: u8) -> u32 {
    2 * u32::from(LEVELS - (zoom + CLUSTER_BITS))
}

/// The zooms that have cluster cells: those below the complete zoom.
fn zooms(complete_zoom: u8) -> std::ops::Range<u8> {
    0..complete_zoom.min(MAX_ZOOM + 1)
}

/// Every non-empty cell of each zoom below `complete_zoom`, from the
/// layer's features in Morton order, up to the zoom whose cells would
/// bring them past one a feature (or 4,096): where features spread thin
/// most cells hold one, and a live cluster tile there is as quick as a
/// counted one. The cells, and the first zoom not counted.
pub(super) fn count_cells(placed: &[Placed], complete_zoom: u8) -> (Vec<ClusterCell>, u8) {
    let budget = placed.len().max(1 << 12);
    let mut cells = Vec::new();
    for zoom in zooms(complete_zoom) {
        let shift = shift(zoom);
        let runs = placed.chunk_by(|a, b| a.code >> shift == b.code >> shift);
        if cells.len() + runs.clone().count() > budget {
            return (cells, zoom);
        }
        for members in runs {
            let (column, row) = unmorton(members[0].code >> shift);
            let (sum_x, sum_y) = members.iter().fold((0.0, 0.0), |(x, y), p| {
                let (cx, cy) = centre_3857(p.code);
                (x + cx, y + cy)
            });
            cells.push(ClusterCell {
                zoom,
                column,
                row,
                features: members.len() as i64,
                sum_x,
                sum_y,
                lone: (members.len() == 1).then_some(members[0].key),
            });
        }
    }
    (cells, zooms(complete_zoom).end)
}

/// Replaces the dataset's cluster cells with those counted below
/// `counted_below`, in the transaction that publishes the table they were
/// counted from (after the dataset row is written).
pub(super) async fn record_clusters(
    conn: &mut PgConnection,
    dataset: Uuid,
    (cells, counted_below): (&[ClusterCell], u8),
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM cluster_cells WHERE dataset_id = $1")
        .bind(dataset)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE datasets SET cluster_cells_zoom = $2 WHERE id = $1")
        .bind(dataset)
        .bind(i16::from(counted_below))
        .execute(&mut *conn)
        .await?;
    for batch in cells.chunks(BATCH) {
        sqlx::query(
            "INSERT INTO cluster_cells (dataset_id, zoom, cell_column, cell_row, features, sum_x, sum_y, lone)
             SELECT $1, * FROM unnest($2::smallint[], $3::integer[], $4::integer[], $5::bigint[],
                                      $6::float8[], $7::float8[], $8::bigint[])",
        )
        .bind(dataset)
        .bind(batch.iter().map(|c| i16::from(c.zoom)).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.column as i32).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.row as i32).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.features).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.sum_x).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.sum_y).collect::<Vec<_>>())
        .bind(batch.iter().map(|c| c.lone).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// A change to the cells: the feature `key` left the cells of `before`
/// and joined those of `after` (its boxes in WGS 84; none where it did
/// not exist, or had no geometry).
pub struct Move {
    pub key: i64,
    pub before: Option<Feature>,
    pub after: Option<Feature>,
}

/// The cluster cells below `counted_below` after an edit, in its transaction, once the first
/// zooms around it are ranked (`regeneralize_around`): each cell the
/// feature left or joined is counted one less or one more; a cell left
/// with one member names it, found among the features its zoom draws
/// (the only member of a cell is the least of it, so it is drawn there).
/// `table` is quoted, `key` and `geometry` are column names.
pub async fn recount_clusters(
    conn: &mut PgConnection,
    (dataset, table, key, geometry): (Uuid, &str, &str, &str),
    counted_below: u8,
    change: &Move,
) -> Result<(), sqlx::Error> {
    let before = change.before.as_ref().and_then(Placed::of);
    let after = change.after.as_ref().and_then(Placed::of);
    let mut deltas: Vec<(u8, u32, u32, i64, f64, f64)> = Vec::new();
    for zoom in zooms(counted_below) {
        for (placed, sign) in [(&before, -1i64), (&after, 1)] {
            let Some(p) = placed else { continue };
            let (column, row) = unmorton(p.code >> shift(zoom));
            let (x, y) = centre_3857(p.code);
            let sign_f = sign as f64;
            match deltas.iter_mut().find(|d| (d.0, d.1, d.2) == (zoom, column, row)) {
                Some(d) => {
                    d.3 += sign;
                    d.4 += sign_f * x;
                    d.5 += sign_f * y;
                }
                None => deltas.push((zoom, column, row, sign, sign_f * x, sign_f * y)),
            }
        }
    }
    if deltas.is_empty() {
        return Ok(());
    }
    // A cell missing where the feature was (counted before this version)
    // is made with a count of nought or less, and goes with the empty.
    let counted: Vec<(i16, i32, i32, i64)> = sqlx::query_as(
        "INSERT INTO cluster_cells AS c (dataset_id, zoom, cell_column, cell_row, features, sum_x, sum_y)
         SELECT $1, * FROM unnest($2::smallint[], $3::integer[], $4::integer[], $5::bigint[], $6::float8[], $7::float8[])
         ON CONFLICT (dataset_id, zoom, cell_column, cell_row) DO UPDATE
         SET features = c.features + excluded.features, sum_x = c.sum_x + excluded.sum_x,
             sum_y = c.sum_y + excluded.sum_y, lone = NULL
         RETURNING zoom, cell_column, cell_row, features",
    )
    .bind(dataset)
    .bind(deltas.iter().map(|d| i16::from(d.0)).collect::<Vec<_>>())
    .bind(deltas.iter().map(|d| d.1 as i32).collect::<Vec<_>>())
    .bind(deltas.iter().map(|d| d.2 as i32).collect::<Vec<_>>())
    .bind(deltas.iter().map(|d| d.3).collect::<Vec<_>>())
    .bind(deltas.iter().map(|d| d.4).collect::<Vec<_>>())
    .bind(deltas.iter().map(|d| d.5).collect::<Vec<_>>())
    .fetch_all(&mut *conn)
    .await?;
    let emptied: Vec<&(i16, i32, i32, i64)> = counted.iter().filter(|c| c.3 <= 0).collect();
    if !emptied.is_empty() {
        sqlx::query(
            "DELETE FROM cluster_cells c USING unnest($2::smallint[], $3::integer[], $4::integer[]) e(zoom, cell_column, cell_row)
             WHERE c.dataset_id = $1 AND (c.zoom, c.cell_column, c.cell_row) = (e.zoom, e.cell_column, e.cell_row)",
        )
        .bind(dataset)
        .bind(emptied.iter().map(|c| c.0).collect::<Vec<_>>())
        .bind(emptied.iter().map(|c| c.1).collect::<Vec<_>>())
        .bind(emptied.iter().map(|c| c.2).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await?;
    }
    for (zoom, column, row, _) in counted.into_iter().filter(|c| c.3 == 1) {
        let (zoom, column, row) = (zoom as u8, column as u32, row as u32);
        let joined = after
            .as_ref()
            .is_some_and(|p| unmorton(p.code >> shift(zoom)) == (column, row));
        let lone = if joined {
            Some(change.key)
        } else {
            lone_member(conn, (table, key, geometry), zoom, (column, row)).await?
        };
        sqlx::query(
            "UPDATE cluster_cells SET lone = $5 WHERE dataset_id = $1 AND zoom = $2 AND cell_column = $3 AND cell_row = $4",
        )
        .bind(dataset)
        .bind(i16::from(zoom))
        .bind(column as i32)
        .bind(row as i32)
        .bind(lone)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The key of the one feature of a cell, among those its zoom draws.
async fn lone_member(
    conn: &mut PgConnection,
    columns: (&str, &str, &str),
    zoom: u8,
    (column, row): (u32, u32),
) -> Result<Option<i64>, sqlx::Error> {
    let area = cell_box(zoom + CLUSTER_BITS, column, row);
    let drawn = features_meeting(conn, columns, area, Some(zoom)).await?;
    Ok(drawn
        .iter()
        .filter_map(Placed::of)
        .find(|p| unmorton(p.code >> shift(zoom)) == (column, row))
        .map(|p| p.key))
}

#[cfg(test)]
mod tests {
    use super::super::{grid::point, place};
    use super::*;

    #[test]
    fn cells_count_every_feature_at_every_zoom_below_the_complete_one() {
        // A dense block over Europe and a few points far away.
        let mut features: Vec<Feature> = (0..40_000)
            .map(|i| point(i, 2.0 + (i % 200) as f64 * 0.05, 45.0 + (i / 200) as f64 * 0.05))
            .collect();
        features.extend([point(90_001, -70.0, -30.0), point(90_002, 140.0, 35.0)]);
        let placed = place(&features);
        let (cells, counted_below) = count_cells(&placed, 5);
        assert_eq!(counted_below, 5);
        for zoom in 0..5 {
            let at: Vec<&ClusterCell> = cells.iter().filter(|c| c.zoom == zoom).collect();
            assert_eq!(at.iter().map(|c| c.features).sum::<i64>(), 40_002, "zoom {zoom}");
            // The far points are alone in their cells and named.
            let lone: Vec<i64> = at.iter().filter_map(|c| c.lone).collect();
            assert!(
                lone.contains(&90_001) && lone.contains(&90_002),
                "zoom {zoom}: {lone:?}"
            );
            // A cell's centre lies in the cell.
            for c in &at {
                let (x, y) = (c.sum_x / c.features as f64, c.sum_y / c.features as f64);
                let cells_a_side = f64::from(1u32 << (zoom + CLUSTER_BITS));
                let half = WORLD_HALF_SIDE;
                let column = ((x / half + 1.0) / 2.0 * cells_a_side).floor() as u32;
                let row = ((1.0 - y / half) / 2.0 * cells_a_side).floor() as u32;
                assert_eq!((column, row), (c.column, c.row), "zoom {zoom}");
            }
        }
        assert!(cells.iter().all(|c| c.zoom < 5));
        // None at all for a layer complete from zoom 0.
        assert_eq!(count_cells(&placed, 0), (Vec::new(), 0));
    }

    #[test]
    fn cells_stop_before_the_zoom_where_they_outnumber_the_features() {
        // 100,000 points spread over the world and a pile at one place
        // that never completes: past some zoom nearly every point is a
        // cell of its own, and those zooms are left to live tiles.
        let mut features: Vec<Feature> = (0..100_000i64)
            .map(|i| point(i, -179.0 + (i % 1000) as f64 * 0.358, -80.0 + (i / 1000) as f64 * 1.6))
            .collect();
        features.extend((0..5_000).map(|i| point(200_000 + i, 10.0, 10.0)));
        let placed = place(&features);
        let (cells, counted_below) = count_cells(&placed, 17);
        assert!(counted_below > 0 && counted_below < 17, "{counted_below}");
        assert!(cells.len() <= features.len(), "{} cells", cells.len());
        assert!(cells.iter().all(|c| c.zoom < counted_below));
        let at_last: i64 = cells
            .iter()
            .filter(|c| c.zoom == counted_below - 1)
            .map(|c| c.features)
            .sum();
        assert_eq!(at_last, 105_000);
    }
}
