//! The OpenAPI document. Paths are relative to the server URL
//! `<PUBLIC_URL>/api`, the OGC API root, as clients resolve them; each
//! collection the caller may see has its own items path listing every
//! queryable as a query parameter: GDAL's OAPIF driver pushes `-where` down
//! to the server only for parameters it finds on that path.
use std::sync::Arc;

use axum::{Json, extract::State};
use catalog_shared::AppError;
use serde_json::{Value, json};

use super::{items::published_columns, json_schema_of};
use crate::{
    access::{Caller, policy::visible_to_caller},
    datasets::record::{DATASET_COLUMNS, Dataset},
    state::AppState,
};

fn parameter(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

pub async fn document(state: AppState, caller: Caller, base: Arc<Value>) -> Result<Json<Value>, AppError> {
    let visible = visible_to_caller("datasets");
    let sql =
        format!("SELECT {DATASET_COLUMNS} FROM datasets WHERE {visible} AND status = 'ready' AND kind = 'vector'");
    let datasets: Vec<Dataset> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .fetch_all(&state.pool)
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
        let mut parameters = vec![
            parameter(
                "limit",
                json!({"type": "integer", "minimum": 1, "default": 10}),
                "features per page",
            ),
            parameter(
                "bbox",
                json!({"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 6}),
                "minx,miny,maxx,maxy in CRS84",
            ),
            parameter("after_gid", json!({"type": "integer"}), "keyset cursor"),
            parameter("filter", json!({"type": "string"}), "CQL2 expression"),
            parameter(
                "filter-lang",
                json!({"type": "string", "enum": ["cql2-text", "cql2-json"]}),
                "filter encoding",
            ),
            parameter(
                "f",
                json!({"type": "string", "enum": ["json", "html"]}),
                "json or html; without it the Accept header decides",
            ),
        ];
        for column in published_columns(dataset) {
            parameters.push(parameter(
                &column.name,
                json_schema_of(&column.pg_type),
                &format!("features whose {} equals the value", column.original_name),
            ));
        }
        paths.insert(
            format!("/collections/{}/items", dataset.id),
            json!({"get": {
                "tags": ["ogc"],
                "summary": format!("Features of {}", dataset.title),
                "operationId": format!("items_{}", dataset.id.simple()),
                "parameters": parameters,
                "responses": {
                    "200": {"description": "GeoJSON FeatureCollection, or its page", "content": {"application/geo+json": {}, "text/html": {"schema": {"type": "string"}}}},
                    "400": {"description": "an invalid query parameter", "content": problem},
                }
            }}),
        );
    }
    doc["paths"] = Value::Object(paths);
    Ok(Json(doc))
}

pub async fn handler(
    State(state): State<AppState>,
    caller: Caller,
    base: axum::Extension<Arc<Value>>,
) -> Result<Json<Value>, AppError> {
    document(state, caller, base.0).await
}
