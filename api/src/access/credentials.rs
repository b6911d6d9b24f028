//! Every credential kind resolved in one place, in the order of the
//! specification: a capability on reads (an `X-Embed-Token` covering the
//! path, a signed tile template, a signed asset link), then the
//! `X-Api-Key` header, the `api_key` query parameter on reads, a bearer
//! access token (or API key), or nobody.
//! Refresh tokens, download tokens and sign-in answers are read by the
//! routes that take them (`auth`), never here.
use axum::http::{HeaderMap, request::Parts};
use catalog_shared::{
    AppError,
    auth::{API_KEY_PREFIX, Role},
};
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    Caller, Capability, KeyScope, User, bearer_token, embed,
    routes::{is_read_method, query_param, read_only_key_allows, reads_no_credential, writes},
    signed_assets, signed_tiles,
};
use crate::state::AppState;

/// The `Caller` a request's credential makes it; refuses what a read-only
/// key may not do.
pub async fn caller_of(state: &AppState, request: &Parts) -> Result<Caller, AppError> {
    let path = request.uri.path();
    if reads_no_credential(path) {
        return Ok(Caller::default());
    }
    let method = &request.method;
    let query = request.uri.query();
    if is_read_method(method)
        && let Some(capability) = capability_of(state, &request.headers, path, query).await?
    {
        // Served under the capability; any credential sent is not read (rule 5).
        return Ok(Caller {
            capability: Some(capability),
            ..Caller::default()
        });
    }
    let header_key = request
        .headers
        .get("x-api-key")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    // The query-string key counts on requests that write nothing (rule 2);
    // elsewhere it is absent, so it never authorises a write.
    let query_key = if !writes(method, path, query) {
        query_param(query, "api_key")
    } else {
        None
    };
    // Boxed: their database futures would otherwise enlarge every request's.
    let caller = if let Some(key) = header_key.or(query_key) {
        Box::pin(api_key_caller(&state.pool, &key)).await?
    } else if let Some(token) = bearer_token(&request.headers) {
        // Clients that send one credential header (Prometheus among them)
        // send an API key as a bearer token; it is the key all the same.
        if token.starts_with(API_KEY_PREFIX) {
            Box::pin(api_key_caller(&state.pool, token)).await?
        } else {
            Box::pin(access_token_caller(state, token)).await?
        }
    } else {
        Caller::default()
    };
    if caller.key_scope == Some(KeyScope::ReadOnly) && !read_only_key_allows(method, path, query) {
        return Err(AppError::forbidden(
            "the API key is read-only; it cannot be used for this request",
        ));
    }
    Ok(caller)
}

/// A valid capability of a read request: an `X-Embed-Token` covering the
/// path, a signed tile template on a tile route, or a signed asset link on
/// a download route. An invalid or absent one leaves the request to its
/// credential (rule 5).
async fn capability_of(
    state: &AppState,
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
) -> Result<Option<Capability>, AppError> {
    if path == "/api/metrics"
        && let (Some(expected), Some(token)) = (&state.config.metrics_token, bearer_token(headers))
        && same_secret(expected, token)
    {
        return Ok(Some(Capability::Metrics));
    }
    if let Some(token) = headers.get("x-embed-token").and_then(|v| v.to_str().ok()) {
        let capability = Box::pin(embed::capability(&state.pool, token)).await?;
        if let Some(capability) = capability.filter(|c| embed::covers(c, path)) {
            return Ok(Some(capability));
        }
    }
    let Some(query) = query.filter(|q| q.contains("sig=")) else {
        return Ok(None);
    };
    if let Some(capability) = Box::pin(signed_tiles::verify(state, path, query)).await {
        return Ok(Some(capability));
    }
    Ok(Box::pin(signed_assets::verify(state, path, query)).await)
}

/// Compares digests, so the time taken says nothing of how much of the
/// token was right.
fn same_secret(expected: &str, given: &str) -> bool {
    use sha2::{Digest, Sha256};
    Sha256::digest(expected.as_bytes()) == Sha256::digest(given.as_bytes())
}

#[derive(sqlx::FromRow)]
struct KeyOwner {
    key_id: Uuid,
    id: Uuid,
    role: Role,
    token_version: i32,
    scope: String,
    /// Whether the key's last use is recorded less than a minute ago.
    used_lately: bool,
}

/// The owner of a presented API key, narrowed by the key's scope.
async fn api_key_caller(pool: &PgPool, key: &str) -> Result<Caller, AppError> {
    let owner: Option<KeyOwner> = sqlx::query_as(
        "SELECT k.id AS key_id, u.id, u.role, u.token_version, k.scope,
                coalesce(k.last_used_at > now() - interval '1 minute', false) AS used_lately
         FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.key_hash = sha256($1) AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
           AND u.status = 'active' AND u.is_active",
    )
    .bind(key.as_bytes())
    .fetch_optional(pool)
    .await?;
    let owner = owner.ok_or_else(|| AppError::unauthorized("the API key is invalid, expired or revoked"))?;
    // Recorded to the minute, so a client paging quickly writes once a minute, not once a request.
    if !owner.used_lately {
        sqlx::query("UPDATE api_keys SET last_used_at = now() WHERE id = $1")
            .bind(owner.key_id)
            .execute(pool)
            .await?;
    }
    Ok(Caller {
        capability: None,
        session: None,
        key_scope: Some(if owner.scope == "read_only" {
            KeyScope::ReadOnly
        } else {
            KeyScope::Full
        }),
        user: Some(User {
            id: owner.id,
            role: owner.role,
            token_version: owner.token_version,
        }),
    })
}

#[derive(sqlx::FromRow)]
struct TokenOwner {
    #[sqlx(flatten)]
    user: User,
    /// Whether the token's sign-in session still has a refresh token that
    /// is not revoked (a password change revokes the other sessions').
    session_live: bool,
}

/// The (still active) user of a bearer access token.
async fn access_token_caller(state: &AppState, token: &str) -> Result<Caller, AppError> {
    let claims = state
        .keys
        .verify_access(token, false)
        .ok_or_else(|| AppError::unauthorized("the access token is invalid or expired"))?;
    let owner: Option<TokenOwner> = sqlx::query_as(
        "SELECT u.id, u.role, u.token_version,
                ($2::uuid IS NULL OR EXISTS (
                    SELECT 1 FROM refresh_tokens r WHERE r.session_id = $2 AND r.revoked_at IS NULL)) AS session_live
         FROM users u WHERE u.id = $1 AND u.status = 'active' AND u.is_active",
    )
    .bind(claims.sub)
    .bind(claims.sid)
    .fetch_optional(&state.pool)
    .await?;
    match owner {
        Some(owner) if owner.user.token_version == claims.ver && owner.session_live => Ok(Caller {
            user: Some(owner.user),
            key_scope: None,
            capability: None,
            session: claims.sid,
        }),
        Some(owner) if owner.user.token_version == claims.ver => {
            Err(AppError::unauthorized("the access token's session has ended"))
        }
        Some(_) => Err(AppError::unauthorized("the access token was revoked by signing out")),
        None => Err(AppError::unauthorized("the account of this token is not active")),
    }
}
