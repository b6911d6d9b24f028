//! Signed asset links as a credential: `scope`, `exp` and `sig` query
//! parameters on a dataset's download route (its COG, or a vector
//! export) let the request through with no other credential until the
//! expiry, for the dataset's publication version at signing, so a change of
//! visibility or publication status ends them, as it ends signed tile
//! templates. They live `SIGNED_ASSET_TTL_SECONDS` (an hour by default),
//! long enough for a desktop client reading a COG in place, unlike the
//! two-minute download token. Both signing and checking live here.
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use uuid::Uuid;

use super::{Caller, Capability, policy::readable_by_anyone, signed_tiles::now_secs};
use crate::{datasets::record::Dataset, state::AppState};

type HmacSha256 = Hmac<Sha256>;

/// The MAC of a link; its key is labelled apart from the tile templates'
/// so that neither kind of signature opens the other's routes.
fn signer(secret: &str, scope: &str, exp: i64, publication_version: i32) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(format!("asset-link:{secret}").as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("{scope}\n{exp}\n{publication_version}").as_bytes());
    mac
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The query string that signs a dataset's download links until `exp`,
/// for its current publication version.
pub fn signed_query(secret: &str, dataset_id: Uuid, publication_version: i32, exp: i64) -> String {
    let scope = format!("dataset:{dataset_id}");
    let sig = hex(&signer(secret, &scope, exp, publication_version).finalize().into_bytes());
    format!("scope={scope}&exp={exp}&sig={sig}")
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
    let (mut scope, mut exp, mut sig) = (None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "scope" => scope = Some(v.into_owned()),
            "exp" => exp = v.parse::<i64>().ok(),
            "sig" => sig = Some(v.into_owned()),
            _ => {}
        }
    }
    let (scope, exp, sig) = (scope?, exp?, sig?);
    if scope != format!("dataset:{id}") || exp <= now_secs() || sig.len() != 64 {
        return None;
    }
    let sig: Vec<u8> = (0..sig.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sig.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let dataset = state.datasets.dataset(&state.pool, id).await.ok()?;
    signer(&state.config.jwt_secret, &scope, exp, dataset.publication_version)
        .verify_slice(&sig)
        .ok()?;
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
