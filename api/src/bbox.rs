//! The one bounding box of every route that takes one: the `bbox` query
//! parameter of the items, features, records and STAC routes, the STAC
//! search body and CQL2's `BBOX`. Four numbers (west, south, east, north)
//! or six (with heights after south and north) in CRS84, every one finite,
//! longitudes from -180 to 180, latitudes from -90 to 90, south not above
//! north. West greater than east crosses the antimeridian.
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bbox {
    pub west: f64,
    pub south: f64,
    pub east: f64,
    pub north: f64,
}

impl Bbox {
    /// The box of four or six numbers; why not, otherwise.
    pub fn from_numbers(numbers: &[f64]) -> Result<Self, String> {
        let (west, south, east, north) = match *numbers {
            [w, s, e, n] | [w, s, _, e, n, _] => (w, s, e, n),
            _ => return Err("bbox must be four (or six, with heights) numbers: west, south, east, north".into()),
        };
        if !numbers.iter().all(|v| v.is_finite()) {
            return Err("bbox values must be finite numbers".into());
        }
        if [west, east].iter().any(|v| !(-180.0..=180.0).contains(v))
            || [south, north].iter().any(|v| !(-90.0..=90.0).contains(v))
        {
            return Err("bbox longitudes must be from -180 to 180 and latitudes from -90 to 90".into());
        }
        if south > north {
            return Err("bbox south must not be greater than north".into());
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

/// Comma-separated numbers, as query parameters carry them.
impl FromStr for Bbox {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let numbers: Vec<f64> = text
            .split(',')
            .map(|n| n.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("bbox must be comma-separated numbers, not {text:?}"))?;
        Self::from_numbers(&numbers)
    }
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
}
