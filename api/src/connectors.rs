//! Connectors: other systems push resource ids and the service fetches and
//! ingests them. The `http` connector resolves a resource id through a URL
//! template (`{resource_id}` filled in); the `s3`, `gcs` and `azure`
//! connectors find it as an object in a bucket. Either way the provider is
//! asked at once whether the resource is there (502 when the provider
//! fails, 504 when it does not answer in time), and a `connector` job
//! downloads and ingests it, presenting a stored credential when one is
//! named.
//! Credentials belong to their creator, who alone may use them; their
//! secret is write-only.
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
    response::Response,
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use catalog_shared::{
    AppError,
    connectors::{
        ConnectorCredential, ConnectorKind, CredentialMethod, ObjectKey, StoreLocation, check_service_account_key,
        parse_endpoint, valid_azure_account, valid_bucket, valid_region,
    },
    jobs::{ConnectorPayload, IngestOptions, JobInput, StorePullPayload, UrlDownloadPayload},
    secrets::seal,
    uploads,
};
use chrono::{DateTime, Utc};
use object_store::ObjectStoreExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, policy::visibility_named},
    extract::{Json as JsonBody, Path},
    jobs::{IdempotencyKey, queue_fetch},
    quotas,
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(connector_ingest))
        .routes(routes!(create_credential, list_credentials))
        .routes(routes!(delete_credential))
}

const TEXT_MAX: usize = 255;
/// Secrets up to this size (a GCS service-account key is about 2.4 kB).
const SECRET_MAX: usize = 8192;

/// 1 to 255 characters: a letter or digit, then letters, digits, `.`, `_`,
/// `~` or `-`.
fn valid_resource_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-'))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ConnectorIngest {
    /// A stored connector credential (its id) to present to the provider.
    credential_id: Option<String>,
    /// Where the resource is. `http`: `url_template` (required, with
    /// `{resource_id}`). `s3`: `bucket` (required), `prefix`, `region`,
    /// `endpoint` (an S3-compatible server). `gcs`: `bucket`, `prefix`.
    /// `azure`: `account`, `container`, `prefix`. Every kind also takes
    /// `title`, `visibility` and `layer` for the dataset.
    #[schema(value_type = Object)]
    config: Map<String, Value>,
    resource_id: String,
}

/// The dataset settings every connector kind takes.
const DATASET_SETTINGS: [&str; 3] = ["title", "visibility", "layer"];

fn config_text(config: &Map<String, Value>, name: &str) -> Result<Option<String>, AppError> {
    match config.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= 2048 => Ok(Some(s.clone())),
        Some(_) => Err(AppError::invalid_field(
            &format!("config.{name}"),
            "must be a string of at most 2048 characters",
        )),
    }
}

fn config_required(config: &Map<String, Value>, name: &str) -> Result<String, AppError> {
    config_text(config, name)?
        .filter(|v| !v.is_empty())
        .ok_or_else(|| AppError::invalid_field(&format!("config.{name}"), "is required"))
}

/// The bucket (or container) a store connector names, checked against the
/// store's own naming rules.
fn bucket_name(config: &Map<String, Value>, kind: ConnectorKind, setting: &str) -> Result<String, AppError> {
    let name = config_required(config, setting)?;
    if !valid_bucket(kind, &name) {
        return Err(AppError::invalid_field(
            &format!("config.{setting}"),
            &format!(
                "must be a {kind} {setting} name: 3 to 63 lowercase letters, digits and '-', beginning and ending with a letter or digit"
            ),
        ));
    }
    Ok(name)
}

/// Refuses settings the connector kind does not have (a typo would
/// otherwise be ignored silently).
fn refuse_unknown_settings(config: &Map<String, Value>, kind: ConnectorKind, own: &[&str]) -> Result<(), AppError> {
    match config
        .keys()
        .find(|name| !own.contains(&name.as_str()) && !DATASET_SETTINGS.contains(&name.as_str()))
    {
        Some(name) => Err(AppError::invalid_field(
            &format!("config.{name}"),
            &format!("is not a setting of the {kind} connector"),
        )),
        None => Ok(()),
    }
}

