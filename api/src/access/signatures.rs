//! Signed URLs of one dataset, the part both kinds share: `scope`, `exp`
//! and `sig` query parameters, `sig` an HMAC-SHA256 over the scope, the
//! expiry and the dataset's publication version at signing (so a change of
//! visibility or publication status ends every URL signed before it),
//! under a key derived from `JWT_SECRET` and labelled by the kind, so that
//! a tile template's signature opens no download and the other way round.
//! Each kind (`signed_tiles`, `signed_assets`) says which routes it opens.
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use uuid::Uuid;

use crate::state::AppState;

type HmacSha256 = Hmac<Sha256>;

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// What a signature is for: the label of its key.
#[derive(Clone, Copy)]
pub enum Kind {
    TileTemplate,
    AssetLink,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::TileTemplate => "tile-template",
            Kind::AssetLink => "asset-link",
        }
    }
}

fn signer(kind: Kind, secret: &str, scope: &str, exp: i64, publication_version: i32) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(format!("{}:{secret}", kind.label()).as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(format!("{scope}\n{exp}\n{publication_version}").as_bytes());
    mac
}

/// The query string that signs URLs of a dataset until `exp`, for its
/// current publication version.
pub fn signed_query(kind: Kind, secret: &str, dataset_id: Uuid, publication_version: i32, exp: i64) -> String {
    let scope = format!("dataset:{dataset_id}");
    let sig: String = signer(kind, secret, &scope, exp, publication_version)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("scope={scope}&exp={exp}&sig={sig}")
}

/// The expiry of `query`'s signature when it is a valid one of `kind` for
/// dataset `id`: the right scope, not expired, signed for the dataset's
/// current publication version.
pub async fn verified_expiry(state: &AppState, kind: Kind, id: Uuid, query: &str) -> Option<i64> {
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
    let dataset = state.datasets.dataset(state.db.catalog_reader().pool, id).await.ok()?;
    signer(kind, &state.config.jwt_secret, &scope, exp, dataset.publication_version)
        .verify_slice(&sig)
        .ok()?;
    Some(exp)
}
