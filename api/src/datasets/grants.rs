//! Who else may see or change a restricted dataset: grants, managed by
//! its owner or an admin.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{AppError, auth::Permission};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::dataset_for, policy::DatasetAction},
    extract::{Json as JsonBody, Path},
    state::AppState,
};

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Grant {
    user_id: Uuid,
    username: String,
    permission: Permission,
    created_at: DateTime<Utc>,
}

/// Who was granted access to the dataset (owner or admin).
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/grants", tag = "datasets", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = Vec<Grant>)))]
pub(super) async fn list_grants(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Vec<Grant>>, AppError> {
    dataset_for(&state, &caller, id, DatasetAction::ManageGrants).await?;
    let grants = sqlx::query_as(
        "SELECT g.user_id, u.username, g.permission, g.created_at FROM dataset_grants g JOIN users u ON u.id = g.user_id
         WHERE g.dataset_id = $1 ORDER BY g.created_at",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(grants))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrantRequest {
    permission: Permission,
}

/// Grants (or changes) the permission of the user `who` names: `users.id
/// = $2` or, for a username, `lower(users.username) = lower($2)`.
async fn upsert_grant(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    who: &str,
    by_username: bool,
    permission: Permission,
) -> Result<Option<Grant>, AppError> {
    dataset_for(state, caller, id, DatasetAction::ManageGrants).await?;
    let user = if by_username {
        "lower(username) = lower($2)"
    } else {
        "id = $2::uuid"
    };
    let sql = format!(
        "WITH upsert AS (
            INSERT INTO dataset_grants (dataset_id, user_id, permission, granted_by)
            SELECT $1, id, $3, $4 FROM users WHERE {user}
            ON CONFLICT (dataset_id, user_id) DO UPDATE SET permission = excluded.permission
            RETURNING user_id, permission, created_at)
         SELECT upsert.user_id, u.username, upsert.permission, upsert.created_at FROM upsert JOIN users u ON u.id = upsert.user_id"
    );
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(who)
        .bind(permission)
        .bind(caller.user_id())
        .fetch_optional(&state.pool)
        .await?)
}

/// Grants a user read or write access to a dataset (owner or admin).
#[utoipa::path(put, path = "/api/datasets/{dataset_id}/grants/{user_id}", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("user_id" = Uuid, Path)), request_body = GrantRequest,
    responses((status = 200, body = Grant), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn put_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, user_id)): Path<(Uuid, Uuid)>,
    JsonBody(body): JsonBody<GrantRequest>,
) -> Result<Json<Grant>, AppError> {
    upsert_grant(&state, &caller, id, &user_id.to_string(), false, body.permission)
        .await?
        .map(Json)
        .ok_or_else(|| AppError::not_found(format!("no user {user_id}")))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrantByName {
    /// The person's exact username (letter case aside; surrounding blanks
    /// are trimmed).
    #[schema(
        max_length = 255,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    username: String,
    permission: Permission,
}

/// Grants read or write access to the person with this exact username
/// (owner or admin): owners who are not admins cannot list accounts, so
/// they name the person. 404 when no account has that username.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/grants", tag = "datasets",
    params(("dataset_id" = Uuid, Path)), request_body = GrantByName,
    responses((status = 200, body = Grant), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn grant_by_username(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<GrantByName>,
) -> Result<Json<Grant>, AppError> {
    let username = body.username.trim();
    if username.is_empty() || username.chars().count() > 255 {
        return Err(AppError::invalid_field("username", "must be 1 to 255 characters"));
    }
    upsert_grant(&state, &caller, id, username, true, body.permission)
        .await?
        .map(Json)
        .ok_or_else(|| AppError::not_found(format!("no account has the username {username:?}")))
}

/// Revokes a user's grant on a dataset (owner or admin).
#[utoipa::path(delete, path = "/api/datasets/{dataset_id}/grants/{user_id}", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("user_id" = Uuid, Path)),
    responses((status = 204, description = "revoked"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn delete_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, user_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, AppError> {
    dataset_for(&state, &caller, id, DatasetAction::ManageGrants).await?;
    let deleted = sqlx::query("DELETE FROM dataset_grants WHERE dataset_id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(&state.pool)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(AppError::not_found(format!(
            "user {user_id} holds no grant on this dataset"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}
