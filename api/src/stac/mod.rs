//! A STAC API over the catalog: core, collections, OGC API Features items
//! and item search. Every published dataset the caller may see is an item
//! (`item`) of the collection of its kind, `vector` or `raster`; the
//! collection id `datasets` of earlier versions still names both in
//! search's `collections`.
use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    datasets::{DatasetKind, PublicationStatus},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{FromRow, Row};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::visible_dataset, policy::visible_to_caller},
    bbox::Bbox,
    dataset_record::{DATASET_COLUMNS, Dataset},
    extract::{Json as JsonBody, Path, Query},
    interval::Interval,
    state::AppState,
};

mod item;

use item::STAC_VERSION;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(landing))
        .routes(routes!(conformance))
        .routes(routes!(collections))
        .routes(routes!(collection))
        .routes(routes!(collection_items))
        .routes(routes!(collection_item))
        .routes(routes!(search_get, search_post))
}

/// The collection id of earlier versions, when every item was in one:
/// still taken by search's `collections`, for both kinds.
const ALL_DATASETS: &str = "datasets";

/// The most items a page holds: a larger `limit` is clamped to it
/// (OGC API Features, which STAC API item-search follows).
const MAX_LIMIT: i64 = 200;

/// Items a page holds when the request says nothing.
const DEFAULT_LIMIT: i64 = 10;

/// The parameters of item search, in the query string (GET) and as the
/// members of the body (POST); any other is refused.
const SEARCH_PARAMETERS: [&str; 7] = ["bbox", "intersects", "datetime", "collections", "ids", "limit", "token"];

/// What the API conforms to: STAC API core, collections, OGC API Features
/// items under each collection (with the OGC classes those rest on), and
/// item search.
const CONFORMANCE: [&str; 6] = [
    "https://api.stacspec.org/v1.0.0/core",
    "https://api.stacspec.org/v1.0.0/collections",
    "https://api.stacspec.org/v1.0.0/ogcapi-features",
    "https://api.stacspec.org/v1.0.0/item-search",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
];

/// The STAC landing page (a Catalog).
#[utoipa::path(get, path = "/api/stac", operation_id = "stac_landing", tag = "stac", responses((status = 200, description = "STAC catalog")))]
async fn landing(State(state): State<AppState>) -> Json<Value> {
    let base = format!("{}/api/stac", state.config.public_url);
    let mut links = vec![
        json!({"rel": "self", "href": base, "type": "application/json"}),
        json!({"rel": "root", "href": base, "type": "application/json"}),
        json!({"rel": "conformance", "href": format!("{base}/conformance"), "type": "application/json"}),
        json!({"rel": "data", "href": format!("{base}/collections"), "type": "application/json"}),
        json!({"rel": "service-desc", "href": format!("{}/api/openapi.json", state.config.public_url),
               "type": crate::openapi::DOCUMENT_MEDIA_TYPE}),
        json!({"rel": "search", "href": format!("{base}/search"), "type": "application/geo+json", "method": "GET"}),
        json!({"rel": "search", "href": format!("{base}/search"), "type": "application/geo+json", "method": "POST"}),
    ];
    links.extend(DatasetKind::ALL.iter().map(|kind| {
        json!({"rel": "child", "href": format!("{base}/collections/{kind}"), "type": "application/json", "title": collection_title(*kind)})
    }));
    Json(json!({
        "type": "Catalog",
        "stac_version": STAC_VERSION,
        "id": "spatial-data-catalog",
        "title": "Spatial Data Catalog",
        "description": "Every dataset of the catalog as a STAC item, in the collection of its kind",
        "conformsTo": CONFORMANCE,
        "links": links,
    }))
}

/// The conformance classes of the STAC API.
#[utoipa::path(get, path = "/api/stac/conformance", operation_id = "stac_conformance", tag = "stac",
    responses((status = 200, description = "the classes the STAC API conforms to")))]
async fn conformance() -> Json<Value> {
    Json(json!({"conformsTo": CONFORMANCE}))
}

fn collection_title(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::Vector => "Vector datasets",
        DatasetKind::Raster => "Raster datasets",
    }
}

