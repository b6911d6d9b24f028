//! Single sign-on provider configurations and the auth settings, managed
//! by holders of `manage_settings` (admins). Client secrets are write-only
//! and stored encrypted (AES-256-GCM under a key derived from JWT_SECRET).
//! Changes show on the sign-in screen at once: nothing here is cached.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{
    AppError,
    auth::{ProviderType, Role},
    secrets::seal,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::Caller,
    extract::{Json as JsonBody, Path},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_providers, create_provider))
        .routes(routes!(update_provider, delete_provider))
        .routes(routes!(get_auth_settings, put_auth_settings))
}

const TEXT_MAX: usize = 255;
const SECRET_MAX: usize = 4096;
const URL_MAX: usize = 2048;

/// Discovery documents filled in for the provider types that have one.
fn default_discovery(provider_type: ProviderType) -> Option<&'static str> {
    match provider_type {
        ProviderType::IdpA => Some("https://accounts.google.com/.well-known/openid-configuration"),
        ProviderType::IdpC => Some("https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration"),
        ProviderType::IdpB | ProviderType::Oidc => None,
    }
}

/// Endpoints of the plain OAuth 2.0 provider type (no discovery).
pub const IDP_B_AUTHORIZE: &str = "https://github.com/login/oauth/authorize";
pub const IDP_B_TOKEN: &str = "https://github.com/login/oauth/access_token";
pub const IDP_B_USERINFO: &str = "https://api.github.com/user";

fn default_scopes(provider_type: ProviderType) -> &'static str {
    if provider_type == ProviderType::IdpB {
        "read:user user:email"
    } else {
        "openid profile email"
    }
}

/// A stored provider, secret still encrypted.
#[derive(Clone, sqlx::FromRow)]
pub struct Provider {
    pub id: Uuid,
    pub slug: String,
    pub display_name: String,
    pub provider_type: ProviderType,
    pub client_id: String,
    pub client_secret: Vec<u8>,
    pub discovery_url: Option<String>,
    pub authorize_url: Option<String>,
    pub token_url: Option<String>,
    pub userinfo_url: Option<String>,
    pub scopes: String,
    pub default_role: Role,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Provider {
    pub fn is_oidc(&self) -> bool {
        self.provider_type != ProviderType::IdpB
    }
}

pub const PROVIDER_COLUMNS: &str = "id, slug, display_name, provider_type, client_id, client_secret, discovery_url,
    authorize_url, token_url, userinfo_url, scopes, default_role, enabled, created_at, updated_at";

/// A provider as the API shows it: never the client secret.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ProviderResponse {
    id: Uuid,
    slug: String,
    display_name: String,
    provider_type: ProviderType,
    client_id: String,
    discovery_url: Option<String>,
    authorize_url: Option<String>,
    token_url: Option<String>,
    userinfo_url: Option<String>,
    scopes: String,
    default_role: Role,
    enabled: bool,
    /// Where the provider sends people back; register it with the provider.
    callback_url: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

fn response(p: Provider, public_url: &str) -> ProviderResponse {
    ProviderResponse {
        callback_url: format!("{public_url}/api/auth/oauth/{}/callback", p.slug),
        id: p.id,
        slug: p.slug,
        display_name: p.display_name,
        provider_type: p.provider_type,
        client_id: p.client_id,
        discovery_url: p.discovery_url,
        authorize_url: p.authorize_url,
        token_url: p.token_url,
        userinfo_url: p.userinfo_url,
        scopes: p.scopes,
        default_role: p.default_role,
        enabled: p.enabled,
        created_at: p.created_at,
        updated_at: p.updated_at,
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderInput {
    /// 1 to 63 lower-case letters, digits, '-' or '_', starting with a
    /// letter or digit: part of the provider's URLs.
    #[schema(pattern = r"^[a-z0-9][a-z0-9_-]{0,62}$")]
    slug: Option<String>,
    #[schema(
        max_length = 255,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    display_name: Option<String>,
    provider_type: Option<ProviderType>,
    #[schema(
        max_length = 1020,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    client_id: Option<String>,
    /// Write-only; on update only to rotate it.
    #[schema(
        max_length = 4096,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    client_secret: Option<String>,
    /// An http(s) URL, or "" for none.
    #[schema(max_length = 2048, pattern = r"^$|^[hH][tT][tT][pP][sS]?://")]
    discovery_url: Option<String>,
    /// An http(s) URL, or "" for none.
    #[schema(max_length = 2048, pattern = r"^$|^[hH][tT][tT][pP][sS]?://")]
    authorize_url: Option<String>,
    /// An http(s) URL, or "" for none.
    #[schema(max_length = 2048, pattern = r"^$|^[hH][tT][tT][pP][sS]?://")]
    token_url: Option<String>,
    /// An http(s) URL, or "" for none.
    #[schema(max_length = 2048, pattern = r"^$|^[hH][tT][tT][pP][sS]?://")]
    userinfo_url: Option<String>,
    /// Space-separated.
    #[schema(
        max_length = 1000,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    scopes: Option<String>,
    default_role: Option<Role>,
    enabled: Option<bool>,
}

/// A new provider: a [`ProviderInput`] with what every provider needs.
pub struct NewProvider;

impl utoipa::PartialSchema for NewProvider {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::openapi::object_of(
            "A new provider: a `ProviderInput` with what every provider needs. An\nOpenID Connect provider (any type but idp_b) also needs a discovery URL,\nor its three endpoints, when its type has no default.",
            &[<ProviderInput as utoipa::PartialSchema>::schema()],
            &["slug", "display_name", "provider_type", "client_id", "client_secret"],
        )
    }
}

impl utoipa::ToSchema for NewProvider {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        <ProviderInput as utoipa::ToSchema>::schemas(schemas);
    }
}

fn check_text(field: &str, value: &str, max: usize) -> Result<(), AppError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(AppError::invalid_field(
            field,
            &format!("must be 1 to {max} characters"),
        ));
    }
    Ok(())
}

