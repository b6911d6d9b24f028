//! OGC API Records: the catalog collection `catalog`, whose records are
//! every dataset the caller may see (derived from the dataset, so always in
//! step) and the metadata records people write, with contacts on either.
use axum::{
    Json,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, datasets::PublicationStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{FromRow, Row, types::Json as SqlJson};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{Caller, datasets::writable_dataset, policy::visible_to_caller},
    bbox::Bbox,
    extract::{Json as JsonBody, LinkCredential, Path, Query},
    interval::Interval,
    ogc_html::linked_data,
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    state::AppState,
};

mod format;
use format::{JSON_LD, RecordFormat, RecordFormatQuery};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(catalog_collection))
        .routes(routes!(catalog_items))
        .routes(routes!(catalog_item))
        .routes(routes!(create_record))
        .routes(routes!(get_record, update_record, delete_record))
        .routes(routes!(add_contact, list_contacts))
        .routes(routes!(delete_contact))
}

pub const CATALOG_ID: &str = "catalog";

/// The catalog collection's description, also listed among the collections.
pub fn catalog_collection_json(base: &str, credential: &LinkCredential) -> Value {
    let href = credential.on(format!("{base}/api/collections/{CATALOG_ID}"));
    json!({
        "id": CATALOG_ID,
        "title": "Catalog",
        "description": "Records of every dataset and metadata record",
        "itemType": "record",
        "type": "Collection",
        "links": [
            {"href": href, "rel": "self", "type": "application/json"},
            alternate_link(&href),
            {"href": credential.on(format!("{base}/api/collections/{CATALOG_ID}/items")), "rel": "items", "type": "application/geo+json"},
        ],
    })
}

#[utoipa::path(get, path = "/api/collections/catalog", tag = "records", params(FormatQuery),
    responses((status = 200, description = "the catalog collection", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn catalog_collection(State(state): State<AppState>, credential: LinkCredential, format: Format) -> Response {
    let base = &state.config.public_url;
    let document = catalog_collection_json(base, &credential);
    let context = PageContext {
        base,
        credential: &credential,
    };
    format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::collection(&context, &document, None),
    )
}

/// Both kinds of record as one relation: `r` with id, type, title,
/// description, keywords, extent, created, updated. $1 caller, $2 admin.
fn all_records() -> String {
    let visible = visible_to_caller("d");
    format!(
        "(SELECT d.id, 'dataset'::text AS record_type, d.title, d.summary AS description, d.keywords, d.extent_bbox,
                 jsonb_build_object('kind', d.kind, 'geometry_type', d.geometry_type, 'feature_count', d.feature_count, 'dataset_id', d.id)
                   || jsonb_strip_nulls(jsonb_build_object('license', d.license, 'attribution', d.attribution)) AS properties,
                 d.created_at, d.updated_at
          FROM datasets d WHERE {visible} AND d.status = '{ready}'
          UNION ALL
          SELECT m.id, m.record_type, m.title, m.description, m.keywords, m.extent_bbox, m.properties, m.created_at, m.updated_at
          FROM records m) r",
        ready = PublicationStatus::Ready,
    )
}

