//! The rows an ingest kept aside from a dataset (`docs/ingest-report.md`),
//! as GeoJSON for whoever may read the dataset: each with its geometry as
//! read (null when JSON cannot hold it) and its attributes, plus why
//! (`reason`, `message`, the `field` and `value` at fault) and where it
//! was in the source (`source_row`, `fid`). They are the current
//! version's: the era its load, reupload or restore began.
use axum::{
    body::{Body, Bytes},
    extract::State,
    http::header,
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, db::quote_ident, ingest_report::QUARANTINE_SCHEMA};
use futures::StreamExt;
use serde::Deserialize;
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::visible_dataset},
    extract::{Path, Query},
    state::AppState,
};

/// Rows read from the database at a time.
const PAGE_ROWS: i64 = 5000;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct QuarantineQuery {
    /// At most this many rows, first rows of the source first (all when absent).
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// The dataset's quarantined rows, by their place in the source.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/quarantine", tag = "datasets",
    params(("dataset_id" = Uuid, Path), QuarantineQuery),
    responses((status = 200, content_type = "application/geo+json", body = serde_json::Value, description = "a FeatureCollection; each feature's properties hold the row's attributes and reason, message, field, value, source_row and fid"),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn quarantined_rows(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(q): Query<QuarantineQuery>,
) -> Result<Response, AppError> {
    if q.limit.is_some_and(|n| n < 1) {
        return Err(AppError::bad_request("limit must be at least 1"));
    }
    let dataset = visible_dataset(&state, &caller, id).await?;
    let table: Option<String> = sqlx::query_scalar(
        "SELECT e.quarantine_table FROM datasets d
         JOIN dataset_versions v ON v.dataset_id = d.id AND v.version = d.version
         JOIN dataset_eras e ON e.dataset_id = d.id AND e.era = v.era
         WHERE d.id = $1",
    )
    .bind(id)
    .fetch_optional(&state.pool)
    .await?
    .flatten();
    let filename = format!("quarantine-{}.geojson", dataset.id);
    let headers = [
        (header::CONTENT_TYPE, "application/geo+json".to_string()),
        (header::CONTENT_DISPOSITION, format!("inline; filename=\"{filename}\"")),
    ];
    let Some(table) = table else {
        return Ok((headers, r#"{"type":"FeatureCollection","features":[]}"#).into_response());
    };
    let sql = format!(
        "SELECT source_row, jsonb_build_object('type', 'Feature', 'id', source_row, 'geometry', geometry,
                    'properties', properties || jsonb_build_object('reason', reason, 'message', message,
                        'field', field, 'value', value, 'source_row', source_row, 'fid', fid))::text
         FROM {QUARANTINE_SCHEMA}.{} WHERE source_row > $1 ORDER BY source_row LIMIT $2",
        quote_ident(&table)
    );
    let pool = state.pool.clone();
    let mut left = q.limit.unwrap_or(i64::MAX);
    // Pages by key, so a big quarantine streams in bounded memory.
    let pages = futures::stream::try_unfold(Some(0_i64), move |after| {
        let (pool, sql) = (pool.clone(), sql.clone());
        let page_rows = PAGE_ROWS.min(left);
        left -= page_rows;
        async move {
            let Some(after) = after else {
                return Ok::<_, sqlx::Error>(None);
            };
            let rows: Vec<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(after)
                .bind(page_rows)
                .fetch_all(&pool)
                .await?;
            let mut chunk = String::new();
            for (_, feature) in &rows {
                if !chunk.is_empty() || after > 0 {
                    chunk.push(',');
                }
                chunk.push_str(feature);
            }
            let next = match rows.last() {
                Some((last, _)) if rows.len() as i64 == page_rows && page_rows > 0 => Some(*last),
                _ => None,
            };
            if next.is_none() {
                chunk.push_str("]}");
            }
            Ok(Some((Bytes::from(chunk), next)))
        }
    });
    let opening =
        futures::stream::once(async { Ok(Bytes::from_static(br#"{"type":"FeatureCollection","features":["#)) });
    Ok((headers, Body::from_stream(opening.chain(pages))).into_response())
}
