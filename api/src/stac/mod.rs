//! A STAC API over the catalog (core and item search): every dataset the
//! caller may see is an item of the collection `datasets`, its geometry the
//! dataset's extent, its asset the OGC items route.
use axum::{Json, extract::State};
use catalog_shared::{AppError, datasets::PublicationStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{FromRow, Row};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::Limit;
use crate::{
    access::{Caller, policy::visible_to_caller},
    bbox::Bbox,
    datasets::record::{DATASET_COLUMNS, Dataset},
    extract::{Json as JsonBody, Query},
    interval::Interval,
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(landing))
        .routes(routes!(search_get, search_post))
}

const STAC_VERSION: &str = "1.0.0";
const COLLECTION: &str = "datasets";

/// The STAC landing page (a Catalog).
#[utoipa::path(get, path = "/api/stac", operation_id = "stac_landing", tag = "stac", responses((status = 200, description = "STAC catalog")))]
async fn landing(State(state): State<AppState>) -> Json<Value> {
    let base = format!("{}/api/stac", state.config.public_url);
    Json(json!({
        "type": "Catalog",
        "stac_version": STAC_VERSION,
        "id": "spatial-data-catalog",
        "title": "Spatial Data Catalog",
        "description": "Every dataset of the catalog as a STAC item",
        "conformsTo": [
            "https://api.stacspec.org/v1.0.0/core",
            "https://api.stacspec.org/v1.0.0/item-search",
        ],
        "links": [
            {"rel": "self", "href": base, "type": "application/json"},
            {"rel": "root", "href": base, "type": "application/json"},
            {"rel": "search", "href": format!("{base}/search"), "type": "application/geo+json", "method": "GET"},
            {"rel": "search", "href": format!("{base}/search"), "type": "application/geo+json", "method": "POST"},
        ]
    }))
}

