//! Who is calling. One credential resolver runs before every handler, in
//! the order of the specification (X-Api-Key header, `api_key` query
//! parameter on reads, bearer JWT, anonymous), refuses what a read-only key
//! may not do, and leaves a `Caller` in the request.
use axum::{
    extract::{FromRequestParts, Request, State},
    http::{HeaderMap, Method, header, request::Parts},
    middleware::Next,
    response::Response,
};
use catalog_shared::{
    AppError,
    auth::{Role, hash_password},
    config::Config,
};
use sqlx::PgPool;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::state::AppState;

pub mod accounts;
pub mod api_keys;
mod cookies;
pub mod cors;
mod oauth;
pub mod providers;
pub mod tokens;

/// A signed-in account.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: Uuid,
    pub role: String,
    pub token_version: i32,
}

impl User {
    pub fn role(&self) -> Role {
        Role::parse(&self.role).unwrap_or(Role::Viewer)
    }
    pub fn is_admin(&self) -> bool {
        self.role() == Role::Admin
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyScope {
    Full,
    ReadOnly,
}

/// What a capability lets a request read whatever credential it carries
/// (rule 5): a signed tile template one dataset's tiles until its expiry
/// (Unix seconds), an embed token a map and the datasets of its layers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Capability {
    Tiles { dataset: Uuid, expires: i64 },
    Embed { map_id: Uuid, datasets: Vec<Uuid> },
}

/// The resolved identity of a request: anonymous or a user, whether it
/// came through an API key, and any capability it was served under.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub user: Option<User>,
    pub key_scope: Option<KeyScope>,
    pub capability: Option<Capability>,
    /// The sign-in session of a bearer access token.
    pub session: Option<Uuid>,
}

impl Caller {
    pub fn user(&self) -> Option<&User> {
        self.user.as_ref()
    }
    pub fn user_id(&self) -> Option<Uuid> {
        self.user.as_ref().map(|u| u.id)
    }
    pub fn is_admin(&self) -> bool {
        self.user.as_ref().is_some_and(User::is_admin)
    }
    /// Whether a capability lets this request read the dataset.
    pub fn capability_reads_dataset(&self, id: Uuid) -> bool {
        match &self.capability {
            Some(Capability::Tiles { dataset, .. }) => *dataset == id,
            Some(Capability::Embed { datasets, .. }) => datasets.contains(&id),
            None => false,
        }
    }
    /// Whether a capability lets this request read the map.
    pub fn capability_reads_map(&self, id: Uuid) -> bool {
        matches!(&self.capability, Some(Capability::Embed { map_id, .. }) if *map_id == id)
    }
    /// The user, or 401 for anonymous callers.
    pub fn signed_in(&self) -> Result<&User, AppError> {
        self.user()
            .ok_or_else(|| AppError::unauthorized("sign in or send an API key"))
    }
    /// The user when it may create and edit content (editor or admin).
    pub fn editor(&self) -> Result<&User, AppError> {
        let user = self.signed_in()?;
        if user.role() >= Role::Editor {
            Ok(user)
        } else {
            Err(AppError::forbidden("this needs the editor or admin role"))
        }
    }
    pub fn admin(&self) -> Result<&User, AppError> {
        let user = self.signed_in()?;
        if user.is_admin() {
            Ok(user)
        } else {
            Err(AppError::forbidden("this needs the admin role"))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Caller>().cloned().unwrap_or_default())
    }
}

/// Routes that read no credential: the landing page and conformance (the
/// specification says so), liveness, the routes that take their credential
/// in the body or a cookie (sign-in, refresh, sign-out), the single sign-on
/// redirects (their credential is the provider's answer), and shared map
/// links (404 or 410 whatever is sent).
fn reads_no_credential(path: &str) -> bool {
    matches!(
        path,
        "/api" | "/api/conformance" | "/api/health" | "/api/auth/login" | "/api/auth/refresh" | "/api/auth/logout"
    ) || path.starts_with("/api/maps/shared/")
        || path.starts_with("/api/auth/oauth/")
}

