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
use sqlx::{PgPool, Row, postgres::PgRow};

use super::{
    cql::{self, Lang, Queryable, Queryables},
    crs::{self, CRS84, Crs},
    params::{Param, query_with},
};
use crate::{
    access::Caller,
    bbox::Bbox,
    coordinates::transformed_if_drawable,
    dataset_record::{Dataset, published_columns},
    extract::{LinkCredential, Path, Query},
    interval::Interval,
    match_counts::CountKey,
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    read_gate,
    state::AppState,
};

/// The SRID a dataset's geometries are in: data of unknown SRID is taken
/// for WGS 84, as its tiles do.
fn storage_srid(dataset: &Dataset) -> i32 {
    if dataset.srid <= 0 { 4326 } else { dataset.srid }
}

/// `expr`, a geometry of SRID `from`, in the dataset's storage CRS.
fn to_storage(dataset: &Dataset, expr: &str, from: i32) -> String {
    if from == storage_srid(dataset) {
        expr.to_string()
    } else {
        format!("ST_Transform({expr}, {})", storage_srid(dataset))
    }
}

/// A WGS 84 geometry expression in the dataset's storage CRS (registered
/// tables may use any SRID; ingested ones are stored in 4326).
pub fn in_storage_crs(dataset: &Dataset, expr: &str) -> String {
    to_storage(dataset, expr, 4326)
}

/// The dataset's geometry column reprojected by PostGIS to `srid`, east
/// first whatever the CRS (as files keep it), so paging and filters stay
/// as they are; null where it holds coordinates its CRS does not have.
pub(super) fn geometry_as(dataset: &Dataset, srid: i32) -> String {
    let mut geometry = format!("t.{}", quote_ident(&dataset.geometry_column));
    if dataset.srid <= 0 && srid != 4326 {
        geometry = format!("ST_SetSRID({geometry}, 4326)");
    }
    if storage_srid(dataset) != srid {
        geometry = format!("ST_Transform({geometry}, {srid})");
    }
    // A coordinate no CRS has (written into the table by hand) would fail
    // the page or the file: its feature goes without its geometry.
    let column = format!("t.{}", quote_ident(&dataset.geometry_column));
    transformed_if_drawable(dataset, &column, &geometry)
}

