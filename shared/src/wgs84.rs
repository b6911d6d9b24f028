//! The coordinates WGS 84 has, as writes, ingest and reads all take them
//! (`docs/decisions.md`, Values the service refuses): longitude in
//! [-180, 180] and latitude in [-90, 90], finite, with a hair of slack.
//! Reprojection and decimal rounding leave real data just outside: Natural
//! Earth's Russia reaches 180.00000000000006° once reprojected. The slack
//! keeps such values as they are, never moved to the edge.

/// How far past the edges a coordinate may lie: a micro-degree, about
/// 11 cm.
pub const SLACK_DEGREES: f64 = 1e-6;

/// West, south, east, north, with the slack.
pub const BOUNDS: [f64; 4] = [
    -180.0 - SLACK_DEGREES,
    -90.0 - SLACK_DEGREES,
    180.0 + SLACK_DEGREES,
    90.0 + SLACK_DEGREES,
];

/// Whether a longitude and latitude are WGS 84's; NaN and infinities are not.
pub fn contains(longitude: f64, latitude: f64) -> bool {
    (BOUNDS[0]..=BOUNDS[2]).contains(&longitude) && (BOUNDS[1]..=BOUNDS[3]).contains(&latitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_and_a_hair_more() {
        assert!(contains(180.000_000_000_000_06, 71.5));
        assert!(contains(-180.0, -90.0));
        assert!(!contains(180.001, 0.0));
        assert!(!contains(600_000.0, 4_600_000.0));
        assert!(!contains(f64::NAN, 0.0) && !contains(0.0, f64::INFINITY));
    }
}
