//! The items of a collection: features rendered to GeoJSON inside
//! PostgreSQL, paged by key (`after_gid`) or legacy offset, filtered by
//! bbox, property values and CQL2, all combined with AND.
use std::sync::Arc;

use axum::{
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, datasets::ColumnInfo, db::quote_ident};
use serde_json::{Value, json};
use sqlx::Row;

use super::{
    cql::{self, Lang, Queryable, Queryables},
    params::{Param, query_with},
};
use crate::{
    access::{Caller, datasets::visible_collection},
    bbox::Bbox,
    datasets::record::Dataset,
    extract::{LinkCredential, Path, Query},
    interval::Interval,
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    state::AppState,
};

/// OGC's name of WGS 84 longitude, latitude: the only CRS the items speak.
pub const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";

/// The published attribute columns of a dataset.
pub fn published_columns(dataset: &Dataset) -> Vec<ColumnInfo> {
    dataset.column_info.0.clone()
}

/// A WGS 84 geometry expression in the dataset's storage CRS (registered
/// tables may use any SRID; ingested ones are stored in 4326).
pub fn in_storage_crs(dataset: &Dataset, expr: &str) -> String {
    if dataset.srid == 4326 || dataset.srid <= 0 {
        expr.to_string()
    } else {
        format!("ST_Transform({expr}, {})", dataset.srid)
    }
}

/// The dataset's geometry column in WGS 84.
fn geometry_in_wgs84(dataset: &Dataset) -> String {
    let column = format!("t.{}", quote_ident(&dataset.geometry_column));
    if dataset.srid == 4326 || dataset.srid <= 0 {
        column
    } else {
        format!("ST_Transform({column}, 4326)")
    }
}

fn queryables_of(dataset: &Dataset, columns: &[ColumnInfo]) -> Queryables {
    let mut q = Queryables {
        geometry_column: dataset.geometry_column.clone(),
        srid: dataset.srid,
        ..Default::default()
    };
    q.by_name.insert(
        dataset.key_column.clone(),
        Queryable {
            column: dataset.key_column.clone(),
            pg_type: "bigint".into(),
        },
    );
    for c in columns {
        let queryable = Queryable {
            column: c.name.clone(),
            pg_type: c.pg_type.clone(),
        };
        q.by_name
            .entry(c.original_name.clone())
            .or_insert_with(|| queryable.clone());
        q.by_name.insert(c.name.clone(), queryable);
    }
    q
}

/// `json_build_object` takes at most 100 arguments, so wide tables are
/// built 50 columns at a time and merged.
fn properties_sql(columns: &[ColumnInfo]) -> String {
    if columns.is_empty() {
        return "'{}'::json".into();
    }
    let chunks: Vec<String> = columns
        .chunks(50)
        .map(|chunk| {
            let pairs: Vec<String> = chunk
                .iter()
                .map(|c| format!("'{}', t.{}", c.name.replace('\'', "''"), quote_ident(&c.name)))
                .collect();
            format!("jsonb_build_object({})", pairs.join(", "))
        })
        .collect();
    if chunks.len() == 1 {
        chunks[0].replacen("jsonb_build_object", "json_build_object", 1)
    } else {
        chunks.join(" || ")
    }
}

/// The SQL of one feature as GeoJSON text.
pub(crate) fn feature_sql(dataset: &Dataset, columns: &[ColumnInfo], include_geometry: bool) -> String {
    let geometry = if include_geometry {
        format!("ST_AsGeoJSON({})::json", geometry_in_wgs84(dataset))
    } else {
        "NULL::json".into()
    };
    format!(
        "json_build_object('type', 'Feature', 'id', t.{key}, 'geometry', {geometry}, 'properties', {props})::text",
        key = quote_ident(&dataset.key_column),
        props = properties_sql(columns),
    )
}

pub(crate) fn table_sql(dataset: &Dataset) -> String {
    format!(
        "{}.{}",
        quote_ident(&dataset.schema_name),
        quote_ident(&dataset.table_name)
    )
}