/// The dataset's geometry column in `crs`, its axes in that CRS's order.
fn geometry_in(dataset: &Dataset, crs: Crs) -> String {
    let mut geometry = geometry_as(dataset, crs.srid());
    if crs.northing_first() {
        geometry = format!("ST_FlipCoordinates({geometry})");
    }
    geometry
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

/// The SQL of one feature as GeoJSON text, its geometry in `crs` (none
/// without one).
pub(crate) fn feature_sql(dataset: &Dataset, columns: &[ColumnInfo], geometry_crs: Option<Crs>) -> String {
    let geometry = if let Some(crs) = geometry_crs {
        // Options 0: no `crs` member in the geometry (the response's
        // `Content-Crs` says it), which would also cost a lookup of the
        // CRS's name for every feature in another CRS than EPSG:4326.
        format!(
            "ST_AsGeoJSON({}, {}, 0)::json",
            geometry_in(dataset, crs),
            crs.decimals()
        )
    } else {
        "NULL::json".into()
    };
    format!(
        "json_build_object('type', 'Feature', 'id', t.{key}, 'geometry', {geometry}, 'properties', {props})::text",
        key = quote_ident(&dataset.key_column),
        props = properties_sql(columns),
    )
}

pub(super) struct ItemsRequest {
    limit: i64,
    offset: i64,
    after: Option<i64>,
    /// The `next` link's cursor of a sorted page.
    cursor: Option<Cursor>,
    pub(super) include_geometry: bool,
    pub(super) crs: Crs,
    /// The properties each feature carries, in this order.
    pub(super) columns: Vec<ColumnInfo>,
    sort: Vec<SortKey>,
    /// Conditions on what matches (paging excluded), and their values.
    pub(super) conditions: Vec<String>,
    pub(super) params: Vec<Param>,
}

impl ItemsRequest {
    /// The order features go in: the sort keys, then the key.
    pub(super) fn order_sql(&self, dataset: &Dataset) -> String {
        let key = format!("t.{} ASC", quote_ident(&dataset.key_column));
        self.sort
            .iter()
            .map(|k| {
                format!(
                    "t.{} {}",
                    quote_ident(&k.column),
                    if k.descending { "DESC" } else { "ASC" }
                )
            })
            .chain(std::iter::once(key))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn is_sorted(&self) -> bool {
        !self.sort.is_empty()
    }

    /// The condition features match (`TRUE` without filters).
    pub(super) fn where_sql(&self) -> String {
        if self.conditions.is_empty() {
            "TRUE".into()
        } else {
            self.conditions.join(" AND ")
        }
    }
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

/// A key of `sortby`: a queryable column, ascending (`+name` or `name`) or
/// descending (`-name`); nulls come last ascending and first descending,
/// as PostgreSQL orders them.
#[derive(Clone, Debug)]
struct SortKey {
    column: String,
    pg_type: String,
    descending: bool,
}

/// Column types an order is defined on.
fn sortable(pg_type: &str) -> bool {
    matches!(
        pg_type,
        "integer"
            | "bigint"
            | "smallint"
            | "double precision"
            | "real"
            | "numeric"
            | "boolean"
            | "date"
            | "timestamptz"
            | "timestamp"
            | "time"
            | "text"
            | "character varying"
            | "uuid"
    )
}

fn parse_sortby(value: &str, queryables: &Queryables) -> Result<Vec<SortKey>, AppError> {
    let mut keys: Vec<SortKey> = Vec::new();
    for item in value.split(',') {
        // A `+` the client did not percent-encode arrives as a space.
        let item = item.trim_start_matches(' ');
        let (descending, name) = match item.as_bytes().first() {
            Some(b'-') => (true, &item[1..]),
            Some(b'+') => (false, &item[1..]),
            _ => (false, item),
        };
        let queryable = queryables
            .by_name
            .get(name)
            .ok_or_else(|| bad(format!("sortby: {name:?} is not a queryable of this collection")))?;
        if !sortable(&queryable.pg_type) {
            return Err(bad(format!(
                "sortby: {name:?} holds values of no order ({})",
                queryable.pg_type
            )));
        }
        if keys.iter().any(|k| k.column == queryable.column) {
            return Err(bad(format!("sortby names {name:?} twice")));
        }
        keys.push(SortKey {
            column: queryable.column.clone(),
            pg_type: queryable.pg_type.clone(),
            descending,
        });
    }
    if keys.len() > MAX_SORT_KEYS {
        return Err(bad(format!("sortby takes at most {MAX_SORT_KEYS} properties")));
    }
    Ok(keys)
}

const MAX_SORT_KEYS: usize = 8;

/// The properties of `properties=a,b`: published columns, by their name or
/// the source's, in the order asked (none for an empty value).
fn parse_properties(value: &str, columns: &[ColumnInfo]) -> Result<Vec<ColumnInfo>, AppError> {
    let mut chosen: Vec<ColumnInfo> = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let column = columns
            .iter()
            .find(|c| c.name == name)
            .or_else(|| columns.iter().find(|c| c.original_name == name))
            .ok_or_else(|| bad(format!("properties: {name:?} is not a property of this collection")))?;
        if !chosen.iter().any(|c| c.name == column.name) {
            chosen.push(column.clone());
        }
    }
    Ok(chosen)
}

/// Where a sorted page starts: the last feature's sort values (as text)
/// and key, carried by the `next` link as base64url JSON.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Cursor {
    values: Vec<Option<String>>,
    key: i64,
}

impl Cursor {
    fn encode(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(token: &str, keys: usize) -> Result<Self, AppError> {
        use base64::Engine;
        let wrong = || bad("cursor is not one of this collection's next links; follow the next link");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| wrong())?;
        let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| wrong())?;
        if cursor.values.len() != keys {
            return Err(wrong());
        }
        Ok(cursor)
    }
}

