//! The web UI: the app built from `ui/` (`ui/dist`), embedded in the
//! binary. Every GET outside `/api/` and `/assets/` answers the app's HTML,
//! so deep links and `/oauth/callback` work on reload; `/assets/` holds
//! the content-hashed bundle, cached for a year. A binary built before the
//! UI was says so on `/` instead.
use axum::{
    body::Body,
    http::{HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};

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
/// and data it reads from this service; nothing from another site.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'self'; form-action 'self'";

/// The answer of the web UI to `path`, when the path is the UI's: `None`
/// for API paths and for methods other than GET and HEAD.
pub fn respond(method: &Method, path: &str) -> Option<Response> {
    if !(method == Method::GET || method == Method::HEAD) || path == "/api" || path.starts_with("/api/") {
        return None;
    }
    if let Some(name) = path.strip_prefix(ASSETS) {
        let file = Bundle::get(&format!("assets/{name}"))?;
        return Some(file_response(file, IMMUTABLE));
    }
    Some(match Bundle::get("index.html") {
        Some(page) => {
            let mut response = file_response(page, REVALIDATE);
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            );
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

fn file_response(file: rust_embed::EmbeddedFile, cache_control: &'static str) -> Response {
    let mime = file.metadata.mimetype();
    let mime = match mime {
        m if m.ends_with("javascript") => "text/javascript",
        "text/html" => "text/html; charset=utf-8",
        m => m,
    };
    let content_type = HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut response = Response::new(Body::from(file.data.into_owned()));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