fn check_url(field: &str, value: &str) -> Result<(), AppError> {
    let url = Url::parse(value).map_err(|_| AppError::invalid_field(field, "must be an absolute URL"))?;
    if !matches!(url.scheme(), "https" | "http") || value.chars().count() > URL_MAX {
        return Err(AppError::invalid_field(
            field,
            "must be an http(s) URL of at most 2048 characters",
        ));
    }
    Ok(())
}

/// The provider a create or update leaves behind, checked as a whole.
fn merged(mut p: Provider, input: ProviderInput, jwt_secret: &str) -> Result<Provider, AppError> {
    if let Some(slug) = input.slug {
        check_slug(&slug)?;
        p.slug = slug;
    }
    if let Some(name) = input.display_name {
        check_text("display_name", &name, TEXT_MAX)?;
        p.display_name = name;
    }
    let type_changed = input.provider_type.is_some();
    if let Some(kind) = input.provider_type {
        p.provider_type = kind;
    }
    if let Some(client_id) = input.client_id {
        check_text("client_id", &client_id, TEXT_MAX * 4)?;
        p.client_id = client_id;
    }
    if let Some(secret) = input.client_secret {
        check_text("client_secret", &secret, SECRET_MAX)?;
        p.client_secret = seal(jwt_secret, &secret)?;
    }
    for (field, value, target) in [
        ("discovery_url", input.discovery_url, &mut p.discovery_url),
        ("authorize_url", input.authorize_url, &mut p.authorize_url),
        ("token_url", input.token_url, &mut p.token_url),
        ("userinfo_url", input.userinfo_url, &mut p.userinfo_url),
    ] {
        if let Some(value) = value {
            if value.is_empty() {
                *target = None;
            } else {
                check_url(field, &value)?;
                *target = Some(value);
            }
        }
    }
    if let Some(scopes) = input.scopes {
        check_text("scopes", &scopes, 1000)?;
        p.scopes = scopes.split_whitespace().collect::<Vec<_>>().join(" ");
    } else if type_changed || p.scopes.is_empty() {
        p.scopes = default_scopes(p.provider_type).into();
    }
    if let Some(role) = input.default_role {
        p.default_role = role;
    }
    if let Some(enabled) = input.enabled {
        p.enabled = enabled;
    }
    complete_endpoints(&mut p)?;
    if p.client_secret.is_empty() {
        return Err(AppError::invalid_field("client_secret", "is required"));
    }
    Ok(p)
}

/// A slug is part of URLs: lower-case letters, digits, '-' and '_'.
fn check_slug(slug: &str) -> Result<(), AppError> {
    let url_safe = !slug.is_empty()
        && slug.len() <= 63
        && slug.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if url_safe {
        Ok(())
    } else {
        Err(AppError::invalid_field(
            "slug",
            "must be 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit",
        ))
    }
}

/// The provider's endpoints filled from its type's defaults: idp_b's fixed
/// OAuth 2.0 endpoints, or an OpenID Connect discovery URL (given, the
/// type's own, or the three endpoints named one by one).
fn complete_endpoints(p: &mut Provider) -> Result<(), AppError> {
    match p.provider_type {
        ProviderType::IdpB => {
            if p.discovery_url.is_some() {
                return Err(AppError::invalid_field(
                    "discovery_url",
                    "idp_b is plain OAuth 2.0 and has no discovery document",
                ));
            }
            p.authorize_url.get_or_insert_with(|| IDP_B_AUTHORIZE.into());
            p.token_url.get_or_insert_with(|| IDP_B_TOKEN.into());
            p.userinfo_url.get_or_insert_with(|| IDP_B_USERINFO.into());
        }
        kind => {
            if p.discovery_url.is_none() {
                p.discovery_url = default_discovery(kind).map(String::from);
            }
            if p.discovery_url.is_none()
                && (p.authorize_url.is_none() || p.token_url.is_none() || p.userinfo_url.is_none())
            {
                return Err(AppError::invalid_field(
                    "discovery_url",
                    "give a discovery_url, or authorize_url, token_url and userinfo_url",
                ));
            }
        }
    }
    Ok(())
}

