//! The extent of a layer, in RFC 7946 form when the data runs across the
//! antimeridian (west greater than east). Workers count it while ingesting
//! and the API when it registers a table, so both record extents alike.

const BINS: usize = 360;
/// The widest empty band at ±180° that still counts as data running across it.
const MAX_ANTIMERIDIAN_GAP_DEGREES: usize = 20;

/// Longitude coverage in one-degree bins plus the plain bounding box.
#[derive(Clone, Debug)]
pub struct ExtentTracker {
    covered: Vec<bool>,
    bin_min_x: Vec<f64>,
    bin_max_x: Vec<f64>,
    min_x: f64,
    min_y: f64,
    max_x: f64,
    max_y: f64,
}

impl Default for ExtentTracker {
    fn default() -> Self {
        Self {
            covered: vec![false; BINS],
            bin_min_x: vec![f64::INFINITY; BINS],
            bin_max_x: vec![f64::NEG_INFINITY; BINS],
            min_x: f64::INFINITY,
            min_y: f64::INFINITY,
            max_x: f64::NEG_INFINITY,
            max_y: f64::NEG_INFINITY,
        }
    }
}

fn bin_of(x: f64) -> usize {
    ((x + 180.0).floor().clamp(0.0, (BINS - 1) as f64)) as usize
}

impl ExtentTracker {
    pub fn add(&mut self, min_x: f64, max_x: f64, min_y: f64, max_y: f64) {
        if !(min_x.is_finite() && max_x.is_finite() && min_y.is_finite() && max_y.is_finite()) {
            return;
        }
        self.min_x = self.min_x.min(min_x);
        self.max_x = self.max_x.max(max_x);
        self.min_y = self.min_y.min(min_y);
        self.max_y = self.max_y.max(max_y);
        let (first, last) = (bin_of(min_x), bin_of(max_x));
        for bin in first..=last {
            self.covered[bin] = true;
        }
        self.bin_min_x[first] = self.bin_min_x[first].min(min_x);
        self.bin_max_x[last] = self.bin_max_x[last].max(max_x);
    }

    /// `[west, south, east, north]`, or `None` when nothing had a location.
    pub fn bbox(&self) -> Option<[f64; 4]> {
        if !self.min_x.is_finite() {
            return None;
        }
        let plain = [self.min_x, self.min_y, self.max_x, self.max_y];
        // Crossing form when the data runs up to the antimeridian from both
        // sides (a narrow empty band there) and leaves a wider band elsewhere.
        let leading = self.covered.iter().take_while(|c| !**c).count();
        let trailing = self.covered.iter().rev().take_while(|c| !**c).count();
        let wrap_gap = leading + trailing;
        let Some((gap_start, gap_len)) = self.widest_interior_gap() else {
            return Some(plain);
        };
        if wrap_gap > MAX_ANTIMERIDIAN_GAP_DEGREES || gap_len <= wrap_gap {
            return Some(plain);
        }
        let east_bin = gap_start - 1;
        let west_bin = gap_start + gap_len;
        let east = self.bin_max_x[..=east_bin]
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max);
        let west = self.bin_min_x[west_bin..].iter().cloned().fold(f64::INFINITY, f64::min);
        // The crossing form only for data that really is a region across
        // the antimeridian: spread over the globe (the world's capitals),
        // a box of more than half the world that skips the largest gap
        // helps no client, and most take it for a band across 180°.
        let wrapped_span = east + 360.0 - west;
        if !(east.is_finite() && west.is_finite()) || wrapped_span >= 180.0 || wrapped_span >= self.max_x - self.min_x {
            return Some(plain);
        }
        Some([west, self.min_y, east, self.max_y])
    }

    /// Start and length of the widest run of empty bins between covered ones.
    fn widest_interior_gap(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        let mut run_start = None;
        let mut seen_covered = false;
        for (i, &c) in self.covered.iter().enumerate() {
            match (c, run_start) {
                (false, None) if seen_covered => run_start = Some(i),
                (true, Some(start)) => {
                    let len = i - start;
                    if best.is_none_or(|(_, l)| len > l) {
                        best = Some((start, len));
                    }
                    run_start = None;
                }
                _ => {}
            }
            if c {
                seen_covered = true;
            }
        }
        best
    }
}