#[derive(sqlx::FromRow)]
struct RecordRow {
    id: Uuid,
    record_type: String,
    title: String,
    description: Option<String>,
    keywords: Vec<String>,
    extent_bbox: Option<Vec<f64>>,
    properties: SqlJson<Value>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

async fn contacts_of(state: &AppState, ids: &[Uuid]) -> Result<Vec<(Uuid, Value)>, AppError> {
    let rows: Vec<(Uuid, SqlJson<Value>)> = sqlx::query_as(
        "SELECT record_id, jsonb_build_object('id', id, 'name', name, 'organization', organization, 'email', email, 'role', role)
         FROM record_contacts WHERE record_id = ANY($1) ORDER BY created_at, id",
    )
    .bind(ids)
    .fetch_all(&state.pool)
    .await?;
    Ok(rows.into_iter().map(|(id, v)| (id, v.0)).collect())
}

fn record_json(r: &RecordRow, contacts: Vec<Value>, base: &str) -> Value {
    let geometry = r.extent_bbox.as_deref().and_then(crate::bbox::geojson);
    let self_href = format!("{base}/api/collections/{CATALOG_ID}/items/{}", r.id);
    let mut links = vec![
        json!({"href": self_href, "rel": "self", "type": "application/geo+json"}),
        alternate_link(&self_href),
        json!({"href": format!("{base}/api/collections/{CATALOG_ID}"), "rel": "collection", "type": "application/json", "title": "the catalog"}),
    ];
    let id = r.id;
    match (r.record_type.as_str(), r.properties.0["kind"].as_str()) {
        // A raster has no items: its record leads to its file, its tiles
        // and its STAC item.
        ("dataset", Some("raster")) => links.extend([
            json!({"href": format!("{base}/api/datasets/{id}/download"), "rel": "enclosure", "type": catalog_raster::cog::MEDIA_TYPE, "title": "the Cloud-Optimized GeoTIFF"}),
            json!({"href": format!("{base}/api/collections/{id}/tiles"), "rel": "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map", "type": "application/json", "title": "map tilesets (PNG)"}),
            json!({"href": format!("{base}/api/stac/collections/raster/items/{id}"), "rel": "alternate", "type": "application/geo+json", "title": "the STAC item"}),
        ]),
        ("dataset", _) => links.push(json!({"href": format!("{base}/api/collections/{id}/items"), "rel": "item", "type": "application/geo+json", "title": "the features"})),
        _ => {}
    }
    json!({
        "type": "Feature",
        "id": r.id,
        "conformsTo": ["http://www.opengis.net/spec/ogcapi-records-1/1.0/req/record-core"],
        "geometry": geometry,
        "properties": {
            "type": r.record_type,
            "title": r.title,
            "description": r.description,
            "keywords": r.keywords,
            "created": r.created_at,
            "updated": r.updated_at,
            "contacts": contacts,
            "extra": r.properties.0,
        },
        "links": links,
    })
}

/// The query of the records: the Records core parameters and sorting;
/// any other parameter is refused (400), as OGC API Features Part 1 has it.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
struct RecordQuery {
    q: Option<String>,
    /// minx,miny,maxx,maxy in CRS84
    #[param(value_type = Option<Vec<f64>>)]
    bbox: Option<String>,
    /// An RFC 3339 instant or date, or an interval start/end whose open
    /// ends are `..` or empty; the start not after the end.
    datetime: Option<String>,
    #[serde(rename = "type")]
    record_type: Option<String>,
    /// Record ids, comma-separated.
    #[param(value_type = Option<Vec<Uuid>>, min_items = 1)]
    ids: Option<String>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000, default = 10)]
    limit: Limit<10, 1000>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
    /// comma-separated: title, created, updated, type, each with an optional + or - prefix
    #[param(value_type = Option<Vec<crate::openapi::names::SortKey>>, inline, min_items = 1)]
    sortby: Option<String>,
    /// Read by `RecordFormat` (and documented by `RecordFormatQuery`).
    #[allow(dead_code)]
    #[param(ignore)]
    f: Option<String>,
}

fn sort_sql(sortby: Option<&str>) -> Result<String, AppError> {
    let Some(sortby) = sortby.filter(|s| !s.trim().is_empty()) else {
        return Ok("r.updated_at DESC, r.id".into());
    };
    let mut parts = Vec::new();
    for key in sortby.split(',') {
        let key = key.trim();
        let (name, direction) = match key.strip_prefix('-') {
            Some(n) => (n, "DESC"),
            None => (key.trim_start_matches('+'), "ASC"),
        };
        let column = match name {
            "title" => "r.title",
            "created" => "r.created_at",
            "updated" => "r.updated_at",
            "type" => "r.record_type",
            other => {
                return Err(AppError::bad_request(format!(
                    "cannot sort by {other:?}; sortable: title, created, updated, type"
                )));
            }
        };
        parts.push(format!("{column} {direction}"));
    }
    parts.push("r.id".into());
    Ok(parts.join(", "))
}