fn provider_conflict(e: sqlx::Error) -> AppError {
    match &e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("23505") => {
            AppError::conflict("a provider with that slug exists")
        }
        _ => e.into(),
    }
}

/// The provider configurations (client secrets never included).
#[utoipa::path(get, path = "/api/settings/oauth-providers", tag = "settings",
    responses((status = 200, body = Vec<ProviderResponse>)))]
async fn list_providers(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<ProviderResponse>>, AppError> {
    caller.admin()?;
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM oauth_providers ORDER BY display_name, slug");
    let providers: Vec<Provider> = sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&state.pool).await?;
    let base = &state.config.public_url;
    Ok(Json(providers.into_iter().map(|p| response(p, base)).collect()))
}

/// Adds a provider.
#[utoipa::path(post, path = "/api/settings/oauth-providers", tag = "settings", request_body = NewProvider,
    responses((status = 201, body = ProviderResponse), (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_provider(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<ProviderInput>,
) -> Result<(StatusCode, Json<ProviderResponse>), AppError> {
    caller.admin()?;
    for (field, present) in [
        ("slug", input.slug.is_some()),
        ("display_name", input.display_name.is_some()),
        ("provider_type", input.provider_type.is_some()),
        ("client_id", input.client_id.is_some()),
        ("client_secret", input.client_secret.is_some()),
    ] {
        if !present {
            return Err(AppError::invalid_field(field, "is required"));
        }
    }
    let blank = Provider {
        id: Uuid::now_v7(),
        slug: String::new(),
        display_name: String::new(),
        // Given by the input (checked above).
        provider_type: ProviderType::Oidc,
        client_id: String::new(),
        client_secret: Vec::new(),
        discovery_url: None,
        authorize_url: None,
        token_url: None,
        userinfo_url: None,
        scopes: String::new(),
        default_role: Role::Viewer,
        enabled: true,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    };
    let p = merged(blank, input, &state.config.jwt_secret)?;
    let sql = format!(
        "INSERT INTO oauth_providers (id, slug, display_name, provider_type, client_id, client_secret, discovery_url,
            authorize_url, token_url, userinfo_url, scopes, default_role, enabled)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING {PROVIDER_COLUMNS}"
    );
    let created: Provider = bind_provider(sqlx::query_as(sqlx::AssertSqlSafe(sql)), &p)
        .fetch_one(&state.pool)
        .await
        .map_err(provider_conflict)?;
    Ok((StatusCode::CREATED, Json(response(created, &state.config.public_url))))
}

fn bind_provider<'q>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, Provider, sqlx::postgres::PgArguments>,
    p: &'q Provider,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, Provider, sqlx::postgres::PgArguments> {
    query
        .bind(p.id)
        .bind(&p.slug)
        .bind(&p.display_name)
        .bind(p.provider_type)
        .bind(&p.client_id)
        .bind(&p.client_secret)
        .bind(&p.discovery_url)
        .bind(&p.authorize_url)
        .bind(&p.token_url)
        .bind(&p.userinfo_url)
        .bind(&p.scopes)
        .bind(p.default_role)
        .bind(p.enabled)
}

/// Refuses to leave nobody able to sign in: with password sign-in off,
/// the last enabled provider may be neither disabled nor deleted.
async fn keep_a_way_in(db: &mut PgConnection, leaving: Uuid) -> Result<(), AppError> {
    let stranded: bool = sqlx::query_scalar(
        "SELECT NOT s.password_login_enabled
                AND NOT EXISTS (SELECT 1 FROM oauth_providers WHERE enabled AND id <> $1)
         FROM auth_settings s",
    )
    .bind(leaving)
    .fetch_one(&mut *db)
    .await?;
    if stranded {
        return Err(AppError::unprocessable(
            "password sign-in is disabled and this is the last enabled provider; enable another provider or password sign-in first",
        ));
    }
    Ok(())
}

