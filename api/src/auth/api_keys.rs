//! API keys: one user each, scope `full` or `read_only` fixed at creation,
//! optional expiry, the secret shown once and stored only as a hash.
use axum::{Json, body::Bytes, extract::State, http::StatusCode};
use catalog_shared::{
    AppError,
    auth::{API_KEY_PREFIX, random_secret},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::Caller,
    extract::{Body, Path},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_own_key, list_own_keys))
        .routes(routes!(revoke_key))
        .routes(routes!(create_key_for_user))
}

/// Revokes every key of a user (password, role or provider change, approval).
pub async fn revoke_all(db: impl sqlx::PgExecutor<'_>, user_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL")
        .bind(user_id)
        .execute(db)
        .await?;
    Ok(())
}

/// What a key may do.
#[derive(Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyScope {
    #[default]
    Full,
    ReadOnly,
}

impl KeyScope {
    fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::ReadOnly => "read_only",
        }
    }
}

/// A key for the caller; no body at all is `{}`.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    /// `full` (default) or `read_only`.
    #[schema(inline)]
    scope: Option<KeyScope>,
    /// When the key stops working; must be in the future.
    expires_at: Option<DateTime<Utc>>,
    #[schema(max_length = 255)]
    name: Option<String>,
    /// Taken when it names the caller: keys for others are the admin route's.
    #[schema(ignore)]
    user_id: Option<Uuid>,
}

/// A key an admin issues for a user.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserKeyRequest {
    /// Whose key it is.
    user_id: Uuid,
    /// `full` (default) or `read_only`.
    #[schema(inline)]
    scope: Option<KeyScope>,
    /// When the key stops working; must be in the future.
    expires_at: Option<DateTime<Utc>>,
    #[schema(max_length = 255)]
    name: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    id: Uuid,
    /// The secret; shown this once.
    key: String,
    scope: String,
    name: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    user_id: Uuid,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct KeyInfo {
    id: Uuid,
    /// The first characters of the key, to tell keys apart.
    key_prefix: String,
    name: Option<String>,
    scope: String,
    expires_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
    /// When the key last authenticated a request, to the minute; null when never.
    last_used_at: Option<DateTime<Utc>>,
}

fn parse_request(body: &Bytes) -> Result<KeyRequest, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(KeyRequest::default());
    }
    crate::extract::refuse_array(body)?;
    serde_json::from_slice(body).map_err(|e| AppError::unprocessable(format!("invalid API key request: {e}")))
}

async fn create_key(
    state: &AppState,
    owner: Uuid,
    creator: Uuid,
    (scope, expires_at, name): (Option<KeyScope>, Option<DateTime<Utc>>, Option<String>),
) -> Result<(StatusCode, Json<CreatedKey>), AppError> {
    let scope = scope.unwrap_or_default().as_str().to_string();
    if expires_at.is_some_and(|t| t <= Utc::now()) {
        return Err(AppError::unprocessable("expires_at must be in the future"));
    }
    if name.as_ref().is_some_and(|n| n.chars().count() > 255) {
        return Err(AppError::unprocessable("name must be at most 255 characters"));
    }
    let key = random_secret(API_KEY_PREFIX);
    let id = Uuid::now_v7();
    let created_at: DateTime<Utc> = sqlx::query_scalar(
        "INSERT INTO api_keys (id, user_id, key_hash, key_prefix, name, scope, expires_at, created_by)
         VALUES ($1, $2, sha256($3), $4, $5, $6, $7, $8) RETURNING created_at",
    )
    .bind(id)
    .bind(owner)
    .bind(key.as_bytes())
    .bind(&key[..12])
    .bind(&name)
    .bind(&scope)
    .bind(expires_at)
    .bind(creator)
    .fetch_one(&state.pool)
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            id,
            key,
            scope,
            name,
            expires_at,
            created_at,
            user_id: owner,
        }),
    ))
}

/// Creates a key for the caller.
#[utoipa::path(post, path = "/api/auth/api-keys", tag = "auth", request_body(content = Option<KeyRequest>, content_type = "application/json"),
    responses((status = 201, body = CreatedKey), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_own_key(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body,
) -> Result<(StatusCode, Json<CreatedKey>), AppError> {
    let user = caller.signed_in()?;
    let request = parse_request(&body)?;
    if request.user_id.is_some_and(|id| id != user.id) {
        return Err(AppError::unprocessable(
            "user_id is for the admin route /api/admin/api-keys",
        ));
    }
    let fields = (request.scope, request.expires_at, request.name);
    create_key(&state, user.id, user.id, fields).await
}

/// An admin issues a key for another user.
#[utoipa::path(post, path = "/api/admin/api-keys", tag = "admin", request_body = UserKeyRequest,
    responses((status = 201, body = CreatedKey), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_key_for_user(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body,
) -> Result<(StatusCode, Json<CreatedKey>), AppError> {
    let admin = caller.admin()?;
    crate::extract::refuse_array(&body)?;
    let request: UserKeyRequest = serde_json::from_slice(&body)
        .map_err(|e| AppError::unprocessable(format!("invalid API key request (user_id is required): {e}")))?;
    let owner = request.user_id;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)")
        .bind(owner)
        .fetch_one(&state.pool)
        .await?;
    if !exists {
        return Err(AppError::not_found(format!("no user {owner}")));
    }
    let fields = (request.scope, request.expires_at, request.name);
    create_key(&state, owner, admin.id, fields).await
}

/// The caller's keys, without their secrets.
#[utoipa::path(get, path = "/api/auth/api-keys", tag = "auth", responses((status = 200, body = Vec<KeyInfo>)))]
async fn list_own_keys(State(state): State<AppState>, caller: Caller) -> Result<Json<Vec<KeyInfo>>, AppError> {
    let user = caller.signed_in()?;
    let keys = sqlx::query_as(
        "SELECT id, key_prefix, name, scope, expires_at, created_at, revoked_at, last_used_at FROM api_keys
         WHERE user_id = $1 ORDER BY created_at DESC",
    )
    .bind(user.id)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(keys))
}

/// Revokes one of the caller's keys (an admin may revoke anyone's).
#[utoipa::path(delete, path = "/api/auth/api-keys/{key_id}", tag = "auth", params(("key_id" = Uuid, Path)),
    responses((status = 204, description = "revoked"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn revoke_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    let user = caller.signed_in()?;
    let revoked = sqlx::query(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
         WHERE id = $1 AND (user_id = $2 OR $3)",
    )
    .bind(key_id)
    .bind(user.id)
    .bind(user.is_admin())
    .execute(&state.pool)
    .await?
    .rows_affected();
    if revoked == 0 {
        return Err(AppError::not_found(format!("no API key {key_id}")));
    }
    Ok(StatusCode::NO_CONTENT)
}
