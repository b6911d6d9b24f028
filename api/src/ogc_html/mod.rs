//! The OGC routes' pages for people: each route's JSON document rendered
//! on the server as HTML, when `f=html` asks for it or the `Accept` header
//! prefers `text/html` to JSON (a browser's does). With no `Accept`, `*/*`
//! or a JSON type the answer stays JSON, and `f=json` forces it. Errors
//! never come here: they stay problem documents whatever was asked.
//!
//! `page` holds the page shell and its links, `map` the inline SVG map,
//! `features` the OGC API Common and Features pages, `records` the
//! Records pages, `linked_data` the JSON-LD other catalogs read (DCAT for
//! records, schema.org in dataset pages).
use std::sync::OnceLock;

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, HeaderValue, header, request::Parts},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use catalog_shared::AppError;
use maud::Markup;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::extract::Query;

pub mod features;
pub mod linked_data;
pub mod map;
pub mod page;
pub mod records;

/// The representation a request asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    // The items route has always taken these names of its JSON too.
    #[serde(alias = "geojson", alias = "application/json", alias = "application/geo+json")]
    Json,
    #[serde(alias = "text/html")]
    Html,
}

/// The `f` query parameter of the routes that have a page.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FormatQuery {
    /// `json` or `html`; without it, `Accept` decides (HTML when it prefers `text/html` to JSON)
    #[param(inline)]
    f: Option<Format>,
}

/// `f` wins; otherwise `Accept`. An `f` of another name is a 400 problem.
impl<S: Send + Sync> FromRequestParts<S> for Format {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let Query(query) = Query::<FormatQuery>::from_request_parts(parts, state).await?;
        Ok(query.f.unwrap_or_else(|| {
            if prefers_html(&parts.headers) {
                Format::Html
            } else {
                Format::Json
            }
        }))
    }
}

impl Format {
    /// The JSON answer or the page, whichever was asked for.
    pub fn answer(self, json: impl FnOnce() -> Response, page: impl FnOnce() -> Markup) -> Response {
        match self {
            Format::Json => json_answer(json()),
            Format::Html => page_answer(page()),
        }
    }
}

/// The JSON answer of a route that also has a page: it varies with
/// `Accept`, so caches keep the two apart.
pub fn json_answer(mut response: Response) -> Response {
    vary_with_accept(&mut response);
    response
}

/// A page, under a policy that lets it load nothing at all: its one style
/// sheet is inline (allowed by its digest), its map is inline SVG, and it
/// runs no script. Typed text is escaped by the templates; the policy is
/// the second wall.
pub fn page_answer(page: Markup) -> Response {
    let mut response = page.into_string().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(content_security_policy()),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Links may carry the caller's `api_key`; no other site learns them.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    vary_with_accept(&mut response);
    response
}

fn vary_with_accept(response: &mut Response) {
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static("accept"));
}

/// The JSON media types the routes answer; `Accept` must rank `text/html`
/// above every one of them to get a page.
const JSON_TYPES: [&str; 3] = ["application/json", "application/geo+json", "application/schema+json"];

/// Whether `Accept` ranks `text/html` above JSON. Ties go to JSON, so
/// `*/*` and a missing header keep the JSON that clients always had.
fn prefers_html(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let json = JSON_TYPES.iter().map(|t| quality(&accept, t)).fold(0.0, f32::max);
    quality(&accept, "text/html") > json
}

/// The quality `Accept` gives a media type: that of the most specific
/// range matching it (RFC 9110, 12.5.1), 0 when none does.
pub(crate) fn quality(accept: &str, media_type: &str) -> f32 {
    let kind = media_type.split('/').next().unwrap_or_default();
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let specificity = if name == media_type {
            3
        } else if name.strip_suffix("/*") == Some(kind) {
            2
        } else if name == "*/*" {
            1
        } else {
            continue;
        };
        let q = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .and_then(|(_, v)| v.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

/// A JSON document's link to its own page.
pub fn alternate_link(self_href: &str) -> Value {
    json!({
        "href": page::with_format(self_href, "html"),
        "rel": "alternate",
        "type": "text/html",
        "title": "this document as HTML",
    })
}

fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        let digest = STANDARD.encode(Sha256::digest(page::STYLE.as_bytes()));
        format!(
            "default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html_for(accept: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        prefers_html(&headers)
    }

    #[test]
    fn accept_decides_by_quality() {
        assert!(html_for(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(html_for("text/html"));
        assert!(html_for("application/json;q=0.5, text/html"));
        assert!(!html_for("*/*"));
        assert!(!html_for("application/json"));
        assert!(!html_for("application/geo+json"));
        assert!(!html_for("text/html;q=0.5, application/json"));
        assert!(!html_for("text/html, application/json"), "a tie keeps JSON");
        assert!(!html_for("*/*;q=0.9, text/html;q=0"), "the most specific range decides");
        assert!(!prefers_html(&HeaderMap::new()));
    }
}
