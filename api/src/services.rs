//! Remote map services as sources: a layer of an OGC API Features server,
//! an ArcGIS feature service or a WFS 2.0 server is pulled by a worker,
//! page by page, into a new dataset (`service_import` job) or into an
//! existing one (`reupload` job, optionally as a preview). Tokens and
//! credentials travel sealed in the job payload.
use std::time::Duration;

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    connectors::AuthMethod,
    datasets::DatasetVisibility,
    jobs::{
        self, IngestOptions, JobInput, JobStatus, RemoteService, ReuploadPayload, ServiceAuth, ServiceCredentials,
        ServiceImportPayload, ServiceType,
    },
    secrets::seal_hex,
};
use serde::Deserialize;
use serde_json::Value;
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::writable_dataset},
    extract::{Json as JsonBody, Path},
    jobs::{IdempotencyKey, JobAccepted, Queued, accepted, queue_fetch, queue_once},
    quotas,
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(import_service))
        .routes(routes!(reupload_service))
        .routes(routes!(preview_service_reupload))
}

/// How long the preview route waits for a worker to pull and compare.
const PREVIEW_WAIT: Duration = Duration::from_secs(120);

fn bounded(field: &str, value: &Option<String>, max: usize) -> Result<(), AppError> {
    match value {
        Some(v) if v.chars().count() > max => Err(AppError::invalid_field(field, &format!("at most {max} characters"))),
        _ => Ok(()),
    }
}

/// The service type a request names, in any of its spellings and letter cases.
fn service_type(value: &str) -> Result<ServiceType, AppError> {
    match value.to_ascii_lowercase().as_str() {
        "ogcapi_features" | "ogc_api_features" | "oapif" => Ok(ServiceType::OgcapiFeatures),
        "arcgis_featureserver" | "arcgis_feature_service" | "arcgis" | "featureserver" => {
            Ok(ServiceType::ArcgisFeatureserver)
        }
        "wfs" => Ok(ServiceType::Wfs),
        _ => Err(AppError::invalid_field(
            "service_type",
            "must be ogcapi_features, arcgis_featureserver or wfs",
        )),
    }
}

/// A remote service as requested: the specification's remote service
/// reupload request, plus `visibility` (imports) and `preview` (reuploads).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceRequest {
    url: String,
    /// ogcapi_features, arcgis_featureserver or wfs, or another spelling of one
    service_type: String,
    /// The collection id, ArcGIS layer name or WFS type name.
    layer_name: String,
    /// An imported dataset's title (default: the layer name).
    layer_title: Option<String>,
    /// ArcGIS layer number (default: layer_name).
    layer_id: Option<i64>,
    token: Option<String>,
    object_id_field: Option<String>,
    auth: Option<ServiceAuth>,
    /// Imports only: the new dataset's visibility (default private).
    visibility: Option<DatasetVisibility>,
    /// Reuploads only: compare (the job's `result`), change nothing.
    preview: Option<bool>,
}

/// The document's forms of a [`ServiceRequest`], one per route: what each
/// route takes of it (an import takes no `preview`, a reupload no
/// `visibility`, the preview route `preview` only as `true`), with the
/// bounds `remote_service` holds it to.
mod forms {
    // Only the document reads these types; requests arrive as `ServiceRequest`.
    #![allow(dead_code)]
    use catalog_shared::{connectors::AuthMethod, datasets::DatasetVisibility, jobs::ServiceType};
    use serde::Deserialize;
    use utoipa::openapi::{ObjectBuilder, RefOr, schema::Schema, schema::Type};

    /// A service type as a request names it: the names of [`ServiceType`],
    /// which other spellings stand for too.
    pub struct ServiceTypeName;

