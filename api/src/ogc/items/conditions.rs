//! The conditions a request's bbox and property filters make, in the
//! dataset's storage CRS, their values bound.
use catalog_shared::{AppError, datasets::ColumnType, db::quote_ident};

use crate::{
    bbox::Bbox,
    dataset_record::Dataset,
    ogc::{
        cql::Queryable,
        crs::Crs,
        params::{Binds, Param},
    },
};

fn bad(detail: impl Into<String>) -> AppError {
    AppError::bad_request(detail)
}

/// The SRID a dataset's geometries are in: data of unknown SRID is taken
/// for WGS 84, as its tiles do.
pub(super) fn storage_srid(dataset: &Dataset) -> i32 {
    if dataset.srid <= 0 { 4326 } else { dataset.srid }
}

/// `expr`, a geometry of SRID `from`, in the dataset's storage CRS.
fn to_storage(dataset: &Dataset, expr: &str, from: i32) -> String {
    if from == storage_srid(dataset) {
        expr.to_string()
    } else {
        format!("ST_Transform({expr}, {})", storage_srid(dataset))
    }
}

/// A WGS 84 geometry expression in the dataset's storage CRS (registered
/// tables may use any SRID; ingested ones are stored in 4326).
pub fn in_storage_crs(dataset: &Dataset, expr: &str) -> String {
    to_storage(dataset, expr, 4326)
}

/// The condition of a `bbox` in `bbox_crs` (its axes in that CRS's
/// order), in the dataset's CRS. A CRS84 box whose west is greater than
/// its east crosses the antimeridian and is two boxes; a box in a projected
/// CRS has its edges densified so that they keep their course when
/// reprojected.
pub(super) fn bbox_condition(
    dataset: &Dataset,
    text: &str,
    bbox_crs: Crs,
    binds: &mut Binds,
) -> Result<String, AppError> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|n| n.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad(format!("bbox must be comma-separated numbers, not {text:?}")))?;
    let geom = quote_ident(&dataset.geometry_column);
    if bbox_crs.srid() == 4326 {
        // CRS84 and EPSG:4326 differ only in the order of their axes.
        let numbers = if bbox_crs.northing_first() {
            match numbers[..] {
                [s, w, n, e] => vec![w, s, e, n],
                [s, w, h1, n, e, h2] => vec![w, s, h1, e, n, h2],
                _ => numbers,
            }
        } else {
            numbers
        };
        let [w, s, e, n] = Bbox::from_numbers(&numbers)?.to_array();
        let mut envelope = |w: f64, e: f64| {
            let [w, s, e, n] = [w, s, e, n].map(|v| binds.bind(Param::Float(v)));
            let envelope = format!("ST_MakeEnvelope({w}, {s}, {e}, {n}, 4326)");
            format!("ST_Intersects({geom}, {})", in_storage_crs(dataset, &envelope))
        };
        return Ok(if w <= e {
            envelope(w, e)
        } else {
            let left = envelope(w, 180.0);
            let right = envelope(-180.0, e);
            format!("({left} OR {right})")
        });
    }
    let [a, b, c, d] = match numbers[..] {
        [a, b, c, d] | [a, b, _, c, d, _] => [a, b, c, d],
        _ => return Err(bad("bbox must be four (or six, with heights) numbers")),
    };
    let [xmin, ymin, xmax, ymax] = if bbox_crs.northing_first() {
        [b, a, d, c]
    } else {
        [a, b, c, d]
    };
    if ![xmin, ymin, xmax, ymax].iter().all(|v| v.is_finite()) || xmin > xmax || ymin > ymax {
        return Err(bad(
            "bbox must be finite numbers, each lower corner value not above the upper one",
        ));
    }
    // Cut to where the CRS has coordinates before PostGIS transforms it:
    // nothing lies beyond, and 1e300 metres transform to nonsense.
    let [west, south, east, north] = crate::coordinates::crs_bounds(bbox_crs.srid());
    let [xmin, ymin, xmax, ymax] = [xmin.max(west), ymin.max(south), xmax.min(east), ymax.min(north)];
    if xmin > xmax || ymin > ymax {
        return Ok("FALSE".into());
    }
    let [xmin, ymin, xmax, ymax] = [xmin, ymin, xmax, ymax].map(|v| binds.bind(Param::Float(v)));
    let envelope = format!(
        "ST_Segmentize(ST_MakeEnvelope({xmin}, {ymin}, {xmax}, {ymax}, {srid}), \
         greatest({xmax} - {xmin}, {ymax} - {ymin}, 1e-9) / 32)",
        srid = bbox_crs.srid(),
    );
    Ok(format!(
        "ST_Intersects({geom}, {})",
        to_storage(dataset, &envelope, bbox_crs.srid())
    ))
}

/// `name=value` for a queryable: equality, the value bound as text and
/// cast to the column's type.
pub(super) fn property_condition(queryable: &Queryable, value: &str, binds: &mut Binds) -> String {
    let value = binds.bind(Param::Text(value.to_string()));
    let cast = if queryable.pg_type == ColumnType::Text {
        String::new()
    } else {
        format!("::{}", queryable.sql_type)
    };
    format!("{} = {value}{cast}", quote_ident(&queryable.column))
}
