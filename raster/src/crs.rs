//! Coordinate reference systems by EPSG code, as PROJ's database (through
//! GDAL) defines them: whether a code exists and the order of its axes,
//! which PostGIS does not say; and their PROJJSON.

/// What PROJ says of an EPSG code's CRS.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrsFacts {
    /// Its northing or latitude axis comes first (EPSG:4326, EPSG:4258,
    /// many national grids).
    pub northing_first: bool,
    /// Its coordinates are angles (degrees), not lengths.
    pub geographic: bool,
    /// The box (west, south, east, north, easting first) its coordinates
    /// lie in: the world in degrees for a geographic CRS; for a projected
    /// one its area of use in its own units, widened by a tenth of its size
    /// on each side (`None` when PROJ gives it no area of use).
    pub bounds: Option<[f64; 4]>,
}

/// What PROJ says of an EPSG code's CRS; `None` when PROJ does not know it.
pub fn facts(epsg: u32) -> Option<CrsFacts> {
    let srs = gdal::spatial_ref::SpatialRef::from_epsg(epsg).ok()?;
    let handle = srs.to_c_hsrs();
    // SAFETY: `handle` is `srs`'s own OGRSpatialReferenceH, valid while `srs` lives (it is moved or dropped only
    // after this block); both calls only read it.
    let (lat_long, northing_easting) = unsafe {
        (
            gdal_sys::OSREPSGTreatsAsLatLong(handle),
            gdal_sys::OSREPSGTreatsAsNorthingEasting(handle),
        )
    };
    let geographic = srs.is_geographic();
    Some(CrsFacts {
        northing_first: lat_long != 0 || northing_easting != 0,
        geographic,
        bounds: if geographic {
            Some([-180.0, -90.0, 180.0, 90.0])
        } else {
            projected_bounds(srs)
        },
    })
}

/// A projected CRS's area of use in its own units, widened by a tenth.
/// The CRS a definition names (`EPSG:27700`, `OGC:CRS84`) as PROJJSON,
/// the form GeoParquet's metadata takes; `None` when PROJ does not know it.
pub fn projjson(definition: &str) -> Option<String> {
    gdal::spatial_ref::SpatialRef::from_definition(definition)
        .ok()?
        .to_projjson()
        .ok()
}

fn projected_bounds(mut srs: gdal::spatial_ref::SpatialRef) -> Option<[f64; 4]> {
    use gdal::spatial_ref::{AxisMappingStrategy, CoordTransform, SpatialRef};
    let area = srs.area_of_use()?;
    let mut wgs84 = SpatialRef::from_epsg(4326).ok()?;
    wgs84.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    srs.set_axis_mapping_strategy(AxisMappingStrategy::TraditionalGisOrder);
    let transform = CoordTransform::new(&wgs84, &srs).ok()?;
    let area = [
        area.west_lon_degree,
        area.south_lat_degree,
        area.east_lon_degree,
        area.north_lat_degree,
    ];
    let [west, south, east, north] = transform.transform_bounds(&area, 21).ok()?;
    let (dx, dy) = ((east - west) / 10.0, (north - south) / 10.0);
    let bounds = [west - dx, south - dy, east + dx, north + dy];
    bounds.iter().all(|v| v.is_finite()).then_some(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_order_is_epsg_s() {
        let northing_first = |code| facts(code).map(|f| f.northing_first);
        assert_eq!(northing_first(4326), Some(true));
        assert_eq!(northing_first(3857), Some(false));
        assert_eq!(northing_first(27700), Some(false));
        // ETRS89 / Swedish grid SWEREF 99 TM: northing first.
        assert_eq!(northing_first(3006), Some(true));
        assert_eq!(northing_first(999_999), None);
        assert!(facts(4258).unwrap().geographic && !facts(27700).unwrap().geographic);
    }

    #[test]
    fn bounds_are_the_world_or_the_area_of_use_widened() {
        assert_eq!(facts(4326).unwrap().bounds, Some([-180.0, -90.0, 180.0, 90.0]));
        // The British National Grid: Great Britain, in metres.
        let [west, south, east, north] = facts(27700).unwrap().bounds.unwrap();
        assert!(west < 0.0 && west > -300_000.0 && east > 700_000.0 && east < 1_000_000.0);
        assert!(south < 0.0 && north > 1_200_000.0 && north < 1_600_000.0);
        let [west, _, east, _] = facts(3857).unwrap().bounds.unwrap();
        assert!(west < -20_037_508.0 && east > 20_037_508.0);
    }

    #[test]
    fn projjson_describes_the_crs() {
        // GDAL 3.6 writes CRS84 without its id: longitude first tells it.
        let crs84: serde_json::Value = serde_json::from_str(&projjson("OGC:CRS84").unwrap()).unwrap();
        assert_eq!(crs84["type"], "GeographicCRS");
        assert_eq!(crs84["coordinate_system"]["axis"][0]["direction"], "east");
        let bng: serde_json::Value = serde_json::from_str(&projjson("EPSG:27700").unwrap()).unwrap();
        assert_eq!(bng["id"]["code"], 27700);
        assert_eq!(projjson("EPSG:999999"), None);
    }
}
