//! Connectors: other systems push resource ids and the service fetches and
//! ingests them. The `http` connector resolves a resource id through a URL
//! template (`{resource_id}` filled in), checks with the provider that the
//! resource is there (502 when the provider fails, 504 when it does not
//! answer in time), and queues a `connector` job that downloads and
//! ingests it, presenting a stored credential when one is named.
//! Credentials belong to their creator, who alone may use them; their
//! secret is write-only.
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
    response::Response,
};
use catalog_shared::{
    AppError,
    jobs::{ConnectorCredential, IngestOptions, JobInput, UrlDownloadPayload},
    secrets::seal,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, policy::check_visibility},
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

const CONNECTORS: [&str; 1] = ["http"];
const TEXT_MAX: usize = 255;
const SECRET_MAX: usize = 4096;

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
    /// For `http`: `url_template` (required, with `{resource_id}`), and
    /// optionally `title`, `visibility`, `layer`.
    #[schema(value_type = Object)]
    config: Map<String, Value>,
    resource_id: String,
}

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

/// Fetches a resource from a provider and ingests it (202 with the job).
#[utoipa::path(post, path = "/api/services/connectors/{connector_name}/ingest", tag = "connectors",
    params(("connector_name" = String, Path, description = "http")), request_body = ConnectorIngest,
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
    if !CONNECTORS.contains(&connector.as_str()) {
        return Err(AppError::not_found(format!(
            "no connector {connector:?}; the connectors are {}",
            CONNECTORS.join(", ")
        )));
    }
    if !valid_resource_id(&body.resource_id) {
        return Err(AppError::invalid_field(
            "resource_id",
            "1 to 255 characters: a letter or digit, then letters, digits, '.', '_', '~' or '-'",
        ));
    }
    let credential_id = match &body.credential_id {
        None => None,
        Some(id) if id.is_empty() || id.chars().count() > TEXT_MAX => {
            return Err(AppError::invalid_field("credential_id", "must be 1 to 255 characters"));
        }
        Some(id) => {
            let id: Uuid = id
                .parse()
                .map_err(|_| AppError::invalid_field("credential_id", "names no credential"))?;
            let owner: Option<Uuid> = sqlx::query_scalar("SELECT owner_id FROM connector_credentials WHERE id = $1")
                .bind(id)
                .fetch_optional(&state.pool)
                .await?;
            match owner {
                // Only its owner: anyone else could send the secret to a URL of theirs.
                Some(owner) if owner == user.id => Some(id),
                _ => return Err(AppError::invalid_field("credential_id", "names no credential of yours")),
            }
        }
    };
    let template = config_text(&body.config, "url_template")?
        .ok_or_else(|| AppError::invalid_field("config.url_template", "is required"))?;
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
    state
        .outbound
        .check_resolved(&url)
        .await
        .map_err(|why| AppError::invalid_field("config.url_template", &format!("is refused: {why}")))?;
    let visibility = config_text(&body.config, "visibility")?.unwrap_or_else(|| "private".into());
    check_visibility(&visibility)?;
    for name in body.config.keys() {
        if !matches!(name.as_str(), "url_template" | "title" | "visibility" | "layer") {
            return Err(AppError::invalid_field(
                &format!("config.{name}"),
                "is not a setting of the http connector",
            ));
        }
    }
    quotas::refuse_when_full(&state.pool, user.id, 1).await?;
    // The same resource at the same version pushed again is the same job.
    let version = probe(&state, &url, credential_id).await?;
    let pushed = version.map(|v| format!("connector:{connector}:{}:{v}", body.resource_id));
    let keys: Vec<&str> = key.0.iter().chain(pushed.iter()).map(String::as_str).collect();
    let payload = UrlDownloadPayload {
        url: url.to_string(),
        options: IngestOptions {
            title: config_text(&body.config, "title")?,
            summary: None,
            visibility,
            layer: config_text(&body.config, "layer")?,
            srid: None,
        },
        credential_id,
    };
    queue_fetch(&state, user.id, &keys, JobInput::Connector(payload)).await
}

/// Asks the provider for the resource (and drops the answer): the caller
/// learns at once when the provider fails or is slow.
/// Answers the resource's version as the provider names it (its ETag, else
/// its Last-Modified), when it names one.
async fn probe(state: &AppState, url: &Url, credential_id: Option<Uuid>) -> Result<Option<String>, AppError> {
    let timeout = state.config.connector_timeout;
    let client = if credential_id.is_some() {
        state.outbound.client_for_credentials(timeout)
    } else {
        state.outbound.client(timeout)
    }
    .map_err(AppError::internal)?;
    let mut request = client.get(url.clone());
    if let Some(id) = credential_id {
        let credential = ConnectorCredential::find(&state.pool, id)
            .await?
            .ok_or_else(|| AppError::invalid_field("credential_id", "names no credential"))?;
        request = credential.apply(request, &state.config.jwt_secret)?;
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            AppError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "the connector's provider did not answer in time",
            )
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

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CredentialInput {
    name: String,
    /// bearer, basic or header
    method: String,
    token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    header_name: Option<String>,
    header_value: Option<String>,
}

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
struct Credential {
    id: Uuid,
    name: String,
    method: String,
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
    let (username, header_name, secret) = match input.method.as_str() {
        "bearer" => (None, None, required("token", &input.token, SECRET_MAX)?),
        "basic" => (
            Some(required("username", &input.username, TEXT_MAX)?.to_string()),
            None,
            required("password", &input.password, SECRET_MAX)?,
        ),
        "header" => {
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
        _ => return Err(AppError::invalid_field("method", "must be bearer, basic or header")),
    };
    let credential = sqlx::query_as(
        "INSERT INTO connector_credentials (id, name, owner_id, method, username, header_name, secret)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, name, method, username, header_name, created_at",
    )
    .bind(Uuid::now_v7())
    .bind(&input.name)
    .bind(user.id)
    .bind(&input.method)
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