/// Changes a provider; `client_secret` only when given (rotation).
#[utoipa::path(put, path = "/api/settings/oauth-providers/{provider_id}", tag = "settings",
    params(("provider_id" = Uuid, Path)), request_body = ProviderInput,
    responses((status = 200, body = ProviderResponse), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "another provider has that slug", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn update_provider(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(input): JsonBody<ProviderInput>,
) -> Result<Json<ProviderResponse>, AppError> {
    caller.admin()?;
    let mut tx = state.pool.begin().await?;
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM oauth_providers WHERE id = $1 FOR UPDATE");
    let current: Provider = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no provider {id}")))?;
    let p = merged(current.clone(), input, &state.config.jwt_secret)?;
    if current.enabled && !p.enabled {
        keep_a_way_in(&mut tx, id).await?;
    }
    let sql = format!(
        "UPDATE oauth_providers SET slug = $2, display_name = $3, provider_type = $4, client_id = $5, client_secret = $6,
            discovery_url = $7, authorize_url = $8, token_url = $9, userinfo_url = $10, scopes = $11, default_role = $12,
            enabled = $13, updated_at = now()
         WHERE id = $1 RETURNING {PROVIDER_COLUMNS}"
    );
    let updated: Provider = bind_provider(sqlx::query_as(sqlx::AssertSqlSafe(sql)), &p)
        .fetch_one(&mut *tx)
        .await
        .map_err(provider_conflict)?;
    tx.commit().await?;
    Ok(Json(response(updated, &state.config.public_url)))
}

/// Removes a provider with every account link made through it.
#[utoipa::path(delete, path = "/api/settings/oauth-providers/{provider_id}", tag = "settings",
    params(("provider_id" = Uuid, Path)),
    responses((status = 204, description = "deleted"), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_provider(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, AppError> {
    caller.admin()?;
    let mut tx = state.pool.begin().await?;
    let enabled: Option<bool> = sqlx::query_scalar("SELECT enabled FROM oauth_providers WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
    let enabled = enabled.ok_or_else(|| AppError::not_found(format!("no provider {id}")))?;
    if enabled {
        keep_a_way_in(&mut tx, id).await?;
    }
    sqlx::query("DELETE FROM oauth_providers WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sign-in settings: whether passwords sign in, and which email domains a
/// single sign-on identity must come from (empty: any).
#[derive(Serialize, Deserialize, sqlx::FromRow, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// Turning it off needs an enabled provider.
    pub password_login_enabled: bool,
    /// At most 100 domain names (letters, digits, '.' and '-', with a
    /// dot), a leading '@' dropped.
    #[schema(max_items = 100, value_type = Vec<crate::openapi::names::EmailDomain>)]
    pub allowed_email_domains: Vec<String>,
}

pub async fn auth_settings(db: impl sqlx::PgExecutor<'_>) -> Result<AuthSettings, sqlx::Error> {
    sqlx::query_as("SELECT password_login_enabled, allowed_email_domains FROM auth_settings")
        .fetch_one(db)
        .await
}

pub async fn password_login_enabled(pool: &PgPool) -> Result<bool, sqlx::Error> {
    Ok(auth_settings(pool).await?.password_login_enabled)
}

#[utoipa::path(get, path = "/api/settings/auth", tag = "settings", responses((status = 200, body = AuthSettings)))]
async fn get_auth_settings(State(state): State<AppState>, caller: Caller) -> Result<Json<AuthSettings>, AppError> {
    caller.admin()?;
    Ok(Json(auth_settings(&state.pool).await?))
}

/// Replaces the sign-in settings. Password sign-in may only be turned off
/// while a provider is enabled.
#[utoipa::path(put, path = "/api/settings/auth", tag = "settings", request_body = AuthSettings,
    responses((status = 200, body = AuthSettings), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn put_auth_settings(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut body): JsonBody<AuthSettings>,
) -> Result<Json<AuthSettings>, AppError> {
    caller.admin()?;
    if body.allowed_email_domains.len() > 100 {
        return Err(AppError::invalid_field("allowed_email_domains", "at most 100 domains"));
    }
    for domain in &mut body.allowed_email_domains {
        *domain = domain.trim().trim_start_matches('@').to_ascii_lowercase();
        let valid = !domain.is_empty()
            && domain.len() <= 253
            && domain.contains('.')
            && domain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        if !valid {
            return Err(AppError::invalid_field(
                "allowed_email_domains",
                &format!("{domain:?} is not a domain name"),
            ));
        }
    }
    let mut tx = state.pool.begin().await?;
    if !body.password_login_enabled {
        let any_provider: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oauth_providers WHERE enabled)")
            .fetch_one(&mut *tx)
            .await?;
        if !any_provider {
            return Err(AppError::invalid_field(
                "password_login_enabled",
                "enable a single sign-on provider before turning password sign-in off",
            ));
        }
    }
    let saved: AuthSettings = sqlx::query_as(
        "UPDATE auth_settings SET password_login_enabled = $1, allowed_email_domains = $2, updated_at = now()
         RETURNING password_login_enabled, allowed_email_domains",
    )
    .bind(body.password_login_enabled)
    .bind(&body.allowed_email_domains)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Json(saved))
}
