//! The web UI: the app built from `ui/` (`ui/dist`), embedded in the
//! binary. Every GET outside `/api/` and `/assets/` answers the app's HTML,
//! so deep links and `/oauth/callback` work on reload, except a shared
//! map's embeddable view, a document of its own (`ui/embed.html`);
//! `/assets/` holds the content-hashed bundle, cached for a year. A binary
//! built before the UI was says so on `/` instead.
use std::{
    collections::HashMap,
    io::Write,
    sync::{Mutex, OnceLock},
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};

use crate::framing::Frameable;

#[derive(rust_embed::Embed)]
#[folder = "../ui/dist"]
#[allow_missing = true]
struct Bundle;

const ASSETS: &str = "/assets/";
/// Hashed names change with their content: a year, never revalidated.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// The page names the current bundle, so it is checked on every load.
const REVALIDATE: &str = "no-cache";
/// The app's own scripts, styles, images and workers, and the map tiles
/// and data it reads from this service; nothing from another site. No
/// page may frame it, not even the service's own...
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'self'; form-action 'self'";
/// ...but the embeddable view of a shared map, which any site may frame:
/// a document of its own (`ui/embed.html`) that draws the map and nothing
/// else, no session, no sign-in, no link into the app (`framing`).
const EMBED_CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; \
     base-uri 'self'; form-action 'none'";
const SHARED_MAPS: &str = "/maps/shared/";
const EMBED: &str = "/embed";

/// The answer of the web UI to `path`, when the path is the UI's: `None`
/// for API paths and for methods other than GET and HEAD.
pub fn respond(method: &Method, path: &str, request: &HeaderMap) -> Option<Response> {
    let gzip = accepts_gzip(request);
    if !(method == Method::GET || method == Method::HEAD) || path == "/api" || path.starts_with("/api/") {
        return None;
    }
    if let Some(name) = path.strip_prefix(ASSETS) {
        let name = format!("assets/{name}");
        let file = Bundle::get(&name)?;
        return Some(file_response(&name, file, IMMUTABLE, gzip));
    }
    let embed = is_embed(path);
    let (name, policy) = if embed {
        ("embed.html", EMBED_CONTENT_SECURITY_POLICY)
    } else {
        ("index.html", CONTENT_SECURITY_POLICY)
    };
    Some(match Bundle::get(name) {
        Some(page) => {
            let mut response = file_response(name, page, REVALIDATE, gzip);
            response
                .headers_mut()
                .insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
            if embed {
                response.extensions_mut().insert(Frameable);
            }
            response
        }
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!doctype html><title>Web UI not built</title><p>This build of the service has no web UI: \
             build it with <code>scripts/run.sh</code> (or <code>npm ci &amp;&amp; npm run build</code> in \
             <code>ui/</code>) and build the API again. The API is at <a href=\"/api\">/api</a>.</p>",
        )
            .into_response(),
    })
}

/// Whether the path is a shared map's embeddable view:
/// `/maps/shared/<token>/embed`.
fn is_embed(path: &str) -> bool {
    path.strip_prefix(SHARED_MAPS)
        .and_then(|rest| rest.strip_suffix(EMBED))
        .is_some_and(|token| !token.is_empty() && !token.contains('/'))
}

fn file_response(name: &str, file: rust_embed::EmbeddedFile, cache_control: &'static str, gzip: bool) -> Response {
    let mime = file.metadata.mimetype();
    let mime = match mime {
        m if m.ends_with("javascript") => "text/javascript",
        "text/html" => "text/html; charset=utf-8",
        m => m,
    };
    let content_type = HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let compressible = mime.starts_with("text/") || mime.ends_with("json") || mime.ends_with("svg+xml");
    let (body, encoded) = match (gzip && compressible).then(|| gzipped(name, &file.data)) {
        Some(Some(bytes)) => (bytes, true),
        _ => (Bytes::from(file.data.into_owned()), false),
    };
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if compressible {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if encoded {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

fn accepts_gzip(request: &HeaderMap) -> bool {
    request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

/// A file of the bundle, gzipped once per process (MapLibre's 1.1 MB
/// script goes out as 0.3 MB).
fn gzipped(name: &str, data: &[u8]) -> Option<Bytes> {
    static DONE: OnceLock<Mutex<HashMap<String, Bytes>>> = OnceLock::new();
    let done = DONE.get_or_init(Mutex::default);
    if let Some(bytes) = done.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
        return Some(bytes.clone());
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).ok()?;
    let bytes = Bytes::from(encoder.finish().ok()?);
    done.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string(), bytes.clone());
    Some(bytes)
}
