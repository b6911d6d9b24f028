//! Coordinate reference systems by EPSG code, as PROJ's database (through
//! GDAL) defines them: whether a code exists and the order of its axes,
//! which PostGIS does not say.

/// Whether the CRS of an EPSG code puts its northing or latitude axis
/// first (EPSG:4326, EPSG:4258, many national grids); `None` when PROJ
/// does not know the code.
pub fn northing_first(epsg: u32) -> Option<bool> {
    let srs = gdal::spatial_ref::SpatialRef::from_epsg(epsg).ok()?;
    let handle = srs.to_c_hsrs();
    // SAFETY: the handle is valid while `srs` lives; both calls only read it.
    let (lat_long, northing_easting) = unsafe {
        (
            gdal_sys::OSREPSGTreatsAsLatLong(handle),
            gdal_sys::OSREPSGTreatsAsNorthingEasting(handle),
        )
    };
    Some(lat_long != 0 || northing_easting != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_order_is_epsg_s() {
        assert_eq!(northing_first(4326), Some(true));
        assert_eq!(northing_first(3857), Some(false));
        assert_eq!(northing_first(27700), Some(false));
        // ETRS89 / Swedish grid SWEREF 99 TM: northing first.
        assert_eq!(northing_first(3006), Some(true));
        assert_eq!(northing_first(999_999), None);
    }
}
