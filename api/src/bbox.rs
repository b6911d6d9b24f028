//! Boxes in RFC 7946 form: `[west, south, east, north]`, where west greater
//! than east means the box crosses the antimeridian. Every place that turns
//! such a box into a geometry goes through here, so none of them reads a
//! crossing box as the (complementary) box between east and west.
use serde_json::{Value, json};

/// The box's longitude spans on either side of the antimeridian: one span,
/// or two when it crosses it.
pub(crate) fn spans(west: f64, east: f64) -> Vec<(f64, f64)> {
    if west <= east {
        vec![(west, east)]
    } else {
        vec![(west, 180.0), (-180.0, east)]
    }
}

/// The box as a GeoJSON geometry: a Polygon, or a MultiPolygon of its two
/// halves when it crosses the antimeridian (RFC 7946, section 3.1.9).
pub(crate) fn geojson(b: &[f64]) -> Option<Value> {
    let [w, s, e, n] = *b else { return None };
    let rings: Vec<Value> = spans(w, e)
        .into_iter()
        .map(|(w, e)| json!([[[w, s], [e, s], [e, n], [w, n], [w, s]]]))
        .collect();
    Some(match rings.as_slice() {
        [one] => json!({"type": "Polygon", "coordinates": one}),
        _ => json!({"type": "MultiPolygon", "coordinates": rings}),
    })
}

/// SQL for the box held in a `float8[4]` expression, as a WGS 84 geometry
/// that is split in two when it crosses the antimeridian.
pub(crate) fn sql_geometry(array: &str) -> String {
    let envelope = |w: &str, e: &str| format!("ST_MakeEnvelope({w}, ({array})[2], {e}, ({array})[4], 4326)");
    format!(
        "CASE WHEN ({array})[1] <= ({array})[3] THEN {}
              ELSE ST_Collect({}, {}) END",
        envelope(&format!("({array})[1]"), &format!("({array})[3]")),
        envelope(&format!("({array})[1]"), "180"),
        envelope("-180", &format!("({array})[3]")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crossing_box_is_two_halves() {
        assert_eq!(spans(170.0, -170.0), vec![(170.0, 180.0), (-180.0, -170.0)]);
        assert_eq!(spans(-10.0, 10.0), vec![(-10.0, 10.0)]);
        let g = geojson(&[170.0, -20.0, -170.0, -10.0]).unwrap();
        assert_eq!(g["type"], "MultiPolygon");
        assert_eq!(g["coordinates"][1][0][0], json!([-180.0, -20.0]));
        assert_eq!(geojson(&[0.0, 0.0, 1.0, 1.0]).unwrap()["type"], "Polygon");
    }
}
