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