struct ItemsRequest {
    limit: i64,
    offset: i64,
    after: Option<i64>,
    include_geometry: bool,
    /// Conditions on what matches (paging excluded), and their values.
    conditions: Vec<String>,
    params: Vec<Param>,
}

fn bad(detail: impl Into<String>) -> AppError {
    AppError::bad_request(detail)
}

fn parse_bool(name: &str, v: &str) -> Result<bool, AppError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(bad(format!("{name} must be true or false"))),
    }
}

fn parse_int(name: &str, v: &str) -> Result<i64, AppError> {
    v.trim().parse().map_err(|_| bad(format!("{name} must be an integer")))
}

/// `bbox-crs`, `crs` and `filter-crs` name CRS84 or nothing: EPSG:4326
/// orders its axes latitude first, so taking it for CRS84 would swap
/// coordinates, and it is refused like every other CRS.
fn check_crs(name: &str, v: &str) -> Result<(), AppError> {
    if v == CRS84 {
        Ok(())
    } else {
        Err(bad(format!("{name} supports only {CRS84}")))
    }
}

fn parse_request(
    pairs: &[(String, String)],
    dataset: &Dataset,
    columns: &[ColumnInfo],
    max_page: i64,
) -> Result<ItemsRequest, AppError> {
    let queryables = queryables_of(dataset, columns);
    let mut request = ItemsRequest {
        limit: 10,
        offset: 0,
        after: None,
        include_geometry: true,
        conditions: Vec::new(),
        params: Vec::new(),
    };
    let mut filter: Option<&str> = None;
    let mut lang = Lang::Text;
    for (name, value) in pairs {
        match name.as_str() {
            "limit" => {
                let limit = parse_int("limit", value)?;
                if limit < 1 {
                    return Err(bad("limit must be at least 1"));
                }
                request.limit = limit.min(max_page);
            }
            "offset" => {
                request.offset = parse_int("offset", value)?;
                if request.offset < 0 {
                    return Err(bad("offset must not be negative"));
                }
            }
            "after_gid" => request.after = Some(parse_int("after_gid", value)?),
            "bbox" => {
                let condition = bbox_condition(dataset, value.parse()?, &mut request.params);
                request.conditions.push(condition);
            }
            "bbox-crs" | "crs" | "filter-crs" => check_crs(name, value)?,
            // Accepted but not applied: datasets carry no time axis.
            "datetime" => {
                Interval::parse(value)?;
            }
            // Read by `Format`.
            "f" => {}
            "include_geometry" => request.include_geometry = parse_bool("include_geometry", value)?,
            "filter" => filter = Some(value),
            "filter-lang" => {
                lang = match value.as_str() {
                    "cql2-text" => Lang::Text,
                    "cql2-json" => Lang::Json,
                    _ => return Err(bad("filter-lang must be cql2-text or cql2-json")),
                }
            }
            "api_key" => {}
            other => {
                let queryable = queryables.by_name.get(other).ok_or_else(|| {
                    bad(format!(
                        "unknown query parameter {other:?}; a property filter must name a queryable"
                    ))
                })?;
                let condition = property_condition(queryable, value, &mut request.params);
                request.conditions.push(condition);
            }
        }
    }
    if let Some(filter) = filter {
        let condition = cql::translate(filter, lang, &queryables, &mut request.params)?;
        request.conditions.push(condition);
    }
    Ok(request)
}

/// The condition of a `bbox`, in the dataset's CRS; a box whose west is
/// greater than its east crosses the antimeridian and is two boxes.
fn bbox_condition(dataset: &Dataset, bbox: Bbox, params: &mut Vec<Param>) -> String {
    let [w, s, e, n] = bbox.to_array();
    let geom = quote_ident(&dataset.geometry_column);
    let mut envelope = |w: f64, e: f64| {
        let first = params.len() + 1;
        params.extend([Param::Float(w), Param::Float(s), Param::Float(e), Param::Float(n)]);
        let envelope = format!(
            "ST_MakeEnvelope(${first}, ${}, ${}, ${}, 4326)",
            first + 1,
            first + 2,
            first + 3
        );
        format!("ST_Intersects({geom}, {})", in_storage_crs(dataset, &envelope))
    };
    if w <= e {
        envelope(w, e)
    } else {
        let left = envelope(w, 180.0);
        let right = envelope(-180.0, e);
        format!("({left} OR {right})")
    }
}

