//! Catalog search: ranked full-text search over datasets (title, keywords,
//! summary, column names) with filters, facet counts, and saved searches.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::AppError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::types::Json as SqlJson;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{Caller, policy::visible_to_caller},
    dataset_record::{DATASET_COLUMNS, Dataset},
    extract::{Json as JsonBody, Path, Query},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_datasets))
        .routes(routes!(facets))
        .routes(routes!(save_search, list_saved))
        .routes(routes!(run_saved))
        .routes(routes!(delete_saved))
}

/// What a search asks for; also what a saved search keeps.
#[derive(Clone, Debug, Default, Deserialize, Serialize, utoipa::ToSchema, utoipa::IntoParams)]
pub struct SearchQuery {
    /// words to look for (web-search syntax: quotes, OR, -word); text
    /// holds no NUL, here and in every field below
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    q: Option<String>,
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    geometry_type: Option<String>,
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    visibility: Option<String>,
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    keyword: Option<String>,
    /// the owner's username
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    owner: Option<String>,
    /// source format: gpkg, shapefile, geojson, csv, postgis
    #[schema(pattern = r"^[^\u0000]*$")]
    #[param(pattern = r"^[^\u0000]*$")]
    format: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 200, default = 20)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 20)]
    limit: Limit<20, 200>,
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, default = 0)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

/// The weighted document a dataset is found by.
const DOCUMENT: &str = "setweight(to_tsvector('simple', coalesce(d.title, '')), 'A')
    || setweight(to_tsvector('simple', array_to_string(d.keywords, ' ')), 'B')
    || setweight(to_tsvector('simple', coalesce(d.summary, '')), 'C')
    || setweight(to_tsvector('simple', coalesce(jsonb_path_query_array(d.column_info, '$[*].original_name')::text, '')), 'D')";

/// Conditions of a search over `datasets d`: $1 caller, $2 admin, then
/// q, geometry type, visibility, keyword, owner, format.
fn conditions() -> String {
    format!(
        "{visible}
         AND ($3::text IS NULL OR ({DOCUMENT}) @@ websearch_to_tsquery('simple', $3))
         AND ($4::text IS NULL OR d.geometry_type = $4)
         AND ($5::text IS NULL OR d.visibility = $5)
         AND ($6::text IS NULL OR $6 = ANY(d.keywords))
         AND ($7::text IS NULL OR EXISTS (SELECT 1 FROM users o WHERE o.id = d.created_by AND lower(o.username) = lower($7)))
         AND ($8::text IS NULL OR d.source_format = $8)",
        visible = visible_to_caller("d")
    )
}

