//! The read-only SQL sandbox. Two independent gates stand between a
//! caller's text and the data (threat model: `docs/sandbox.md`):
//! 1. `statement`: the real PostgreSQL parser admits one plain SELECT of
//!    allow-listed node kinds and functions; the checked tree, printed
//!    back, is what runs.
//! 2. The database: the statement runs on a pool that logs in as
//!    `catalog_sandbox`, a role with no memberships (nothing to switch to)
//!    and SELECT on dataset tables only, in a read-only transaction with a
//!    statement timeout. Every relation the statement names is resolved by
//!    the database itself in that transaction and must be a table of a
//!    dataset the caller may see.
//!
//! Rows come back as JSON (geometry as GeoJSON), capped in count and bytes.
mod statement;

use std::collections::HashSet;

use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    datasets::{PublicationStatus, StorageTier},
};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::postgres::PgConnection;
use utoipa_axum::{router::OpenApiRouter, routes};

use uuid::Uuid;

use crate::{
    access::{Caller, policy::visible_to_caller},
    extract::Json as JsonBody,
    read_gate::rehydrated,
    replicas::UNKNOWN_POSITION,
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run_query))
}

const STATEMENT_TIMEOUT_MS: u32 = 5_000;
const ROW_CAP: usize = 1_000;
/// The most result text one request may return; the database measures
/// each row before sending it, so a huge value never reaches the API.
const MAX_RESULT_BYTES: i64 = 8 * 1024 * 1024;
const MAX_SQL_CHARS: usize = 20_000;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct QueryRequest {
    /// One read-only statement, e.g. `SELECT name FROM data.parks_1a2b3c4d`:
    /// 1 to 20000 characters, not only blanks.
    #[schema(
        max_length = 20000,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    sql: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct QueryResult {
    columns: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    rows: Vec<Value>,
    row_count: usize,
    /// More rows matched than the cap of 1000.
    truncated: bool,
}

/// Runs one read-only SQL statement over the datasets the caller can see.
#[utoipa::path(post, path = "/api/query", tag = "catalog", request_body = QueryRequest,
    responses((status = 200, body = QueryResult),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn run_query(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<QueryRequest>,
) -> Result<Json<QueryResult>, AppError> {
    caller.signed_in()?;
    let sql = body.sql.trim();
    if sql.is_empty() || sql.chars().count() > MAX_SQL_CHARS {
        return Err(AppError::bad_request(format!(
            "sql must be 1 to {MAX_SQL_CHARS} characters"
        )));
    }
    let checked = statement::check(sql)?;
    let (readable, granted) = readable_tables(&state, &caller).await?;
    // Tables granted just now are readable on a replica once it has
    // replayed the grant: until then the statement runs on the primary.
    let after = if granted { UNKNOWN_POSITION } else { 0 };
    let reader = state.db.reader(caller.user_id(), after).await;
    let mut tx = state.sandbox.begin(reader.replica).await?;
    let settings =
        format!("SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}; SET LOCAL search_path = data, public");
    sqlx::raw_sql(sqlx::AssertSqlSafe(settings)).execute(&mut *tx).await?;
    if let Some(cold) = cold_dataset_named(&state, &caller, &checked.relations).await? {
        rehydrated(&state, &caller, cold).await?;
    }
    admit_relations(&mut tx, &checked.relations, &readable).await?;
    let (rows, truncated) = run_capped(&mut tx, &checked.sql).await?;
    tx.rollback().await?;
    let columns = rows
        .first()
        .and_then(|r| r.as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    Ok(Json(QueryResult {
        columns,
        row_count: rows.len(),
        rows,
        truncated,
    }))
}

/// A cold dataset the caller may see whose table the statement names (in
/// the `data` schema, where unqualified names resolve first): its data
/// must come back before the statement can read it.
async fn cold_dataset_named(
    state: &AppState,
    caller: &Caller,
    relations: &[statement::RelationRef],
) -> Result<Option<Uuid>, AppError> {
    if relations.is_empty() {
        return Ok(None);
    }
    let names: Vec<String> = relations.iter().map(|r| r.name.clone()).collect();
    let schemas: Vec<String> = relations
        .iter()
        .map(|r| {
            if r.schema.is_empty() {
                "data".to_string()
            } else {
                r.schema.clone()
            }
        })
        .collect();
    let visible = visible_to_caller("datasets");
    let cold = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM datasets JOIN unnest($3::text[], $4::text[]) AS named(schema_name, table_name) USING (schema_name, table_name)
          WHERE {visible} AND status = '{ready}' AND storage = '{cold}' LIMIT 1",
        ready = PublicationStatus::Ready,
        cold = StorageTier::Cold,
    )))
    .bind(caller.user_id())
    .bind(caller.is_admin())
    .bind(&schemas)
    .bind(&names)
    .fetch_optional(&state.pool)
    .await?;
    Ok(cold)
}