/// `name=value` for a queryable: equality, the value bound as text and
/// cast to the column's type.
fn property_condition(queryable: &Queryable, value: &str, params: &mut Vec<Param>) -> String {
    params.push(Param::Text(value.to_string()));
    let cast = if queryable.pg_type == "text" {
        String::new()
    } else {
        format!("::{}", queryable.pg_type)
    };
    format!("{} = ${}{cast}", quote_ident(&queryable.column), params.len())
}

/// A query the filter made invalid for the column types (a date that is no
/// date, text compared with a number) is the caller's error.
fn query_error(e: sqlx::Error) -> AppError {
    if let sqlx::Error::Database(db) = &e
        && db
            .code()
            .is_some_and(|c| c.starts_with("22") || c == "42883" || c == "42804" || c == "42846")
    {
        return bad(format!("the filter does not fit the data: {}", db.message()));
    }
    e.into()
}

/// How long counting a filter's matches may take; past it the page goes
/// out without `numberMatched` (OGC API Features allows leaving it out),
/// never with a guess.
const COUNT_TIME_LIMIT: &str = "2s";

/// numberMatched: the catalog's count without filters; with filters an
/// exact count, or `None` when counting takes longer than
/// `COUNT_TIME_LIMIT`. It runs as a task of its own, so that a request
/// that ends first (its page failed, its client left) never drops the
/// counting transaction half begun, which would hand the pool a connection
/// still inside it.
fn number_matched(
    state: &AppState,
    dataset: &Arc<Dataset>,
    where_sql: &str,
    params: &[Param],
    filtered: bool,
) -> impl Future<Output = Result<Option<i64>, AppError>> + use<> {
    let count = filtered.then(|| format!("SELECT count(*) FROM {} t WHERE {where_sql}", table_sql(dataset)));
    let (pool, params, unfiltered) = (state.pool.clone(), params.to_vec(), dataset.feature_count);
    let task = tokio::spawn(async move {
        let Some(count) = count else {
            return Ok(Some(unfiltered.unwrap_or(0)));
        };
        let mut tx = pool.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SET LOCAL statement_timeout = '{COUNT_TIME_LIMIT}'"
        )))
        .execute(&mut *tx)
        .await?;
        let counted = query_with(count, &params).fetch_one(&mut *tx).await;
        if let Err(e) = tx.rollback().await {
            // The pool closes a connection that fails; the count stands.
            tracing::debug!(error = %e, "the counting transaction did not roll back");
        }
        match counted {
            Ok(row) => Ok(Some(row.get(0))),
            // query_canceled: the time limit, not the caller's filter.
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("57014") => Ok(None),
            Err(e) => Err(query_error(e)),
        }
    });
    async move { task.await.map_err(AppError::internal)? }
}

fn link(href: String, rel: &str, media_type: &str) -> Value {
    json!({"href": href, "rel": rel, "type": media_type})
}

fn with_query(base: &str, pairs: &[(String, String)], replace: &[(&str, Option<String>)]) -> String {
    let mut out: Vec<(String, String)> = pairs
        .iter()
        .filter(|(k, _)| !replace.iter().any(|(r, _)| r == k))
        .cloned()
        .collect();
    for (k, v) in replace {
        if let Some(v) = v {
            out.push((k.to_string(), v.clone()));
        }
    }
    if out.is_empty() {
        return base.to_string();
    }
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(out)
        .finish();
    format!("{base}?{query}")
}

fn geojson_response(body: String) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
    response
}

