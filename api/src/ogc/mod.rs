//! OGC API Features (Part 1 core and GeoJSON, Part 3 queryables and
//! filtering with CQL2) and the OGC API Common landing page and
//! conformance declaration. Every dataset the caller may see is a
//! collection whose id is the dataset id.

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, datasets::GeometryType};
use serde_json::{Value, json};
use utoipa_axum::{
    router::{OpenApiRouter, UtoipaMethodRouterExt},
    routes,
};

use crate::{
    access::{Caller, datasets::visible_collection},
    dataset_record::{Dataset, json_schema_of, published_columns},
    extract::{LinkCredential, Path},
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    state::AppState,
};

mod collection;
mod collections;
mod common;
pub mod cql;
pub mod crs;
pub(crate) mod exports;
pub(crate) mod items;

use common::{feature_collection, link};
pub mod openapi;
pub(crate) mod params;
pub mod tile_matrix_sets;
mod tiles;

pub const CONFORMANCE: [&str; 29] = [
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
    // Every OGC route has its page (`ogc_html`).
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables",
    // Writes on items (`editing`), with ETags and If-Match.
    "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete",
    "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/update",
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
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tileset",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tilesets-list",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/geodata-tilesets",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/mvt",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/png",
];

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(landing))
        .routes(routes!(conformance))
        .routes(routes!(collections::collections))
        .routes(routes!(collection))
        .routes(routes!(queryables))
        .routes(routes!(schema))
        .routes(routes!(items::items))
        .routes(routes!(items::item))
        .routes(routes!(tile_matrix_sets::tile_matrix_sets))
        .routes(routes!(tile_matrix_sets::tile_matrix_set))
        .routes(routes!(tiles::tilesets))
        .routes(routes!(tiles::tileset))
        .routes(routes!(tiles::tile).layer(tower_http::compression::CompressionLayer::new()))
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
            link(format!("{base}/api/openapi.json"), "service-desc", crate::openapi::DOCUMENT_MEDIA_TYPE, "the API definition"),
            link(format!("{base}/api/conformance"), "conformance", "application/json", "conformance classes implemented"),
            link(format!("{base}/api/collections"), "data", "application/json", "the collections"),
            link(format!("{base}/api/tileMatrixSets"), "http://www.opengis.net/def/rel/ogc/1.0/tiling-schemes", "application/json", "the tile matrix sets"),
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
    let dataset = visible_collection(&state, &caller, &id).await?;
    let base = &state.config.public_url;
    let document = collection::collection_json(&state, &caller, &dataset, &credential);
    let context = PageContext {
        base,
        credential: &credential,
    };
    let queryables = (!dataset.is_raster()).then(|| queryables_json(base, &dataset));
    Ok(format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::collection(&context, &document, queryables.as_ref()),
    ))
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

/// JSON Schema of what each feature carries (Features Part 5's
/// returnables): a type for every property, so a client types its columns
/// from this rather than guessing them from the values of a first page.
#[utoipa::path(get, path = "/api/collections/{collectionId}/schema", tag = "ogc", params(("collectionId" = String, Path)),
    responses((status = 200, description = "JSON Schema of the features' properties", content_type = "application/schema+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn schema(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> Result<Response, AppError> {
    let dataset = feature_collection(&state, &caller, &id).await?;
    let mut document = queryables_json(&state.config.public_url, &dataset);
    document["$id"] = json!(format!(
        "{}/api/collections/{}/schema",
        state.config.public_url, dataset.id
    ));
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/schema+json")],
        Json(&document),
    )
        .into_response())
}

fn queryables_json(base: &str, dataset: &Dataset) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert(
        dataset.geometry_column.clone(),
        json!({
            "title": "geometry",
            "format": format!("geometry-{}", geometry_format(dataset.geometry_type)),
            "x-ogc-role": "primary-geometry",
        }),
    );
    properties.insert(
        dataset.key_column.clone(),
        json!({"title": "feature id", "type": "integer", "x-ogc-role": "id"}),
    );
    for column in published_columns(dataset) {
        let mut schema = json_schema_of(column.pg_type);
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

fn geometry_format(geometry_type: Option<GeometryType>) -> String {
    match geometry_type {
        Some(t) if t != GeometryType::Geometry => t.as_str().to_ascii_lowercase(),
        _ => "any".to_string(),
    }
}
