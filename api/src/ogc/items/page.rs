//! Writing a page of items: its links (self, next, prev) and the
//! FeatureCollection around the features PostgreSQL wrote.
use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use super::{
    query::Page,
    request::{Cursor, ItemsRequest},
};
use crate::ogc::crs::{self, Crs};
use crate::ogc_html::alternate_link;

pub(super) fn link(href: String, rel: &str, media_type: &str) -> Value {
    json!({"href": href, "rel": rel, "type": media_type})
}

/// What a link's query escapes in a name or value: what would end or split
/// it (`&`, `=`, `#`), what decodes to something else (`%`, `+`), blanks and
/// what a URL may not hold; `:`, `/` and `,` stay as written, so a CRS URI
/// or a bbox reads in the link as a client wrote it.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b'<')
    .add(b'=')
    .add(b'>')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The items link at `base` with the request's own query, `replace`d. The
/// query is written as clients write it (`crs=http://…`), not form-encoded:
/// GDAL 3.6's OAPIF driver adds the query of its dataset name to every
/// page it follows unless the link already holds it as written, and a
/// parameter given twice is refused.
fn with_query(base: &str, pairs: &[(String, String)], replace: &[(&str, Option<String>)]) -> String {
    let mut out: Vec<(String, String)> = pairs
        .iter()
        .filter(|(k, _)| !replace.iter().any(|(r, _)| r == k))
        .cloned()
        .collect();
    for (k, v) in replace {
        if let Some(v) = v {
            out.push((k.to_string(), v.clone()));
        }
    }
    if out.is_empty() {
        return base.to_string();
    }
    let escape = |text: &str| percent_encoding::utf8_percent_encode(text, QUERY_VALUE).to_string();
    let query: Vec<String> = out
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// A GeoJSON answer whose coordinates are in `crs` (`Content-Crs`).
pub(super) fn geojson_response(body: String, crs: Crs) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
    if let Ok(value) = HeaderValue::from_str(&crs::content_crs(crs)) {
        headers.insert("content-crs", value);
    }
    response
}

/// A page's links: itself (and its HTML), its collection, the next page
/// (by key, or by the sort cursor of a sorted page) and, for offset
/// paging, the previous one.
pub(super) fn links(
    (base, collection): (&str, &str),
    pairs: &[(String, String)],
    request: &ItemsRequest,
    page: &Page,
) -> Vec<Value> {
    let self_href = with_query(base, pairs, &[]);
    let mut links = vec![
        link(self_href.clone(), "self", "application/geo+json"),
        alternate_link(&self_href),
        link(collection.to_string(), "collection", "application/json"),
    ];
    if let (true, Some(last)) = (page.has_next, page.rows.last()) {
        let after = if request.is_sorted() {
            let cursor = Cursor {
                values: last.sort_values.clone(),
                key: last.key,
            };
            ("cursor", Some(cursor.encode()))
        } else {
            ("after_gid", Some(last.key.to_string()))
        };
        links.push(link(
            with_query(base, pairs, &[after, ("offset", None)]),
            "next",
            "application/geo+json",
        ));
    }
    if let Some(previous) = request.previous_offset() {
        links.push(link(
            with_query(base, pairs, &[("offset", Some(previous.to_string()))]),
            "prev",
            "application/geo+json",
        ));
    }
    links
}

/// The link to the page before a keyset page: `None` is the first page.
pub(super) fn previous_by_key(base: &str, pairs: &[(String, String)], after: Option<i64>) -> Value {
    let href = with_query(base, pairs, &[("after_gid", after.map(|c| c.to_string()))]);
    link(href, "prev", "application/geo+json")
}

/// The FeatureCollection of a page, around the features as PostgreSQL
/// wrote them.
pub(super) fn feature_collection(page: &Page, matched: Option<i64>, links: Vec<Value>) -> String {
    let mut body = String::with_capacity(page.rows.iter().map(|r| r.feature.len()).sum::<usize>() + 512);
    body.push_str(r#"{"type":"FeatureCollection","features":["#);
    for (i, row) in page.rows.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&row.feature);
    }
    body.push_str("],");
    if let Some(matched) = matched {
        body.push_str(&format!(r#""numberMatched":{matched},"#));
    }
    body.push_str(&format!(
        r#""numberReturned":{},"timeStamp":"{}","links":{}}}"#,
        page.rows.len(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        Value::Array(links)
    ));
    body
}