/// Records, filtered by the Records core query parameters and sorted.
#[utoipa::path(get, path = "/api/collections/catalog/items", tag = "records", params(RecordQuery, RecordFormatQuery),
    responses((status = 200, description = "GeoJSON FeatureCollection of records, its page, or (`f=jsonld`) a DCAT-AP 3 catalog of them in JSON-LD",
                  content(("application/geo+json"), (String = "text/html"), ("application/ld+json"))),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn catalog_items(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: RecordFormat,
    Query(q): Query<RecordQuery>,
) -> Result<Response, AppError> {
    let search = RecordSearch::of(&q)?;
    let (records, total) = search.run(&state, &caller).await?;
    let ids: Vec<Uuid> = records.iter().map(|r| r.id).collect();
    let contacts = contacts_of(&state, &ids).await?;
    let base = &state.config.public_url;
    let features: Vec<Value> = records
        .iter()
        .map(|r| {
            let own = contacts.iter().filter(|(id, _)| *id == r.id).map(|(_, c)| c.clone());
            record_json(r, own.collect(), base)
        })
        .collect();
    let page = |offset: i64| {
        credential.on(format!(
            "{base}/api/collections/{CATALOG_ID}/items?{}",
            search.page_query(&q, offset)
        ))
    };
    let self_href = page(search.offset);
    let mut links = vec![
        json!({"href": self_href, "rel": "self", "type": "application/geo+json"}),
        alternate_link(&self_href),
    ];
    if search.offset.saturating_add(search.limit) < total {
        links.push(json!({"href": page(search.offset + search.limit), "rel": "next", "type": "application/geo+json"}));
    }
    if search.offset > 0 {
        let previous = (search.offset - search.limit).max(0);
        links.push(json!({"href": page(previous), "rel": "prev", "type": "application/geo+json"}));
    }
    let format = match format {
        RecordFormat::JsonLd => return Ok(json_ld(linked_data::dcat_catalog(&features, base, &self_href))),
        RecordFormat::Other(format) => format,
    };
    let document = json!({"type": "FeatureCollection", "features": features, "numberMatched": total, "numberReturned": records.len(), "links": links});
    let context = PageContext {
        base,
        credential: &credential,
    };
    Ok(format.answer(
        || {
            let mut response = Json(&document).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
            response
        },
        || ogc_html::records::records(&context, CATALOG_ID, &document),
    ))
}

/// A JSON-LD answer; it varies with `Accept` as the other forms do.
fn json_ld(document: Value) -> Response {
    let mut response = Json(document).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON_LD));
    ogc_html::json_answer(response)
}

/// A records query, checked: every value typed, the order and page fixed.
struct RecordSearch<'q> {
    text: Option<&'q str>,
    bbox: Option<Vec<f64>>,
    record_type: Option<&'q str>,
    ids: Option<Vec<Uuid>>,
    interval: Interval,
    order: String,
    limit: i64,
    offset: i64,
}

impl<'q> RecordSearch<'q> {
    fn of(q: &'q RecordQuery) -> Result<Self, AppError> {
        let (limit, offset) = (q.limit.get(), q.offset.get());
        let bbox = q
            .bbox
            .as_deref()
            .map(|b| b.parse::<Bbox>().map(|b| b.to_array().to_vec()))
            .transpose()?;
        let ids = q
            .ids
            .as_deref()
            .map(|s| s.split(',').map(|i| i.trim().parse()).collect::<Result<_, _>>())
            .transpose()
            .map_err(|_| AppError::bad_request("ids must be record ids"))?;
        Ok(Self {
            text: q.q.as_deref().filter(|s| !s.trim().is_empty()),
            bbox,
            record_type: q.record_type.as_deref(),
            ids,
            interval: q
                .datetime
                .as_deref()
                .map(Interval::parse)
                .transpose()?
                .unwrap_or_default(),
            order: sort_sql(q.sortby.as_deref())?,
            limit,
            offset,
        })
    }

