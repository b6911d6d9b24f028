//! Coordinate reference systems by EPSG code, as PROJ's database (through
//! GDAL) defines them: whether a code exists and the order of its axes,
//! which PostGIS does not say.

/// What PROJ says of an EPSG code's CRS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrsFacts {
    /// Its northing or latitude axis comes first (EPSG:4326, EPSG:4258,
    /// many national grids).
    pub northing_first: bool,
    /// Its coordinates are angles (degrees), not lengths.
    pub geographic: bool,
}

/// What PROJ says of an EPSG code's CRS; `None` when PROJ does not know it.
pub fn facts(epsg: u32) -> Option<CrsFacts> {
    let srs = gdal::spatial_ref::SpatialRef::from_epsg(epsg).ok()?;
    let handle = srs.to_c_hsrs();
    // SAFETY: the handle is valid while `srs` lives; both calls only read it.
    let (lat_long, northing_easting) = unsafe {
        (
            gdal_sys::OSREPSGTreatsAsLatLong(handle),
            gdal_sys::OSREPSGTreatsAsNorthingEasting(handle),
        )
    };
    Some(CrsFacts {
        northing_first: lat_long != 0 || northing_easting != 0,
        geographic: srs.is_geographic(),
    })
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
}
