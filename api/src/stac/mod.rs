//! A STAC API over the catalog: core, collections, OGC API Features items
//! and item search, with the Filter (CQL2) and Sort extensions (`filter`). Every published dataset the caller may see is an item
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

mod filter;
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
        .routes(routes!(queryables))
        .routes(routes!(collection_queryables))
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
const SEARCH_PARAMETERS: [&str; 11] = [
    "bbox",
    "intersects",
    "datetime",
    "collections",
    "ids",
    "limit",
    "token",
    "filter",
    "filter-lang",
    "filter-crs",
    "sortby",
];

/// What the API conforms to: STAC API core, collections, OGC API Features
/// items under each collection (with the OGC classes those rest on), item
/// search, and its Filter (CQL2 text and JSON, basic CQL2) and Sort
/// extensions, on search and on each collection's items.
const CONFORMANCE: [&str; 14] = [
    "https://api.stacspec.org/v1.0.0/core",
    "https://api.stacspec.org/v1.0.0/collections",
    "https://api.stacspec.org/v1.0.0/ogcapi-features",
    "https://api.stacspec.org/v1.0.0/item-search",
    "https://api.stacspec.org/v1.0.0-rc.2/item-search#filter",
    "https://api.stacspec.org/v1.0.0/item-search#sort",
    "https://api.stacspec.org/v1.0.0/ogcapi-features#sort",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2",
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
        json!({"rel": "http://www.opengis.net/def/rel/ogc/1.0/queryables", "href": format!("{base}/queryables"), "type": "application/schema+json"}),
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
            {"rel": "http://www.opengis.net/def/rel/ogc/1.0/queryables", "href": format!("{href}/queryables"), "type": "application/schema+json"},
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
    /// CQL2 over the queryables (`queryables`)
    filter: Option<String>,
    #[serde(rename = "filter-lang")]
    #[param(rename = "filter-lang", value_type = Option<crate::ogc::cql::Lang>, inline)]
    filter_lang: Option<String>,
    /// only CRS84
    #[serde(rename = "filter-crs")]
    #[param(rename = "filter-crs")]
    filter_crs: Option<String>,
    /// fields to sort by, comma separated, each `+name` (or `name`) ascending or `-name` descending
    sortby: Option<String>,
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
        filter: query.filter.map(Value::String),
        filter_lang: query.filter_lang,
        filter_crs: query.filter_crs,
        sortby: query.sortby.map(Value::String),
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
    /// CQL2 over the queryables (`/api/stac/queryables`): text, or a CQL2
    /// JSON object.
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<Value>,
    /// cql2-text or cql2-json (the default for an object)
    #[serde(rename = "filter-lang", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::ogc::cql::Lang>)]
    filter_lang: Option<String>,
    /// only CRS84
    #[serde(rename = "filter-crs", skip_serializing_if = "Option::is_none")]
    filter_crs: Option<String>,
    /// `[{"field": "title", "direction": "asc"}]` (or GET's `+title,-datetime`)
    #[schema(value_type = Option<Vec<Object>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    sortby: Option<Value>,
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

/// The offset a sorted search's token names.
fn offset_of(token: &str) -> Result<i64, AppError> {
    token
        .strip_prefix(OFFSET_TOKEN)
        .and_then(|n| n.parse().ok())
        .filter(|n: &i64| *n >= 0)
        .ok_or_else(|| AppError::bad_request("token is not a paging token of this sorted search; use the next link"))
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
        // A sorted search pages by offset: its order has no keyset of one type.
        let token = match search.order {
            Some(_) => format!("{OFFSET_TOKEN}{}", search.offset + search.limit),
            None => Cursor {
                created_at: last.created_at,
                id: last.id,
            }
            .to_string(),
        };
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

/// How the token of a sorted search's page starts: its offset follows.
const OFFSET_TOKEN: &str = "o";

/// A search request, checked: every value typed.
struct StacSearch {
    /// The kinds whose collections are searched.
    kinds: Vec<DatasetKind>,
    limit: i64,
    after: Option<Cursor>,
    /// Where a sorted page starts.
    offset: i64,
    /// The filter's condition (`TRUE` without one), its values inlined.
    condition: String,
    /// The ORDER BY of `sortby`; none: by creation, keyset paged.
    order: Option<String>,
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
        let order = r.sortby.as_ref().map(filter::order).transpose()?;
        let (after, offset) = match (r.token.as_deref(), &order) {
            (None, _) => (None, 0),
            (Some(token), Some(_)) => (None, offset_of(token)?),
            (Some(token), None) => (Some(Cursor::parse(token)?), 0),
        };
        let condition = match &r.filter {
            None => {
                // Checked even without a filter: a name search does not take is refused.
                filter::check_names(r.filter_lang.as_deref(), r.filter_crs.as_deref())?;
                "TRUE".to_string()
            }
            Some(f) => filter::condition(f, r.filter_lang.as_deref(), r.filter_crs.as_deref())?,
        };
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
            offset,
            condition,
            order,
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
            filter = self.condition,
            order = self.order.as_deref().unwrap_or("d.created_at, d.id"),
            limit = self.limit + 1,
            offset = self.offset,
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
                // A value PostgreSQL cannot take: the intersects geometry,
                // or a filter's literal (an id that is no UUID, a bad time).
                sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22") || c == "XX000") => {
                    let what = if self.intersects.is_some() {
                        "intersects or the filter"
                    } else {
                        "the filter"
                    };
                    AppError::bad_request(format!("{what} holds a value that is not valid: {}", db.message()))
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
        ("token" = Option<String>, Query, description = "paging cursor from a `next` link"),
        ("filter" = Option<String>, Query, description = "CQL2 over the queryables (`/api/stac/queryables`)"),
        ("filter-lang" = inline(Option<crate::ogc::cql::Lang>), Query, description = "cql2-text (default) or cql2-json"),
        ("filter-crs" = Option<String>, Query, description = "only CRS84"),
        ("sortby" = Option<String>, Query, description = "fields to sort by, comma separated, each `+name` (or `name`) ascending or `-name` descending")),
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
        filter: value("filter"),
        filter_lang: q.get("filter-lang").cloned(),
        filter_crs: q.get("filter-crs").cloned(),
        sortby: value("sortby"),
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

/// What item search's `filter` and `sortby` may name, as JSON Schema.
#[utoipa::path(get, path = "/api/stac/queryables", operation_id = "stac_queryables", tag = "stac",
    responses((status = 200, description = "JSON Schema of the queryables", content_type = "application/schema+json")))]
async fn queryables(State(state): State<AppState>) -> axum::response::Response {
    let href = format!("{}/api/stac/queryables", state.config.public_url);
    schema_answer(filter::queryables_json(&href))
}

/// What a filter on a collection's items may name: search's queryables.
#[utoipa::path(get, path = "/api/stac/collections/{collection_id}/queryables", operation_id = "stac_collection_queryables", tag = "stac",
    params(("collection_id" = inline(DatasetKind), Path, description = "the kind of dataset: vector or raster")),
    responses((status = 200, description = "JSON Schema of the queryables", content_type = "application/schema+json"),
              (status = 404, description = "no such collection", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collection_queryables(
    State(state): State<AppState>,
    Path(collection_id): Path<String>,
) -> Result<axum::response::Response, AppError> {
    let kind = kind_named(&collection_id)?;
    let href = format!("{}/api/stac/collections/{kind}/queryables", state.config.public_url);
    Ok(schema_answer(filter::queryables_json(&href)))
}

fn schema_answer(document: Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, "application/schema+json")],
        Json(document),
    )
        .into_response()
}