    impl utoipa::PartialSchema for ServiceTypeName {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "The service's kind (other spellings: `oapif`, `ogc_api_features`,\n`arcgis`, `arcgis_feature_service`, `featureserver`, in any letter case).",
                ))
                .enum_values(Some(ServiceType::ALL.iter().map(|t| t.as_str())))
                .into()
        }
    }

    impl utoipa::ToSchema for ServiceTypeName {}

    /// The credential the service takes; leave it out for a public service.
    #[derive(Deserialize, utoipa::ToSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RemoteServiceAuth {
        #[schema(inline)]
        method: AuthMethod,
        #[schema(max_length = 1000)]
        token: Option<String>,
        #[schema(max_length = 255)]
        username: Option<String>,
        #[schema(max_length = 1000)]
        password: Option<String>,
        /// Required with `method: header`: an HTTP header name.
        #[schema(max_length = 255, pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")]
        header_name: Option<String>,
        #[schema(max_length = 1000)]
        header_value: Option<String>,
    }

    /// What an import, a reupload and a preview from a service all take.
    #[derive(Deserialize, utoipa::ToSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ServiceLayer {
        /// An http(s) URL; its host must resolve to a public address.
        #[schema(max_length = 2048, pattern = r"^[hH][tT][tT][pP][sS]?://[^/?#\s]")]
        url: String,
        #[schema(inline, value_type = ServiceTypeName)]
        service_type: String,
        /// The collection id, ArcGIS layer name or WFS type name.
        #[schema(
            max_length = 500,
            pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        layer_name: String,
        /// The dataset's title (default: the layer name).
        #[schema(max_length = 500)]
        layer_title: Option<String>,
        /// ArcGIS layer number (default: layer_name).
        layer_id: Option<i64>,
        #[schema(max_length = 1000)]
        token: Option<String>,
        #[schema(max_length = 200)]
        object_id_field: Option<String>,
        auth: Option<RemoteServiceAuth>,
    }

    #[derive(utoipa::ToSchema)]
    struct ImportChoices {
        /// The new dataset's visibility (default private).
        visibility: Option<DatasetVisibility>,
    }

    #[derive(utoipa::ToSchema)]
    struct ReuploadChoices {
        /// `true`: only compare (the job's `result`), change nothing.
        preview: Option<bool>,
    }

    #[derive(utoipa::ToSchema)]
    struct PreviewChoices {
        /// This route only previews: `true` or left out.
        #[schema(value_type = Option<PreviewOnly>)]
        preview: Option<bool>,
    }

    /// A route's body: a [`ServiceLayer`] with the fields of its choices.
    macro_rules! service_body {
        ($name:ident, $choices:ty, $description:literal) => {
            pub struct $name;

            impl utoipa::PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    crate::openapi::object_of(
                        $description,
                        &[
                            <ServiceLayer as utoipa::PartialSchema>::schema(),
                            <$choices as utoipa::PartialSchema>::schema(),
                        ],
                        &[],
                    )
                }
            }

            impl utoipa::ToSchema for $name {
                fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                    <ServiceLayer as utoipa::ToSchema>::schemas(schemas);
                    <$choices as utoipa::ToSchema>::schemas(schemas);
                }
            }
        };
    }

    service_body!(
        ServiceImport,
        ImportChoices,
        "A layer of a remote service to import as a new dataset."
    );
    service_body!(
        ServiceReupload,
        ReuploadChoices,
        "A remote service layer to pull again into a dataset."
    );
    service_body!(
        ServicePreview,
        PreviewChoices,
        "A remote service layer to compare with a dataset."
    );

    /// `true`, the one value the preview route takes.
    pub struct PreviewOnly;

    impl utoipa::PartialSchema for PreviewOnly {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .enum_values(Some([true]))
                .into()
        }
    }

    impl utoipa::ToSchema for PreviewOnly {}
}

