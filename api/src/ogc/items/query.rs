//! The SQL of items: features as GeoJSON text built inside PostgreSQL,
//! the conditions of bbox and property filters, the page by key or by
//! sort cursor, and the count of matches.
use std::sync::Arc;

use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, ColumnType},
    db::{quote_ident, quote_literal},
};
use sqlx::{PgPool, Row, postgres::PgRow};

use super::{
    conditions::storage_srid,
    request::{Cursor, ItemsRequest, SortKey, bad},
};
use crate::{
    coordinates::transformed_if_drawable,
    dataset_record::Dataset,
    match_counts::CountKey,
    ogc::{
        crs::Crs,
        params::{Binds, Param, query_with},
    },
    state::AppState,
};

/// Where a page's rows are read: the pool (the primary or a replica) and
/// the dataset's table as the read gate names it.
pub(super) type Source<'a> = (&'a PgPool, &'a str);
/// The dataset's geometry column reprojected by PostGIS to `srid`, east
/// first whatever the CRS (as files keep it), so paging and filters stay
/// as they are; null where it holds coordinates its CRS does not have.
pub(crate) fn geometry_as(dataset: &Dataset, srid: i32) -> String {
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

/// A column's value as a JSON value. A float that happens to be whole is
/// written with a fraction (`889953.0`): clients (GDAL, QGIS) type a
/// column from the values of its first page, and `889953` would make a
/// float column an integer one, losing the fractions of later rows.
fn property_value(column: &ColumnInfo) -> String {
    let value = format!("t.{}", quote_ident(&column.name));
    if column.pg_type != ColumnType::Double {
        return value;
    }
    format!("CASE WHEN {value}::text ~ '^-?[0-9]+$' THEN ({value}::text || '.0')::json ELSE to_json({value}) END")
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
                .map(|c| format!("{}, {}", quote_literal(&c.name), property_value(c)))
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

impl ItemsRequest {
    /// The order features go in: the sort keys, then the key.
    pub(crate) fn order_sql(&self, dataset: &Dataset) -> String {
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

    /// The condition features match (`TRUE` without filters).
    pub(crate) fn where_sql(&self) -> String {
        if self.conditions.is_empty() {
            "TRUE".into()
        } else {
            self.conditions.join(" AND ")
        }
    }
}

/// A query the filter made invalid for the column types (a date that is no
/// date, text compared with a number) is the caller's error.
pub(crate) fn query_error(e: sqlx::Error) -> AppError {
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
pub(super) fn number_matched(
    state: &AppState,
    (reads, table): Source<'_>,
    dataset: &Arc<Dataset>,
    request: &ItemsRequest,
) -> impl Future<Output = Result<Option<i64>, AppError>> + use<> {
    let where_sql = request.where_sql();
    let key = request.is_filtered().then(|| {
        let filter = crate::tile_cache::recipe_digest(&format!("{where_sql}\n{:?}", request.binds));
        CountKey::new(dataset, filter)
    });
    let kept = key.as_ref().and_then(|k| state.match_counts.get(k));
    let count = (key.is_some() && kept.is_none()).then(|| format!("SELECT count(*) FROM {table} t WHERE {where_sql}"));
    let (state, reads, dataset, binds) = (state.clone(), reads.clone(), dataset.clone(), request.binds.clone());
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
        let counted = query_with(count, &binds).fetch_one(&mut *tx).await;
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

/// A row of a page: the feature's key, its GeoJSON, and its sort values
/// (only for the last feature of a sorted page).
pub(super) struct PageRow {
    pub(super) key: i64,
    pub(super) feature: String,
    pub(super) sort_values: Vec<Option<String>>,
}

/// The features of a page, and whether another page follows.
pub(super) struct Page {
    pub(super) rows: Vec<PageRow>,
    pub(super) has_next: bool,
}

/// One page (read with one feature more, to tell whether another
/// follows). Unsorted pages go by key (`after_gid`) or offset. Sorted pages
/// go by key after the sort values (the `cursor`); the first sort key also
/// bounds the scan so an index on it starts at the cursor, with its nulls
/// (last ascending, first descending) read as a part of their own.
pub(super) async fn fetch_page(
    (reads, table): Source<'_>,
    dataset: &Dataset,
    request: &ItemsRequest,
) -> Result<Page, AppError> {
    let key = format!("t.{}", quote_ident(&dataset.key_column));
    let feature = feature_sql(
        dataset,
        &request.columns,
        request.include_geometry.then_some(request.crs),
    );
    // The sort values of a sorted page's last feature (the `last`-th row
    // of a query) make its `next` cursor; only that row computes them.
    let sort_values = |last: i64| {
        if !request.is_sorted() {
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
    let (where_sql, order) = (request.where_sql(), request.order_sql(dataset));
    let run = |condition: String, binds: Binds, limit: i64, offset: i64, last: i64| {
        // The page's rows are picked first and only they are written out:
        // PostgreSQL computes a cheap expression below a sort, for every
        // row the sort reads (thousands in a bbox).
        let sql = format!(
            "SELECT {key}::bigint, {feature}{} FROM (SELECT * FROM {table} t \
             WHERE ({where_sql}) AND {condition} ORDER BY {order} LIMIT {limit} OFFSET {offset}) t ORDER BY {order}",
            sort_values(last),
        );
        async move { query_with(sql, &binds).fetch_all(reads).await.map_err(query_error) }
    };
    let wanted = request.limit + 1;
    let mut binds = request.binds.clone();
    let rows = match &request.cursor {
        None => {
            let condition = match request.after {
                Some(after) => format!("{key} > {}", binds.bind(Param::Int(after))),
                None => "TRUE".into(),
            };
            run(condition, binds, wanted, request.offset, request.limit).await?
        }
        Some(cursor) => {
            let (condition, first_bound, nulls_after) = keyset(&request.sort, cursor, &key, &mut binds);
            let mut rows = run(
                format!("{condition} AND {first_bound}"),
                binds.clone(),
                wanted,
                0,
                request.limit,
            )
            .await?;
            let found = rows.len() as i64;
            if let (Some(nulls), true) = (nulls_after, found < wanted) {
                let more = run(
                    format!("{condition} AND {nulls}"),
                    binds,
                    wanted - found,
                    0,
                    request.limit - found,
                )
                .await?;
                rows.extend(more);
            }
            rows
        }
    };
    Ok(page_of(&rows, request))
}

fn page_of(rows: &[PgRow], request: &ItemsRequest) -> Page {
    let has_next = rows.len() as i64 > request.limit;
    let rows = rows
        .iter()
        .take(request.limit as usize)
        .map(|r| PageRow {
            key: r.get(0),
            feature: r.get(1),
            sort_values: if request.is_sorted() {
                r.get::<Option<Vec<Option<String>>>, _>(2).unwrap_or_default()
            } else {
                Vec::new()
            },
        })
        .collect();
    Page { rows, has_next }
}

/// The rows after `cursor` in the order of `keys` then the key column:
/// the condition; the part of it a scan of the first key's index reads
/// first; and the part that follows it when that one ends before the page
/// does (the first key's nulls, or its values after them), if any.
fn keyset(keys: &[SortKey], cursor: &Cursor, key: &str, binds: &mut Binds) -> (String, String, Option<String>) {
    let mut equal: Vec<String> = Vec::new();
    let mut after: Vec<String> = Vec::new();
    let mut first_value = None;
    for (i, (k, value)) in keys.iter().zip(&cursor.values).enumerate() {
        let column = format!("t.{}", quote_ident(&k.column));
        let bound = value
            .as_deref()
            .map(|v| format!("{}::{}", binds.bind(Param::Text(v.to_string())), k.sql_type));
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
    let mut last = equal;
    last.push(format!("{key} > {}", binds.bind(Param::Int(cursor.key))));
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

/// The key the page before a keyset page (`after_gid`) starts after, for
/// the HTML pages' "previous" link: `Some(None)` is the first page, `None`
/// no page.
pub(super) async fn previous_cursor(
    (reads, table): Source<'_>,
    dataset: &Dataset,
    request: &ItemsRequest,
    after: i64,
) -> Result<Option<Option<i64>>, AppError> {
    let key = quote_ident(&dataset.key_column);
    let mut binds = request.binds.clone();
    let sql = format!(
        "SELECT t.{key}::bigint FROM {table} t WHERE {} AND t.{key} <= {} ORDER BY t.{key} DESC LIMIT {}",
        request.where_sql(),
        binds.bind(Param::Int(after)),
        request.limit + 1
    );
    let keys: Vec<i64> = query_with(sql, &binds)
        .fetch_all(reads)
        .await
        .map_err(query_error)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(match keys.len() as i64 {
        0 => None,
        n if n <= request.limit => Some(None),
        _ => Some(keys.last().copied()),
    })
}