/// The tables (by oid) of the published datasets the caller may see, each
/// made readable by the sandbox role if it is not yet (then `true`).
async fn readable_tables(state: &AppState, caller: &Caller) -> Result<(HashSet<u32>, bool), AppError> {
    let visible = visible_to_caller("datasets");
    let tables: Vec<(String, String, Option<sqlx::postgres::types::Oid>, bool)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT schema_name, table_name, t.oid,
                t.oid IS NOT NULL AND has_table_privilege($3, t.oid, 'SELECT')
           FROM datasets
           LEFT JOIN LATERAL (SELECT to_regclass(format('%I.%I', schema_name, table_name))::oid AS oid) t ON true
          WHERE {visible} AND status = '{ready}'",
            ready = PublicationStatus::Ready,
        )))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .bind(state.sandbox.role())
        .fetch_all(&state.pool)
        .await?;
    let ungranted: Vec<(String, String)> = tables
        .iter()
        .filter(|(_, _, oid, granted)| oid.is_some() && !granted)
        .map(|(schema, table, _, _)| (schema.clone(), table.clone()))
        .collect();
    if !ungranted.is_empty() {
        crate::sandbox_pool::grant_select(&state.pool, state.sandbox.role(), &ungranted).await?;
    }
    let readable = tables.iter().filter_map(|(_, _, oid, _)| oid.map(|o| o.0)).collect();
    Ok((readable, !ungranted.is_empty()))
}

/// Every relation the statement names must resolve, by the database's own
/// rules in this very transaction, to a table the caller may read. A name
/// that resolves to nothing is a WITH query of the statement (or an error
/// the statement will report itself).
async fn admit_relations(
    tx: &mut PgConnection,
    relations: &[statement::RelationRef],
    readable: &HashSet<u32>,
) -> Result<(), AppError> {
    if relations.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = relations.iter().map(statement::RelationRef::qualified).collect();
    let resolved: Vec<(String, Option<sqlx::postgres::types::Oid>)> =
        sqlx::query_as("SELECT n, to_regclass(n)::oid FROM unnest($1::text[]) n")
            .bind(&names)
            .fetch_all(&mut *tx)
            .await
            .map_err(query_error)?;
    for (name, oid) in resolved {
        if let Some(oid) = oid
            && !readable.contains(&oid.0)
        {
            return Err(AppError::forbidden(format!(
                "{name} is not readable here: the sandbox reads only the tables of datasets you can see"
            )));
        }
    }
    Ok(())
}

/// Runs the checked statement, at most `ROW_CAP` rows and
/// `MAX_RESULT_BYTES` of JSON, streamed so the API holds no more.
async fn run_capped(tx: &mut PgConnection, checked_sql: &str) -> Result<(Vec<Value>, bool), AppError> {
    let wrapped = format!(
        "SELECT CASE WHEN octet_length(j) <= {MAX_RESULT_BYTES} THEN j END, octet_length(j)::int8
           FROM (SELECT to_json(r)::text AS j FROM ({checked_sql}) r LIMIT {}) s",
        ROW_CAP + 1
    );
    let mut stream = sqlx::query_as::<_, (Option<String>, i64)>(sqlx::AssertSqlSafe(wrapped))
        .persistent(false)
        .fetch(&mut *tx);
    let (mut rows, mut bytes, mut truncated) = (Vec::new(), 0i64, false);
    while let Some((json, size)) = stream.try_next().await.map_err(query_error)? {
        if rows.len() == ROW_CAP {
            truncated = true;
            break;
        }
        bytes += size;
        let Some(json) = json.filter(|_| bytes <= MAX_RESULT_BYTES) else {
            return Err(AppError::bad_request(format!(
                "the result is larger than {} MiB; select fewer rows or columns",
                MAX_RESULT_BYTES / 1024 / 1024
            )));
        };
        rows.push(serde_json::from_str(&json).unwrap_or(Value::Null));
    }
    Ok((rows, truncated))
}

/// Errors of the caller's own statement are the caller's (400, or 403 for
/// a refused privilege); only a database that cannot serve is a 503.
fn query_error(e: sqlx::Error) -> AppError {
    let sqlx::Error::Database(db) = &e else {
        return e.into();
    };
    let code = db.code().unwrap_or_default().to_string();
    let message = db.message();
    match code.as_str() {
        "42501" => AppError::forbidden(format!(
            "not allowed: {message}; the sandbox reads only the tables of datasets you can see"
        )),
        "25006" => AppError::forbidden(format!("the sandbox is read-only: {message}")),
        "57014" => AppError::bad_request(format!(
            "the query ran longer than {} s and was stopped",
            STATEMENT_TIMEOUT_MS / 1000
        )),
        "53300" => e.into(),
        c if c.starts_with("08") || c.starts_with("57P") || c.starts_with("40") => e.into(),
        _ => AppError::bad_request(format!("the query failed: {message}")),
    }
}
