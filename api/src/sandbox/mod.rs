//! The read-only SQL sandbox: one statement, in a read-only transaction,
//! under a role that may read only the tables of the datasets the caller
//! can see (granted inside the transaction and rolled back with it), with a
//! statement timeout and a row cap. Rows come back as JSON; geometry
//! columns as GeoJSON.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{AppError, db::quote_ident};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{auth::Caller, datasets::visible_to_caller, extract::Json as JsonBody, state::AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run_query))
}

const SANDBOX_ROLE: &str = "catalog_sandbox";
const STATEMENT_TIMEOUT_MS: u32 = 5_000;
const ROW_CAP: usize = 1_000;
const MAX_SQL_CHARS: usize = 20_000;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct QueryRequest {
    /// One read-only statement, e.g. `SELECT name FROM data.parks_1a2b3c4d`.
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

fn refused(e: sqlx::Error) -> AppError {
    match &e {
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default().to_string();
            let message = db.message().to_string();
            match code.as_str() {
                "42501" => AppError::forbidden(format!(
                    "not allowed: {message}; only the tables of datasets you can see are readable"
                )),
                "25006" => AppError::forbidden(format!("the sandbox is read-only: {message}")),
                "57014" => AppError::bad_request(format!(
                    "the query ran longer than {} s and was stopped",
                    STATEMENT_TIMEOUT_MS / 1000
                )),
                c if c.starts_with("42")
                    || c.starts_with("22")
                    || c.starts_with("0A")
                    || c.starts_with("2B")
                    || c.starts_with("P0") =>
                {
                    AppError::bad_request(format!("the query failed: {message}"))
                }
                _ => e.into(),
            }
        }
        _ if e.to_string().contains("multiple commands") => AppError::bad_request("send exactly one statement"),
        _ => e.into(),
    }
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
    let sql = body.sql.trim().trim_end_matches(';').trim().to_string();
    if sql.is_empty() || sql.chars().count() > MAX_SQL_CHARS {
        return Err(AppError::bad_request(format!(
            "sql must be 1 to {MAX_SQL_CHARS} characters"
        )));
    }
    let role_exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)")
        .bind(SANDBOX_ROLE)
        .fetch_one(&state.pool)
        .await?;
    if !role_exists {
        return Err(AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the SQL sandbox is not set up: the database user needs CREATEROLE once, at migration",
        ));
    }
    let visible = visible_to_caller("datasets");
    let tables: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT schema_name, table_name FROM datasets WHERE {visible} AND status = 'ready'"
    )))
    .bind(caller.user_id())
    .bind(caller.is_admin())
    .fetch_all(&state.pool)
    .await?;
    let mut tx = state.pool.begin().await?;
    for (schema, table) in &tables {
        let grant = format!(
            "GRANT SELECT ON {}.{} TO {SANDBOX_ROLE}",
            quote_ident(schema),
            quote_ident(table)
        );
        // A table that vanished under the catalog is simply not granted.
        if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(grant)).execute(&mut *tx).await {
            if !matches!(&e, sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01")) {
                return Err(e.into());
            }
            return Err(AppError::conflict(format!(
                "dataset table {schema}.{table} is missing; run its validation"
            )));
        }
    }
    for setting in [
        format!("SET LOCAL ROLE {SANDBOX_ROLE}"),
        "SET LOCAL transaction_read_only = on".to_string(),
        format!("SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}"),
        "SET LOCAL search_path = data, public".to_string(),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(setting)).execute(&mut *tx).await?;
    }
    // The statement runs as a subquery of a prepared statement: one
    // statement only, no data-modifying WITH, rows capped.
    let wrapped = format!("SELECT to_json(r)::text FROM (\n{sql}\n) r LIMIT {}", ROW_CAP + 1);
    let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(wrapped))
        .fetch_all(&mut *tx)
        .await
        .map_err(refused)?;
    tx.rollback().await?;
    let truncated = rows.len() > ROW_CAP;
    let rows: Vec<Value> = rows
        .into_iter()
        .take(ROW_CAP)
        .map(|r| serde_json::from_str(&r).unwrap_or(Value::Null))
        .collect();
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
