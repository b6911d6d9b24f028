//! Saved maps: layered views over datasets, shared by link, exported as
//! (and imported from) MapLibre style documents.
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::Response,
};
use catalog_shared::{AppError, auth::random_secret};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{Caller, policy::visible_maps_sql},
    extract::{Json as JsonBody, Path, Query},
    state::AppState,
};

pub mod basemap;
pub mod embed;
pub mod model;
mod picture;
mod store;

use store::{check_layer_datasets, insert_map, load_map, load_maps, readable_map, with_etag, writable_map, write_map};
pub(crate) mod style;

use model::{MapInput, MapResponse};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_map, list_maps))
        .routes(routes!(get_map, update_map, delete_map))
        .routes(routes!(fork_map))
        .routes(routes!(create_share, list_shares))
        .routes(routes!(revoke_share))
        .routes(routes!(shared_map))
        .routes(routes!(style::export_style))
        .routes(routes!(picture::map_thumbnail))
        .routes(routes!(style::import_style))
        .routes(routes!(style::sprite))
        .routes(routes!(embed::create_embed_token, embed::list_embed_tokens))
        .routes(routes!(embed::revoke_embed_token))
}

/// Creates a map.
#[utoipa::path(post, path = "/api/maps", tag = "maps", request_body = model::NewMap,
    responses((status = 201, body = MapResponse), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_map(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<MapInput>,
) -> Result<Response, AppError> {
    let map = insert_map(&state, &caller, &input, None).await?;
    Ok(with_etag(map, StatusCode::CREATED))
}

#[derive(Deserialize, utoipa::IntoParams)]
struct MapListQuery {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 50)]
    limit: Limit<50, 200>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MapList {
    maps: Vec<MapResponse>,
    total: i64,
    limit: i64,
    offset: i64,
}

/// Maps the caller may see, most recently changed first.
#[utoipa::path(get, path = "/api/maps", tag = "maps", params(MapListQuery), responses((status = 200, body = MapList)))]
async fn list_maps(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<MapListQuery>,
) -> Result<Json<MapList>, AppError> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let visible = visible_maps_sql();
    let ids: Vec<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM maps WHERE {visible} ORDER BY updated_at DESC, id LIMIT $3 OFFSET $4"
    )))
    .bind(caller.user_id())
    .bind(caller.is_admin())
    .bind(limit)
    .bind(offset)
    .fetch_all(&state.pool)
    .await?;
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM maps WHERE {visible}"
    )))
    .bind(caller.user_id())
    .bind(caller.is_admin())
    .fetch_one(&state.pool)
    .await?;
    let mut conn = state.pool.acquire().await?;
    let maps = load_maps(&mut conn, &caller, &ids, &state.config.public_url).await?;
    Ok(Json(MapList {
        maps,
        total,
        limit,
        offset,
    }))
}

#[utoipa::path(get, path = "/api/maps/{map_id}", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 200, body = MapResponse), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn get_map(State(state): State<AppState>, caller: Caller, Path(id): Path<Uuid>) -> Result<Response, AppError> {
    Ok(with_etag(readable_map(&state, &caller, id).await?, StatusCode::OK))
}

