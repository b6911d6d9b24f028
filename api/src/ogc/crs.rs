//! The coordinate reference systems of OGC API Features Part 2: what a
//! collection offers (`crs`, `storageCrs`), what `crs` and `bbox-crs`
//! name, and the axis order each one has. CRS84 is longitude, latitude;
//! an EPSG code has the axis order of its EPSG definition (EPSG:4326:
//! latitude first), as PROJ's database says.
use catalog_shared::AppError;

use crate::{coordinates::crs_facts, dataset_record::Dataset};

pub const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";
const EPSG_PREFIX: &str = "http://www.opengis.net/def/crs/EPSG/0/";

/// A CRS by its OGC URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crs {
    /// WGS 84 with longitude first: GeoJSON's, and the default.
    Crs84,
    Epsg(u32),
}

impl Crs {
    /// The CRS an OGC URI names, if it names one this service could know.
    pub fn from_uri(uri: &str) -> Option<Self> {
        if uri == CRS84 {
            return Some(Self::Crs84);
        }
        let code = uri.strip_prefix(EPSG_PREFIX)?;
        if code.is_empty() || code.len() > 9 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        code.parse().ok().filter(|c| *c > 0).map(Self::Epsg)
    }

    pub fn uri(self) -> String {
        match self {
            Self::Crs84 => CRS84.to_string(),
            Self::Epsg(code) => format!("{EPSG_PREFIX}{code}"),
        }
    }

    /// The PostGIS SRID of its coordinates.
    pub fn srid(self) -> i32 {
        match self {
            Self::Crs84 => 4326,
            Self::Epsg(code) => code as i32,
        }
    }

    /// Whether coordinates in this CRS come northing (latitude) first, so
    /// PostGIS's x, y must be swapped on the way in and out.
    pub fn northing_first(self) -> bool {
        match self {
            Self::Crs84 => false,
            Self::Epsg(code) => crs_facts(code).is_some_and(|f| f.northing_first),
        }
    }

    /// The decimals GeoJSON gives its coordinates: PostGIS's nine for
    /// degrees, three (a millimetre, or a third of one in feet) for lengths,
    /// where more only lengthens every answer.
    pub fn decimals(self) -> u8 {
        match self {
            Self::Epsg(code) if crs_facts(code).is_some_and(|f| !f.geographic) => 3,
            _ => 9,
        }
    }
}

/// Whether PROJ knows the code (PostGIS knows every code PROJ does: its
/// `spatial_ref_sys` is filled from the same EPSG database).
pub fn is_known(code: u32) -> bool {
    crs_facts(code).is_some()
}

/// The CRS a dataset's coordinates are stored in: CRS84 for data in WGS 84
/// (stored longitude first), else its EPSG code.
pub fn storage_crs(dataset: &Dataset) -> Crs {
    match dataset.srid {
        srid if srid <= 0 || srid == 4326 => Crs::Crs84,
        srid => Crs::Epsg(srid as u32),
    }
}

/// The CRSs a collection offers: CRS84, EPSG:4326, EPSG:3857, the
/// dataset's source and storage CRSs, and `EXTRA_CRS`, each once.
pub fn collection_crs(dataset: &Dataset, extra: &[u32]) -> Vec<Crs> {
    let mut list = vec![Crs::Crs84, Crs::Epsg(4326), Crs::Epsg(3857)];
    let own = [dataset.source_srid.unwrap_or(0), dataset.srid]
        .into_iter()
        .filter(|srid| *srid > 0)
        .map(|srid| srid as u32);
    for code in own.chain(extra.iter().copied()) {
        let crs = Crs::Epsg(code);
        if !list.contains(&crs) && is_known(code) {
            list.push(crs);
        }
    }
    list
}

/// The CRS a `crs` or `bbox-crs` parameter names, which must be one the
/// collection offers.
pub fn requested(name: &str, value: &str, offered: &[Crs]) -> Result<Crs, AppError> {
    Crs::from_uri(value).filter(|crs| offered.contains(crs)).ok_or_else(|| {
        let list: Vec<String> = offered.iter().map(|c| c.uri()).collect();
        AppError::bad_request(format!(
            "{name}={value:?} is not a CRS of this collection; it offers {}",
            list.join(", ")
        ))
    })
}

/// Refuses to start with an `EXTRA_CRS` code that PROJ or PostGIS lacks:
/// every collection would offer a CRS that answers only errors.
pub async fn check_extra_crs(pool: &sqlx::PgPool, codes: &[u32]) -> anyhow::Result<()> {
    for &code in codes {
        let in_postgis: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)")
            .bind(code as i32)
            .fetch_one(pool)
            .await?;
        if !in_postgis || !is_known(code) {
            anyhow::bail!("EXTRA_CRS: EPSG:{code} is not a CRS PostGIS and PROJ know");
        }
    }
    Ok(())
}

/// The `Content-Crs` header's value: the URI in angle brackets.
pub fn content_crs(crs: Crs) -> String {
    format!("<{}>", crs.uri())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_crs84_and_epsg_codes_only() {
        assert_eq!(Crs::from_uri(CRS84), Some(Crs::Crs84));
        assert_eq!(
            Crs::from_uri("http://www.opengis.net/def/crs/EPSG/0/27700"),
            Some(Crs::Epsg(27700))
        );
        for refused in [
            "EPSG:4326",
            "http://www.opengis.net/def/crs/EPSG/0/",
            "http://www.opengis.net/def/crs/EPSG/0/-1",
            "http://www.opengis.net/def/crs/EPSG/0/4326x",
            "http://www.opengis.net/def/crs/EPSG/0/99999999999",
        ] {
            assert_eq!(Crs::from_uri(refused), None, "{refused}");
        }
        assert!(Crs::Epsg(4326).northing_first());
        assert!(!Crs::Crs84.northing_first());
    }
}