pub(super) fn parse_request(
    pairs: &[(String, String)],
    dataset: &Dataset,
    columns: &[ColumnInfo],
    max_page: i64,
    offered_crs: &[Crs],
) -> Result<ItemsRequest, AppError> {
    let queryables = queryables_of(dataset, columns);
    let mut request = ItemsRequest {
        limit: 10,
        offset: 0,
        after: None,
        cursor: None,
        include_geometry: true,
        crs: Crs::Crs84,
        columns: columns.to_vec(),
        sort: Vec::new(),
        conditions: Vec::new(),
        params: Vec::new(),
    };
    let mut filter: Option<&str> = None;
    let mut lang = Lang::Text;
    let (mut bbox, mut bbox_crs, mut cursor) = (None, Crs::Crs84, None);
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
            "cursor" => cursor = Some(value.as_str()),
            "bbox" => bbox = Some(value.as_str()),
            "bbox-crs" => bbox_crs = crs::requested(name, value, offered_crs)?,
            "crs" => request.crs = crs::requested(name, value, offered_crs)?,
            // CQL2 literals are in CRS84.
            "filter-crs" if value == CRS84 => {}
            "filter-crs" => return Err(bad(format!("filter-crs supports only {CRS84}"))),
            // Applied to the time axis; checked and ignored without one.
            "datetime" => {
                let interval = Interval::parse(value)?;
                if let Some(column) = &dataset.temporal_column {
                    let column = quote_ident(column);
                    for (bound, operator) in [(interval.start, ">="), (interval.end, "<=")] {
                        if let Some(at) = bound {
                            request.params.push(Param::Instant(at));
                            request
                                .conditions
                                .push(format!("t.{column} {operator} ${}", request.params.len()));
                        }
                    }
                }
            }
            // Read by `Format`.
            "f" => {}
            "include_geometry" => request.include_geometry = parse_bool("include_geometry", value)?,
            "skipGeometry" => request.include_geometry = !parse_bool("skipGeometry", value)?,
            "properties" => request.columns = parse_properties(value, columns)?,
            "sortby" => request.sort = parse_sortby(value, &queryables)?,
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
    if let Some(bbox) = bbox {
        let condition = bbox_condition(dataset, bbox, bbox_crs, &mut request.params)?;
        request.conditions.push(condition);
    }
    if let Some(filter) = filter {
        let condition = cql::translate(filter, lang, &queryables, &mut request.params)?;
        request.conditions.push(condition);
    }
    if let Some(token) = cursor {
        if request.sort.is_empty() {
            return Err(bad(
                "cursor pages a sorted request: it goes with the sortby it came with",
            ));
        }
        if request.offset > 0 {
            return Err(bad("cursor and offset exclude each other"));
        }
        request.cursor = Some(Cursor::decode(token, request.sort.len())?);
    }
    if request.after.is_some() && !request.sort.is_empty() {
        return Err(bad(
            "after_gid pages the default order; a sorted page goes on by its next link's cursor",
        ));
    }
    Ok(request)
}