/// Updates metadata and/or replaces the layers. With `If-Match` (the ETag
/// of a previous read) a map changed in the meantime answers 409.
#[utoipa::path(put, path = "/api/maps/{map_id}", tag = "maps", params(("map_id" = Uuid, Path)), request_body = MapInput,
    responses((status = 200, body = MapResponse), (status = 409, description = "changed since it was read", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn update_map(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    JsonBody(input): JsonBody<MapInput>,
) -> Result<Response, AppError> {
    writable_map(&state, &caller, id).await?;
    input.validate(false)?;
    check_layer_datasets(&state, &caller, &input).await?;
    let mut tx = state.pool.begin().await?;
    let current: DateTime<Utc> = sqlx::query_scalar("SELECT updated_at FROM maps WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    if let Some(expected) = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok())
        && expected.trim() != format!("\"{}\"", current.timestamp_micros())
        && expected.trim() != "*"
    {
        return Err(AppError::conflict(
            "the map changed since it was read; load it again and reapply the change",
        ));
    }
    write_map(&mut tx, id, &input).await?;
    let map = load_map(&mut tx, &caller, id, &state.config.public_url)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no map {id}")))?;
    tx.commit().await?;
    Ok(with_etag(map, StatusCode::OK))
}

#[utoipa::path(delete, path = "/api/maps/{map_id}", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 204, description = "deleted")))]
async fn delete_map(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    writable_map(&state, &caller, id).await?;
    sqlx::query("DELETE FROM maps WHERE id = $1")
        .bind(id)
        .execute(&state.pool)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's own copy of a map it can see.
#[utoipa::path(post, path = "/api/maps/{map_id}/fork", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 201, body = MapResponse)))]
async fn fork_map(State(state): State<AppState>, caller: Caller, Path(id): Path<Uuid>) -> Result<Response, AppError> {
    let source = readable_map(&state, &caller, id).await?;
    // A name at its limit (255 characters) keeps its start, so the copy's
    // name fits too.
    const SUFFIX: &str = " (copy)";
    let kept: String = source.name.chars().take(255 - SUFFIX.len()).collect();
    let input = style::input_of(&source, format!("{kept}{SUFFIX}"));
    let map = insert_map(&state, &caller, &input, Some(id)).await?;
    Ok(with_etag(map, StatusCode::CREATED))
}

#[derive(Serialize, utoipa::ToSchema)]
struct Share {
    token: String,
    /// The web UI's page of the shared map, for people.
    url: String,
    /// The map as JSON, for programs.
    api_url: String,
    created_at: DateTime<Utc>,
}

impl Share {
    fn new(state: &AppState, token: String, created_at: DateTime<Utc>) -> Share {
        let public = &state.config.public_url;
        Share {
            url: format!("{public}/maps/shared/{token}"),
            api_url: format!("{public}/api/maps/shared/{token}"),
            token,
            created_at,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct ShareList {
    /// The map's links that still open it, newest first.
    shares: Vec<Share>,
}

/// The map's share links that are not revoked, for whoever may change the map.
#[utoipa::path(get, path = "/api/maps/{map_id}/shares", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 200, body = ShareList)))]
async fn list_shares(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<ShareList>, AppError> {
    writable_map(&state, &caller, id).await?;
    let rows: Vec<(String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT token, created_at FROM map_shares WHERE map_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, token",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    let shares = rows
        .into_iter()
        .map(|(token, created_at)| Share::new(&state, token, created_at))
        .collect();
    Ok(Json(ShareList { shares }))
}

/// A read-only link to the map.
#[utoipa::path(post, path = "/api/maps/{map_id}/shares", tag = "maps", params(("map_id" = Uuid, Path)),
    responses((status = 201, body = Share)))]
async fn create_share(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<Share>), AppError> {
    writable_map(&state, &caller, id).await?;
    let token = random_secret("")[..32].to_string();
    let created_at: DateTime<Utc> = sqlx::query_scalar(
        "INSERT INTO map_shares (token, map_id, created_by) VALUES ($1, $2, $3) RETURNING created_at",
    )
    .bind(&token)
    .bind(id)
    .bind(caller.user_id())
    .fetch_one(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(Share::new(&state, token, created_at))))
}

#[utoipa::path(delete, path = "/api/maps/{map_id}/shares/{token}", tag = "maps", params(("map_id" = Uuid, Path), ("token" = String, Path)),
    responses((status = 204, description = "revoked")))]
async fn revoke_share(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, token)): Path<(Uuid, String)>,
) -> Result<StatusCode, AppError> {
    writable_map(&state, &caller, id).await?;
    let revoked =
        sqlx::query("UPDATE map_shares SET revoked_at = coalesce(revoked_at, now()) WHERE token = $1 AND map_id = $2")
            .bind(&token)
            .bind(id)
            .execute(&state.pool)
            .await?
            .rows_affected();
    if revoked == 0 {
        return Err(AppError::not_found("no such share link"));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A shared map, read-only. 404 for an unknown link and 410 for a revoked
/// one, whatever credential is sent (this route reads none, so its reader
/// is anonymous and sees only the layers of public datasets).
#[utoipa::path(get, path = "/api/maps/shared/{token}", tag = "maps", params(("token" = String, Path)),
    responses((status = 200, body = MapResponse), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 410, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn shared_map(State(state): State<AppState>, Path(token): Path<String>) -> Result<Json<MapResponse>, AppError> {
    let share: Option<(Uuid, bool)> =
        sqlx::query_as("SELECT map_id, revoked_at IS NOT NULL FROM map_shares WHERE token = $1")
            .bind(&token)
            .fetch_optional(&state.pool)
            .await?;
    match share {
        None => Err(AppError::not_found("no such shared map link")),
        Some((_, true)) => Err(AppError::new(StatusCode::GONE, "this shared map link was revoked")),
        Some((map_id, false)) => {
            let mut conn = state.pool.acquire().await?;
            load_map(&mut conn, &Caller::default(), map_id, &state.config.public_url)
                .await?
                .map(Json)
                .ok_or_else(|| AppError::not_found("no such shared map link"))
        }
    }
}