/// The cursor of the page before a keyset page (`after_gid`), for the
/// HTML pages' "previous" link: `Some(None)` is the first page. Only pages
/// for people look back; JSON clients page forward by `next`.
async fn previous_cursor(
    state: &AppState,
    dataset: &Dataset,
    where_sql: &str,
    params: &[Param],
    after: i64,
    limit: i64,
) -> Result<Option<Option<i64>>, AppError> {
    let key = quote_ident(&dataset.key_column);
    let mut params = params.to_vec();
    params.push(Param::Int(after));
    let sql = format!(
        "SELECT t.{key}::bigint FROM {} t WHERE {where_sql} AND t.{key} <= ${} ORDER BY t.{key} DESC LIMIT {}",
        table_sql(dataset),
        params.len(),
        limit + 1
    );
    let keys: Vec<i64> = query_with(sql, &params)
        .fetch_all(&state.pool)
        .await
        .map_err(query_error)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(match keys.len() as i64 {
        0 => None,
        n if n <= limit => Some(None),
        _ => Some(keys.last().copied()),
    })
}

/// Features of a collection.
#[utoipa::path(get, path = "/api/collections/{collectionId}/items", tag = "ogc",
    params(("collectionId" = String, Path), FormatQuery,
        ("limit" = Option<i64>, Query, minimum = 1, description = "default 10; larger values are clamped to OGC_ITEMS_MAX_PAGE_SIZE"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "legacy offset paging"),
        ("after_gid" = Option<i64>, Query, description = "keyset cursor: features with a larger key"),
        ("bbox" = Option<Vec<f64>>, Query, description = "minx,miny,maxx,maxy in CRS84"),
        ("datetime" = Option<String>, Query,
            description = "accepted, not applied: an RFC 3339 instant or date, or an interval start/end whose open ends are `..` or empty; the start not after the end"),
        ("include_geometry" = Option<bool>, Query),
        ("filter" = Option<String>, Query, description = "CQL2 expression over the collection's queryables"),
        ("filter-lang" = inline(Option<crate::openapi::names::FilterLang>), Query, description = "cql2-text (default) or cql2-json"),
        ("filter-crs" = inline(Option<crate::openapi::names::Crs84>), Query, description = "only CRS84"),
        ("bbox-crs" = inline(Option<crate::openapi::names::Crs84>), Query, description = "only CRS84"),
        ("crs" = inline(Option<crate::openapi::names::Crs84>), Query, description = "only CRS84")),
    responses((status = 200, description = "GeoJSON FeatureCollection, or its page. `numberMatched` is exact; \
                  with filters it is left out when counting the matches takes longer than 2 s",
                  content(("application/geo+json"), (String = "text/html"))),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn items(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path(id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    let columns = published_columns(&dataset);
    let mut request = parse_request(&pairs, &dataset, &columns, state.config.ogc_items_max_page_size)?;
    // The page links are built from the request's own query, which the
    // extractor gave without the caller's key: it rides along again.
    let pairs = credential.kept_in(pairs);
    // Only a well-formed request restores an archived dataset.
    crate::datasets::cold::ensure_hot(&state, &caller, &dataset).await?;
    let filtered = !request.conditions.is_empty();
    let where_sql = if filtered {
        request.conditions.join(" AND ")
    } else {
        "TRUE".into()
    };
    let key = quote_ident(&dataset.key_column);
    let mut page_where = where_sql.clone();
    let match_params = request.params.clone();
    if let Some(after) = request.after {
        request.params.push(Param::Int(after));
        page_where = format!("{page_where} AND t.{key} > ${}", request.params.len());
    }
    let page_sql = format!(
        "SELECT t.{key}::bigint, {} FROM {} t WHERE {page_where} ORDER BY t.{key} LIMIT {} OFFSET {}",
        feature_sql(&dataset, &columns, request.include_geometry),
        table_sql(&dataset),
        request.limit + 1,
        request.offset
    );
    let page = async {
        query_with(page_sql, &request.params)
            .fetch_all(&state.pool)
            .await
            .map_err(query_error)
    };
    // The page and the count run side by side on two connections.
    let (mut rows, matched) = tokio::try_join!(
        page,
        number_matched(&state, &dataset, &where_sql, &match_params, filtered)
    )?;
    let has_next = rows.len() as i64 > request.limit;
    rows.truncate(request.limit as usize);
    let last_key: Option<i64> = rows.last().map(|r| r.get(0));
    let features: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
    let base = format!("{}/api/collections/{}/items", state.config.public_url, dataset.id);
    let self_href = with_query(&base, &pairs, &[]);
    let mut links = vec![
        link(self_href.clone(), "self", "application/geo+json"),
        alternate_link(&self_href),
        link(
            format!("{}/api/collections/{}", state.config.public_url, dataset.id),
            "collection",
            "application/json",
        ),
    ];
    if let (true, Some(last_key)) = (has_next, last_key) {
        let next = with_query(
            &base,
            &pairs,
            &[("after_gid", Some(last_key.to_string())), ("offset", None)],
        );
        links.push(link(next, "next", "application/geo+json"));
    }
    if request.offset > 0 && request.after.is_none() {
        let prev_offset = (request.offset - request.limit).max(0);
        links.push(link(
            with_query(&base, &pairs, &[("offset", Some(prev_offset.to_string()))]),
            "prev",
            "application/geo+json",
        ));
    }
    if let (Format::Html, Some(after)) = (format, request.after) {
        let previous = previous_cursor(&state, &dataset, &where_sql, &match_params, after, request.limit).await?;
        if let Some(cursor) = previous {
            let prev = with_query(&base, &pairs, &[("after_gid", cursor.map(|c| c.to_string()))]);
            links.push(link(prev, "prev", "application/geo+json"));
        }
    }
    let mut body = String::with_capacity(features.iter().map(String::len).sum::<usize>() + 512);
    body.push_str(r#"{"type":"FeatureCollection","features":["#);
    for (i, feature) in features.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(feature);
    }
    body.push_str("],");
    if let Some(matched) = matched {
        body.push_str(&format!(r#""numberMatched":{matched},"#));
    }
    body.push_str(&format!(
        r#""numberReturned":{},"timeStamp":"{}","links":{}}}"#,
        features.len(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        Value::Array(links)
    ));
    Ok(match format {
        Format::Json => ogc_html::json_answer(geojson_response(body)),
        Format::Html => {
            let document: Value = serde_json::from_str(&body).map_err(AppError::internal)?;
            let context = PageContext {
                base: &state.config.public_url,
                credential: &credential,
            };
            let id = dataset.id.to_string();
            ogc_html::page_answer(ogc_html::features::items(&context, &dataset.title, &id, &document))
        }
    })
}

/// One feature by its key.
#[utoipa::path(get, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path), FormatQuery),
    responses((status = 200, description = "GeoJSON Feature, or its page", content(("application/geo+json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn item(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path((id, feature_id)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let dataset = visible_collection(&state, &caller, &id).await?;
    crate::datasets::cold::ensure_hot(&state, &caller, &dataset).await?;
    let missing = || AppError::not_found(format!("no feature {feature_id} in collection {id}"));
    let key: i64 = feature_id.parse().map_err(|_| missing())?;
    let columns = published_columns(&dataset);
    let sql = format!(
        "SELECT {} FROM {} t WHERE t.{} = $1",
        feature_sql(&dataset, &columns, true),
        table_sql(&dataset),
        quote_ident(&dataset.key_column)
    );
    let feature: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(key)
        .fetch_optional(&state.pool)
        .await?;
    let mut feature: Value = serde_json::from_str(&feature.ok_or_else(missing)?).map_err(AppError::internal)?;
    let base = &state.config.public_url;
    let self_href = format!("{base}/api/collections/{}/items/{key}", dataset.id);
    feature["links"] = json!([
        link(self_href.clone(), "self", "application/geo+json"),
        alternate_link(&self_href),
        link(
            format!("{base}/api/collections/{}", dataset.id),
            "collection",
            "application/json"
        ),
    ]);
    let context = PageContext {
        base,
        credential: &credential,
    };
    let collection_id = dataset.id.to_string();
    Ok(format.answer(
        || geojson_response(feature.to_string()),
        || ogc_html::features::item(&context, &dataset.title, &collection_id, &feature),
    ))
}