/// The extent of a table's geometries in WGS 84 whatever its CRS, counted
/// part by part as ingest counts it, so data across the antimeridian gets
/// its RFC 7946 form. Parts come back gathered by the one-degree bins they
/// start and end in, which is all the count needs, so few rows cross the
/// wire.
pub async fn of_table(
    db: impl sqlx::PgExecutor<'_>,
    qualified: &str,
    geometry_column: &str,
) -> Result<ExtentTracker, sqlx::Error> {
    let geom = crate::db::quote_ident(geometry_column);
    let parts_sql = format!(
        "SELECT min(ST_XMin(b)), max(ST_XMax(b)), min(ST_YMin(b)), max(ST_YMax(b))
         FROM (SELECT ST_Transform((ST_Dump({geom})).geom, 4326)::box2d AS b FROM {qualified}) p
         GROUP BY floor(ST_XMin(b)), floor(ST_XMax(b))"
    );
    let parts: Vec<(f64, f64, f64, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(parts_sql)).fetch_all(db).await?;
    let mut extent = ExtentTracker::default();
    for (min_x, max_x, min_y, max_y) in parts {
        extent.add(min_x, max_x, min_y, max_y);
    }
    Ok(extent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_data_gets_a_plain_box() {
        let mut t = ExtentTracker::default();
        t.add(-10.0, 5.0, 40.0, 50.0);
        t.add(20.0, 30.0, 35.0, 45.0);
        assert_eq!(t.bbox(), Some([-10.0, 35.0, 30.0, 50.0]));
    }

    #[test]
    fn data_across_the_antimeridian_gets_west_greater_than_east() {
        let mut t = ExtentTracker::default();
        t.add(177.0, 180.0, -20.0, -16.0);
        t.add(-180.0, -178.5, -19.0, -15.0);
        assert_eq!(t.bbox(), Some([177.0, -20.0, -178.5, -15.0]));
    }

    #[test]
    fn points_either_side_of_the_antimeridian_cross_it() {
        let mut t = ExtentTracker::default();
        t.add(178.44, 178.44, -18.14, -18.14);
        t.add(-178.8, -178.8, -17.6, -17.6);
        assert_eq!(t.bbox(), Some([178.44, -18.14, -178.8, -17.6]));
    }

    #[test]
    fn far_apart_data_away_from_the_antimeridian_stays_plain() {
        let mut t = ExtentTracker::default();
        t.add(-124.0, -67.0, 25.0, 49.0);
        t.add(123.0, 146.0, 24.0, 45.0);
        assert_eq!(t.bbox(), Some([-124.0, 24.0, 146.0, 49.0]));
    }

    #[test]
    fn data_spread_over_the_globe_stays_plain() {
        // Capitals: a wide gap in the Pacific, but whichever way round, the
        // data spans more than half the world.
        let mut t = ExtentTracker::default();
        for (x, y) in [
            (-123.1, 49.3),
            (-171.8, -13.8),
            (178.4, -18.1),
            (-0.1, 51.5),
            (151.2, -33.9),
            (-175.2, -21.1),
        ] {
            t.add(x, x, y, y);
        }
        assert_eq!(t.bbox(), Some([-175.2, -33.9, 178.4, 51.5]));
    }

    #[test]
    fn world_data_stays_plain() {
        let mut t = ExtentTracker::default();
        t.add(-180.0, 180.0, -90.0, 83.0);
        assert_eq!(t.bbox(), Some([-180.0, -90.0, 180.0, 83.0]));
    }

    #[test]
    fn nothing_located_has_no_box() {
        assert_eq!(ExtentTracker::default().bbox(), None);
    }
}
