//! Which credential a route reads and what each credential may do there:
//! the routes that read none, what a read-only key and an anonymous caller
//! may call, and whether a request writes.
use axum::http::{Method, request::Parts};
use catalog_shared::AppError;

use super::Caller;

/// Routes that read no credential: the landing page and conformance (the
/// specification says so), liveness, the routes that take their credential
/// in the body or a cookie (sign-in, refresh, sign-out, password reset), the single sign-on
/// redirects (their credential is the provider's answer), shared map
/// links (404 or 410 whatever is sent), and the built-in basemap and the
/// tile matrix sets (the same for everyone, so a viewer's stale token
/// never blanks them).
pub(super) fn reads_no_credential(path: &str) -> bool {
    matches!(
        path,
        "/api"
            | "/api/conformance"
            | "/api/health"
            | "/api/auth/login"
            | "/api/auth/refresh"
            | "/api/auth/logout"
            | "/api/auth/logout/session"
            | "/api/auth/password-reset"
            | "/api/auth/password-reset/request"
    ) || path.starts_with("/api/maps/shared/")
        || path.starts_with("/api/auth/oauth/")
        || path.starts_with("/api/basemap/")
        || path.starts_with("/api/tileMatrixSets")
}

pub(super) fn is_read_method(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a request changes something: every method but GET, HEAD and
/// OPTIONS, and the one GET that writes (validate with `refresh`).
pub(super) fn writes(method: &Method, path: &str, query: Option<&str>) -> bool {
    if !is_read_method(method) {
        return true;
    }
    path.ends_with("/validate")
        && query_param(query, "refresh").is_some_and(|v| matches!(v.as_str(), "true" | "1" | "yes"))
}

/// What a read-only key may do: what writes nothing, and the two
/// read-only POST routes.
pub(super) fn read_only_key_allows(method: &Method, path: &str, query: Option<&str>) -> bool {
    !writes(method, path, query) || (*method == Method::POST && matches!(path, "/api/query" | "/api/stac/search"))
}

/// Routes (as routed, by template) that change something yet serve
/// anonymous callers: asking for an account, the read-only STAC search,
/// a download token or a metadata draft for a public dataset. The routes
/// that read no credential (sign-in, refresh, sign-out) are not checked.
const ANONYMOUS_WRITES: [&str; 4] = [
    "/api/auth/register",
    "/api/stac/search",
    "/api/auth/download-token/{dataset_id}",
    "/api/ai/metadata/quality-statement",
];

/// Reads that only make sense for a signed-in caller: one's own account,
/// keys, jobs, saved searches and connector credentials, the admin and
/// settings routes, and who may see a dataset or embed a map.
fn personal_read(route: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "/api/metrics",
        "/api/auth/me",
        "/api/auth/api-keys",
        "/api/admin/",
        "/api/settings/",
        "/api/jobs",
        "/api/search/saved",
        "/api/services/connectors/credentials",
        "/api/ingest/",
    ];
    PREFIXES.iter().any(|p| route.starts_with(p)) || route.ends_with("/grants") || route.ends_with("/embed-tokens")
}

/// Whether an anonymous caller may call the route at all.
fn serves_anonymous(method: &Method, route: &str, path: &str, query: Option<&str>) -> bool {
    if reads_no_credential(path) {
        return true;
    }
    if writes(method, path, query) {
        ANONYMOUS_WRITES.contains(&route)
    } else {
        !personal_read(route)
    }
}

/// One rule for every route that needs a credential: an anonymous caller
/// (no user, no capability) gets 401 before the handler looks anything
/// up, so it learns nothing of what exists (a map's 404 against 403).
/// For routed requests only, where the route template is known.
pub fn require_credential(caller: &Caller, route: &str, request: &Parts) -> Result<(), AppError> {
    let anonymous = caller.user.is_none() && caller.capability.is_none();
    if anonymous && !serves_anonymous(&request.method, route, request.uri.path(), request.uri.query()) {
        return Err(AppError::unauthorized("sign in or send an API key"));
    }
    Ok(())
}

pub(super) fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_keys_read() {
        assert!(read_only_key_allows(&Method::GET, "/api/datasets", None));
        assert!(read_only_key_allows(&Method::POST, "/api/query", None));
        assert!(read_only_key_allows(&Method::POST, "/api/stac/search", None));
        assert!(!read_only_key_allows(&Method::POST, "/api/datasets/upload", None));
        assert!(!read_only_key_allows(&Method::DELETE, "/api/jobs/x", None));
        assert!(!read_only_key_allows(
            &Method::GET,
            "/api/datasets/x/validate",
            Some("refresh=true")
        ));
        assert!(read_only_key_allows(
            &Method::GET,
            "/api/datasets/x/validate",
            Some("refresh=false")
        ));
    }

    #[test]
    fn anonymous_callers_reach_only_what_serves_them() {
        let anonymous = |method: Method, route: &str, path: &str, query: Option<&str>| {
            serves_anonymous(&method, route, path, query)
        };
        assert!(anonymous(Method::GET, "/api/maps/{map_id}", "/api/maps/x", None));
        assert!(!anonymous(Method::PUT, "/api/maps/{map_id}", "/api/maps/x", None));
        assert!(!anonymous(
            Method::GET,
            "/api/maps/{map_id}/embed-tokens",
            "/api/maps/x/embed-tokens",
            None
        ));
        assert!(!anonymous(
            Method::GET,
            "/api/datasets/{dataset_id}/validate",
            "/api/datasets/x/validate",
            Some("refresh=true")
        ));
        assert!(anonymous(Method::POST, "/api/stac/search", "/api/stac/search", None));
        assert!(anonymous(Method::POST, "/api/auth/login", "/api/auth/login", None));
        assert!(!anonymous(Method::GET, "/api/jobs/{job_id}", "/api/jobs/x", None));
    }
}
