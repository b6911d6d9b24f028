//! CORS as rule 17 of the specification has it: anonymous requests to the
//! standards and catalog-search routes (and to map and style reads, which
//! viewers on other sites load) get `*`; a request that carries a
//! credential gets its origin echoed only when `CORS_ALLOWED_ORIGINS` lists
//! it; tile routes, and the built-in basemap's style, tiles and glyphs,
//! always answer `*`.
use axum::{
    extract::Request,
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};

use crate::state::AppState;

const ALLOWED_METHODS: &str = "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE";
const EXPOSED_HEADERS: &str = "Location, Retry-After, X-Request-Id";

fn is_open_route(path: &str) -> bool {
    path == "/api"
        || path == "/api/conformance"
        || path == "/api/openapi.json"
        || path == "/api/collections"
        || path.starts_with("/api/collections/")
        || path.starts_with("/api/stac")
        || path == "/api/search/datasets"
        || path == "/api/search/facets"
        || is_map_read(path)
}

/// A map, its style, a shared map or a sprite: what a viewer on another
/// site loads (public maps anonymously, private ones with an embed token).
fn is_map_read(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        ["api", "maps", _] | ["api", "maps", _, "style.json"] | ["api", "maps", "shared" | "sprites", _]
    ) && path != "/api/maps/import"
}

fn is_tile_route(path: &str) -> bool {
    path.starts_with("/api/tiles/") || path.starts_with("/api/basemap/")
}

fn carries_credential(headers: &HeaderMap, query: Option<&str>) -> bool {
    headers.contains_key(header::AUTHORIZATION)
        || headers.contains_key("x-api-key")
        || headers.contains_key(header::COOKIE)
        || query.is_some_and(|q| url::form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "api_key"))
}

/// Whether a preflight announces a credential header.
fn preflight_asks_for_credentials(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|h| matches!(h.trim().to_ascii_lowercase().as_str(), "authorization" | "x-api-key"))
        })
}

enum Allow {
    Any,
    Origin(HeaderValue),
    Nothing,
}

/// The CORS answer to a request that names its origin.
pub struct Cors {
    allow: Allow,
    preflight: bool,
}

impl Cors {
    /// None for a request without `Origin`, which CORS leaves alone.
    pub fn of(state: &AppState, request: &Request) -> Option<Self> {
        let origin = request.headers().get(header::ORIGIN)?;
        let path = request.uri().path();
        let listed = origin
            .to_str()
            .is_ok_and(|o| state.config.cors_allowed_origins.iter().any(|allowed| allowed == o));
        let preflight = request.method() == Method::OPTIONS
            && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        let credentialed = if preflight {
            preflight_asks_for_credentials(request.headers())
        } else {
            carries_credential(request.headers(), request.uri().query())
        };
        let allow = if listed {
            Allow::Origin(origin.clone())
        } else if (is_tile_route(path) && !(preflight && credentialed)) || (is_open_route(path) && !credentialed) {
            Allow::Any
        } else {
            Allow::Nothing
        };
        Some(Self { allow, preflight })
    }

    /// The answer to a preflight, which goes no further; None for any
    /// other request.
    pub fn preflight(&self, request: &Request) -> Option<Response> {
        if !self.preflight {
            return None;
        }
        let mut response = StatusCode::NO_CONTENT.into_response();
        if !matches!(self.allow, Allow::Nothing) {
            let headers = response.headers_mut();
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(ALLOWED_METHODS),
            );
            if let Some(requested) = request.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
                headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, requested.clone());
            }
            headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        }
        self.apply(response.headers_mut());
        Some(response)
    }

    /// Adds the CORS headers of this answer to a response.
    pub fn apply(&self, headers: &mut HeaderMap) {
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
        match &self.allow {
            Allow::Any => {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
                headers.insert(
                    header::ACCESS_CONTROL_EXPOSE_HEADERS,
                    HeaderValue::from_static(EXPOSED_HEADERS),
                );
            }
            Allow::Origin(origin) => {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
                headers.insert(
                    header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                    HeaderValue::from_static("true"),
                );
                headers.insert(
                    header::ACCESS_CONTROL_EXPOSE_HEADERS,
                    HeaderValue::from_static(EXPOSED_HEADERS),
                );
            }
            Allow::Nothing => {}
        }
    }
}
