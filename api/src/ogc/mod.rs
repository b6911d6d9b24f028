//! OGC API Features (Part 1 core and GeoJSON, Part 3 queryables and
//! filtering with CQL2) and the OGC API Common landing page and
//! conformance declaration. Every dataset the caller may see is a
//! collection whose id is the dataset id.

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    datasets::{DatasetKind, PublicationStatus},
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    access::{Caller, datasets::visible_collection, policy::visible_to_caller},
    datasets::record::{DATASET_COLUMNS, Dataset},
    extract::{LinkCredential, Path},
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    state::AppState,
};

pub mod cql;
pub(crate) mod items;

use items::CRS84;
pub mod openapi;
mod params;

pub const CONFORMANCE: [&str; 20] = [
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
    // Every OGC route has its page (`ogc_html`).
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2",
    "http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions",
    "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core",
    "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core-query-parameters",
    "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/sorting",
    "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/json",
    "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/html",
];

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(landing))
        .routes(routes!(conformance))
        .routes(routes!(collections))
        .routes(routes!(collection))
        .routes(routes!(queryables))
        .routes(routes!(items::items))
        .routes(routes!(items::item))
}

fn link(href: String, rel: &str, media_type: &str, title: &str) -> Value {
    json!({"href": href, "rel": rel, "type": media_type, "title": title})
}

