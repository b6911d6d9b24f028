//! Where a dataset's stored coordinates can lie (`docs/decisions.md`,
//! Values the service refuses): writes and ingest never store others, but
//! a value written into the table by hand reaches the read routes all the
//! same, and one PostGIS cannot transform fails the whole query. Reads
//! that transform or draw leave such a feature's geometry out.
use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
};

use catalog_raster::crs::CrsFacts;
use catalog_shared::{datasets::GeometryType, wgs84};

use crate::dataset_record::Dataset;

/// Coordinates of a CRS PROJ gives no area of use: finite and sane.
const ANY_FINITE: [f64; 4] = [-1e15, -1e15, 1e15, 1e15];

/// The box the dataset's coordinates lie in, in its storage CRS.
pub fn bounds(dataset: &Dataset) -> [f64; 4] {
    crs_bounds(dataset.srid)
}

/// The box (easting first) coordinates of the CRS of `srid` lie in; 0 is
/// taken for WGS 84, as the tiles take it.
pub fn crs_bounds(srid: i32) -> [f64; 4] {
    match srid {
        srid if srid <= 0 || srid == 4326 => wgs84::BOUNDS,
        srid => match crs_facts(srid as u32) {
            Some(facts) if facts.geographic => wgs84::BOUNDS,
            Some(facts) => facts.bounds.unwrap_or(ANY_FINITE),
            None => ANY_FINITE,
        },
    }
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

/// SQL that is true when `geometry` (a geometry of the dataset's column)
/// lies within `bounds` and holds no NaN. Its box, kept with it, is
/// compared first: PostGIS's box operators take a NaN for inside (C's
/// comparisons), SQL's take it for above every number, so the box's top and
/// right are compared in SQL too, which leaves out a point with a NaN. The
/// box of a line, a polygon or a collection skips a NaN that is not its
/// first position, so theirs are measured as well: a length over a NaN is
/// NaN, which SQL puts above infinity.
pub fn drawable(dataset: &Dataset, geometry: &str) -> String {
    let [west, south, east, north] = bounds(dataset);
    let finite = match dataset.geometry_type {
        Some(GeometryType::Point) => String::new(),
        Some(t) if t.dimension().is_some_and(|d| d > 0) => {
            format!(" AND ST_Length({geometry}) + ST_Perimeter({geometry}) < 'Infinity'")
        }
        _ => format!(" AND ST_Length(ST_LineFromMultiPoint(ST_Points({geometry}))) < 'Infinity'"),
    };
    format!(
        "({geometry} @ ST_MakeEnvelope({west:?}, {south:?}, {east:?}, {north:?}, {srid}) \
         AND ST_XMax({geometry}) <= {east:?} AND ST_YMax({geometry}) <= {north:?}{finite})",
        srid = dataset.srid.max(0)
    )
}

/// `transformed` (an expression of `geometry`) where `geometry` is
/// drawable, else null.
pub fn transformed_if_drawable(dataset: &Dataset, geometry: &str, transformed: &str) -> String {
    format!("CASE WHEN {} THEN {transformed} END", drawable(dataset, geometry))
}

/// PROJ's answer per EPSG code, asked once: `None` for a code it lacks.
pub fn crs_facts(code: u32) -> Option<CrsFacts> {
    static KNOWN: OnceLock<Mutex<HashMap<u32, Option<CrsFacts>>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(answer) = known.lock().unwrap_or_else(|e| e.into_inner()).get(&code) {
        return *answer;
    }
    let answer = catalog_raster::crs::facts(code);
    known.lock().unwrap_or_else(|e| e.into_inner()).insert(code, answer);
    answer
}