/// The condition of a `bbox` in `bbox_crs` (its axes in that CRS's
/// order), in the dataset's CRS. A CRS84 box whose west is greater than
/// its east crosses the antimeridian and is two boxes; a box in a projected
/// CRS has its edges densified so that they keep their course when
/// reprojected.
fn bbox_condition(dataset: &Dataset, text: &str, bbox_crs: Crs, params: &mut Vec<Param>) -> Result<String, AppError> {
    let numbers: Vec<f64> = text
        .split(',')
        .map(|n| n.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad(format!("bbox must be comma-separated numbers, not {text:?}")))?;
    let geom = quote_ident(&dataset.geometry_column);
    if bbox_crs.srid() == 4326 {
        // CRS84 and EPSG:4326 differ only in the order of their axes.
        let numbers = if bbox_crs.northing_first() {
            match numbers[..] {
                [s, w, n, e] => vec![w, s, e, n],
                [s, w, h1, n, e, h2] => vec![w, s, h1, e, n, h2],
                _ => numbers,
            }
        } else {
            numbers
        };
        let [w, s, e, n] = Bbox::from_numbers(&numbers)?.to_array();
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
        return Ok(if w <= e {
            envelope(w, e)
        } else {
            let left = envelope(w, 180.0);
            let right = envelope(-180.0, e);
            format!("({left} OR {right})")
        });
    }
    let [a, b, c, d] = match numbers[..] {
        [a, b, c, d] | [a, b, _, c, d, _] => [a, b, c, d],
        _ => return Err(bad("bbox must be four (or six, with heights) numbers")),
    };
    let [xmin, ymin, xmax, ymax] = if bbox_crs.northing_first() {
        [b, a, d, c]
    } else {
        [a, b, c, d]
    };
    if ![xmin, ymin, xmax, ymax].iter().all(|v| v.is_finite()) || xmin > xmax || ymin > ymax {
        return Err(bad(
            "bbox must be finite numbers, each lower corner value not above the upper one",
        ));
    }
    // Cut to where the CRS has coordinates before PostGIS transforms it:
    // nothing lies beyond, and 1e300 metres transform to nonsense.
    let [west, south, east, north] = crate::coordinates::crs_bounds(bbox_crs.srid());
    let [xmin, ymin, xmax, ymax] = [xmin.max(west), ymin.max(south), xmax.min(east), ymax.min(north)];
    if xmin > xmax || ymin > ymax {
        return Ok("FALSE".into());
    }
    let first = params.len() + 1;
    params.extend([
        Param::Float(xmin),
        Param::Float(ymin),
        Param::Float(xmax),
        Param::Float(ymax),
    ]);
    let envelope = format!(
        "ST_Segmentize(ST_MakeEnvelope(${first}, ${}, ${}, ${}, {srid}), greatest(${} - ${first}, ${} - ${}, 1e-9) / 32)",
        first + 1,
        first + 2,
        first + 3,
        first + 2,
        first + 3,
        first + 1,
        srid = bbox_crs.srid(),
    );
    Ok(format!(
        "ST_Intersects({geom}, {})",
        to_storage(dataset, &envelope, bbox_crs.srid())
    ))
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
pub(super) fn query_error(e: sqlx::Error) -> AppError {
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
/// `COUNT_TIME_LIMIT`, either kept for the data version
/// (`match_counts`). It runs as a task of its own, so that a request
/// that ends first (its page failed, its client left) never drops the
/// counting transaction half begun, which would hand the pool a connection
/// still inside it.
fn number_matched(
    state: &AppState,
    (reads, table): (&PgPool, &str),
    dataset: &Arc<Dataset>,
    where_sql: &str,
    params: &[Param],
    filtered: bool,
) -> impl Future<Output = Result<Option<i64>, AppError>> + use<> {
    let key = filtered.then(|| {
        let filter = crate::tile_cache::recipe_digest(&format!("{where_sql}\n{params:?}"));
        CountKey::new(dataset, filter)
    });
    let kept = key.as_ref().and_then(|k| state.match_counts.get(k));
    let count = (filtered && kept.is_none()).then(|| format!("SELECT count(*) FROM {table} t WHERE {where_sql}"));
    let (state, reads, dataset, params) = (state.clone(), reads.clone(), dataset.clone(), params.to_vec());
    let task = tokio::spawn(async move {
        if let Some(kept) = kept {
            return Ok(kept);
        }
        let (Some(count), Some(key)) = (count, key) else {
            return Ok(Some(dataset.feature_count.unwrap_or(0)));
        };
        let mut tx = reads.begin().await?;
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
        let matched = match counted {
            Ok(row) => Some(row.get(0)),
            // query_canceled: the time limit, not the caller's filter.
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("57014") => None,
            Err(e) => return Err(query_error(e)),
        };
        state.match_counts.keep(key, &dataset, matched);
        Ok(matched)
    });
    async move { task.await.map_err(AppError::internal)? }
}

fn link(href: String, rel: &str, media_type: &str) -> Value {
    json!({"href": href, "rel": rel, "type": media_type})
}

/// What a link's query escapes in a name or value: what would end or split
/// it (`&`, `=`, `#`), what decodes to something else (`%`, `+`), blanks and
/// what a URL may not hold; `:`, `/` and `,` stay as written, so a CRS URI
/// or a bbox reads in the link as a client wrote it.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b'<')
    .add(b'=')
    .add(b'>')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The items link at `base` with the request's own query, `replace`d. The
/// query is written as clients write it (`crs=http://…`), not form-encoded:
/// GDAL 3.6's OAPIF driver adds the query of its dataset name to every
/// page it follows unless the link already holds it as written, and a
/// parameter given twice is refused.
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
    let escape = |text: &str| percent_encoding::utf8_percent_encode(text, QUERY_VALUE).to_string();
    let query: Vec<String> = out
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// A GeoJSON answer whose coordinates are in `crs` (`Content-Crs`).
fn geojson_response(body: String, crs: Crs) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
    if let Ok(value) = HeaderValue::from_str(&crs::content_crs(crs)) {
        headers.insert("content-crs", value);
    }
    response
}

/// A row of a page: the feature's key, its GeoJSON, and its sort values
/// (only for the last feature of a sorted page).
struct PageRow {
    key: i64,
    feature: String,
    sort_values: Vec<Option<String>>,
}

/// One page (and one feature more, to tell whether another follows).
/// Unsorted pages go by key (`after_gid`) or offset. Sorted pages go by
/// key after the sort values (the `cursor`); the first sort key also
/// bounds the scan so an index on it starts at the cursor, with its nulls
/// (last ascending, first descending) read as a part of their own.
async fn fetch_page(
    (reads, table): (&PgPool, &str),
    dataset: &Dataset,
    request: &ItemsRequest,
    where_sql: &str,
) -> Result<Vec<PageRow>, AppError> {
    let key = format!("t.{}", quote_ident(&dataset.key_column));
    let feature = feature_sql(
        dataset,
        &request.columns,
        request.include_geometry.then_some(request.crs),
    );
    // The sort values of a sorted page's last feature (the `last`-th row
    // of a query) make its `next` cursor; only that row computes them.
    let sort_values = |last: i64| {
        if request.sort.is_empty() {
            return String::new();
        }
        let values: Vec<String> = request
            .sort
            .iter()
            .map(|k| format!("t.{}::text", quote_ident(&k.column)))
            .collect();
        format!(
            ", CASE WHEN row_number() OVER () = {last} THEN ARRAY[{}] END",
            values.join(", ")
        )
    };
    let order = request.order_sql(dataset);
    let run = |condition: String, params: Vec<Param>, limit: i64, offset: i64, last: i64| {
        // The page's rows are picked first and only they are written out:
        // PostgreSQL computes a cheap expression below a sort, for every
        // row the sort reads (thousands in a bbox).
        let sql = format!(
            "SELECT {key}::bigint, {feature}{} FROM (SELECT * FROM {table} t \
             WHERE ({where_sql}) AND {condition} ORDER BY {order} LIMIT {limit} OFFSET {offset}) t ORDER BY {order}",
            sort_values(last),
        );
        async move { query_with(sql, &params).fetch_all(reads).await.map_err(query_error) }
    };
    let wanted = request.limit + 1;
    let mut params = request.params.clone();
    let Some(cursor) = &request.cursor else {
        let condition = match request.after {
            Some(after) => {
                params.push(Param::Int(after));
                format!("{key} > ${}", params.len())
            }
            None => "TRUE".into(),
        };
        let rows = run(condition, params, wanted, request.offset, request.limit).await?;
        return Ok(page_rows(&rows, request));
    };
    let (condition, first_bound, nulls_after) = keyset(&request.sort, cursor, &key, &mut params);
    let mut rows = run(
        format!("{condition} AND {first_bound}"),
        params.clone(),
        wanted,
        0,
        request.limit,
    )
    .await?;
    let found = rows.len() as i64;
    if let (Some(nulls), true) = (nulls_after, found < wanted) {
        let more = run(
            format!("{condition} AND {nulls}"),
            params,
            wanted - found,
            0,
            request.limit - found,
        )
        .await?;
        rows.extend(more);
    }
    Ok(page_rows(&rows, request))
}

fn page_rows(rows: &[PgRow], request: &ItemsRequest) -> Vec<PageRow> {
    rows.iter()
        .map(|r| PageRow {
            key: r.get(0),
            feature: r.get(1),
            sort_values: if request.is_sorted() {
                r.get::<Option<Vec<Option<String>>>, _>(2).unwrap_or_default()
            } else {
                Vec::new()
            },
        })
        .collect()
}

/// The rows after `cursor` in the order of `keys` then the key column:
/// the condition; the part of it a scan of the first key's index reads
/// first; and the part that follows it when that one ends before the page
/// does (the first key's nulls, or its values after them), if any.
fn keyset(keys: &[SortKey], cursor: &Cursor, key: &str, params: &mut Vec<Param>) -> (String, String, Option<String>) {
    let value_of = |value: &str, pg_type: &str, params: &mut Vec<Param>| {
        params.push(Param::Text(value.to_string()));
        format!("${}::{pg_type}", params.len())
    };
    let mut equal: Vec<String> = Vec::new();
    let mut after: Vec<String> = Vec::new();
    let mut first_value = None;
    for (i, (k, value)) in keys.iter().zip(&cursor.values).enumerate() {
        let column = format!("t.{}", quote_ident(&k.column));
        let bound = value.as_deref().map(|v| value_of(v, &k.pg_type, params));
        if i == 0 {
            first_value = bound.clone();
        }
        let later = match (&bound, k.descending) {
            // Ascending, nulls last: greater values, then every null.
            (Some(b), false) => Some(format!("({column} > {b} OR {column} IS NULL)")),
            (None, false) => None,
            // Descending, nulls first: smaller values; after a null, every value.
            (Some(b), true) => Some(format!("{column} < {b}")),
            (None, true) => Some(format!("{column} IS NOT NULL")),
        };
        if let Some(later) = later {
            let mut term = equal.clone();
            term.push(later);
            after.push(format!("({})", term.join(" AND ")));
        }
        equal.push(match &bound {
            Some(b) => format!("{column} = {b}"),
            None => format!("{column} IS NULL"),
        });
    }
    params.push(Param::Int(cursor.key));
    let mut last = equal;
    last.push(format!("{key} > ${}", params.len()));
    after.push(format!("({})", last.join(" AND ")));
    let condition = format!("({})", after.join(" OR "));
    let first = &keys[0];
    let column = format!("t.{}", quote_ident(&first.column));
    match (first_value, first.descending) {
        (Some(v), false) => (condition, format!("{column} >= {v}"), Some(format!("{column} IS NULL"))),
        (None, false) => (condition, format!("{column} IS NULL"), None),
        (Some(v), true) => (condition, format!("{column} <= {v}"), None),
        (None, true) => (
            condition,
            format!("{column} IS NULL"),
            Some(format!("{column} IS NOT NULL")),
        ),
    }
}

/// The cursor of the page before a keyset page (`after_gid`), for the
/// HTML pages' "previous" link: `Some(None)` is the first page. Only pages
/// for people look back; JSON clients page forward by `next`.
async fn previous_cursor(
    (reads, table): (&PgPool, &str),
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
        "SELECT t.{key}::bigint FROM {table} t WHERE {where_sql} AND t.{key} <= ${} ORDER BY t.{key} DESC LIMIT {}",
        params.len(),
        limit + 1
    );
    let keys: Vec<i64> = query_with(sql, &params)
        .fetch_all(reads)
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
        ("bbox" = Option<Vec<f64>>, Query,
            description = "four (or six, with heights) numbers in bbox-crs, its axes in that CRS's order: in CRS84 (the default) west,south,east,north"),
        ("datetime" = Option<String>, Query,
            description = "features whose time (the collection's `temporal_column`) is in the interval: an RFC 3339 instant or date, or an interval start/end whose open ends are `..` or empty, the start not after the end; ignored by a collection with no time axis"),
        ("include_geometry" = Option<bool>, Query),
        ("skipGeometry" = Option<bool>, Query, description = "true: features without geometry"),
        ("properties" = Option<Vec<String>>, Query, description = "the properties each feature carries, in this order (an empty list: none)"),
        ("sortby" = Option<String>, Query,
            description = "queryables to sort by, comma separated, each `+name` (or `name`) ascending or `-name` descending; pages stay exact (follow `next`)"),
        ("cursor" = Option<String>, Query, description = "where a sorted page starts: only as a `next` link gives it"),
        ("filter" = Option<String>, Query, description = "CQL2 expression over the collection's queryables"),
        ("filter-lang" = inline(Option<crate::openapi::names::FilterLang>), Query, description = "cql2-text (default) or cql2-json"),
        ("filter-crs" = inline(Option<crate::openapi::names::Crs84>), Query, description = "only CRS84"),
        ("bbox-crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of bbox, one of the collection's `crs` (default CRS84)"),
        ("crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of the coordinates, one of the collection's `crs` (default CRS84); the answer's Content-Crs names it")),
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
    let dataset = super::common::feature_collection(&state, &caller, &id).await?;
    let columns = published_columns(&dataset);
    let offered = crs::collection_crs(&dataset, &state.config.extra_crs);
    let request = parse_request(
        &pairs,
        &dataset,
        &columns,
        state.config.ogc_items_max_page_size,
        &offered,
    )?;
    // The page links are built from the request's own query, which the
    // extractor gave without the caller's key: it rides along again.
    let pairs = credential.kept_in(pairs);
    // Only a well-formed request restores an archived dataset.
    let data = read_gate::open(&state, &caller, &dataset).await?;
    let filtered = !request.conditions.is_empty();
    let where_sql = request.where_sql();
    let match_params = request.params.clone();
    let reader = data.reader().await;
    let page = fetch_page((reader.pool, data.table()), &dataset, &request, &where_sql);
    // The page and the count run side by side on two connections.
    let (mut rows, matched) = tokio::try_join!(
        page,
        number_matched(
            &state,
            (reader.pool, data.table()),
            &dataset,
            &where_sql,
            &match_params,
            filtered
        )
    )?;
    let has_next = rows.len() as i64 > request.limit;
    rows.truncate(request.limit as usize);
    let features: Vec<&str> = rows.iter().map(|r| r.feature.as_str()).collect();
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
    if let (true, Some(last)) = (has_next, rows.last()) {
        let next = if request.sort.is_empty() {
            with_query(
                &base,
                &pairs,
                &[("after_gid", Some(last.key.to_string())), ("offset", None)],
            )
        } else {
            let cursor = Cursor {
                values: last.sort_values.clone(),
                key: last.key,
            };
            with_query(&base, &pairs, &[("cursor", Some(cursor.encode())), ("offset", None)])
        };
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
        let previous = previous_cursor(
            (reader.pool, data.table()),
            &dataset,
            &where_sql,
            &match_params,
            after,
            request.limit,
        )
        .await?;
        if let Some(cursor) = previous {
            let prev = with_query(&base, &pairs, &[("after_gid", cursor.map(|c| c.to_string()))]);
            links.push(link(prev, "prev", "application/geo+json"));
        }
    }
    let mut body = String::with_capacity(features.iter().map(|f| f.len()).sum::<usize>() + 512);
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
        Format::Json => {
            let digest = crate::tile_cache::recipe_digest(&body);
            let etag: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            let mut response = ogc_html::json_answer(geojson_response(body, request.crs));
            if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
                response.headers_mut().insert(header::ETAG, value);
            }
            response
        }
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