fn ingest_options(config: &Map<String, Value>) -> Result<IngestOptions, AppError> {
    let visibility = config_text(config, "visibility")?
        .map(|name| visibility_named(&name))
        .transpose()?
        .unwrap_or_default();
    Ok(IngestOptions {
        title: config_text(config, "title")?,
        summary: None,
        visibility,
        layer: config_text(config, "layer")?,
        srid: None,
        raster: Default::default(),
        ..Default::default()
    })
}

/// A credential the caller named: its id and what it holds.
struct NamedCredential {
    id: Uuid,
    stored: ConnectorCredential,
}

/// Fetches a resource from a provider and ingests it (202 with the job).
#[utoipa::path(post, path = "/api/services/connectors/{connector_name}/ingest", tag = "connectors",
    params(("connector_name" = String, Path, description = "http, s3, gcs or azure")), request_body = ConnectorIngest,
    responses((status = 202, body = crate::jobs::JobAccepted),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 502, description = "the provider failed", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 504, description = "the provider did not answer in time", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn connector_ingest(
    State(state): State<AppState>,
    caller: Caller,
    Path(connector): Path<String>,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<ConnectorIngest>,
) -> Result<Response, AppError> {
    let user = caller.editor()?.clone();
    let kind = ConnectorKind::parse(&connector).ok_or_else(|| {
        let names: Vec<&str> = ConnectorKind::ALL.iter().map(|k| k.as_str()).collect();
        AppError::not_found(format!(
            "no connector {connector:?}; the connectors are {}",
            names.join(", ")
        ))
    })?;
    if !valid_resource_id(&body.resource_id) {
        return Err(AppError::invalid_field(
            "resource_id",
            "1 to 255 characters: a letter or digit, then letters, digits, '.', '_', '~' or '-'",
        ));
    }
    let credential = named_credential(&state, user.id, body.credential_id.as_deref()).await?;
    quotas::refuse_when_full(&state.pool, user.id, 1).await?;
    let pulled = match kind {
        ConnectorKind::Http => http_source(&state, &body, credential).await?,
        ConnectorKind::S3 => store_source(&state, s3_location(&body.config)?, &body, credential).await?,
        ConnectorKind::Gcs => store_source(&state, gcs_location(&body.config)?, &body, credential).await?,
        ConnectorKind::Azure => store_source(&state, azure_location(&body.config)?, &body, credential).await?,
    };
    // The same source at the same version pushed again is the same job.
    let pushed = pulled.push_key();
    let keys: Vec<&str> = key.0.iter().chain(pushed.iter()).map(String::as_str).collect();
    queue_fetch(&state, user.id, &keys, JobInput::Connector(pulled.input)).await
}

/// What a push pulls: the job's input, the source it names (the URL, or
/// the server, bucket and key of an object) and its version as the
/// provider names it, when it names one.
struct Pull {
    input: ConnectorPayload,
    source: String,
    version: Option<String>,
}

impl Pull {
    /// The request key of a push: the source and its version, hashed
    /// (a URL may be 2 kB), so two buckets holding the same key at the
    /// same version are two pulls, and the same object again is one.
    fn push_key(&self) -> Option<String> {
        let version = self.version.as_ref()?;
        let named = json!([self.source, version]).to_string();
        Some(format!(
            "connector:{}",
            URL_SAFE_NO_PAD.encode(Sha256::digest(named.as_bytes()))
        ))
    }
}

async fn named_credential(
    state: &AppState,
    user_id: Uuid,
    credential_id: Option<&str>,
) -> Result<Option<NamedCredential>, AppError> {
    let Some(id) = credential_id else {
        return Ok(None);
    };
    if id.is_empty() || id.chars().count() > TEXT_MAX {
        return Err(AppError::invalid_field("credential_id", "must be 1 to 255 characters"));
    }
    let id: Uuid = id
        .parse()
        .map_err(|_| AppError::invalid_field("credential_id", "names no credential"))?;
    let owner: Option<Uuid> = sqlx::query_scalar("SELECT owner_id FROM connector_credentials WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool)
        .await?;
    // Only its owner: anyone else could send the secret to a server of theirs.
    if owner != Some(user_id) {
        return Err(AppError::invalid_field("credential_id", "names no credential of yours"));
    }
    let stored = ConnectorCredential::find(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::invalid_field("credential_id", "names no credential"))?;
    Ok(Some(NamedCredential { id, stored }))
}

/// The `http` connector: the resource is the URL its template makes.
async fn http_source(
    state: &AppState,
    body: &ConnectorIngest,
    credential: Option<NamedCredential>,
) -> Result<Pull, AppError> {
    refuse_unknown_settings(&body.config, ConnectorKind::Http, &["url_template"])?;
    let template = config_required(&body.config, "url_template")?;
    if !template.contains("{resource_id}") {
        return Err(AppError::invalid_field(
            "config.url_template",
            "must contain {resource_id}",
        ));
    }
    let url = Url::parse(&template.replace("{resource_id}", &body.resource_id))
        .map_err(|_| AppError::invalid_field("config.url_template", "does not make a valid URL"))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(AppError::invalid_field("config.url_template", "must be an http(s) URL"));
    }
    if let Some(c) = &credential
        && c.stored.method.presented_as().is_none()
    {
        return Err(AppError::invalid_field(
            "credential_id",
            &format!(
                "is a {} credential; the http connector presents bearer, basic or header ones",
                c.stored.method
            ),
        ));
    }
    state
        .outbound
        .check_resolved(&url)
        .await
        .map_err(|why| AppError::invalid_field("config.url_template", &format!("is refused: {why}")))?;
    let options = ingest_options(&body.config)?;
    let version = probe(state, &url, credential.as_ref()).await?;
    let payload = UrlDownloadPayload {
        url: url.to_string(),
        options,
        credential_id: credential.map(|c| c.id),
    };
    Ok(Pull {
        input: ConnectorPayload::Http(payload),
        source: url.to_string(),
        version,
    })
}

/// Asks the provider for the resource (and drops the answer): the caller
/// learns at once when the provider fails or is slow.
/// Answers the resource's version as the provider names it (its ETag, else
/// its Last-Modified), when it names one.
async fn probe(state: &AppState, url: &Url, credential: Option<&NamedCredential>) -> Result<Option<String>, AppError> {
    let timeout = state.config.connector_timeout;
    let client = if credential.is_some() {
        state.outbound.client_for_credentials(timeout)
    } else {
        state.outbound.client(timeout)
    }
    .map_err(AppError::internal)?;
    let mut request = client.get(url.clone());
    if let Some(credential) = credential {
        request = credential.stored.apply(request, &state.config.jwt_secret)?;
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            provider_timed_out()
        } else {
            AppError::new(StatusCode::BAD_GATEWAY, "the connector's provider could not be reached")
        }
    })?;
    if !response.status().is_success() {
        return Err(AppError::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "the connector's provider answered {} for this resource",
                response.status()
            ),
        ));
    }
    let version = [header::ETAG, header::LAST_MODIFIED]
        .iter()
        .find_map(|name| response.headers().get(name)?.to_str().ok())
        .map(str::to_string);
    Ok(version)
}

