//! Bringing existing PostGIS tables into the catalog, checking that a
//! dataset's table still matches its record, and deleting in bulk.
use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, ColumnType, DatasetVisibility, GeometryType, STAGING_PREFIX},
    db::quote_ident,
    extent::ExtentTracker,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, types::Json as SqlJson};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::Limit;
use crate::{
    access::{
        Caller,
        datasets::{visible_dataset, writable_dataset},
    },
    extract::{Json as JsonBody, Path, Query},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(discover))
        .routes(routes!(register_bulk))
        .routes(routes!(bulk_delete))
        .routes(routes!(validate))
}

/// Schemas that hold no user data.
const SYSTEM_SCHEMAS: &str =
    "('pg_catalog', 'information_schema', 'topology', 'tiger', 'tiger_data', 'apalis', 'pg_toast', 'basemap')";

/// Tables with a geometry column that the catalog does not know yet,
/// leaving out the service's staging tables and tables set aside as old.
const UNREGISTERED: &str = "SELECT g.f_table_schema::text AS schema_name, g.f_table_name::text AS table_name,
        g.f_geometry_column::text AS geometry_column, g.type::text AS geometry_type, g.srid,
        CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END AS estimated_rows
     FROM geometry_columns g
     JOIN pg_namespace n ON n.nspname = g.f_table_schema
     JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = g.f_table_name
     WHERE g.f_table_schema NOT IN {SYSTEM_SCHEMAS}
       AND c.relkind IN ('r', 'p', 'v', 'm')
       AND g.f_table_name NOT LIKE '{STAGING_LIKE}%' AND g.f_table_name NOT LIKE '\\_old\\_%' AND g.f_table_name NOT LIKE '%\\_old'
       AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.schema_name = g.f_table_schema AND d.table_name = g.f_table_name)";

fn unregistered_sql() -> String {
    // Underscores are wildcards in LIKE.
    UNREGISTERED
        .replace("{SYSTEM_SCHEMAS}", SYSTEM_SCHEMAS)
        .replace("{STAGING_LIKE}", &STAGING_PREFIX.replace('_', "\\_"))
}

/// `ST_GeometryType` names of the geometries every output serves.
const LINEAR_TYPES: &str = "'ST_Point', 'ST_LineString', 'ST_Polygon', 'ST_MultiPoint', 'ST_MultiLineString',
    'ST_MultiPolygon', 'ST_GeometryCollection'";

#[derive(sqlx::FromRow)]
struct Candidate {
    schema_name: String,
    table_name: String,
    geometry_column: String,
    geometry_type: Option<String>,
    srid: Option<i32>,
    estimated_rows: Option<i64>,
}

