//! The OpenAPI document. Paths are relative to the server URL
//! `<PUBLIC_URL>/api`, the OGC API root, as clients resolve them; each
//! collection the caller may see has its own items path listing every
//! queryable as a query parameter: GDAL's OAPIF driver pushes `-where` down
//! to the server only for parameters it finds on that path.
use std::sync::Arc;

use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    datasets::{ColumnType, DatasetKind, PublicationStatus},
};
use serde_json::{Value, json};

use crate::{
    access::{Caller, policy::visible_to_caller},
    dataset_record::{DATASET_COLUMNS, Dataset, published_columns},
    state::AppState,
};

fn parameter(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

pub async fn document(state: AppState, caller: Caller, base: Arc<Value>) -> Result<Json<Value>, AppError> {
    let visible = visible_to_caller("datasets");
    let sql = format!(
        "SELECT {DATASET_COLUMNS} FROM datasets WHERE {visible} AND status = '{ready}' AND kind = '{vector}'",
        ready = PublicationStatus::Ready,
        vector = DatasetKind::Vector,
    );
    let datasets: Vec<Dataset> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .fetch_all(state.db.reader(caller.user_id(), 0).await.pool)
        .await?;
    let mut doc = (*base).clone();
    doc["servers"] = json!([{"url": format!("{}/api", state.config.public_url)}]);
    let routes = doc["paths"].as_object().cloned().unwrap_or_default();
    let mut paths = serde_json::Map::new();
    for (path, item) in routes {
        let relative = path
            .strip_prefix("/api")
            .filter(|p| !p.is_empty())
            .unwrap_or("/")
            .to_string();
        paths.insert(relative, item);
    }
    let problem = json!({"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}});
    for dataset in &datasets {
        let crs84 = json!({"type": "string", "enum": [super::crs::CRS84]});
        let offered: Vec<String> = super::crs::collection_crs(dataset, &state.config.extra_crs)
            .iter()
            .map(|c| c.uri())
            .collect();
        let crs_list = json!({"type": "string", "enum": offered});
        let names: Vec<String> = published_columns(dataset).iter().map(|c| c.name.clone()).collect();
        let mut parameters = vec![
            parameter(
                "limit",
                limit_schema(state.config.ogc_items_max_page_size),
                "features per page; more than the ceiling is clamped to it",
            ),
            parameter(
                "offset",
                json!({"type": "integer", "format": "int64", "minimum": 0, "default": 0}),
                "legacy offset paging",
            ),
            parameter(
                "bbox",
                crate::bbox::schema_in_any_crs(),
                "four (or six, with heights) numbers in bbox-crs, its axes in that CRS's order",
            ),
            parameter(
                "after_gid",
                json!({"type": "integer", "format": "int64"}),
                "keyset cursor",
            ),
            parameter(
                "include_geometry",
                json!({"type": "boolean", "default": true}),
                "false: features without geometry",
            ),
            parameter("filter", json!({"type": "string"}), "CQL2 expression"),
            parameter(
                "filter-lang",
                json!({"type": "string", "enum": crate::ogc::cql::Lang::NAMES}),
                "filter encoding",
            ),
            parameter("filter-crs", crs84, "only CRS84"),
            parameter("bbox-crs", crs_list.clone(), "the CRS of bbox (default CRS84)"),
            parameter(
                "crs",
                crs_list,
                "the CRS of the coordinates (default CRS84); the answer's Content-Crs names it",
            ),
            parameter(
                "skipGeometry",
                json!({"type": "boolean", "default": false}),
                "true: features without geometry",
            ),
            parameter(
                "properties",
                json!({"type": "array", "items": {"type": "string", "enum": names}}),
                "the properties each feature carries, in this order",
            ),
            parameter(
                "sortby",
                json!({"type": "string"}),
                "queryables to sort by, comma separated, each `+name` (or `name`) ascending or `-name` descending",
            ),
            parameter(
                "cursor",
                json!({"type": "string"}),
                "where a sorted page starts: only as a `next` link gives it",
            ),
            parameter(
                "datetime",
                json!({"type": "string"}),
                "features whose time (the collection's `temporal_column`) is in the interval: an RFC 3339 instant or date, or an interval start/end",
            ),
            parameter(
                "f",
                json!({"type": "string", "enum": ["json", "html"]}),
                "json or html; without it the Accept header decides",
            ),
        ];
        let key = (&dataset.key_column, ColumnType::BigInt, dataset.key_column.as_str());
        let columns = published_columns(dataset);
        let queryables = columns.iter().map(|c| (&c.name, c.pg_type, c.original_name.as_str()));
        for (name, pg_type, original) in std::iter::once(key).chain(queryables) {
            let taken = parameters.iter().any(|p| p["name"] == name.as_str());
            if let (false, Some(schema)) = (taken, filter_schema(pg_type)) {
                parameters.push(parameter(
                    name,
                    schema,
                    &format!("features whose {original} equals the value"),
                ));
            }
        }
        for parameter in &mut parameters {
            crate::openapi::describe_query_list(parameter, true);
        }
        let mut item = json!({"paths": {"/": {"get": {
                "tags": ["ogc"],
                "summary": format!("Features of {}", dataset.title),
                "operationId": format!("items_{}", dataset.id.simple()),
                "parameters": parameters,
                "responses": {
                    "200": {"description": "GeoJSON FeatureCollection, or its page", "content": {"application/geo+json": {}, "text/html": {"schema": {"type": "string"}}}},
                    "202": {"description": "the collection is being restored from the archive; poll the job, then ask again", "content": {"application/json": {}}},
                    "400": {"description": "an invalid query parameter", "content": problem},
                    "404": {"description": "no such collection (any more), or none the caller may see", "content": problem},
                }
        }}}});
        // The answers every operation can give (429, 500, 503...), as the
        // base document's operations have them.
        crate::openapi::add_common_responses(&mut item);
        paths.insert(format!("/collections/{}/items", dataset.id), item["paths"]["/"].take());
    }
    // The generic items route, as the per-collection ones: clients (QGIS,
    // GDAL) size their pages from `limit`'s default and maximum.
    if let Some(limit) = paths
        .get_mut("/collections/{collectionId}/items")
        .and_then(|item| item["get"]["parameters"].as_array_mut())
        .and_then(|parameters| parameters.iter_mut().find(|p| p["name"] == "limit"))
    {
        limit["schema"] = limit_schema(state.config.ogc_items_max_page_size);
    }
    doc["paths"] = Value::Object(paths);
    Ok(Json(doc))
}

/// Items' `limit`: 10 when absent, at most the page ceiling.
fn limit_schema(ceiling: i64) -> Value {
    json!({"type": "integer", "format": "int64", "minimum": 1, "default": 10, "maximum": ceiling})
}

/// What a property filter on a column of this type takes (its value is
/// cast from text to the column's type); `None` for the types no schema
/// here describes, which are left out of the document.
fn filter_schema(pg_type: ColumnType) -> Option<Value> {
    Some(match pg_type {
        ColumnType::SmallInt => json!({"type": "integer", "minimum": i16::MIN, "maximum": i16::MAX}),
        ColumnType::Integer => json!({"type": "integer", "format": "int32"}),
        ColumnType::BigInt => json!({"type": "integer", "format": "int64"}),
        ColumnType::Double => json!({"type": "number"}),
        ColumnType::Boolean => json!({"type": "boolean"}),
        ColumnType::Date => json!({"type": "string", "format": "date"}),
        ColumnType::Text => json!({"type": "string"}),
        _ => return None,
    })
}

/// The document, as `DOCUMENT_MEDIA_TYPE` (the type its links name).
pub async fn handler(
    State(state): State<AppState>,
    caller: Caller,
    base: axum::Extension<Arc<Value>>,
) -> Result<impl axum::response::IntoResponse, AppError> {
    let document = document(state, caller, base.0).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, crate::openapi::DOCUMENT_MEDIA_TYPE)],
        document,
    ))
}