    /// One page of the records the caller may see, and how many match in all.
    async fn run(&self, state: &AppState, caller: &Caller) -> Result<(Vec<RecordRow>, i64), AppError> {
        let sql = format!(
            include_str!("catalog_items.sql"),
            records = all_records(),
            extent = crate::bbox::sql_geometry("r.extent_bbox"),
            bbox = crate::bbox::sql_geometry("$4"),
            order = self.order,
            limit = self.limit,
            offset = self.offset,
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(caller.user_id())
            .bind(caller.is_admin())
            .bind(self.text)
            .bind(&self.bbox)
            .bind(self.record_type)
            .bind(&self.ids)
            .bind(self.interval.start)
            .bind(self.interval.end)
            .fetch_all(&state.pool)
            .await?;
        let total: i64 = rows.first().map_or(0, |r| r.get("total"));
        let records = rows.iter().map(RecordRow::from_row).collect::<Result<_, _>>()?;
        Ok((records, total))
    }

    /// The query string of the page at `offset`, with the same filters.
    fn page_query(&self, q: &RecordQuery, offset: i64) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("q", &q.q),
            ("bbox", &q.bbox),
            ("datetime", &q.datetime),
            ("type", &q.record_type),
            ("ids", &q.ids),
            ("sortby", &q.sortby),
        ] {
            if let Some(v) = v {
                query.append_pair(k, v);
            }
        }
        query
            .append_pair("limit", &self.limit.to_string())
            .append_pair("offset", &offset.to_string())
            .finish()
    }
}

async fn one_record(state: &AppState, caller: &Caller, id: Uuid) -> Result<Value, AppError> {
    let sql = format!(
        "SELECT r.id, r.record_type, r.title, r.description, r.keywords, r.extent_bbox, r.properties, r.created_at, r.updated_at FROM {} WHERE r.id = $3",
        all_records()
    );
    let record: RecordRow = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(id)
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no record {id}")))?;
    let contacts = contacts_of(state, &[id]).await?.into_iter().map(|(_, c)| c).collect();
    Ok(record_json(&record, contacts, &state.config.public_url))
}