fn bind_search<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    caller: &Caller,
    s: &'q SearchQuery,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(s.q.as_deref().filter(|q| !q.trim().is_empty()))
        .bind(&s.geometry_type)
        .bind(&s.visibility)
        .bind(&s.keyword)
        .bind(&s.owner)
        .bind(&s.format)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct SearchHit {
    #[serde(flatten)]
    dataset: Dataset,
    /// The owner's username (as a map's `created_by_username`); null when
    /// the account is gone.
    created_by_username: Option<String>,
    rank: f32,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct SearchResults {
    results: Vec<SearchHit>,
    total: i64,
    limit: i64,
    offset: i64,
}

#[derive(sqlx::FromRow)]
struct HitRow {
    #[sqlx(flatten)]
    dataset: Dataset,
    created_by_username: Option<String>,
    rank: f32,
    total: i64,
}

async fn run_search(state: &AppState, caller: &Caller, s: &SearchQuery) -> Result<SearchResults, AppError> {
    let (limit, offset) = (s.limit.get(), s.offset.get());
    if s.q.as_ref().is_some_and(|q| q.chars().count() > 500) {
        return Err(AppError::bad_request("q must be at most 500 characters"));
    }
    let columns: String = DATASET_COLUMNS
        .split(',')
        .map(|c| format!("d.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns},
                (SELECT o.username FROM users o WHERE o.id = d.created_by) AS created_by_username,
                CASE WHEN $3::text IS NULL THEN 0 ELSE ts_rank_cd({DOCUMENT}, websearch_to_tsquery('simple', $3)) END::real AS rank,
                count(*) OVER () AS total
         FROM datasets d WHERE {} ORDER BY rank DESC, d.updated_at DESC, d.id LIMIT {limit} OFFSET {offset}",
        conditions()
    );
    let rows: Vec<HitRow> = bind_search(sqlx::query_as(sqlx::AssertSqlSafe(sql)), caller, s)
        .fetch_all(state.db.reader(caller.user_id(), 0).await.pool)
        .await?;
    let total = rows.first().map_or(0, |r| r.total);
    Ok(SearchResults {
        results: rows
            .into_iter()
            .map(|r| SearchHit {
                dataset: r.dataset,
                created_by_username: r.created_by_username,
                rank: r.rank,
            })
            .collect(),
        total,
        limit,
        offset,
    })
}

/// Datasets matching words and filters, best match first.
#[utoipa::path(get, path = "/api/search/datasets", tag = "search", params(SearchQuery), responses((status = 200, body = SearchResults)))]
async fn search_datasets(
    State(state): State<AppState>,
    caller: Caller,
    Query(s): Query<SearchQuery>,
) -> Result<Json<SearchResults>, AppError> {
    Ok(Json(run_search(&state, &caller, &s).await?))
}

/// Counts of the matching datasets by geometry type, visibility, keyword,
/// owner and format.
#[utoipa::path(get, path = "/api/search/facets", tag = "search", params(SearchQuery), responses((status = 200, description = "facet counts")))]
async fn facets(
    State(state): State<AppState>,
    caller: Caller,
    Query(s): Query<SearchQuery>,
) -> Result<Json<Value>, AppError> {
    let facets = [
        ("geometry_type", "coalesce(d.geometry_type, 'none')"),
        ("visibility", "d.visibility"),
        (
            "keyword",
            "unnest(CASE WHEN cardinality(d.keywords) = 0 THEN NULL ELSE d.keywords END)",
        ),
        (
            "owner",
            "coalesce((SELECT username FROM users o WHERE o.id = d.created_by), 'unknown')",
        ),
        ("format", "coalesce(d.source_format, 'unknown')"),
    ];
    let mut out = Map::new();
    for (name, expr) in facets {
        let sql = format!(
            "SELECT value, count(*) FROM (SELECT {expr} AS value FROM datasets d WHERE {}) v
             WHERE value IS NOT NULL GROUP BY value ORDER BY count(*) DESC, value",
            conditions()
        );
        let rows: Vec<(String, i64)> = bind_search(sqlx::query_as(sqlx::AssertSqlSafe(sql)), &caller, &s)
            .fetch_all(state.db.reader(caller.user_id(), 0).await.pool)
            .await?;
        out.insert(
            name.to_string(),
            Value::Object(rows.into_iter().map(|(k, n)| (k, Value::from(n))).collect()),
        );
    }
    Ok(Json(Value::Object(out)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewSavedSearch {
    /// 1 to 255 characters, not only blanks, no NUL (which text cannot hold).
    #[schema(
        max_length = 255,
        pattern = r"^[^\u0000]*[^\u0000\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$"
    )]
    name: String,
    query: SearchQuery,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
struct SavedSearch {
    id: Uuid,
    name: String,
    #[schema(value_type = Object)]
    query: SqlJson<Value>,
    created_at: DateTime<Utc>,
}

/// Keeps a search under a name, for the caller.
#[utoipa::path(post, path = "/api/search/saved", tag = "search", request_body = NewSavedSearch, responses((status = 201, body = SavedSearch)))]
async fn save_search(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewSavedSearch>,
) -> Result<(StatusCode, Json<SavedSearch>), AppError> {
    let user = caller.signed_in()?;
    if body.name.trim().is_empty() || body.name.chars().count() > 255 {
        return Err(AppError::unprocessable("name must be 1 to 255 characters"));
    }
    // Kept as JSON, which PostgreSQL stores without NUL, as it does text.
    let query = serde_json::to_string(&body.query).map_err(AppError::internal)?;
    if body.name.contains('\0') || query.contains("\\u0000") {
        return Err(AppError::unprocessable("a saved search holds no NUL character"));
    }
    let saved = sqlx::query_as(
        "INSERT INTO saved_searches (id, user_id, name, query) VALUES ($1, $2, $3, $4) RETURNING id, name, query, created_at",
    )
    .bind(Uuid::now_v7())
    .bind(user.id)
    .bind(body.name.trim())
    .bind(SqlJson(&body.query))
    .fetch_one(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

/// The caller's saved searches.
#[utoipa::path(get, path = "/api/search/saved", tag = "search", responses((status = 200, body = Vec<SavedSearch>)))]
async fn list_saved(State(state): State<AppState>, caller: Caller) -> Result<Json<Vec<SavedSearch>>, AppError> {
    let user = caller.signed_in()?;
    let saved = sqlx::query_as(
        "SELECT id, name, query, created_at FROM saved_searches WHERE user_id = $1 ORDER BY created_at DESC",
    )
    .bind(user.id)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(saved))
}

async fn own_saved(state: &AppState, caller: &Caller, id: Uuid) -> Result<SavedSearch, AppError> {
    let user = caller.signed_in()?;
    sqlx::query_as("SELECT id, name, query, created_at FROM saved_searches WHERE id = $1 AND user_id = $2")
        .bind(id)
        .bind(user.id)
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no saved search {id}")))
}

/// Runs a saved search now.
#[utoipa::path(get, path = "/api/search/saved/{search_id}/run", tag = "search", params(("search_id" = Uuid, Path)), responses((status = 200, body = SearchResults)))]
async fn run_saved(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<SearchResults>, AppError> {
    let saved = own_saved(&state, &caller, id).await?;
    let query: SearchQuery = serde_json::from_value(saved.query.0).map_err(AppError::internal)?;
    Ok(Json(run_search(&state, &caller, &query).await?))
}

/// Deletes a saved search (404 unknown, 422 malformed id).
#[utoipa::path(delete, path = "/api/search/saved/{search_id}", tag = "search", params(("search_id" = Uuid, Path)), responses((status = 204, description = "deleted")))]
async fn delete_saved(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    own_saved(&state, &caller, id).await?;
    sqlx::query("DELETE FROM saved_searches WHERE id = $1")
        .bind(id)
        .execute(&state.pool)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