fn collection_description(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::Vector => {
            "Tables of features: each item's assets are its downloads (GeoPackage, GeoJSON, CSV, zipped shapefile), its `items` link its features through OGC API Features"
        }
        DatasetKind::Raster => {
            "Cloud-Optimized GeoTIFFs: each item's `data` asset is its COG, read in place with HTTP ranges, with the projection and raster extensions, a thumbnail and an `xyz` tile link"
        }
    }
}

/// What a collection's extent sums up, over the items the caller sees.
#[derive(FromRow)]
struct KindExtent {
    kind: DatasetKind,
    west: Option<f64>,
    south: Option<f64>,
    east: Option<f64>,
    north: Option<f64>,
    crosses: Option<bool>,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
}

/// The extents of each kind's items the caller sees.
async fn extents(state: &AppState, caller: &Caller) -> Result<Vec<KindExtent>, AppError> {
    let sql = format!(
        "SELECT d.kind, min(d.extent_bbox[1]) AS west, min(d.extent_bbox[2]) AS south,
                max(d.extent_bbox[3]) AS east, max(d.extent_bbox[4]) AS north,
                bool_or(d.extent_bbox[1] > d.extent_bbox[3]) AS crosses,
                min(d.updated_at) AS first, max(d.updated_at) AS last
           FROM datasets d WHERE {visible} AND d.status = '{ready}' GROUP BY d.kind",
        visible = visible_to_caller("d"),
        ready = PublicationStatus::Ready,
    );
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .fetch_all(state.db.reader(caller.user_id(), 0).await.pool)
        .await?)
}

/// The STAC Collection of a kind, its extent over `extent` (none: the
/// caller sees no item of it).
fn collection_of(base: &str, kind: DatasetKind, extent: Option<&KindExtent>) -> Value {
    let stac = format!("{base}/api/stac");
    let href = format!("{stac}/collections/{kind}");
    let bbox = match extent {
        // An extent across the antimeridian widens the whole to the world's width.
        Some(e) if e.crosses == Some(true) => json!([-180.0, e.south, 180.0, e.north]),
        Some(KindExtent {
            west: Some(w),
            south: Some(s),
            east: Some(e),
            north: Some(n),
            ..
        }) => json!([w, s, e, n]),
        _ => json!([-180.0, -90.0, 180.0, 90.0]),
    };
    json!({
        "type": "Collection",
        "stac_version": STAC_VERSION,
        "stac_extensions": [],
        "id": kind,
        "title": collection_title(kind),
        "description": collection_description(kind),
        // Each dataset has its own terms, said in its record.
        "license": "various",
        "extent": {
            "spatial": {"bbox": [bbox]},
            "temporal": {"interval": [[extent.and_then(|e| e.first), extent.and_then(|e| e.last)]]},
        },
        "links": [
            {"rel": "self", "href": href, "type": "application/json"},
            {"rel": "root", "href": stac, "type": "application/json"},
            {"rel": "parent", "href": stac, "type": "application/json"},
            {"rel": "items", "href": format!("{href}/items"), "type": "application/geo+json"},
        ],
    })
}

/// The kind a collection id names; 404 for any other.
fn kind_named(collection_id: &str) -> Result<DatasetKind, AppError> {
    DatasetKind::parse(collection_id).ok_or_else(|| {
        AppError::not_found(format!(
            "no STAC collection {collection_id}: the collections are vector and raster"
        ))
    })
}

/// The STAC collections: one per kind of dataset.
#[utoipa::path(get, path = "/api/stac/collections", operation_id = "stac_collections", tag = "stac",
    responses((status = 200, description = "the collections `vector` and `raster`, their extents over the items the caller sees")))]