/// The request's service, checked against the bounds of the specification
/// and the outbound rules, its credentials sealed.
async fn remote_service(state: &AppState, request: ServiceRequest) -> Result<RemoteService, AppError> {
    let ServiceRequest {
        url,
        service_type: kind,
        layer_name,
        layer_title,
        layer_id,
        token,
        object_id_field,
        auth,
        ..
    } = request;
    bounded("layer_title", &layer_title, 500)?;
    if url.is_empty() || url.chars().count() > 2048 {
        return Err(AppError::invalid_field("url", "is required, at most 2048 characters"));
    }
    if kind.chars().count() > 50 {
        return Err(AppError::invalid_field("service_type", "at most 50 characters"));
    }
    let kind = service_type(&kind)?;
    if layer_name.trim().is_empty() || layer_name.chars().count() > 500 {
        return Err(AppError::invalid_field(
            "layer_name",
            "is required, at most 500 characters",
        ));
    }
    bounded("token", &token, 1000)?;
    bounded("object_id_field", &object_id_field, 200)?;
    if let Some(auth) = &auth {
        bounded("auth.token", &auth.token, 1000)?;
        bounded("auth.username", &auth.username, 255)?;
        bounded("auth.password", &auth.password, 1000)?;
        bounded("auth.header_name", &auth.header_name, 255)?;
        bounded("auth.header_value", &auth.header_value, 1000)?;
        if auth.method == AuthMethod::Header
            && auth
                .header_name
                .as_deref()
                .is_none_or(|h| axum::http::HeaderName::from_bytes(h.as_bytes()).is_err())
        {
            return Err(AppError::invalid_field(
                "auth.header_name",
                "a valid HTTP header name is required",
            ));
        }
    }
    let parsed = Url::parse(&url).map_err(|_| AppError::invalid_field("url", "is not a valid URL"))?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(AppError::invalid_field("url", "must be an http(s) URL"));
    }
    state
        .outbound
        .check_resolved(&parsed)
        .await
        .map_err(|why| AppError::invalid_field("url", &format!("is refused: {why}")))?;
    let sealed_credentials = if token.is_some() || auth.is_some() {
        let credentials = ServiceCredentials { token, auth };
        let clear = serde_json::to_string(&credentials).map_err(AppError::internal)?;
        Some(seal_hex(&state.config.jwt_secret, &clear)?)
    } else {
        None
    };
    Ok(RemoteService {
        url,
        service_type: kind,
        layer_name,
        layer_id,
        object_id_field,
        sealed_credentials,
    })
}

