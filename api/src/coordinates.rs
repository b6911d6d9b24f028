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
use catalog_shared::wgs84;

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

pub use catalog_shared::tile_sql::extent_in_world;

/// SQL that is true when `geometry` (a geometry of the dataset's column)
/// lies within the storage CRS's bounds and holds no NaN
/// (`catalog_shared::tile_sql::drawable`).
pub fn drawable(dataset: &Dataset, geometry: &str) -> String {
    catalog_shared::tile_sql::drawable(dataset.geometry_type, dataset.srid, bounds(dataset), geometry)
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
