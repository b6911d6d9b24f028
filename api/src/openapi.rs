//! The OpenAPI 3.1 document, generated from the annotated handlers.
use utoipa::OpenApi;

/// The interface version this service implements.
pub const INTERFACE_VERSION: &str = "1.19.0";

/// The media type `/api/openapi.json` answers with, and so the `type` of
/// every `service-desc` link to it (a client that asks for the linked type
/// gets that type back): plain JSON, which GDAL's OAPIF driver, OWSLib and
/// pystac-client all read as the API definition.
pub const DOCUMENT_MEDIA_TYPE: &str = "application/json";

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
                    // Prometheus and other clients that send only
                    // `Authorization` carry an API key this way.
                    .bearer_format("JWT or API key")
                    .description(Some("a session's access token (a JWT), or an API key"))
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
    let rehydrating = json!({
        "type": "object", "required": ["status", "job_id"],
        "properties": {"status": {"type": "string", "enum": ["rehydrating"]}, "job_id": {"type": "string", "format": "uuid"}},
    });
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
            let rehydrates = operation["operationId"]
                .as_str()
                .is_some_and(|id| REHYDRATING.contains(&id));
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
            if rehydrates {
                add_rehydrating(responses, &rehydrating, &retry_after);
            }
        }
    }
}

/// Operations that answer 202 with the rehydrate job when their dataset
/// is archived (`datasets::cold`): ask again once the job is done.
const REHYDRATING: [&str; 10] = [
    "items",
    "item",
    "list_features",
    "create_feature",
    "add_column",
    "vector_tile",
    "cluster_tile",
    "download",
    "reupload",
    "run_query",
];

/// The 202 of a read of an archived dataset, beside a 202 the operation
/// already answers for its own work.
fn add_rehydrating(
    responses: &mut serde_json::Map<String, serde_json::Value>,
    rehydrating: &serde_json::Value,
    retry_after: &serde_json::Value,
) {
    let description = "the dataset is archived and being restored: poll the job, then ask again";
    let accepted = responses
        .entry("202")
        .or_insert_with(|| serde_json::json!({"description": description}));
    accepted["headers"] = retry_after.clone();
    let own = accepted["content"]["application/json"]["schema"].take();
    accepted["content"]["application/json"]["schema"] = if own.is_null() {
        rehydrating.clone()
    } else {
        let said = accepted["description"].as_str().unwrap_or("").to_string();
        accepted["description"] = format!("{said}; or {description}").into();
        serde_json::json!({"oneOf": [own, rehydrating]})
    };
}

/// Lists in query strings as the routes read them: one parameter of
/// comma-separated values (`bbox=-10,40,-6,41`), never the parameter
/// repeated, which is OpenAPI's default for an array (`style: form`,
/// `explode: true`). Every `bbox` parameter takes the box of
/// `bbox::schema`.
pub fn describe_query_lists(doc: &mut serde_json::Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for parameters in paths
        .values_mut()
        .filter_map(|i| i.as_object_mut())
        .flat_map(|i| i.values_mut())
        .filter_map(|operation| operation.get_mut("parameters").and_then(|p| p.as_array_mut()))
    {
        let any_crs = parameters.iter().any(|p| p["name"] == "bbox-crs");
        for parameter in parameters.iter_mut().filter(|p| p["in"] == "query") {
            describe_query_list(parameter, any_crs);
        }
    }
}

/// One query parameter as [`describe_query_lists`] says; `any_crs`: the
/// operation takes a `bbox-crs`, so its box may hold any CRS's numbers.
pub fn describe_query_list(parameter: &mut serde_json::Value, any_crs: bool) {
    if parameter["name"] == "bbox" {
        parameter["schema"] = if any_crs {
            crate::bbox::schema_in_any_crs()
        } else {
            crate::bbox::schema()
        };
    }
    let schema = &parameter["schema"];
    let array = |t: &serde_json::Value| t == "array";
    if array(&schema["type"]) || schema["type"].as_array().is_some_and(|types| types.iter().any(array)) {
        parameter["style"] = "form".into();
        parameter["explode"] = false.into();
    }
}

/// A UUID as the service reads one (hyphenated, or 32 hex digits).
pub const UUID_PATTERN: &str =
    "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$";