fn provider_timed_out() -> AppError {
    AppError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "the connector's provider did not answer in time",
    )
}

/// The `s3` connector's bucket, from its settings.
fn s3_location(config: &Map<String, Value>) -> Result<StoreLocation, AppError> {
    refuse_unknown_settings(config, ConnectorKind::S3, &["bucket", "prefix", "region", "endpoint"])?;
    let region = config_text(config, "region")?;
    if region.as_deref().is_some_and(|r| !valid_region(r)) {
        return Err(AppError::invalid_field(
            "config.region",
            "must be a region name such as eu-west-1: 1 to 32 lowercase letters, digits and '-'",
        ));
    }
    Ok(StoreLocation::S3 {
        bucket: bucket_name(config, ConnectorKind::S3, "bucket")?,
        region,
        endpoint: config_text(config, "endpoint")?
            .map(|e| endpoint_origin(&e))
            .transpose()?,
    })
}

/// The `gcs` connector's bucket, from its settings.
fn gcs_location(config: &Map<String, Value>) -> Result<StoreLocation, AppError> {
    refuse_unknown_settings(config, ConnectorKind::Gcs, &["bucket", "prefix"])?;
    Ok(StoreLocation::Gcs {
        bucket: bucket_name(config, ConnectorKind::Gcs, "bucket")?,
    })
}

