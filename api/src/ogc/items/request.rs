//! An items request read from its query: limits, paging, properties,
//! CRS, sort keys and the conditions its filters make.
use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, ColumnType},
    db::quote_ident,
};

use super::conditions::{bbox_condition, property_condition};
use crate::{
    dataset_record::Dataset,
    interval::Interval,
    ogc::{
        cql::{self, Lang, Queryable, Queryables},
        crs::{self, CRS84, Crs},
        params::{Binds, Param},
    },
};

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
            pg_type: ColumnType::BigInt,
            sql_type: ColumnType::BigInt.as_str().into(),
        },
    );
    for c in columns {
        let queryable = Queryable {
            column: c.name.clone(),
            pg_type: c.pg_type,
            sql_type: c.sql_type().to_string(),
        };
        q.by_name
            .entry(c.original_name.clone())
            .or_insert_with(|| queryable.clone());
        q.by_name.insert(c.name.clone(), queryable);
    }
    q
}

pub(crate) struct ItemsRequest {
    pub(super) limit: i64,
    pub(super) offset: i64,
    pub(super) after: Option<i64>,
    /// The `next` link's cursor of a sorted page.
    pub(super) cursor: Option<Cursor>,
    pub(crate) include_geometry: bool,
    pub(crate) crs: Crs,
    /// The properties each feature carries, in this order.
    pub(crate) columns: Vec<ColumnInfo>,
    pub(super) sort: Vec<SortKey>,
    /// Conditions on what matches (paging excluded), and their values.
    pub(super) conditions: Vec<String>,
    pub(crate) binds: Binds,
}

impl ItemsRequest {
    pub(crate) fn is_sorted(&self) -> bool {
        !self.sort.is_empty()
    }

    pub(super) fn is_filtered(&self) -> bool {
        !self.conditions.is_empty()
    }

    /// The key a keyset page starts after (`after_gid`).
    pub(super) fn after_key(&self) -> Option<i64> {
        self.after
    }

    /// The offset of the page before an offset page.
    pub(super) fn previous_offset(&self) -> Option<i64> {
        (self.offset > 0 && self.after.is_none()).then(|| (self.offset - self.limit).max(0))
    }
}

pub(super) fn bad(detail: impl Into<String>) -> AppError {
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
pub(super) struct SortKey {
    pub(super) column: String,
    /// Its type in SQL, which the cursor's text values are cast to.
    pub(super) sql_type: String,
    pub(super) descending: bool,
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
        if !queryable.pg_type.is_ordered() {
            return Err(bad(format!(
                "sortby: {name:?} holds values of no order ({})",
                queryable.sql_type
            )));
        }
        if keys.iter().any(|k| k.column == queryable.column) {
            return Err(bad(format!("sortby names {name:?} twice")));
        }
        keys.push(SortKey {
            column: queryable.column.clone(),
            sql_type: queryable.sql_type.clone(),
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
pub(super) struct Cursor {
    pub(super) values: Vec<Option<String>>,
    pub(super) key: i64,
}

impl Cursor {
    pub(super) fn encode(&self) -> String {
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

pub(crate) fn parse_request(
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
        binds: Binds::default(),
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
                            let at = request.binds.bind(Param::Instant(at));
                            request.conditions.push(format!("t.{column} {operator} {at}"));
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
                lang = Lang::named(value)
                    .ok_or_else(|| bad(format!("filter-lang must be one of {}", Lang::NAMES.join(", "))))?
            }
            "api_key" => {}
            other => {
                let queryable = queryables.by_name.get(other).ok_or_else(|| {
                    bad(format!(
                        "unknown query parameter {other:?}; a property filter must name a queryable"
                    ))
                })?;
                let condition = property_condition(queryable, value, &mut request.binds);
                request.conditions.push(condition);
            }
        }
    }
    if let Some(bbox) = bbox {
        let condition = bbox_condition(dataset, bbox, bbox_crs, &mut request.binds)?;
        request.conditions.push(condition);
    }
    if let Some(filter) = filter {
        let condition = cql::translate(filter, lang, &queryables, &mut request.binds)?;
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