fn is_read_method(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a request changes something: every method but GET, HEAD and
/// OPTIONS, and the one GET that writes (validate with `refresh`).
fn writes(method: &Method, path: &str, query: Option<&str>) -> bool {
    if !is_read_method(method) {
        return true;
    }
    path.ends_with("/validate")
        && query_param(query, "refresh").is_some_and(|v| matches!(v.as_str(), "true" | "1" | "yes"))
}

/// What a read-only key may do: what writes nothing, and the two
/// read-only POST routes.
fn read_only_key_allows(method: &Method, path: &str, query: Option<&str>) -> bool {
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
    const PREFIXES: [&str; 8] = [
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
/// Runs on routed requests only, where the route template is known.
pub async fn require_credential(
    caller: Caller,
    route: axum::extract::MatchedPath,
    request: Request,
    next: Next,
) -> Result<Response, AppError> {
    let anonymous = caller.user.is_none() && caller.capability.is_none();
    if anonymous
        && !serves_anonymous(
            request.method(),
            route.as_str(),
            request.uri().path(),
            request.uri().query(),
        )
    {
        return Err(AppError::unauthorized("sign in or send an API key"));
    }
    Ok(next.run(request).await)
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A valid capability of a read request: an `X-Embed-Token` covering the
/// path, or a signed tile template on a tile route. An invalid or absent
/// one leaves the request to its credential (rule 5).
async fn capability_of(
    state: &AppState,
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
) -> Result<Option<Capability>, AppError> {
    if let Some(token) = headers.get("x-embed-token").and_then(|v| v.to_str().ok()) {
        let embed = crate::maps::embed::capability(&state.pool, token).await?;
        if let Some(embed) = embed.filter(|c| crate::maps::embed::covers(c, path)) {
            return Ok(Some(embed));
        }
    }
    let Some(query) = query.filter(|q| q.contains("sig=")) else {
        return Ok(None);
    };
    Ok(crate::tiles::signed_template_dataset(state, path, query).await)
}

pub async fn resolve_caller(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, AppError> {
    let path = request.uri().path().to_string();
    if reads_no_credential(&path) {
        request.extensions_mut().insert(Caller::default());
        return Ok(next.run(request).await);
    }
    let method = request.method().clone();
    let query = request.uri().query().map(str::to_string);
    if is_read_method(&method)
        && let Some(capability) = capability_of(&state, request.headers(), &path, query.as_deref()).await?
    {
        // Served under the capability; any credential sent is not read (rule 5).
        request.extensions_mut().insert(Caller {
            capability: Some(capability),
            ..Caller::default()
        });
        return Ok(next.run(request).await);
    }
    let header_key = request
        .headers()
        .get("x-api-key")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    // The query-string key counts on requests that write nothing (rule 2);
    // elsewhere it is absent, so it never authorises a write.
    let query_key = if !writes(&method, &path, query.as_deref()) {
        query_param(query.as_deref(), "api_key")
    } else {
        None
    };
    let caller = if let Some(key) = header_key.or(query_key) {
        api_keys::resolve(&state.pool, &key).await?
    } else if let Some(token) = bearer_token(request.headers()) {
        tokens::resolve_access(&state, token).await?
    } else {
        Caller::default()
    };
    if caller.key_scope == Some(KeyScope::ReadOnly) && !read_only_key_allows(&method, &path, query.as_deref()) {
        return Err(AppError::forbidden(
            "the API key is read-only; it cannot be used for this request",
        ));
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(tokens::routes())
        .merge(api_keys::routes())
        .merge(accounts::routes())
        .merge(providers::routes())
        .merge(oauth::routes())
}

/// Creates the first admin from `BOOTSTRAP_ADMIN_*` when no user exists.
pub async fn bootstrap_admin(pool: &PgPool, config: &Config) -> anyhow::Result<()> {
    let (Some(username), Some(password)) = (&config.bootstrap_admin_username, &config.bootstrap_admin_password) else {
        return Ok(());
    };
    let hash = hash_password(password)?;
    let created = sqlx::query(
        "INSERT INTO users (id, username, password_hash, role)
         SELECT $1, $2, $3, 'admin' WHERE NOT EXISTS (SELECT 1 FROM users)",
    )
    .bind(Uuid::now_v7())
    .bind(username)
    .bind(hash)
    .execute(pool)
    .await?
    .rows_affected();
    if created == 1 {
        tracing::info!(%username, "bootstrap admin created");
    }
    Ok(())
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