async fn collections(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, AppError> {
    let base = &state.config.public_url;
    let extents = extents(&state, &caller).await?;
    let collections: Vec<Value> = DatasetKind::ALL
        .iter()
        .map(|kind| collection_of(base, *kind, extents.iter().find(|e| e.kind == *kind)))
        .collect();
    let href = format!("{base}/api/stac/collections");
    Ok(Json(json!({
        "collections": collections,
        "links": [
            {"rel": "self", "href": href, "type": "application/json"},
            {"rel": "root", "href": format!("{base}/api/stac"), "type": "application/json"},
            {"rel": "parent", "href": format!("{base}/api/stac"), "type": "application/json"},
        ],
    })))
}

/// One STAC collection.
#[utoipa::path(get, path = "/api/stac/collections/{collection_id}", operation_id = "stac_collection", tag = "stac",
    params(("collection_id" = inline(DatasetKind), Path, description = "the kind of dataset: vector or raster")),
    responses((status = 200, description = "STAC Collection"),
              (status = 404, description = "no such collection", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collection(
    State(state): State<AppState>,
    caller: Caller,
    Path(collection_id): Path<String>,
) -> Result<Json<Value>, AppError> {
    let kind = kind_named(&collection_id)?;
    let extents = extents(&state, &caller).await?;
    Ok(Json(collection_of(
        &state.config.public_url,
        kind,
        extents.iter().find(|e| e.kind == kind),
    )))
}

/// The query of a collection's items (OGC API Features).
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct ItemsQuery {
    /// minx,miny,maxx,maxy in CRS84 (or six numbers with heights)
    bbox: Option<String>,
    /// an RFC 3339 date-time, or an interval start/end of two, one of its ends open at most (`..` or empty)
    datetime: Option<String>,
    /// items per page, default 10; more than 200 is clamped to 200
    #[param(minimum = 1)]
    limit: Option<i64>,
    /// paging cursor from a `next` link
    token: Option<String>,
    /// collection ids, as search takes them (pystac-client sends this
    /// collection's): naming another collection finds nothing
    #[param(value_type = Option<Vec<String>>)]
    collections: Option<String>,
    /// item ids
    #[param(value_type = Option<Vec<Uuid>>)]
    ids: Option<String>,
}

/// A collection's items, paged, as search finds them.
#[utoipa::path(get, path = "/api/stac/collections/{collection_id}/items", operation_id = "stac_collection_items", tag = "stac",
    params(("collection_id" = inline(DatasetKind), Path, description = "the kind of dataset: vector or raster"), ItemsQuery),
    responses((status = 200, description = "STAC ItemCollection", content(("application/geo+json"))),
              (status = 400, description = "a malformed bbox, datetime, limit or token", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, description = "no such collection", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collection_items(
    State(state): State<AppState>,
    caller: Caller,
    Path(collection_id): Path<String>,
    Query(query): Query<ItemsQuery>,
    Query(raw): Query<std::collections::HashMap<String, String>>,
) -> Result<GeoJson, AppError> {
    let kind = kind_named(&collection_id)?;
    let request = SearchRequest {
        bbox: query.bbox.map(Value::String),
        datetime: query.datetime,
        limit: query.limit,
        token: query.token,
        collections: query.collections.map(Value::String),
        ids: query.ids.map(Value::String),
        intersects: None,
        others: Default::default(),
    };
    let href = format!("{}/api/stac/collections/{kind}/items", state.config.public_url);
    let origin = Origin::Get(raw.into_iter().collect());
    let mut page = search(&state, &caller, &request, &[kind], (&href, &origin)).await?;
    let base = &state.config.public_url;
    let collection = format!("{base}/api/stac/collections/{kind}");
    if let Some(links) = page["links"].as_array_mut() {
        links.extend([
            json!({"rel": "self", "href": href, "type": "application/geo+json"}),
            json!({"rel": "root", "href": format!("{base}/api/stac"), "type": "application/json"}),
            json!({"rel": "parent", "href": collection, "type": "application/json"}),
            json!({"rel": "collection", "href": collection, "type": "application/json"}),
        ]);
    }
    Ok(GeoJson(page))
}

/// One item: a published dataset of the collection's kind the caller may see.
#[utoipa::path(get, path = "/api/stac/collections/{collection_id}/items/{item_id}", operation_id = "stac_item", tag = "stac",
    params(("collection_id" = inline(DatasetKind), Path, description = "the kind of dataset: vector or raster"),
           ("item_id" = Uuid, Path, description = "the dataset's id")),
    responses((status = 200, description = "STAC Item", content(("application/geo+json"))),
              (status = 404, description = "no such item the caller may see in this collection", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collection_item(
    State(state): State<AppState>,
    caller: Caller,
    Path((collection_id, item_id)): Path<(String, String)>,
) -> Result<GeoJson, AppError> {
    let kind = kind_named(&collection_id)?;
    let missing = || AppError::not_found(format!("no item {item_id} in the STAC collection {kind}"));
    let id: Uuid = item_id.parse().map_err(|_| missing())?;
    let dataset = visible_dataset(&state, &caller, id)
        .await
        .map_err(|e| if e.status().as_u16() == 404 { missing() } else { e })?;
    // Search lists published datasets only; an item is what search finds.
    if dataset.kind != kind || dataset.status != PublicationStatus::Ready {
        return Err(missing());
    }
    Ok(GeoJson(item::item(&state, &caller, &dataset)))
}

/// A JSON document answered as `application/geo+json`.
struct GeoJson(Value);

impl axum::response::IntoResponse for GeoJson {
    fn into_response(self) -> axum::response::Response {
        (
            [(axum::http::header::CONTENT_TYPE, "application/geo+json")],
            Json(self.0),
        )
            .into_response()
    }
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
    /// an RFC 3339 date-time, or an interval start/end of two, one of its
    /// ends open at most (`..` or empty)
    #[serde(skip_serializing_if = "Option::is_none")]
    datetime: Option<String>,
    #[schema(value_type = Option<Vec<String>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    collections: Option<Value>,
    #[schema(value_type = Option<Vec<Uuid>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    ids: Option<Value>,
    /// Items per page, default 10; more than 200 is clamped to 200.
    #[schema(minimum = 1)]
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<i64>,
    /// paging cursor from a `next` link
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Members of a POST body that search does not take: refused.
    #[serde(flatten, skip_serializing)]
    #[schema(ignore)]
    others: std::collections::BTreeMap<String, Value>,
}

impl SearchRequest {
    /// A POST body as item search takes it: only its own members, `bbox`
    /// an array of four or six numbers.
    fn check_body(&self) -> Result<(), AppError> {
        if let Some(name) = self.others.keys().next() {
            return Err(unsupported(name));
        }
        match &self.bbox {
            None => Ok(()),
            Some(Value::Array(numbers)) if matches!(numbers.len(), 4 | 6) && numbers.iter().all(Value::is_number) => {
                Ok(())
            }
            Some(_) => Err(AppError::bad_request("bbox must be an array of 4 or 6 numbers")),
        }
    }
}

/// The refusal of a parameter (or body member) search does not take.
fn unsupported(name: &str) -> AppError {
    AppError::bad_request(format!(
        "{name:?} is not a parameter of item search; it takes {}",
        SEARCH_PARAMETERS.join(", ")
    ))
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

/// The dataset's extent as a geometry (a point when the extent is one), in
/// two parts across the antimeridian.
const EXTENT: &str = "CASE WHEN d.extent_bbox[1] <= d.extent_bbox[3]
      THEN ST_SetSRID(ST_MakeBox2D(ST_Point(d.extent_bbox[1], d.extent_bbox[2]), ST_Point(d.extent_bbox[3], d.extent_bbox[4]))::geometry, 4326)
      ELSE ST_Collect(ST_SetSRID(ST_MakeBox2D(ST_Point(d.extent_bbox[1], d.extent_bbox[2]), ST_Point(180, d.extent_bbox[4]))::geometry, 4326),
                      ST_SetSRID(ST_MakeBox2D(ST_Point(-180, d.extent_bbox[2]), ST_Point(d.extent_bbox[3], d.extent_bbox[4]))::geometry, 4326)) END";

/// One page of the items a search finds among `kinds`, with its `next`
/// link (to `href`, repeating the request as it came).
async fn search(
    state: &AppState,
    caller: &Caller,
    r: &SearchRequest,
    kinds: &[DatasetKind],
    (href, origin): (&str, &Origin),
) -> Result<Value, AppError> {
    let Some(search) = StacSearch::of(r, kinds)? else {
        return Ok(
            json!({"type": "FeatureCollection", "features": [], "links": [], "numberMatched": 0, "numberReturned": 0}),
        );
    };
    let (mut datasets, total) = search.run(state, caller).await?;
    let mut links = Vec::new();
    if datasets.len() as i64 > search.limit {
        datasets.truncate(search.limit as usize);
        let last = datasets.last().expect("a full page");
        let token = Cursor {
            created_at: last.created_at,
            id: last.id,
        }
        .to_string();
        links.push(origin.next_link(href, r, &token));
    }
    Ok(json!({
        "type": "FeatureCollection",
        "features": datasets.iter().map(|d| item::item(state, caller, d)).collect::<Vec<_>>(),
        "links": links,
        "numberMatched": total,
        "numberReturned": datasets.len(),
    }))
}

/// A search request, checked: every value typed.
struct StacSearch {
    /// The kinds whose collections are searched.
    kinds: Vec<DatasetKind>,
    limit: i64,
    after: Option<Cursor>,
    bbox: Option<Vec<f64>>,
    intersects: Option<String>,
    ids: Option<Vec<Uuid>>,
    interval: Interval,
}

impl StacSearch {
    /// The checked search among `kinds`, or None when it names only other
    /// collections.
    fn of(r: &SearchRequest, kinds: &[DatasetKind]) -> Result<Option<Self>, AppError> {
        // Keyset paging: the page size is all the pager takes from `page`.
        let limit = match r.limit {
            None => DEFAULT_LIMIT,
            Some(n) if n < 1 => return Err(AppError::bad_request("limit must be at least 1")),
            Some(n) => n.min(MAX_LIMIT),
        };
        let after = r.token.as_deref().map(Cursor::parse).transpose()?;
        let bbox: Option<Vec<f64>> = list_of("bbox", &r.bbox)?;
        let bbox = bbox
            .map(|numbers| Bbox::from_numbers(&numbers).map(|b| b.to_array().to_vec()))
            .transpose()?;
        if bbox.is_some() && r.intersects.is_some() {
            return Err(AppError::bad_request("bbox and intersects cannot be used together"));
        }
        let collections: Option<Vec<String>> = list_of("collections", &r.collections)?;
        let kinds: Vec<DatasetKind> = match collections {
            // `datasets`, the one collection of earlier versions, is both kinds.
            Some(named) if !named.iter().any(|c| c == ALL_DATASETS) => kinds
                .iter()
                .copied()
                .filter(|k| named.iter().any(|c| c == k.as_str()))
                .collect(),
            _ => kinds.to_vec(),
        };
        if kinds.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            kinds,
            limit,
            after,
            bbox,
            intersects: r.intersects.as_ref().map(|g| g.to_string()),
            // Item ids are dataset ids: anything else names no item, and is refused.
            ids: list_of("ids", &r.ids)?,
            interval: r
                .datetime
                .as_deref()
                .map(Interval::parse_date_times)
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
            .bind(self.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>())
            .fetch_all(state.db.reader(caller.user_id(), 0).await.pool)
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
        ("datetime" = Option<String>, Query, description = "an RFC 3339 date-time, or an interval start/end of two, one of its ends open at most (`..` or empty)"),
        ("collections" = Option<Vec<String>>, Query, description = "collection ids: vector, raster (datasets, the one collection of earlier versions, names both)"),
        ("ids" = Option<Vec<Uuid>>, Query, description = "item ids"),
        ("limit" = Option<i64>, Query, minimum = 1, description = "items per page, default 10; more than 200 is clamped to 200"),
        ("token" = Option<String>, Query, description = "paging cursor from a `next` link")),
    responses((status = 200, description = "STAC ItemCollection", content(("application/geo+json"))),
              (status = 400, description = "a parameter search does not take, or a malformed one", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn search_get(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<GeoJson, AppError> {
    if let Some(name) = q.keys().find(|k| !SEARCH_PARAMETERS.contains(&k.as_str())) {
        return Err(unsupported(name));
    }
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
        others: Default::default(),
    };
    let origin = Origin::Get(q.into_iter().collect());
    let href = format!("{}/api/stac/search", state.config.public_url);
    Ok(GeoJson(
        search(&state, &caller, &request, DatasetKind::ALL, (&href, &origin)).await?,
    ))
}

/// STAC item search (read-only keys may use it).
#[utoipa::path(post, path = "/api/stac/search", tag = "stac", request_body = SearchRequest,
    responses((status = 200, description = "STAC ItemCollection", content(("application/geo+json"))),
              (status = 400, description = "a member search does not take, or a malformed one (bbox: an array of 4 or 6 numbers)", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn search_post(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<JsonBody<SearchRequest>, AppError>,
) -> Result<GeoJson, AppError> {
    // A body search cannot read is a 400, as STAC API item-search has it.
    let JsonBody(request) = body.map_err(|e| match e.status() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY => AppError::bad_request(e.problem.detail),
        _ => e,
    })?;
    request.check_body()?;
    let href = format!("{}/api/stac/search", state.config.public_url);
    Ok(GeoJson(
        search(&state, &caller, &request, DatasetKind::ALL, (&href, &Origin::Post)).await?,
    ))
}