fn display_name(schema: &str, table: &str) -> String {
    if schema == "public" {
        table.to_string()
    } else {
        format!("{schema}.{table}")
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
struct DiscoverQuery {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 5000, default = 1000)]
    limit: Limit<1000, 5000>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct DiscoveredTable {
    table_name: String,
    geometry_type: Option<GeometryType>,
    srid: Option<i32>,
    estimated_rows: Option<i64>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct Discovered {
    tables: Vec<DiscoveredTable>,
}

/// Spatial tables not yet in the catalog (admin).
#[utoipa::path(get, path = "/api/ingest/discover", tag = "catalog", params(DiscoverQuery),
    responses((status = 200, body = Discovered), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn discover(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<DiscoverQuery>,
) -> Result<Json<Discovered>, AppError> {
    caller.admin()?;
    let limit = q.limit.get();
    let sql = format!("{} ORDER BY 1, 2 LIMIT $1", unregistered_sql());
    let found: Vec<Candidate> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(limit)
        .fetch_all(&state.pool)
        .await?;
    Ok(Json(Discovered {
        tables: found
            .into_iter()
            .map(|c| DiscoveredTable {
                table_name: display_name(&c.schema_name, &c.table_name),
                geometry_type: c.geometry_type.as_deref().map(GeometryType::from_postgis),
                srid: c.srid.filter(|s| *s > 0),
                estimated_rows: c.estimated_rows,
            })
            .collect(),
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RegisterItem {
    /// `table` (schema public) or `schema.table`; at most 63 characters
    table_name: String,
    title: String,
    summary: Option<String>,
    visibility: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RegisterRequest {
    tables: Vec<RegisterItem>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct RegisterResult {
    table_name: String,
    /// success, skipped or error
    status: &'static str,
    dataset_id: Option<Uuid>,
    title: String,
    error: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct RegisterResults {
    results: Vec<RegisterResult>,
}

/// Registers existing tables as datasets (admin). Each table stands alone:
/// one failure never blocks another; results come in request order.
#[utoipa::path(post, path = "/api/ingest/register/bulk", tag = "catalog", request_body = RegisterRequest,
    responses((status = 200, body = RegisterResults)))]
async fn register_bulk(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<RegisterRequest>,
) -> Result<Json<RegisterResults>, AppError> {
    let admin = caller.admin()?.id;
    let mut results = Vec::with_capacity(body.tables.len());
    for item in body.tables {
        let mut result = RegisterResult {
            table_name: item.table_name.clone(),
            status: "error",
            dataset_id: None,
            title: item.title.clone(),
            error: None,
        };
        match register_one(&state, admin, &item).await {
            Ok(Registered::New(id)) => {
                result.status = "success";
                result.dataset_id = Some(id);
            }
            Ok(Registered::Existing(id)) => {
                result.status = "skipped";
                result.dataset_id = Some(id);
                result.error = Some("the table is already in the catalog".into());
            }
            Err(why) => result.error = Some(why),
        }
        results.push(result);
    }
    Ok(Json(RegisterResults { results }))
}

enum Registered {
    New(Uuid),
    Existing(Uuid),
}

async fn register_one(state: &AppState, admin: Uuid, item: &RegisterItem) -> Result<Registered, String> {
    let (schema, table, visibility) = checked_item(item)?;
    let fail = |e: sqlx::Error| format!("the table could not be read: {e}");
    let existing: Option<Uuid> =
        sqlx::query_scalar("SELECT id FROM datasets WHERE schema_name = $1 AND table_name = $2")
            .bind(&schema)
            .bind(&table)
            .fetch_optional(&state.pool)
            .await
            .map_err(fail)?;
    if let Some(id) = existing {
        return Ok(Registered::Existing(id));
    }
    let sql = format!(
        "{} AND g.f_table_schema = $1 AND g.f_table_name = $2",
        unregistered_sql()
    );
    let candidate: Candidate = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(&schema)
        .bind(&table)
        .fetch_optional(&state.pool)
        .await
        .map_err(fail)?
        .ok_or_else(|| {
            format!(
                "{} is not a table with a geometry column that the catalog could register",
                item.table_name
            )
        })?;
    let srid = candidate
        .srid
        .filter(|s| *s > 0)
        .ok_or("the geometry column declares no SRID; set one first")?;
    let key: Option<String> = sqlx::query_scalar(include_str!("catalog/integer_primary_key.sql"))
        .bind(&schema)
        .bind(&table)
        .fetch_optional(&state.pool)
        .await
        .map_err(fail)?;
    let key = key.ok_or("the table needs a single-column integer primary key to page its features by")?;
    let columns = table_columns(
        &mut *state.pool.acquire().await.map_err(fail)?,
        &schema,
        &table,
        &key,
        &candidate.geometry_column,
    )
    .await
    .map_err(fail)?;
    let qualified = format!("{}.{}", quote_ident(&schema), quote_ident(&table));
    let (count, extent) = contents(state, &qualified, &candidate.geometry_column).await?;
    let id = Uuid::now_v7();
    sqlx::query(include_str!("catalog/register.sql"))
        .bind(id)
        .bind(item.title.trim())
        .bind(&item.summary)
        .bind(&schema)
        .bind(&table)
        .bind(&key)
        .bind(&candidate.geometry_column)
        .bind(candidate.geometry_type.as_deref().map(GeometryType::from_postgis))
        .bind(extent.bbox().map(|b| b.to_vec()))
        .bind(count)
        .bind(SqlJson(&columns))
        .bind(visibility)
        .bind(admin)
        .bind(srid)
        .execute(&state.pool)
        .await
        .map_err(fail)?;
    Ok(Registered::New(id))
}

/// The item's fields checked: its schema, table and visibility.
fn checked_item(item: &RegisterItem) -> Result<(String, String, DatasetVisibility), String> {
    if item.table_name.is_empty() || item.table_name.chars().count() > 63 {
        return Err("table_name must be 1 to 63 characters".into());
    }
    if item.title.trim().is_empty() || item.title.chars().count() > 500 {
        return Err("title must be 1 to 500 characters".into());
    }
    if item.summary.as_ref().is_some_and(|s| s.chars().count() > 5000) {
        return Err("summary must be at most 5000 characters".into());
    }
    // A string here, not the enum: a misspelt visibility fails its own
    // table only, as the other fields do.
    let visibility = match &item.visibility {
        None => DatasetVisibility::default(),
        Some(name) => {
            DatasetVisibility::parse(name).ok_or("visibility must be private, restricted, internal or public")?
        }
    };
    let (schema, table) = match item.table_name.split_once('.') {
        Some((s, t)) => (s.to_string(), t.to_string()),
        None => ("public".to_string(), item.table_name.clone()),
    };
    Ok((schema, table, visibility))
}

/// A table's row count and its extent in WGS 84; a table holding curves
/// is refused.
async fn contents(state: &AppState, qualified: &str, geometry_column: &str) -> Result<(i64, ExtentTracker), String> {
    let fail = |e: sqlx::Error| format!("the table could not be read: {e}");
    let geom = quote_ident(geometry_column);
    // A table read in place cannot be linearised as ingest does, and
    // GeoJSON, vector tiles and the export formats carry no curves, so a
    // table holding any is refused rather than published with rows no
    // output serves.
    let stats_sql = format!(
        "SELECT count(*), array_agg(DISTINCT substr(ST_GeometryType({geom}), 4)) FILTER (WHERE ST_HasArc({geom})
                OR ST_GeometryType({geom}) NOT IN ({LINEAR_TYPES}))
         FROM {qualified}"
    );
    let (count, curves): (i64, Option<Vec<String>>) = sqlx::query_as(sqlx::AssertSqlSafe(stats_sql))
        .fetch_one(&state.pool)
        .await
        .map_err(fail)?;
    if let Some(curves) = curves.filter(|c| !c.is_empty()) {
        return Err(format!(
            "the table holds {} geometries, which GeoJSON and vector tiles cannot carry; store them as straight segments (ST_CurveToLine) first",
            curves.join(", ")
        ));
    }
    let extent = catalog_shared::extent::of_table(&state.pool, qualified, geometry_column)
        .await
        .map_err(fail)?;
    Ok((count, extent))
}

/// Column info of a table in the form ingested datasets record.
async fn table_columns(
    db: &mut PgConnection,
    schema: &str,
    table: &str,
    key: &str,
    geom: &str,
) -> Result<Vec<ColumnInfo>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod)
         FROM pg_attribute a WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass
           AND a.attnum > 0 AND NOT a.attisdropped AND a.attname NOT IN ($3, $4)
         ORDER BY a.attnum",
    )
    .bind(schema)
    .bind(table)
    .bind(key)
    .bind(geom)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, source_type)| ColumnInfo {
            original_name: name.clone(),
            name,
            pg_type: ColumnType::from_postgres(&source_type),
            source_type,
        })
        .collect())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct BulkDeleteItem {
    dataset_id: Uuid,
    /// The dataset's exact title.
    #[schema(max_length = 500)]
    confirm_title: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct BulkDeleteRequest {
    #[schema(min_items = 1, max_items = 100)]
    datasets: Vec<BulkDeleteItem>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct BulkDeleteResult {
    dataset_id: Uuid,
    /// deleted or error
    status: &'static str,
    detail: String,
    /// deleted, not_found, forbidden, title_mismatch
    code: &'static str,
}

#[derive(Serialize, utoipa::ToSchema)]
struct BulkDeleteResponse {
    deleted: usize,
    errors: usize,
    results: Vec<BulkDeleteResult>,
}

/// Deletes up to 100 datasets, each confirmed by its exact title.
#[utoipa::path(post, path = "/api/datasets/bulk-delete", tag = "datasets", request_body = BulkDeleteRequest,
    responses((status = 200, body = BulkDeleteResponse), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn bulk_delete(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<BulkDeleteRequest>,
) -> Result<Json<BulkDeleteResponse>, AppError> {
    caller.editor()?;
    if !(1..=100).contains(&body.datasets.len()) {
        return Err(AppError::unprocessable("datasets must hold 1 to 100 items"));
    }
    if let Some(i) = body.datasets.iter().position(|d| d.confirm_title.chars().count() > 500) {
        return Err(AppError::unprocessable(format!(
            "datasets[{i}].confirm_title: at most 500 characters"
        )));
    }
    let mut results = Vec::with_capacity(body.datasets.len());
    for item in body.datasets {
        let outcome = match writable_dataset(&state, &caller, item.dataset_id).await {
            Err(e) if e.status().as_u16() == 404 => Err(("not_found", "no such dataset".to_string())),
            Err(e) if e.status().as_u16() == 403 => Err(("forbidden", e.problem.detail)),
            Err(e) => return Err(e),
            Ok(d) if d.title != item.confirm_title => Err((
                "title_mismatch",
                "confirm_title does not equal the dataset's title".to_string(),
            )),
            Ok(d) => {
                crate::datasets::delete_dataset_record(&state, &d).await?;
                Ok(())
            }
        };
        results.push(match outcome {
            Ok(()) => BulkDeleteResult {
                dataset_id: item.dataset_id,
                status: "deleted",
                detail: "deleted".into(),
                code: "deleted",
            },
            Err((code, detail)) => BulkDeleteResult {
                dataset_id: item.dataset_id,
                status: "error",
                detail,
                code,
            },
        });
    }
    let deleted = results.iter().filter(|r| r.status == "deleted").count();
    Ok(Json(BulkDeleteResponse {
        deleted,
        errors: results.len() - deleted,
        results,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
struct ValidateQuery {
    /// recompute (refused to read-only keys) instead of the last result
    refresh: Option<bool>,
}

/// Checks the table still exists and matches the recorded columns.
async fn check_table(state: &AppState, d: &crate::dataset_record::Dataset) -> Result<Value, AppError> {
    let (schema_name, table_name) = d.table_names();
    let exists: bool = sqlx::query_scalar("SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL")
        .bind(schema_name)
        .bind(table_name)
        .fetch_one(&state.pool)
        .await?;
    let mut problems = Vec::new();
    if !exists {
        problems.push(format!("the table {}.{} does not exist", schema_name, table_name));
    } else {
        let mut conn = state.pool.acquire().await?;
        let actual = table_columns(&mut conn, schema_name, table_name, &d.key_column, &d.geometry_column).await?;
        let recorded = &d.column_info.0;
        for column in recorded {
            let name = &column.name;
            match actual.iter().find(|c| c.name == *name) {
                None => problems.push(format!("column {name} is missing")),
                Some(found) if found.sql_type() != column.sql_type() => problems.push(format!(
                    "column {name} is {}, recorded as {}",
                    found.sql_type(),
                    column.sql_type()
                )),
                _ => {}
            }
        }
        // The tiles' first zoom is the service's column, not the data's.
        let unrecorded = actual.iter().filter(|f| {
            f.name != catalog_shared::generalize::FIRST_ZOOM_COLUMN && !recorded.iter().any(|r| r.name == f.name)
        });
        for found in unrecorded {
            problems.push(format!("column {} is not in the record", found.name));
        }
    }
    Ok(
        json!({"dataset_id": d.id, "valid": problems.is_empty(), "problems": problems, "checked_at": chrono::Utc::now()}),
    )
}

#[utoipa::path(get, path = "/api/datasets/{dataset_id}/validate", tag = "datasets", params(("dataset_id" = Uuid, Path), ValidateQuery),
    responses((status = 200, description = "{dataset_id, valid, problems, checked_at}")))]
async fn validate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(q): Query<ValidateQuery>,
) -> Result<Json<Value>, AppError> {
    let dataset = visible_dataset(&state, &caller, id).await?;
    let cached: Option<SqlJson<Value>> = sqlx::query_scalar("SELECT validation FROM datasets WHERE id = $1")
        .bind(id)
        .fetch_one(&state.pool)
        .await?;
    if !q.refresh.unwrap_or(false) {
        if let Some(result) = cached {
            return Ok(Json(result.0));
        }
        return Ok(Json(check_table(&state, &dataset).await?));
    }
    writable_dataset(&state, &caller, id).await?;
    let result = check_table(&state, &dataset).await?;
    sqlx::query("UPDATE datasets SET validation = $2 WHERE id = $1")
        .bind(id)
        .bind(SqlJson(&result))
        .execute(&state.pool)
        .await?;
    Ok(Json(result))
}
