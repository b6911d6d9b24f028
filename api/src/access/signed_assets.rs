//! Signed asset links as a credential: `scope`, `exp` and `sig` query
//! parameters on a dataset's download route (its COG, or a vector
//! export) let the request through with no other credential until the
//! expiry, for the dataset's publication version at signing, so a change of
//! visibility or publication status ends them, as it ends signed tile
//! templates. They live `SIGNED_ASSET_TTL_SECONDS` (an hour by default),
//! long enough for a desktop client reading a COG in place, unlike the
//! two-minute download token. Both signing and checking live here.
use uuid::Uuid;

use super::{
    Caller, Capability,
    policy::readable_by_anyone,
    signatures::{self, Kind, now_secs},
};
use crate::{dataset_record::Dataset, state::AppState};

/// The query string that signs a dataset's download links until `exp`,
/// for its current publication version.
pub fn signed_query(secret: &str, dataset_id: Uuid, publication_version: i32, exp: i64) -> String {
    signatures::signed_query(Kind::AssetLink, secret, dataset_id, publication_version, exp)
}

/// The download route's path of a dataset.
fn download_path(dataset_id: Uuid) -> String {
    format!("/api/datasets/{dataset_id}/download")
}

/// The dataset of a download route path (`/api/datasets/{id}/download`).
fn download_path_dataset(path: &str) -> Option<Uuid> {
    path.strip_prefix("/api/datasets/")?
        .strip_suffix("/download")?
        .parse()
        .ok()
}

/// The URL of the dataset's download for `caller`, with `query` (a
/// vector's `format=...`, or empty) and, when not everyone may read the
/// dataset, a signed link's parameters that open it without a credential
/// for `SIGNED_ASSET_TTL_SECONDS`. A caller served under a capability (an
/// embed token, a signed tile template) gets the link unsigned: a
/// capability never buys a wider one, so its holder opens it with its own
/// credential or not at all.
pub fn download_href(state: &AppState, caller: &Caller, dataset: &Dataset, query: &str) -> String {
    let href = format!("{}{}", state.config.public_url, download_path(dataset.id));
    let signed = (!readable_by_anyone(dataset.visibility, dataset.status) && caller.capability.is_none()).then(|| {
        let ttl = i64::try_from(state.config.signed_asset_ttl.as_secs()).unwrap_or(i64::MAX);
        signed_query(
            &state.config.jwt_secret,
            dataset.id,
            dataset.publication_version,
            now_secs().saturating_add(ttl),
        )
    });
    let parts: Vec<String> = [Some(query.to_string()).filter(|q| !q.is_empty()), signed]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        href
    } else {
        format!("{href}?{}", parts.join("&"))
    }
}

/// The URL of a raster dataset's COG for `caller`: plain for data anyone
/// may read, else signed (see `download_href`).
pub fn cog_href(state: &AppState, caller: &Caller, dataset: &Dataset) -> String {
    download_href(state, caller, dataset, "")
}

/// Whether the request is a download authorized by a valid signed link:
/// right scope, not expired, signed for the dataset's current publication
/// version. Answers the capability: the dataset it covers.
pub async fn verify(state: &AppState, path: &str, query: &str) -> Option<Capability> {
    let id = download_path_dataset(path)?;
    signatures::verified_expiry(state, Kind::AssetLink, id, query).await?;
    Some(Capability::Asset { dataset: id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_paths_name_their_dataset() {
        let id = Uuid::now_v7();
        assert_eq!(download_path_dataset(&download_path(id)), Some(id));
        assert_eq!(download_path_dataset(&format!("/api/datasets/{id}")), None);
        assert_eq!(download_path_dataset(&format!("/api/tiles/{id}/download")), None);
        assert_eq!(download_path_dataset("/api/datasets/x/download"), None);
    }

    #[test]
    fn links_are_signed_apart_from_tile_templates() {
        let id = Uuid::from_u128(7);
        let secret = "s".repeat(32);
        let asset = signed_query(&secret, id, 1, 2_000_000_000);
        let tiles = super::super::signed_tiles::signed_query(&secret, id, 1, 2_000_000_000);
        assert_ne!(asset, tiles, "same scope and expiry, other keys");
        assert_ne!(
            asset,
            signed_query(&secret, id, 2, 2_000_000_000),
            "the version is signed"
        );
    }
}
