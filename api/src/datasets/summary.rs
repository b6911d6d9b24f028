//! A column's values at a glance, for styling a map layer by attribute:
//! the most common values with their counts and, for numbers, the range
//! and the breaks of equal-count classes. Values come as vector tiles carry
//! them, so a style built from them matches the drawn features.
use axum::{Json, extract::State};
use catalog_shared::{AppError, db::quote_ident, tile_sql::tile_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json as SqlJson;
use uuid::Uuid;

use crate::dataset_record::published_columns;
use crate::{
    access::{Caller, datasets::cached_visible_dataset},
    extract::{Path, Query},
    state::AppState,
};

/// How many of the most common values a summary lists.
const MOST_COMMON: i64 = 50;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct SummaryQuery {
    /// How many equal-count classes the breaks of a number column cut.
    #[param(minimum = 2, maximum = 12, default = 5)]
    classes: Option<u8>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct ValueCount {
    #[schema(value_type = Object)]
    value: Value,
    count: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct ColumnSummary {
    /// The property's name in features and vector tiles.
    column: String,
    /// Its name in the source.
    title: String,
    /// Rows with a value (not null).
    count: i64,
    /// How many different values there are.
    distinct: i64,
    /// The most common values (up to 50), most common first.
    values: Vec<ValueCount>,
    /// Numbers only: the smallest and largest value.
    min: Option<f64>,
    max: Option<f64>,
    /// Numbers only: the values that cut the rows into `classes` classes of
    /// about equal count, smallest first (one fewer than the classes).
    breaks: Option<Vec<f64>>,
}

/// A summary of one column of a vector dataset.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/columns/{column}/summary", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("column" = String, Path, description = "a column's name or its name in the source"), SummaryQuery),
    responses((status = 200, body = ColumnSummary),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn column_summary(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, column)): Path<(Uuid, String)>,
    Query(q): Query<SummaryQuery>,
) -> Result<Json<ColumnSummary>, AppError> {
    let classes = q.classes.unwrap_or(5);
    if !(2..=12).contains(&classes) {
        return Err(AppError::bad_request("classes must be between 2 and 12"));
    }
    let dataset = cached_visible_dataset(&state, &caller, id).await?;
    let data = crate::read_gate::open(&state, &caller, &dataset).await?;
    let columns = published_columns(&dataset);
    let info = columns
        .iter()
        .find(|c| c.name == column)
        .or_else(|| columns.iter().find(|c| c.original_name == column))
        .ok_or_else(|| AppError::not_found(format!("{column:?} is not a column of this dataset")))?;
    let fractions: Vec<f64> = (1..classes).map(|i| f64::from(i) / f64::from(classes)).collect();
    let numbers = if info.pg_type.is_number() {
        "(SELECT min(v)::float8 FROM v), (SELECT max(v)::float8 FROM v),
         (SELECT percentile_cont($2::float8[]) WITHIN GROUP (ORDER BY v::float8) FROM v)"
    } else {
        "NULL::float8, NULL::float8, NULL::float8[]"
    };
    let name = quote_ident(&info.name);
    let sql = format!(
        "WITH rows AS (SELECT {value} FROM {table} t),
              v AS (SELECT {name} AS v FROM rows WHERE {name} IS NOT NULL)
         SELECT (SELECT count(*) FROM v), (SELECT count(DISTINCT v) FROM v),
                (SELECT coalesce(jsonb_agg(jsonb_build_object('value', to_jsonb(c.v), 'count', c.n) ORDER BY c.n DESC, c.v), '[]')
                   FROM (SELECT v, count(*) AS n FROM v GROUP BY v ORDER BY n DESC, v LIMIT $1) c),
                {numbers}",
        value = tile_value(info),
        table = data.table(),
    );
    let reads = data.reader().await.pool;
    type Row = (
        i64,
        i64,
        SqlJson<Vec<Value>>,
        Option<f64>,
        Option<f64>,
        Option<Vec<f64>>,
    );
    let (count, distinct, values, min, max, breaks): Row = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(MOST_COMMON)
        .bind(&fractions)
        .fetch_one(reads)
        .await?;
    let values = values
        .0
        .into_iter()
        .map(|mut entry| ValueCount {
            count: entry["count"].as_i64().unwrap_or(0),
            value: entry["value"].take(),
        })
        .collect();
    Ok(Json(ColumnSummary {
        column: info.name.clone(),
        title: info.original_name.clone(),
        count,
        distinct,
        values,
        min,
        max,
        breaks: if count == 0 { None } else { breaks },
    }))
}
