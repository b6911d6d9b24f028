//! The OpenAPI 3.1 document, generated from the annotated handlers.
use utoipa::OpenApi;

/// The interface version this service implements.
pub const INTERFACE_VERSION: &str = "1.19.0";

#[derive(OpenApi)]
#[openapi(
    info(title = "Spatial Data Catalog", version = "1.19.0",
         description = "Self-hosted spatial data catalog: ingest, OGC API, maps."),
    components(schemas(catalog_shared::Problem)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))),
        );
    }
}

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Adds the answers every route can give (the specification's Endpoints
/// conventions: 429 with Retry-After, 500, 503) to every operation.
pub fn add_common_responses(doc: &mut serde_json::Value) {
    use serde_json::json;
    let problem = json!({"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}});
    let retry_after = json!({"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}});
    let common = [
        (
            "429",
            json!({"description": "too many requests", "headers": retry_after, "content": problem}),
        ),
        (
            "500",
            json!({"description": "internal server error", "content": problem}),
        ),
        (
            "503",
            json!({"description": "the database could not serve the request", "headers": retry_after, "content": problem}),
        ),
    ];
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, operation) in item.iter_mut() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            if !operation["responses"].is_object() {
                operation["responses"] = json!({});
            }
            let Some(responses) = operation["responses"].as_object_mut() else {
                continue;
            };
            for (code, response) in &common {
                responses.entry(*code).or_insert_with(|| response.clone());
            }
        }
    }
}
