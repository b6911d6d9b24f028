//! `?v=` on tile URLs: the data version a template was written for
//! (TileJSON, styles, OGC tilesets and STAC carry it). A tile asked for at
//! the dataset's current version never changes, so a public one may sit in
//! a CDN for a year; an older version is answered with a redirect to the
//! current one, never with newer bytes under the old URL; a version this
//! process has not seen yet is looked up afresh, and 404 when it does not
//! exist. See `docs/decisions.md`, Tiles a CDN can keep.
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use catalog_shared::AppError;
use serde::Deserialize;

use crate::{
    access::{Caller, datasets::cached_visible_dataset},
    dataset_record::Dataset,
    state::AppState,
};

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TileVersion {
    /// The dataset's data version the tile template was written for; at
    /// the current one a public tile may be cached for a year, an older
    /// one redirects to the current one.
    #[param(pattern = r"^[0-9]{1,18}$")]
    v: Option<String>,
}

/// What a tile request brings beside its address: its headers (for
/// `If-None-Match`), its URI and `v` (resolved once the address is known
/// to be one, so a malformed address is a 404 whatever `v` says).
pub struct TileRequest<'a> {
    pub headers: &'a HeaderMap,
    pub uri: &'a Uri,
    pub version: &'a TileVersion,
}

/// Whether a tile was asked for at the dataset's current data version.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pinned {
    No,
    Current,
}

/// The template query of a dataset's tiles at `data_version`, with the
/// signature that follows it when there is one (without the leading `?`).
pub fn versioned_query(data_version: i64, signature: Option<&str>) -> String {
    match signature {
        Some(signature) => format!("v={data_version}&{signature}"),
        None => format!("v={data_version}"),
    }
}

impl TileVersion {
    /// The dataset record a tile at this version is cut from, and whether
    /// the version is pinned; a redirect (as a problem carrying `Location`)
    /// for an older version.
    pub async fn resolve(
        &self,
        state: &AppState,
        caller: &Caller,
        uri: &Uri,
        dataset: Arc<Dataset>,
    ) -> Result<(Arc<Dataset>, Pinned), AppError> {
        let Some(asked) = self.v.as_deref() else {
            return Ok((dataset, Pinned::No));
        };
        let asked: i64 = asked
            .parse()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| AppError::bad_request(format!("v={asked:?} is not a data version (a whole number)")))?;
        let dataset = if asked > dataset.data_version {
            // A change announced to other processes first: look again.
            state.datasets.forget(dataset.id);
            cached_visible_dataset(state, caller, dataset.id).await?
        } else {
            dataset
        };
        if asked == dataset.data_version {
            return Ok((dataset, Pinned::Current));
        }
        if asked > dataset.data_version {
            return Err(AppError::not_found(format!(
                "dataset {} has no data version {asked} (its current one is {})",
                dataset.id, dataset.data_version
            ))
            .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
        }
        let current = current_url(&state.config.public_url, uri, dataset.data_version);
        let location = HeaderValue::from_str(&current).map_err(AppError::internal)?;
        Err(AppError::new(
            StatusCode::TEMPORARY_REDIRECT,
            format!(
                "data version {asked} of dataset {} was replaced by version {}: its tiles are at the current version",
                dataset.id, dataset.data_version
            ),
        )
        .with_header(header::LOCATION, location)
        .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
    }
}

/// The URL of the same tile at `data_version`, every other parameter kept.
fn current_url(public_url: &str, uri: &Uri, data_version: i64) -> String {
    let pairs = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()).map(|(k, v)| {
        if k == "v" {
            (k, data_version.to_string().into())
        } else {
            (k, v)
        }
    });
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{public_url}{}?{query}", uri.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_url_changes_only_the_version() {
        let uri: Uri = "/api/tiles/abc/1/0/0.pbf?v=3&scope=dataset%3Aabc&exp=9&sig=x%2By"
            .parse()
            .unwrap();
        assert_eq!(
            current_url("https://maps.example", &uri, 7),
            "https://maps.example/api/tiles/abc/1/0/0.pbf?v=7&scope=dataset%3Aabc&exp=9&sig=x%2By"
        );
        assert_eq!(versioned_query(4, None), "v=4");
        assert_eq!(versioned_query(4, Some("scope=s")), "v=4&scope=s");
    }
}