/// Item search parameters, from the query string or a POST body.
#[derive(Clone, Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
pub struct SearchRequest {
    /// minx,miny,maxx,maxy in CRS84 (or six numbers with heights); not
    /// with intersects.
    #[schema(value_type = Option<Vec<f64>>, min_items = 4, max_items = 6)]
    #[serde(skip_serializing_if = "Option::is_none")]
    bbox: Option<Value>,
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    intersects: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    datetime: Option<String>,
    #[schema(value_type = Option<Vec<String>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    collections: Option<Value>,
    #[schema(value_type = Option<Vec<Uuid>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    ids: Option<Value>,
    /// Items per page, default 10.
    #[schema(minimum = 1, maximum = 1000)]
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<i64>,
    /// paging cursor from a `next` link
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

/// A comma-separated string (GET) or an array (POST) as a list.
fn list_of<T: std::str::FromStr>(name: &str, value: &Option<Value>) -> Result<Option<Vec<T>>, AppError> {
    let bad = || AppError::bad_request(format!("{name} is not a valid list"));
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .split(',')
            .map(|p| p.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()
            .map(Some),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.parse().map_err(|_| bad()),
                other => other.to_string().parse().map_err(|_| bad()),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        _ => Err(bad()),
    }
}

/// Where a search came from, so its `next` link repeats it the same way:
/// a GET with the same query string (the caller's `api_key` included), or
/// a POST with the same body.
enum Origin {
    Get(Vec<(String, String)>),
    Post,
}

impl Origin {
    fn next_link(&self, href: &str, request: &SearchRequest, token: &str) -> Value {
        match self {
            Origin::Get(pairs) => {
                let query = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(pairs.iter().filter(|(k, _)| k != "token"))
                    .append_pair("token", token)
                    .finish();
                json!({"rel": "next", "href": format!("{href}?{query}"), "type": "application/geo+json", "method": "GET"})
            }
            Origin::Post => {
                let body = SearchRequest {
                    token: Some(token.to_string()),
                    ..request.clone()
                };
                json!({"rel": "next", "href": href, "type": "application/geo+json", "method": "POST", "body": body})
            }
        }
    }
}

/// The paging cursor: the last item's creation time (microseconds) and id.
struct Cursor {
    created_at: DateTime<Utc>,
    id: Uuid,
}

impl Cursor {
    fn parse(token: &str) -> Result<Self, AppError> {
        let bad = || AppError::bad_request("token is not a paging token of this service; use the next link");
        let (micros, id) = token.split_once('.').ok_or_else(bad)?;
        Ok(Self {
            created_at: DateTime::from_timestamp_micros(micros.parse().map_err(|_| bad())?).ok_or_else(bad)?,
            id: id.parse().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.created_at.timestamp_micros(), self.id.simple())
    }
}

fn item_of(d: &Dataset, base: &str) -> Value {
    let geometry = d.extent_bbox.as_deref().and_then(crate::bbox::geojson);
    json!({
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "id": d.id,
        "collection": COLLECTION,
        "geometry": geometry,
        "bbox": d.extent_bbox,
        "properties": {
            "title": d.title,
            "description": d.summary,
            "datetime": d.updated_at,
            "created": d.created_at,
            "updated": d.updated_at,
            "keywords": d.keywords,
            "geometry_type": d.geometry_type,
            "feature_count": d.feature_count,
        },
        "links": [
            {"rel": "self", "href": format!("{base}/api/datasets/{}", d.id), "type": "application/json"},
            {"rel": "root", "href": format!("{base}/api/stac"), "type": "application/json"},
        ],
        "assets": {
            "features": {"href": format!("{base}/api/collections/{}/items", d.id), "type": "application/geo+json", "title": "OGC API Features items", "roles": ["data"]}
        },
    })
}

/// The dataset's extent as a geometry (a point when the extent is one), in
/// two parts across the antimeridian.
const EXTENT: &str = "CASE WHEN d.extent_bbox[1] <= d.extent_bbox[3]
      THEN ST_SetSRID(ST_MakeBox2D(ST_Point(d.extent_bbox[1], d.extent_bbox[2]), ST_Point(d.extent_bbox[3], d.extent_bbox[4]))::geometry, 4326)
      ELSE ST_Collect(ST_SetSRID(ST_MakeBox2D(ST_Point(d.extent_bbox[1], d.extent_bbox[2]), ST_Point(180, d.extent_bbox[4]))::geometry, 4326),
                      ST_SetSRID(ST_MakeBox2D(ST_Point(-180, d.extent_bbox[2]), ST_Point(d.extent_bbox[3], d.extent_bbox[4]))::geometry, 4326)) END";

async fn search(state: &AppState, caller: &Caller, r: &SearchRequest, origin: &Origin) -> Result<Value, AppError> {
    let Some(search) = StacSearch::of(r)? else {
        return Ok(
            json!({"type": "FeatureCollection", "features": [], "links": [], "numberMatched": 0, "numberReturned": 0}),
        );
    };
    let (mut datasets, total) = search.run(state, caller).await?;
    let base = &state.config.public_url;
    let mut links = Vec::new();
    if datasets.len() as i64 > search.limit {
        datasets.truncate(search.limit as usize);
        let last = datasets.last().expect("a full page");
        let token = Cursor {
            created_at: last.created_at,
            id: last.id,
        }
        .to_string();
        links.push(origin.next_link(&format!("{base}/api/stac/search"), r, &token));
    }
    Ok(json!({
        "type": "FeatureCollection",
        "features": datasets.iter().map(|d| item_of(d, base)).collect::<Vec<_>>(),
        "links": links,
        "numberMatched": total,
        "numberReturned": datasets.len(),
    }))
}

/// A search request, checked: every value typed.
struct StacSearch {
    limit: i64,
    after: Option<Cursor>,
    bbox: Option<Vec<f64>>,
    intersects: Option<String>,
    ids: Option<Vec<Uuid>>,
    interval: Interval,
}

impl StacSearch {
    /// The checked search, or None when it names only other collections.
    fn of(r: &SearchRequest) -> Result<Option<Self>, AppError> {
        // Keyset paging: the page size is all the pager takes from `page`.
        let limit = Limit::<10, 1000>::of(r.limit)?.get();
        let after = r.token.as_deref().map(Cursor::parse).transpose()?;
        let bbox: Option<Vec<f64>> = list_of("bbox", &r.bbox)?;
        let bbox = bbox
            .map(|numbers| Bbox::from_numbers(&numbers).map(|b| b.to_array().to_vec()))
            .transpose()?;
        if bbox.is_some() && r.intersects.is_some() {
            return Err(AppError::bad_request("bbox and intersects cannot be used together"));
        }
        let collections: Option<Vec<String>> = list_of("collections", &r.collections)?;
        if collections.as_ref().is_some_and(|c| !c.iter().any(|c| c == COLLECTION)) {
            return Ok(None);
        }
        Ok(Some(Self {
            limit,
            after,
            bbox,
            intersects: r.intersects.as_ref().map(|g| g.to_string()),
            ids: list_of("ids", &r.ids).unwrap_or(Some(Vec::new())),
            interval: r
                .datetime
                .as_deref()
                .map(Interval::parse)
                .transpose()?
                .unwrap_or_default(),
        }))
    }

