//! The one bounding box of every route that takes one: the `bbox` query
//! parameter of the items, features, records and STAC routes, the STAC
//! search body and CQL2's `BBOX`. Four numbers (west, south, east, north)
//! or six (with heights after south and north) in CRS84, every one finite,
//! longitudes from -180 to 180, latitudes from -90 to 90, south not above
//! north. West greater than east crosses the antimeridian (RFC 7946): every
//! place that turns such a box into a geometry goes through here, so none
//! of them reads it as the box between east and west.
use std::str::FromStr;

use catalog_shared::AppError;
use serde_json::{Value, json};

/// Why a box is refused; every route answers it as a 400.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum BboxError {
    #[error("bbox must be four (or six, with heights) numbers: west, south, east, north")]
    Count,
    #[error("bbox must be comma-separated numbers, not {0:?}")]
    NotNumbers(String),
    #[error("bbox values must be finite numbers")]
    NotFinite,
    #[error("bbox longitudes must be from -180 to 180 and latitudes from -90 to 90")]
    OutOfRange,
    #[error("bbox south must not be greater than north")]
    SouthAboveNorth,
}

impl From<BboxError> for AppError {
    fn from(e: BboxError) -> Self {
        AppError::bad_request(e.to_string())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bbox {
    pub west: f64,
    pub south: f64,
    pub east: f64,
    pub north: f64,
}

impl Bbox {
    /// The box of four or six numbers; why not, otherwise.
    pub fn from_numbers(numbers: &[f64]) -> Result<Self, BboxError> {
        let (west, south, east, north) = match *numbers {
            [w, s, e, n] | [w, s, _, e, n, _] => (w, s, e, n),
            _ => return Err(BboxError::Count),
        };
        if !numbers.iter().all(|v| v.is_finite()) {
            return Err(BboxError::NotFinite);
        }
        if [west, east].iter().any(|v| !(-180.0..=180.0).contains(v))
            || [south, north].iter().any(|v| !(-90.0..=90.0).contains(v))
        {
            return Err(BboxError::OutOfRange);
        }
        if south > north {
            return Err(BboxError::SouthAboveNorth);
        }
        Ok(Self {
            west,
            south,
            east,
            north,
        })
    }

    pub fn to_array(self) -> [f64; 4] {
        [self.west, self.south, self.east, self.north]
    }
}

/// The box as the OpenAPI document describes it: four numbers (west,
/// south, east, north) or six (heights after south and north), longitudes
/// from -180 to 180, latitudes from -90 to 90. That south is not above
/// north a schema cannot say. A query parameter carries it comma-separated
/// (`style: form, explode: false`), as `FromStr` reads it.
pub fn schema() -> Value {
    let lon = json!({"type": "number", "minimum": -180, "maximum": 180});
    let lat = json!({"type": "number", "minimum": -90, "maximum": 90});
    let height = json!({"type": "number"});
    json!({
        "type": "array",
        "description": "west, south, east, north (west greater than east crosses the antimeridian), \
                        or six numbers with heights after south and north; south not above north",
        "items": {"type": "number"},
        "oneOf": [
            {"minItems": 4, "maxItems": 4, "prefixItems": [lon, lat, lon, lat]},
            {"minItems": 6, "maxItems": 6, "prefixItems": [lon, lat, height, lon, lat, height]},
        ],
    })
}

/// The box of a route that also takes `bbox-crs`: four or six numbers
/// whose ranges depend on that CRS (in CRS84 those of [`schema`]).
pub fn schema_in_any_crs() -> Value {
    json!({
        "type": "array",
        "description": "four (or six, with heights) numbers in bbox-crs, its axes in that CRS's order; \
                        in CRS84 (the default) west, south, east, north as for every other bbox",
        "items": {"type": "number"},
        "minItems": 4,
        "maxItems": 6,
        "not": {"minItems": 5, "maxItems": 5},
    })
}

/// Comma-separated numbers, as query parameters carry them.
impl FromStr for Bbox {
    type Err = BboxError;
    fn from_str(text: &str) -> Result<Self, BboxError> {
        let numbers: Vec<f64> = text
            .split(',')
            .map(|n| n.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| BboxError::NotNumbers(text.to_string()))?;
        Self::from_numbers(&numbers)
    }
}

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
    fn boxes_are_four_or_six_finite_numbers_in_range() {
        let b: Bbox = "-10,40,-6,41".parse().unwrap();
        assert_eq!(b.to_array(), [-10.0, 40.0, -6.0, 41.0]);
        let b: Bbox = "170, -20, 0, -170, -10, 100".parse().unwrap();
        assert_eq!(
            b.to_array(),
            [170.0, -20.0, -170.0, -10.0],
            "across the antimeridian, with heights"
        );
        for bad in [
            "1,2",
            "1,2,3",
            "1,2,3,4,5",
            "NaN,0,1,1",
            "0,0,inf,1",
            "0,0,-Infinity,1",
            "0,0,1e400,1",
            "0,0,99999999999999999999999,1",
            "0,0,1,x",
            "0,10,1,5",
            "0,-91,1,0",
            "",
        ] {
            assert!(bad.parse::<Bbox>().is_err(), "{bad:?}");
        }
        assert!(Bbox::from_numbers(&[f64::NAN, 0.0, 1.0, 1.0]).is_err());
    }

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