/// The `azure` connector's container, from its settings.
fn azure_location(config: &Map<String, Value>) -> Result<StoreLocation, AppError> {
    refuse_unknown_settings(config, ConnectorKind::Azure, &["account", "container", "prefix"])?;
    let account = config_required(config, "account")?;
    if !valid_azure_account(&account) {
        return Err(AppError::invalid_field(
            "config.account",
            "must be a storage account name: 3 to 24 lowercase letters and digits",
        ));
    }
    Ok(StoreLocation::Azure {
        account,
        container: bucket_name(config, ConnectorKind::Azure, "container")?,
    })
}

/// The object-store connectors: the resource is an object in the
/// location's bucket (its key: the prefix, then the resource id).
async fn store_source(
    state: &AppState,
    location: StoreLocation,
    body: &ConnectorIngest,
    credential: Option<NamedCredential>,
) -> Result<Pull, AppError> {
    let config = &body.config;
    if let Some(endpoint) = location.custom_endpoint() {
        let url = Url::parse(endpoint).map_err(AppError::internal)?;
        state
            .outbound
            .check_resolved(&url)
            .await
            .map_err(|why| AppError::invalid_field("config.endpoint", &format!("is refused: {why}")))?;
    }
    let prefix = config_text(config, "prefix")?.unwrap_or_default();
    let key = ObjectKey::under(&prefix, &body.resource_id)
        .map_err(|_| AppError::invalid_field("config.prefix", "is not a valid object key prefix"))?;
    if !uploads::is_accepted_upload(&body.resource_id) {
        return Err(AppError::invalid_field(
            "resource_id",
            &format!("must name a supported file: {}", uploads::ACCEPTED),
        ));
    }
    let store_key = match &credential {
        None => None,
        Some(c) if c.stored.method == location.credential_method() => {
            Some(c.stored.store_key(&state.config.jwt_secret)?)
        }
        Some(c) => {
            return Err(AppError::invalid_field(
                "credential_id",
                &format!(
                    "is a {} credential; the {} connector signs with a {} one",
                    c.stored.method,
                    location.kind(),
                    location.credential_method()
                ),
            ));
        }
    };
    let timeout = state.config.connector_timeout;
    let store = location
        .open(store_key, &state.outbound, timeout)
        .map_err(|why| AppError::invalid_field("config", &why))?;
    // The caller learns at once when the object is missing or the provider
    // fails; its version keys the push.
    let meta = tokio::time::timeout(timeout, store.head(key.path()))
        .await
        .map_err(|_| provider_timed_out())?
        .map_err(|e| store_refusal(&key, e))?;
    let version = meta.e_tag.unwrap_or_else(|| meta.last_modified.to_rfc3339());
    let options = ingest_options(config)?;
    let source = location.source_of(&key);
    let payload = StorePullPayload {
        location,
        key,
        options,
        credential_id: credential.map(|c| c.id),
    };
    Ok(Pull {
        input: ConnectorPayload::Store(payload),
        source,
        version: Some(version),
    })
}

/// An S3 endpoint as its origin (`http://host:port`, the scheme and host
/// lowercase, a default port left out): one server is one spelling, so
/// the same object pushed twice is one source.
fn endpoint_origin(endpoint: &str) -> Result<String, AppError> {
    parse_endpoint(endpoint)
        .map(|url| url.origin().ascii_serialization())
        .ok_or_else(|| {
            AppError::invalid_field(
                "config.endpoint",
                "must be an http(s) URL of a server: scheme, host and port only",
            )
        })
}

/// What a provider's store answered, as the 502 the spec names for a
/// failing provider.
fn store_refusal(key: &ObjectKey, e: object_store::Error) -> AppError {
    let detail = match e {
        object_store::Error::NotFound { .. } => format!("the connector's provider has no object {key}"),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            format!("the connector's provider refused access to {key}")
        }
        other => {
            tracing::info!(error = %other, "connector provider failed");
            "the connector's provider failed; see the log for its error".to_string()
        }
    };
    AppError::new(StatusCode::BAD_GATEWAY, detail)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CredentialInput {
    name: String,
    /// bearer, basic or header (the http connector); aws_access_key (s3),
    /// gcs_service_account (gcs) or azure_access_key (azure).
    method: CredentialMethod,
    token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    header_name: Option<String>,
    header_value: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    /// The JSON key file Google issues for a service account.
    service_account_key: Option<String>,
    account_key: Option<String>,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
struct Credential {
    id: Uuid,
    name: String,
    method: CredentialMethod,
    username: Option<String>,
    header_name: Option<String>,
    created_at: DateTime<Utc>,
}

fn required<'a>(field: &str, value: &'a Option<String>, max: usize) -> Result<&'a str, AppError> {
    match value.as_deref() {
        Some(v) if !v.is_empty() && v.chars().count() <= max => Ok(v),
        _ => Err(AppError::invalid_field(
            field,
            &format!("is required, 1 to {max} characters"),
        )),
    }
}