/// A layer of a remote service becomes a dataset (202 with the job).
#[utoipa::path(post, path = "/api/datasets/import-service", tag = "datasets", request_body = forms::ServiceImport,
    responses((status = 202, body = JobAccepted), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn import_service(
    State(state): State<AppState>,
    caller: Caller,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<ServiceRequest>,
) -> Result<Response, AppError> {
    let user = caller.editor()?.clone();
    quotas::refuse_when_full(&state.pool, user.id, 1).await?;
    if body.preview.is_some() {
        return Err(AppError::invalid_field(
            "preview",
            "is for reuploads; an import has nothing to compare with",
        ));
    }
    let visibility = body.visibility.unwrap_or_default();
    let title = body.layer_title.clone().filter(|t| !t.trim().is_empty());
    let service = remote_service(&state, body).await?;
    let payload = ServiceImportPayload {
        service,
        options: IngestOptions {
            title,
            summary: None,
            visibility,
            layer: None,
            srid: None,
            raster: Default::default(),
            ..Default::default()
        },
    };
    let keys: Vec<&str> = key.0.iter().map(String::as_str).collect();
    queue_fetch(&state, user.id, &keys, JobInput::ServiceImport(payload)).await
}

/// The checks and the job of a reupload from a service; answers the job
/// (an earlier one when a request with one of `keys` queued it).
async fn queue_service_reupload(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    body: ServiceRequest,
    preview: bool,
    keys: &[&str],
) -> Result<Uuid, AppError> {
    let dataset = writable_dataset(state, caller, id).await?;
    if dataset.is_registered {
        return Err(AppError::conflict(
            "this dataset is a registered table, read in place; change the table itself",
        ));
    }
    if dataset.is_raster() {
        return Err(AppError::unprocessable(
            "this dataset is a raster; it takes a new GeoTIFF through POST /api/datasets/{id}/reupload, not features from a service",
        ));
    }
    if body.visibility.is_some() {
        return Err(AppError::invalid_field(
            "visibility",
            "is the dataset's own; change it with PATCH",
        ));
    }
    let service = remote_service(state, body).await?;
    let payload = ReuploadPayload {
        dataset_id: id,
        object_path: String::new(),
        filename: String::new(),
        layer: None,
        srid: None,
        preview,
        service: Some(service),
        raster: Default::default(),
    };
    let job_id = Uuid::now_v7();
    let input = JobInput::Reupload(payload);
    let creator = caller.user_id();
    let owner = dataset.created_by;
    let requester = creator.or(owner).unwrap_or_default();
    let queued = queue_once(state, requester, keys, job_id, |tx| {
        Box::pin(async move {
            // The layer pulled again counts in its owner's storage, as a
            // file's reupload does.
            if let Some(owner) = owner {
                quotas::admit(tx, owner, quotas::Demand { bytes: 0, datasets: 0 }).await?;
            }
            jobs::enqueue(tx, job_id, &input, creator).await?;
            Ok(())
        })
    })
    .await?;
    Ok(match queued {
        Queued::New => job_id,
        Queued::Earlier(earlier) => earlier,
    })
}

/// Pulls a remote service layer again into an existing dataset, in place.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/reupload/service", tag = "datasets",
    params(("dataset_id" = Uuid, Path)), request_body = forms::ServiceReupload,
    responses((status = 202, body = JobAccepted), (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn reupload_service(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<ServiceRequest>,
) -> Result<Response, AppError> {
    let preview = body.preview.unwrap_or(false);
    let keys: Vec<&str> = key.0.iter().map(String::as_str).collect();
    let job_id = queue_service_reupload(&state, &caller, id, body, preview, &keys).await?;
    Ok(accepted(&state, job_id).into_response())
}

/// Compares a remote service layer with the dataset and answers the
/// reupload preview (its `job_id` is the preview job's). A worker pulls the
/// layer; this waits for it. 502 when the service fails or its data is not
/// usable; 504 (with the job to poll) when it takes longer than two minutes.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/reupload/service/preview", tag = "datasets",
    params(("dataset_id" = Uuid, Path)), request_body = forms::ServicePreview,
    responses((status = 200, description = "the reupload preview"),
              (status = 409, description = "the dataset is a registered table, read in place", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 502, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 504, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn preview_service_reupload(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<ServiceRequest>,
) -> Result<Json<Value>, AppError> {
    if body.preview == Some(false) {
        return Err(AppError::invalid_field("preview", "this route only previews"));
    }
    let job_id = queue_service_reupload(&state, &caller, id, body, true, &[]).await?;
    let deadline = tokio::time::Instant::now() + PREVIEW_WAIT;
    loop {
        let job = jobs::find(&state.pool, job_id)
            .await?
            .ok_or_else(|| AppError::internal("the preview job vanished"))?;
        match job.status {
            JobStatus::Succeeded => {
                return job
                    .result
                    .map(|r| Json(r.0))
                    .ok_or_else(|| AppError::internal("the preview job reported nothing"));
            }
            JobStatus::Failed | JobStatus::Cancelled => {
                let detail = job
                    .error
                    .map_or_else(|| "the preview was cancelled".into(), |p| p.detail);
                return Err(AppError::new(StatusCode::BAD_GATEWAY, detail));
            }
            _ if tokio::time::Instant::now() >= deadline => {
                return Err(AppError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    format!("the preview is still running; poll /api/jobs/{job_id} for its result"),
                ));
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
