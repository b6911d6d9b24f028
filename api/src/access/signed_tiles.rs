//! Signed tile URL templates as a credential: `scope`, `exp` and `sig`
//! query parameters let a tile request of one dataset through until the
//! expiry, for the dataset's publication version at signing (a change of
//! visibility or status ends them). Both signing and checking live here.
use uuid::Uuid;

pub use super::signatures::now_secs;
use super::{
    Capability,
    signatures::{self, Kind},
};
use crate::state::AppState;

/// A signed template lives at least this long; see `template_expiry`.
const TEMPLATE_TTL_SECS: i64 = 86_400;

/// Expiry of a template signed now: the end of the next whole day (UTC), so
/// a template lives 24 to 48 hours and two exports of a map on the same
/// day write the same URLs.
pub fn template_expiry(now: i64) -> i64 {
    (now / TEMPLATE_TTL_SECS + 2) * TEMPLATE_TTL_SECS
}

/// The query string that signs a dataset's tile URLs until `exp`, for its
/// current publication version.
pub fn signed_query(secret: &str, dataset_id: Uuid, publication_version: i32, exp: i64) -> String {
    signatures::signed_query(Kind::TileTemplate, secret, dataset_id, publication_version, exp)
}

/// The dataset of a tile route path (`/api/tiles/{id}/...`, or an OGC API
/// tile `/api/collections/{id}/tiles/{tms}/{z}/{row}/{col}`), if it is one.
fn tile_path_dataset(path: &str) -> Option<Uuid> {
    if let Some(rest) = path.strip_prefix("/api/collections/") {
        let (id, tail) = rest.split_once("/tiles/")?;
        return (tail.split('/').count() == 4).then(|| id.parse().ok()).flatten();
    }
    let rest = path.strip_prefix("/api/tiles/")?;
    let (id, tail) = rest.split_once('/')?;
    if tail.is_empty() {
        return None;
    }
    id.parse().ok()
}

/// Whether the request is a tile request authorized by a valid signed
/// template: right scope, not expired, signed for the dataset's current
/// publication version. Answers the capability: the dataset it covers and
/// until when.
pub async fn verify(state: &AppState, path: &str, query: &str) -> Option<Capability> {
    let id = tile_path_dataset(path)?;
    let exp = signatures::verified_expiry(state, Kind::TileTemplate, id, query).await?;
    Some(Capability::Tiles {
        dataset: id,
        expires: exp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_live_one_to_two_days_and_are_stable_within_a_day() {
        let now = 1_800_000_000;
        let exp = template_expiry(now);
        assert!(exp - now >= TEMPLATE_TTL_SECS && exp - now <= 2 * TEMPLATE_TTL_SECS);
        assert_eq!(template_expiry(now + 10), exp);
    }

    #[test]
    fn tile_paths_name_their_dataset() {
        let id = Uuid::now_v7();
        assert_eq!(tile_path_dataset(&format!("/api/tiles/{id}/1/0/0.pbf")), Some(id));
        assert_eq!(tile_path_dataset(&format!("/api/tiles/token/{id}")), None);
        assert_eq!(tile_path_dataset(&format!("/api/tiles/{id}")), None);
        let ogc = format!("/api/collections/{id}/tiles/WebMercatorQuad");
        assert_eq!(tile_path_dataset(&format!("{ogc}/1/0/0")), Some(id));
        assert_eq!(tile_path_dataset(&ogc), None);
        assert_eq!(tile_path_dataset(&format!("/api/collections/{id}/items")), None);
    }
}
