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
    bbox::Bbox,
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
    /// datasets whose extent meets this box: west,south,east,north in
    /// CRS84 (west above east crosses the antimeridian), as a map's view
    #[param(value_type = Option<String>, example = "5.7,49.4,6.6,50.2")]
    #[schema(value_type = Option<String>, example = "5.7,49.4,6.6,50.2")]
    bbox: Option<String>,
    /// the order: relevance (best match first, the default; newest first
    /// without words), newest (last updated first), title (A to Z) or size
    /// (most features first)
    sort: Option<SearchOrder>,
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 200, default = 20)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 20)]
    limit: Limit<20, 200>,
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, default = 0)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
}

/// How search results are ordered.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchOrder {
    Relevance,
    Newest,
    Title,
    Size,
}

impl SearchOrder {
    fn sql(self) -> &'static str {
        match self {
            Self::Relevance => "rank DESC, d.updated_at DESC, d.id",
            Self::Newest => "d.updated_at DESC, d.id",
            Self::Title => "lower(d.title), d.id",
            Self::Size => "d.feature_count DESC NULLS LAST, d.updated_at DESC, d.id",
        }
    }
}

/// The weighted document a dataset is found by, in a text search
/// configuration: `simple` keeps words as written (names, codes, prefixes),
/// `english` finds them by stem ("airport" finds "Airports"). Column names
/// and the sample of each column's values the load kept (a county's name,
/// a species) count least.
fn document(config: &str) -> String {
    format!(
        "setweight(to_tsvector('{config}', coalesce(d.title, '')), 'A')
    || setweight(to_tsvector('{config}', array_to_string(d.keywords, ' ')), 'B')
    || setweight(to_tsvector('{config}', coalesce(d.summary, '')), 'C')
    || setweight(to_tsvector('{config}', coalesce(jsonb_path_query_array(d.column_info, '$[*].original_name')::text, '')), 'D')
    || setweight(to_tsvector('{config}', coalesce(jsonb_path_query_array(d.sample_values, '$.*[*]')::text, '')), 'D')"
    )
}

/// The words of `q` as a `simple` prefix query (`airp:* & us:*`), so a
/// word being typed finds what it begins; none when `q` uses the web
/// syntax (quotes, `-word`, `OR`), which means what it says. Words are
/// letters and digits only, so nothing of `q` is tsquery syntax.
fn prefix_query(q: &str) -> Option<String> {
    if q.contains('"')
        || q.split_whitespace()
            .any(|w| w.starts_with('-') || w == "or" || w == "OR")
    {
        return None;
    }
    let words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .map(|w| format!("{}:*", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" & "))
}

/// What matches `q` ($3) and its prefix query ($10): its stems, its words
/// as written, or the words they begin.
fn text_match() -> String {
    format!(
        "(({english}) @@ websearch_to_tsquery('english', $3)
          OR ({simple}) @@ websearch_to_tsquery('simple', $3)
          OR ($10::text IS NOT NULL AND ({simple}) @@ to_tsquery('simple', $10)))",
        english = document("english"),
        simple = document("simple"),
    )
}

/// How well a dataset matches: words as written count most, then stems,
/// then prefixes.
fn text_rank() -> String {
    format!(
        "ts_rank_cd({simple}, websearch_to_tsquery('simple', $3))
         + 0.5 * ts_rank_cd({english}, websearch_to_tsquery('english', $3))
         + CASE WHEN $10::text IS NULL THEN 0 ELSE 0.25 * ts_rank_cd({simple}, to_tsquery('simple', $10)) END",
        english = document("english"),
        simple = document("simple"),
    )
}