/// Gives every `format: uuid` string its pattern: a format is only a note
/// to JSON Schema validators, so without it `""` is a valid id.
pub fn pin_uuid_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(fields) => {
            if fields.get("format").is_some_and(|f| f == "uuid") && !fields.contains_key("pattern") {
                fields.insert("pattern".into(), UUID_PATTERN.into());
            }
            fields.values_mut().for_each(pin_uuid_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(pin_uuid_formats),
        _ => {}
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

/// A request body's schema made of shared shapes: the properties of every
/// part (the first part's other settings kept), `description`, and the
/// `required` names added to the parts' own, each no longer nullable. One
/// struct thus documents both a create and an update body, and a route
/// taking a shared shape plus a field of its own needs no copy of the shape.
pub fn object_of(
    description: &str,
    parts: &[utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>],
    required: &[&str],
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{Object, Schema, SchemaType, Type};
    let object = |part: &RefOr<Schema>| match part {
        RefOr::T(Schema::Object(object)) => object.clone(),
        _ => unreachable!("object_of takes object schemas"),
    };
    let mut whole: Object = object(&parts[0]);
    for part in &parts[1..] {
        let part = object(part);
        whole.properties.extend(part.properties);
        whole.required.extend(part.required);
    }
    whole.description = Some(description.to_owned());
    for name in required {
        if !whole.required.iter().any(|r| r == name) {
            whole.required.push((*name).to_owned());
        }
        let property = whole.properties.get_mut(*name).expect("a required name is a property");
        let not_null = match property {
            RefOr::T(Schema::OneOf(one_of)) => {
                let mut items = one_of.items.clone();
                items.retain(|item| !matches!(item, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null)));
                (items.len() == 1).then(|| items.remove(0))
            }
            RefOr::T(Schema::Object(o)) => {
                if let SchemaType::Array(types) = &o.schema_type {
                    let types: Vec<Type> = types.iter().filter(|t| **t != Type::Null).cloned().collect();
                    o.schema_type = match types.as_slice() {
                        [one] => SchemaType::Type(one.clone()),
                        _ => SchemaType::Array(types),
                    };
                }
                None
            }
            _ => None,
        };
        if let Some(not_null) = not_null {
            *property = not_null;
        }
    }
    RefOr::T(Schema::Object(whole))
}

/// Closed sets of names a request may carry where the code keeps them as
/// strings: the document's enums (a request field's `value_type`), each
/// held to the code's own list by a test below.
pub mod names {
    // Only the document reads these types; no value of them is made.
    #![allow(dead_code)]

    /// A string that is one of `names`, for a closed set the code keeps as
    /// a list of names: the document takes them from the code itself.
    fn one_of(names: &[&str], description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(names.iter().copied()))
            .description(Some(description))
            .into()
    }

    /// What a notification is sent for (`catalog_shared::notify::EVENTS`).
    pub struct NotificationEvent;

    impl utoipa::PartialSchema for NotificationEvent {
        fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
            one_of(&catalog_shared::notify::EVENTS, "What a notification is sent for.")
        }
    }

    impl utoipa::ToSchema for NotificationEvent {}

    /// WGS 84 longitude, latitude: the one CRS the items speak.
    #[derive(utoipa::ToSchema)]
    pub enum Crs84 {
        #[schema(rename = "http://www.opengis.net/def/crs/OGC/1.3/CRS84")]
        Crs84,
    }

    /// The tile matrix sets of OGC API Tiles.
    #[derive(utoipa::ToSchema)]
    pub enum TileMatrixSetId {
        WebMercatorQuad,
        #[schema(rename = "WorldCRS84Quad")]
        WorldCrs84Quad,
    }

    /// A tile's encoding: `mvt` for vector datasets, `png`, `jpeg` or
    /// `webp` for rasters.
    #[derive(utoipa::ToSchema)]
    #[schema(rename_all = "lowercase")]
    pub enum TileEncoding {
        Mvt,
        Png,
        Jpeg,
        Webp,
    }

    /// What records sort by: a field, ascending, or with `-` descending.
    #[derive(utoipa::ToSchema)]
    pub enum SortKey {
        #[schema(rename = "title")]
        Title,
        #[schema(rename = "+title")]
        TitleUp,
        #[schema(rename = "-title")]
        TitleDown,
        #[schema(rename = "created")]
        Created,
        #[schema(rename = "+created")]
        CreatedUp,
        #[schema(rename = "-created")]
        CreatedDown,
        #[schema(rename = "updated")]
        Updated,
        #[schema(rename = "+updated")]
        UpdatedUp,
        #[schema(rename = "-updated")]
        UpdatedDown,
        #[schema(rename = "type")]
        Type,
        #[schema(rename = "+type")]
        TypeUp,
        #[schema(rename = "-type")]
        TypeDown,
    }

    /// The file a vector dataset downloads as (`ExportFormat::NAMES`, and
    /// the tile archive).
    pub struct DownloadFormat;

    impl utoipa::PartialSchema for DownloadFormat {
        fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
            let mut names = catalog_raster::export::ExportFormat::NAMES.to_vec();
            names.push(catalog_shared::tile_sql::ARCHIVE_FORMAT);
            one_of(
                &names,
                "The file a vector dataset downloads as (shp: zipped; pmtiles: the vector tile pyramid).",
            )
        }
    }

    impl utoipa::ToSchema for DownloadFormat {}

    /// A domain name (letters, digits, '.' and '-', with a dot; blanks
    /// around it and a leading '@' are dropped).
    pub struct EmailDomain;

    impl utoipa::PartialSchema for EmailDomain {
        fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::String)
                .max_length(Some(253))
                .pattern(Some(r"^[\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*@*[A-Za-z0-9.-]*\.[A-Za-z0-9.-]*[\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"))
                .into()
        }
    }

    impl utoipa::ToSchema for EmailDomain {}

    /// A keyword: 1 to 100 characters, not only blanks.
    pub struct Keyword;

    impl utoipa::PartialSchema for Keyword {
        fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::String)
                .max_length(Some(100))
                .pattern(Some(
                    r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
                ))
                .into()
        }
    }

    impl utoipa::ToSchema for Keyword {}
}
