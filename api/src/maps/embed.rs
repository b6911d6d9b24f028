//! Embed tokens: a map's owner hands one to a web page, which sends it as
//! `X-Embed-Token` to read the map, its style and its layers' data (items
//! and tiles) with no user credential. Revocable, optionally expiring, and
//! dead once the owner's account stops being active.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{AppError, auth::random_secret};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::store::writable_map;
use crate::{
    access::Caller,
    extract::{Json as JsonBody, Path},
    state::AppState,
};

const LABEL_MAX: usize = 255;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedTokenCreate {
    /// What the token is for (the page that embeds the map, say).
    #[schema(max_length = 255)]
    label: Option<String>,
    /// When the token stops working; must be in the future.
    expires_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct EmbedToken {
    id: Uuid,
    map_id: Uuid,
    label: Option<String>,
    created_at: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct NewEmbedToken {
    #[serde(flatten)]
    record: EmbedToken,
    /// The secret, shown this once; send it as `X-Embed-Token`.
    token: String,
}

/// A new embed token for the map (its owner or an admin).
#[utoipa::path(post, path = "/api/maps/{map_id}/embed-tokens", tag = "maps", params(("map_id" = Uuid, Path)),
    request_body = EmbedTokenCreate,
    responses((status = 201, body = NewEmbedToken), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn create_embed_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(map_id): Path<Uuid>,
    JsonBody(body): JsonBody<EmbedTokenCreate>,
) -> Result<(StatusCode, Json<NewEmbedToken>), AppError> {
    writable_map(&state, &caller, map_id).await?;
    if body.label.as_ref().is_some_and(|l| l.chars().count() > LABEL_MAX) {
        return Err(AppError::unprocessable(format!(
            "label must be at most {LABEL_MAX} characters"
        )));
    }
    if body.expires_at.is_some_and(|at| at <= Utc::now()) {
        return Err(AppError::unprocessable("expires_at must be in the future"));
    }
    let token = random_secret("embed_");
    let record: EmbedToken = sqlx::query_as(
        "INSERT INTO map_embed_tokens (id, map_id, token_hash, label, created_by, expires_at)
         VALUES ($1, $2, sha256($3), $4, $5, $6)
         RETURNING id, map_id, label, created_at, expires_at, revoked_at",
    )
    .bind(Uuid::now_v7())
    .bind(map_id)
    .bind(token.as_bytes())
    .bind(&body.label)
    .bind(caller.user_id())
    .bind(body.expires_at)
    .fetch_one(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(NewEmbedToken { record, token })))
}

/// The map's embed tokens (never their secrets).
#[utoipa::path(get, path = "/api/maps/{map_id}/embed-tokens", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 200, body = Vec<EmbedToken>)))]
pub async fn list_embed_tokens(
    State(state): State<AppState>,
    caller: Caller,
    Path(map_id): Path<Uuid>,
) -> Result<Json<Vec<EmbedToken>>, AppError> {
    writable_map(&state, &caller, map_id).await?;
    let tokens = sqlx::query_as(
        "SELECT id, map_id, label, created_at, expires_at, revoked_at FROM map_embed_tokens
         WHERE map_id = $1 ORDER BY created_at DESC, id DESC",
    )
    .bind(map_id)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(tokens))
}

/// Revokes an embed token at once.
#[utoipa::path(delete, path = "/api/maps/{map_id}/embed-tokens/{token_id}", tag = "maps",
    params(("map_id" = Uuid, Path), ("token_id" = Uuid, Path)),
    responses((status = 204, description = "revoked"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn revoke_embed_token(
    State(state): State<AppState>,
    caller: Caller,
    Path((map_id, token_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, AppError> {
    writable_map(&state, &caller, map_id).await?;
    let revoked = sqlx::query(
        "UPDATE map_embed_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND map_id = $2",
    )
    .bind(token_id)
    .bind(map_id)
    .execute(&state.pool)
    .await?
    .rows_affected();
    if revoked == 0 {
        return Err(AppError::not_found(format!("no embed token {token_id} on this map")));
    }
    Ok(StatusCode::NO_CONTENT)
}