/// Conditions of a search over `datasets d`: $1 caller, $2 admin, then
/// q, geometry type, visibility, keyword, owner, format, bbox (float8[4])
/// and q's prefix query.
fn conditions() -> String {
    format!(
        "{visible}
         AND ($3::text IS NULL OR {text})
         AND ($4::text IS NULL OR d.geometry_type = $4)
         AND ($5::text IS NULL OR d.visibility = $5)
         AND ($6::text IS NULL OR $6 = ANY(d.keywords))
         AND ($7::text IS NULL OR EXISTS (SELECT 1 FROM users o WHERE o.id = d.created_by AND lower(o.username) = lower($7)))
         AND ($8::text IS NULL OR d.source_format = $8)
         AND ($9::float8[] IS NULL OR (cardinality(d.extent_bbox) = 4 AND ST_Intersects({extent}, {bbox})))",
        visible = visible_to_caller("d"),
        text = text_match(),
        extent = crate::bbox::sql_geometry("d.extent_bbox"),
        bbox = crate::bbox::sql_geometry("$9"),
    )
}

/// The parts of a search the SQL takes checked: q (blank is none), its
/// prefix query, and the box.
struct Terms<'q> {
    q: Option<&'q str>,
    prefix: Option<String>,
    bbox: Option<Vec<f64>>,
}

impl<'q> Terms<'q> {
    fn of(s: &'q SearchQuery) -> Result<Self, AppError> {
        let q = s.q.as_deref().filter(|q| !q.trim().is_empty());
        if q.is_some_and(|q| q.chars().count() > 500) {
            return Err(AppError::bad_request("q must be at most 500 characters"));
        }
        let bbox = s
            .bbox
            .as_deref()
            .map(|b| b.parse::<Bbox>().map(|b| b.to_array().to_vec()))
            .transpose()?;
        Ok(Self {
            q,
            prefix: q.and_then(prefix_query),
            bbox,
        })
    }
}

fn bind_search<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    caller: &Caller,
    s: &'q SearchQuery,
    terms: &'q Terms<'q>,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(terms.q)
        .bind(&s.geometry_type)
        .bind(&s.visibility)
        .bind(&s.keyword)
        .bind(&s.owner)
        .bind(&s.format)
        .bind(&terms.bbox)
        .bind(&terms.prefix)
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
    let terms = Terms::of(s)?;
    let order = match s.sort {
        Some(order) => order,
        None if terms.q.is_some() => SearchOrder::Relevance,
        None => SearchOrder::Newest,
    };
    let columns: String = DATASET_COLUMNS
        .split(',')
        .map(|c| format!("d.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns},
                (SELECT o.username FROM users o WHERE o.id = d.created_by) AS created_by_username,
                CASE WHEN $3::text IS NULL THEN 0 ELSE {rank} END::real AS rank,
                count(*) OVER () AS total
         FROM datasets d WHERE {} ORDER BY {order} LIMIT {limit} OFFSET {offset}",
        conditions(),
        rank = text_rank(),
        order = order.sql(),
    );
    let rows: Vec<HitRow> = bind_search(sqlx::query_as(sqlx::AssertSqlSafe(sql)), caller, s, &terms)
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
#[utoipa::path(get, path = "/api/search/datasets", tag = "search", params(SearchQuery),
    responses((status = 200, body = SearchResults),
              (status = 400, description = "a bad bbox, sort or parameter", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn search_datasets(
    State(state): State<AppState>,
    caller: Caller,
    Query(s): Query<SearchQuery>,
) -> Result<Json<SearchResults>, AppError> {
    Ok(Json(run_search(&state, &caller, &s).await?))
}

/// Counts of the matching datasets by geometry type, visibility, keyword,
/// owner and format.
#[utoipa::path(get, path = "/api/search/facets", tag = "search", params(SearchQuery),
    responses((status = 200, description = "facet counts"),
              (status = 400, description = "a bad bbox, sort or parameter", body = catalog_shared::Problem, content_type = "application/problem+json")))]
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
    let terms = Terms::of(&s)?;
    let mut out = Map::new();
    for (name, expr) in facets {
        let sql = format!(
            "SELECT value, count(*) FROM (SELECT {expr} AS value FROM datasets d WHERE {}) v
             WHERE value IS NOT NULL GROUP BY value ORDER BY count(*) DESC, value",
            conditions()
        );
        let rows: Vec<(String, i64)> = bind_search(sqlx::query_as(sqlx::AssertSqlSafe(sql)), &caller, &s, &terms)
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