    /// One page (and one row more, to tell whether another follows) of the
    /// datasets the caller may see, and how many match in all.
    async fn run(&self, state: &AppState, caller: &Caller) -> Result<(Vec<Dataset>, i64), AppError> {
        let sql = format!(
            include_str!("search.sql"),
            columns = DATASET_COLUMNS
                .split(',')
                .map(|c| format!("d.{}", c.trim()))
                .collect::<Vec<_>>()
                .join(", "),
            visible = visible_to_caller("d"),
            ready = PublicationStatus::Ready,
            extent = EXTENT,
            limit = self.limit + 1,
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(caller.user_id())
            .bind(caller.is_admin())
            .bind(&self.bbox)
            .bind(&self.intersects)
            .bind(&self.ids)
            .bind(self.interval.start)
            .bind(self.interval.end)
            .bind(self.after.as_ref().map(|c| c.created_at))
            .bind(self.after.as_ref().map(|c| c.id))
            .fetch_all(&state.pool)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22") || c == "XX000") => {
                    AppError::bad_request(format!("intersects is not a valid GeoJSON geometry: {}", db.message()))
                }
                _ => e.into(),
            })?;
        let total: i64 = rows.first().map_or(0, |r| r.get("total_count"));
        let datasets = rows.iter().map(Dataset::from_row).collect::<Result<_, _>>()?;
        Ok((datasets, total))
    }
}

/// STAC item search in the query string; lists are comma-separated.
#[utoipa::path(get, path = "/api/stac/search", tag = "stac",
    params(
        ("bbox" = Option<Vec<f64>>, Query, description = "minx,miny,maxx,maxy in CRS84; not with intersects"),
        ("intersects" = Option<String>, Query, description = "a GeoJSON geometry, as JSON text; not with bbox"),
        ("datetime" = Option<String>, Query, description = "an RFC 3339 instant or date, or an interval start/end whose open ends are `..` or empty"),
        ("collections" = Option<Vec<String>>, Query, description = "collection ids"),
        ("ids" = Option<Vec<Uuid>>, Query, description = "item ids"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "items per page, default 10"),
        ("token" = Option<String>, Query, description = "paging cursor from a `next` link")),
    responses((status = 200, description = "STAC ItemCollection")))]
async fn search_get(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Json<Value>, AppError> {
    let value = |k: &str| q.get(k).map(|v| Value::String(v.clone()));
    let request = SearchRequest {
        bbox: value("bbox"),
        intersects: q
            .get("intersects")
            .map(|s| serde_json::from_str(s))
            .transpose()
            .map_err(|_| AppError::bad_request("intersects is not JSON"))?,
        datetime: q.get("datetime").cloned(),
        collections: value("collections"),
        ids: value("ids"),
        limit: q
            .get("limit")
            .map(|l| l.parse())
            .transpose()
            .map_err(|_| AppError::bad_request("limit must be an integer"))?,
        token: q.get("token").cloned(),
    };
    let origin = Origin::Get(q.into_iter().collect());
    Ok(Json(search(&state, &caller, &request, &origin).await?))
}

/// STAC item search (read-only keys may use it).
#[utoipa::path(post, path = "/api/stac/search", tag = "stac", request_body = SearchRequest, responses((status = 200, description = "STAC ItemCollection")))]
async fn search_post(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<SearchRequest>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(search(&state, &caller, &request, &Origin::Post).await?))
}