/// Stores a credential for connectors (its secret write-only).
#[utoipa::path(post, path = "/api/services/connectors/credentials", tag = "connectors", request_body = CredentialInput,
    responses((status = 201, body = Credential), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_credential(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<CredentialInput>,
) -> Result<(StatusCode, Json<Credential>), AppError> {
    let user = caller.editor()?.clone();
    required("name", &Some(input.name.clone()), TEXT_MAX)?;
    let (username, header_name, secret) = match input.method {
        CredentialMethod::Bearer => (None, None, required("token", &input.token, SECRET_MAX)?),
        CredentialMethod::Basic => (
            Some(required("username", &input.username, TEXT_MAX)?.to_string()),
            None,
            required("password", &input.password, SECRET_MAX)?,
        ),
        CredentialMethod::Header => {
            let name = required("header_name", &input.header_name, TEXT_MAX)?;
            if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(AppError::invalid_field(
                    "header_name",
                    "is not a valid HTTP header name",
                ));
            }
            (
                None,
                Some(name.to_string()),
                required("header_value", &input.header_value, SECRET_MAX)?,
            )
        }
        CredentialMethod::AwsAccessKey => (
            Some(required("access_key_id", &input.access_key_id, TEXT_MAX)?.to_string()),
            None,
            required("secret_access_key", &input.secret_access_key, SECRET_MAX)?,
        ),
        CredentialMethod::GcsServiceAccount => {
            let key = required("service_account_key", &input.service_account_key, SECRET_MAX)?;
            check_service_account_key(key).map_err(|why| AppError::invalid_field("service_account_key", why))?;
            (None, None, key)
        }
        CredentialMethod::AzureAccessKey => (None, None, required("account_key", &input.account_key, SECRET_MAX)?),
    };
    let credential = sqlx::query_as(
        "INSERT INTO connector_credentials (id, name, owner_id, method, username, header_name, secret)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, name, method, username, header_name, created_at",
    )
    .bind(Uuid::now_v7())
    .bind(&input.name)
    .bind(user.id)
    .bind(input.method)
    .bind(username)
    .bind(header_name)
    .bind(seal(&state.config.jwt_secret, secret)?)
    .fetch_one(&state.pool)
    .await?;
    Ok((StatusCode::CREATED, Json(credential)))
}

/// The caller's credentials (an admin's: everyone's), never their secrets.
#[utoipa::path(get, path = "/api/services/connectors/credentials", tag = "connectors",
    responses((status = 200, body = Vec<Credential>)))]
async fn list_credentials(State(state): State<AppState>, caller: Caller) -> Result<Json<Vec<Credential>>, AppError> {
    let user = caller.signed_in()?;
    let credentials = sqlx::query_as(
        "SELECT id, name, method, username, header_name, created_at FROM connector_credentials
         WHERE $2 OR owner_id = $1 ORDER BY created_at DESC, id",
    )
    .bind(user.id)
    .bind(user.is_admin())
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(credentials))
}

#[utoipa::path(delete, path = "/api/services/connectors/credentials/{credential_id}", tag = "connectors",
    params(("credential_id" = Uuid, Path)),
    responses((status = 204, description = "deleted"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    let user = caller.editor()?;
    let deleted = sqlx::query("DELETE FROM connector_credentials WHERE id = $1 AND ($3 OR owner_id = $2)")
        .bind(id)
        .bind(user.id)
        .bind(user.is_admin())
        .execute(&state.pool)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(AppError::not_found(format!("no credential {id} of yours")));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_ids_follow_the_pattern() {
        for ok in ["a", "9", "sheet-1.v2_final~x", &"a".repeat(255)] {
            assert!(valid_resource_id(ok), "{ok}");
        }
        for bad in ["", "-a", ".a", "a/b", "a b", "a?b", &"a".repeat(256)] {
            assert!(!valid_resource_id(bad), "{bad}");
        }
    }
}
