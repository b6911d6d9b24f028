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
/// conventions: 429 with Retry-After, 500, 503) to every operation, and
/// the refusals an operation can meet by what it takes.
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
    // What the edge and the extractors answer, by what an operation takes:
    // any request may carry a credential that resolves to no one or lacks
    // the right; a path names a resource that may not exist (or not be
    // visible); a body may come in another media type; and any value may be
    // refused. A full object store refuses uploads.
    let problem_response = |description: &str| json!({"description": description, "content": problem});
    let every = [
        ("400", problem_response("a malformed request (query, header or body)")),
        ("401", problem_response("a credential was sent that resolves to no one")),
        ("403", problem_response("the caller may not do this")),
    ];
    let invalid = ("422", problem_response("a value in the request is invalid"));
    let with_path = [
        ("404", problem_response("no such resource, or none the caller may see")),
        invalid.clone(),
    ];
    let with_body = [
        (
            "415",
            problem_response("the body is not of a media type this operation takes"),
        ),
        invalid.clone(),
    ];
    let with_query = [invalid];
    let with_file = [("507", problem_response("the object store is full; nothing was kept"))];
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, operation) in item.iter_mut() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let takes_query = operation["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["in"] == "query"));
            let body = &operation["requestBody"]["content"];
            let (takes_body, takes_file) = (body.is_object(), body.get("multipart/form-data").is_some());
            if !operation["responses"].is_object() {
                operation["responses"] = json!({});
            }
            let Some(responses) = operation["responses"].as_object_mut() else {
                continue;
            };
            let mut add = |answers: &[(&str, serde_json::Value)]| {
                for (code, response) in answers {
                    responses.entry(*code).or_insert_with(|| response.clone());
                }
            };
            add(&common);
            add(&every);
            if path.contains('{') {
                add(&with_path);
            }
            if takes_body {
                add(&with_body);
            }
            if takes_query {
                add(&with_query);
            }
            if takes_file {
                add(&with_file);
            }
        }
    }
}

/// Links from an answer to the operations that take what it made (OpenAPI
/// `links`): (operation, status, link name, target operation, target path
/// parameter, where in the answer its value is). Client generators and
/// stateful testers follow them.
const LINKS: [(&str, &str, &str, &str, &str, &str); 12] = [
    ("upload", "202", "GetJob", "get_job", "job_id", "$response.body#/job_id"),
    (
        "upload",
        "202",
        "CancelJob",
        "cancel_job",
        "job_id",
        "$response.body#/job_id",
    ),
    (
        "import_url",
        "202",
        "GetJob",
        "get_job",
        "job_id",
        "$response.body#/job_id",
    ),
    ("create_map", "201", "GetMap", "get_map", "map_id", "$response.body#/id"),
    (
        "create_map",
        "201",
        "UpdateMap",
        "update_map",
        "map_id",
        "$response.body#/id",
    ),
    (
        "create_map",
        "201",
        "DeleteMap",
        "delete_map",
        "map_id",
        "$response.body#/id",
    ),
    (
        "create_record",
        "201",
        "GetRecord",
        "get_record",
        "record_id",
        "$response.body#/id",
    ),
    (
        "create_record",
        "201",
        "UpdateRecord",
        "update_record",
        "record_id",
        "$response.body#/id",
    ),
    (
        "create_record",
        "201",
        "DeleteRecord",
        "delete_record",
        "record_id",
        "$response.body#/id",
    ),
    (
        "save_search",
        "201",
        "RunSavedSearch",
        "run_saved",
        "search_id",
        "$response.body#/id",
    ),
    (
        "save_search",
        "201",
        "DeleteSavedSearch",
        "delete_saved",
        "search_id",
        "$response.body#/id",
    ),
    (
        "get_job",
        "200",
        "CancelJob",
        "cancel_job",
        "job_id",
        "$response.body#/id",
    ),
];

/// Adds [`LINKS`] to the document's operations.
pub fn add_links(doc: &mut serde_json::Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for operation in paths
        .values_mut()
        .filter_map(|i| i.as_object_mut())
        .flat_map(|i| i.values_mut())
    {
        let Some(id) = operation["operationId"].as_str().map(str::to_owned) else {
            continue;
        };
        for (_, status, name, target, parameter, value) in LINKS.iter().filter(|l| l.0 == id) {
            let response = &mut operation["responses"][*status];
            if response.is_object() {
                response["links"][*name] = serde_json::json!({
                    "operationId": target,
                    "parameters": {*parameter: value},
                });
            }
        }
    }
}