#[utoipa::path(get, path = "/api/collections/catalog/items/{recordId}", tag = "records", params(("recordId" = String, Path), RecordFormatQuery),
    responses((status = 200, description = "a record, its page, or (`f=jsonld`) a DCAT-AP 3 dataset in JSON-LD",
                  content(("application/json"), (String = "text/html"), ("application/ld+json"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn catalog_item(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: RecordFormat,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let id: Uuid = id.parse().map_err(|_| AppError::not_found(format!("no record {id}")))?;
    let record = one_record(&state, &caller, id).await?;
    let format = match format {
        RecordFormat::JsonLd => {
            return Ok(json_ld(linked_data::dcat_document(&record, &state.config.public_url)));
        }
        RecordFormat::Other(format) => format,
    };
    let context = PageContext {
        base: &state.config.public_url,
        credential: &credential,
    };
    Ok(format.answer(
        || Json(&record).into_response(),
        || ogc_html::records::record(&context, CATALOG_ID, &record),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RecordInput {
    /// 1 to 500 characters, not only blanks; required on create.
    #[schema(
        max_length = 500,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    title: Option<String>,
    #[schema(max_length = 10000)]
    description: Option<String>,
    keywords: Option<Vec<String>>,
    /// Any type but `dataset` (dataset records come from datasets).
    #[serde(rename = "type")]
    #[schema(pattern = r"^(?!dataset$)")]
    record_type: Option<String>,
    /// [west, south, east, north]; south not above north.
    #[schema(min_items = 4, max_items = 4)]
    extent_bbox: Option<Vec<f64>>,
    #[schema(value_type = Option<Object>)]
    properties: Option<serde_json::Map<String, Value>>,
}

/// A new metadata record: a [`RecordInput`] with its title.
struct NewRecord;

impl utoipa::PartialSchema for NewRecord {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::openapi::object_of(
            "A new metadata record: a `RecordInput` with its title.",
            &[<RecordInput as utoipa::PartialSchema>::schema()],
            &["title"],
        )
    }
}

impl utoipa::ToSchema for NewRecord {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        <RecordInput as utoipa::ToSchema>::schemas(schemas);
    }
}

impl RecordInput {
    fn validate(&self, creating: bool) -> Result<(), AppError> {
        match &self.title {
            None if creating => return Err(AppError::unprocessable("title: is required")),
            Some(t) if t.trim().is_empty() || t.chars().count() > 500 => {
                return Err(AppError::unprocessable("title: 1 to 500 characters"));
            }
            _ => {}
        }
        if self.description.as_ref().is_some_and(|d| d.chars().count() > 10_000) {
            return Err(AppError::unprocessable("description: at most 10000 characters"));
        }
        if self.record_type.as_deref() == Some("dataset") {
            return Err(AppError::unprocessable("type: dataset records come from datasets"));
        }
        // In degrees, as every extent is: one past the world would reach
        // the pictures and maps that frame it.
        let degrees = |b: &[f64]| Bbox::from_numbers(b).is_ok();
        if self.extent_bbox.as_ref().is_some_and(|b| b.len() != 4 || !degrees(b)) {
            return Err(AppError::unprocessable(
                "extent_bbox: [west, south, east, north] in degrees, longitudes from -180 to 180, latitudes from -90 to 90, south not above north",
            ));
        }
        Ok(())
    }
}

/// Writes a metadata record (editor or admin).
#[utoipa::path(post, path = "/api/records", tag = "records", request_body = NewRecord, responses((status = 201, description = "the record")))]
async fn create_record(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<RecordInput>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let user = caller.editor()?;
    input.validate(true)?;
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO records (id, record_type, title, description, keywords, extent_bbox, properties, created_by)
         VALUES ($1, coalesce($2, 'metadata'), $3, $4, coalesce($5, '{}'), $6, coalesce($7, '{}'), $8)",
    )
    .bind(id)
    .bind(&input.record_type)
    .bind(input.title.as_deref().map(str::trim))
    .bind(&input.description)
    .bind(&input.keywords)
    .bind(&input.extent_bbox)
    .bind(input.properties.as_ref().map(SqlJson))
    .bind(user.id)
    .execute(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(one_record(&state, &caller, id).await?)))
}

#[utoipa::path(get, path = "/api/records/{record_id}", tag = "records", params(("record_id" = Uuid, Path)), responses((status = 200, description = "the record")))]
async fn get_record(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(one_record(&state, &caller, id).await?))
}

/// A metadata record the caller may change: its author (editor) or an admin.
async fn writable_record(state: &AppState, caller: &Caller, id: Uuid) -> Result<(), AppError> {
    let author: Option<Option<Uuid>> = sqlx::query_scalar("SELECT created_by FROM records WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool)
        .await?;
    let author = author.ok_or_else(|| AppError::not_found(format!("no record {id}")))?;
    let user = caller.editor()?;
    if user.is_admin() || author == Some(user.id) {
        Ok(())
    } else {
        Err(AppError::forbidden(
            "only the record's author or an admin may change it",
        ))
    }
}

#[utoipa::path(put, path = "/api/records/{record_id}", tag = "records", params(("record_id" = Uuid, Path)), request_body = RecordInput, responses((status = 200, description = "the record")))]
async fn update_record(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(input): JsonBody<RecordInput>,
) -> Result<Json<Value>, AppError> {
    writable_record(&state, &caller, id).await?;
    input.validate(false)?;
    sqlx::query(
        "UPDATE records SET record_type = coalesce($2, record_type), title = coalesce($3, title), description = coalesce($4, description),
            keywords = coalesce($5, keywords), extent_bbox = coalesce($6, extent_bbox), properties = coalesce($7, properties), updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(&input.record_type)
    .bind(input.title.as_deref().map(str::trim))
    .bind(&input.description)
    .bind(&input.keywords)
    .bind(&input.extent_bbox)
    .bind(input.properties.as_ref().map(SqlJson))
    .execute(&state.pool)
    .await?;
    Ok(Json(one_record(&state, &caller, id).await?))
}

#[utoipa::path(delete, path = "/api/records/{record_id}", tag = "records", params(("record_id" = Uuid, Path)), responses((status = 204, description = "deleted")))]
async fn delete_record(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    writable_record(&state, &caller, id).await?;
    let mut tx = state.pool.begin().await?;
    sqlx::query("DELETE FROM record_contacts WHERE record_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM records WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Contacts may be edited by whoever may edit the record (for a dataset's
/// record: whoever may edit the dataset).
async fn contacts_writable(state: &AppState, caller: &Caller, record_id: Uuid) -> Result<(), AppError> {
    let is_dataset: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM datasets WHERE id = $1)")
        .bind(record_id)
        .fetch_one(&state.pool)
        .await?;
    if is_dataset {
        writable_dataset(state, caller, record_id).await.map(|_| ())
    } else {
        writable_record(state, caller, record_id).await
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ContactInput {
    /// 1 to 255 characters, not only blanks.
    #[schema(
        max_length = 255,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    name: String,
    organization: Option<String>,
    email: Option<String>,
    role: Option<String>,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
struct Contact {
    id: Uuid,
    record_id: Uuid,
    name: String,
    organization: Option<String>,
    email: Option<String>,
    role: Option<String>,
    created_at: DateTime<Utc>,
}

#[utoipa::path(post, path = "/api/records/{record_id}/contacts", tag = "records", params(("record_id" = Uuid, Path)), request_body = ContactInput, responses((status = 201, body = Contact)))]
async fn add_contact(
    State(state): State<AppState>,
    caller: Caller,
    Path(record_id): Path<Uuid>,
    JsonBody(input): JsonBody<ContactInput>,
) -> Result<(StatusCode, Json<Contact>), AppError> {
    contacts_writable(&state, &caller, record_id).await?;
    if input.name.trim().is_empty() || input.name.chars().count() > 255 {
        return Err(AppError::unprocessable("name: 1 to 255 characters"));
    }
    let contact = sqlx::query_as(
        "INSERT INTO record_contacts (id, record_id, name, organization, email, role) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id, record_id, name, organization, email, role, created_at",
    )
    .bind(Uuid::now_v7())
    .bind(record_id)
    .bind(input.name.trim())
    .bind(&input.organization)
    .bind(&input.email)
    .bind(&input.role)
    .fetch_one(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(contact)))
}

#[utoipa::path(get, path = "/api/records/{record_id}/contacts", tag = "records", params(("record_id" = Uuid, Path)), responses((status = 200, body = Vec<Contact>)))]
async fn list_contacts(
    State(state): State<AppState>,
    caller: Caller,
    Path(record_id): Path<Uuid>,
) -> Result<Json<Vec<Contact>>, AppError> {
    one_record(&state, &caller, record_id).await?;
    let contacts = sqlx::query_as("SELECT id, record_id, name, organization, email, role, created_at FROM record_contacts WHERE record_id = $1 ORDER BY created_at, id")
        .bind(record_id)
        .fetch_all(&state.pool)
        .await?;
    Ok(Json(contacts))
}

#[utoipa::path(delete, path = "/api/records/{record_id}/contacts/{contact_id}", tag = "records", params(("record_id" = Uuid, Path), ("contact_id" = Uuid, Path)),
    responses((status = 204, description = "deleted"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_contact(
    State(state): State<AppState>,
    caller: Caller,
    Path((record_id, contact_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, AppError> {
    contacts_writable(&state, &caller, record_id).await?;
    let deleted = sqlx::query("DELETE FROM record_contacts WHERE id = $1 AND record_id = $2")
        .bind(contact_id)
        .bind(record_id)
        .execute(&state.pool)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(AppError::not_found(format!(
            "no contact {contact_id} on record {record_id}"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}