/// The query of a single feature: the CRS of its coordinates.
#[derive(serde::Deserialize)]
pub struct ItemQuery {
    crs: Option<String>,
}

/// One feature by its key.
#[utoipa::path(get, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path), FormatQuery,
        ("crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of the coordinates, one of the collection's `crs` (default CRS84); the answer's Content-Crs names it")),
    responses((status = 200, description = "GeoJSON Feature, or its page", content(("application/geo+json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`, or a CRS the collection does not offer", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn item(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path((id, feature_id)): Path<(String, String)>,
    Query(query): Query<ItemQuery>,
) -> Result<Response, AppError> {
    let dataset = super::common::feature_collection(&state, &caller, &id).await?;
    let output_crs = match &query.crs {
        Some(value) => crs::requested("crs", value, &crs::collection_crs(&dataset, &state.config.extra_crs))?,
        None => Crs::Crs84,
    };
    let data = read_gate::open(&state, &caller, &dataset).await?;
    let missing = || AppError::not_found(format!("no feature {feature_id} in collection {id}"));
    let key: i64 = feature_id.parse().map_err(|_| missing())?;
    let columns = published_columns(&dataset);
    let sql = format!(
        "SELECT {}, {} FROM {} t WHERE t.{} = $1",
        feature_sql(&dataset, &columns, Some(output_crs)),
        catalog_shared::history::row_etag("t", &dataset.geometry_column),
        data.table(),
        quote_ident(&dataset.key_column)
    );
    let reader = data.reader().await;
    let found: Option<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(key)
        .fetch_optional(reader.pool)
        .await?;
    let (feature, etag) = found.ok_or_else(missing)?;
    let mut feature: Value = serde_json::from_str(&feature).map_err(AppError::internal)?;
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
    // The row's tag, whatever its representation: what a writer sends
    // back in If-Match (`editing`).
    let mut response = format.answer(
        || geojson_response(feature.to_string(), output_crs),
        || ogc_html::features::item(&context, &dataset.title, &collection_id, &feature),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Ok(response)
}