/// The landing page (reads no credential).
#[utoipa::path(get, path = "/api", tag = "ogc", params(FormatQuery),
    responses((status = 200, description = "landing page", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn landing(State(state): State<AppState>, format: Format, credential: LinkCredential) -> Response {
    let base = &state.config.public_url;
    let document = json!({
        "title": "Spatial Data Catalog",
        "description": "Datasets served as OGC API Features collections, with CQL2 filtering.",
        "version": catalog_shared::VERSION,
        "links": [
            link(format!("{base}/api"), "self", "application/json", "this document"),
            alternate_link(&format!("{base}/api")),
            link(format!("{base}/api/openapi.json"), "service-desc", "application/vnd.oai.openapi+json;version=3.1", "the API definition"),
            link(format!("{base}/api/conformance"), "conformance", "application/json", "conformance classes implemented"),
            link(format!("{base}/api/collections"), "data", "application/json", "the collections"),
        ]
    });
    let context = PageContext {
        base,
        credential: &credential,
    };
    format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::landing(&context, &document),
    )
}

/// The conformance classes implemented (reads no credential).
#[utoipa::path(get, path = "/api/conformance", tag = "ogc", params(FormatQuery),
    responses((status = 200, description = "conformance declaration", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn conformance(State(state): State<AppState>, format: Format, credential: LinkCredential) -> Response {
    let href = format!("{}/api/conformance", state.config.public_url);
    let document = json!({
        "conformsTo": CONFORMANCE,
        "links": [link(href.clone(), "self", "application/json", "this document"), alternate_link(&href)],
    });
    let context = PageContext {
        base: &state.config.public_url,
        credential: &credential,
    };
    format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::conformance(&context, &document),
    )
}

pub fn collection_json(base: &str, d: &Dataset, credential: &LinkCredential) -> Value {
    let id = d.id;
    let items = format!("{base}/api/collections/{id}/items");
    let mut collection = json!({
        "id": id,
        "title": d.title,
        "description": d.summary.clone().unwrap_or_default(),
        "itemType": "feature",
        "crs": [CRS84],
        "storageCrs": CRS84,
        "links": [
            link(credential.on(format!("{base}/api/collections/{id}")), "self", "application/json", "this collection"),
            alternate_link(&credential.on(format!("{base}/api/collections/{id}"))),
            link(credential.on(items.clone()), "items", "application/geo+json", "the features"),
            link(credential.on(format!("{base}/api/collections/{id}/queryables")), "http://www.opengis.net/def/rel/ogc/1.0/queryables", "application/schema+json", "the queryables"),
        ],
    });
    if let Some(bbox) = &d.extent_bbox {
        collection["extent"] = json!({"spatial": {"bbox": [bbox], "crs": CRS84}});
    }
    collection
}

/// The collections the caller may see.
#[utoipa::path(get, path = "/api/collections", tag = "ogc", params(FormatQuery),
    responses((status = 200, description = "collections", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collections(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
) -> Result<Response, AppError> {
    let visible = visible_to_caller("datasets");
    let sql = format!(
        "SELECT {DATASET_COLUMNS} FROM datasets WHERE {visible} AND status = '{ready}' AND kind = '{vector}' ORDER BY title, id",
        ready = PublicationStatus::Ready,
        vector = DatasetKind::Vector,
    );
    let datasets: Vec<Dataset> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(caller.user_id())
        .bind(caller.is_admin())
        .fetch_all(&state.pool)
        .await?;
    let base = &state.config.public_url;
    let href = credential.on(format!("{base}/api/collections"));
    let document = json!({
        "collections": std::iter::once(crate::records::catalog_collection_json(base, &credential))
            .chain(datasets.iter().map(|d| collection_json(base, d, &credential)))
            .collect::<Vec<_>>(),
        "links": [link(href.clone(), "self", "application/json", "the collections"), alternate_link(&href)],
    });
    let context = PageContext {
        base,
        credential: &credential,
    };
    Ok(format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::collections(&context, &document),
    ))
}

#[utoipa::path(get, path = "/api/collections/{collectionId}", tag = "ogc", params(("collectionId" = String, Path), FormatQuery),
    responses((status = 200, description = "one collection", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn collection(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let dataset = feature_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let document = collection_json(base, &dataset, &credential);
    let context = PageContext {
        base,
        credential: &credential,
    };
    Ok(format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::collection(&context, &document, Some(&queryables_json(base, &dataset))),
    ))
}

/// A dataset the caller may read, as a collection of features: a raster
/// dataset is none (it is served as raster tiles).
async fn feature_collection(state: &AppState, caller: &Caller, id: &str) -> Result<std::sync::Arc<Dataset>, AppError> {
    let dataset = visible_collection(state, caller, id).await?;
    if dataset.is_raster() {
        return Err(AppError::not_found(format!(
            "no feature collection {id}: the dataset is a raster"
        )));
    }
    Ok(dataset)
}

/// JSON Schema of what a filter may name: the published columns and the geometry.
#[utoipa::path(get, path = "/api/collections/{collectionId}/queryables", tag = "ogc", params(("collectionId" = String, Path), FormatQuery),
    responses((status = 200, description = "JSON Schema of the queryables", content(("application/schema+json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn queryables(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let dataset = feature_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let document = queryables_json(base, &dataset);
    let context = PageContext {
        base,
        credential: &credential,
    };
    Ok(format.answer(
        || {
            (
                [(axum::http::header::CONTENT_TYPE, "application/schema+json")],
                Json(&document),
            )
                .into_response()
        },
        || ogc_html::features::queryables(&context, &document, &id),
    ))
}

fn queryables_json(base: &str, dataset: &Dataset) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert(
        dataset.geometry_column.clone(),
        json!({
            "title": "geometry",
            "format": format!("geometry-{}", geometry_format(dataset.geometry_type.as_deref())),
            "x-ogc-role": "primary-geometry",
        }),
    );
    properties.insert(
        dataset.key_column.clone(),
        json!({"title": "feature id", "type": "integer", "x-ogc-role": "id"}),
    );
    for column in items::published_columns(dataset) {
        let mut schema = json_schema_of(&column.pg_type);
        schema["title"] = Value::String(column.original_name.clone());
        properties.insert(column.name.clone(), schema);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("{base}/api/collections/{}/queryables", dataset.id),
        "type": "object",
        "title": dataset.title,
        "properties": properties,
        "additionalProperties": false,
    })
}

fn geometry_format(geometry_type: Option<&str>) -> String {
    match geometry_type {
        Some(t) if t != "Geometry" => t.to_ascii_lowercase(),
        _ => "any".to_string(),
    }
}

pub fn json_schema_of(pg_type: &str) -> Value {
    match pg_type {
        "integer" | "bigint" | "smallint" => json!({"type": "integer"}),
        "double precision" | "real" | "numeric" => json!({"type": "number"}),
        "boolean" => json!({"type": "boolean"}),
        "date" => json!({"type": "string", "format": "date"}),
        "timestamptz" | "timestamp" => json!({"type": "string", "format": "date-time"}),
        "time" => json!({"type": "string", "format": "time"}),
        "jsonb" | "json" => json!({"type": "array"}),
        _ => json!({"type": "string"}),
    }
}
