//! Who is calling: one credential resolver runs before every handler and
//! leaves a `Caller` in the request; plus password sign-in.
use axum::{
    Json,
    extract::{FromRequestParts, Request, State},
    http::{header, request::Parts},
    middleware::Next,
    response::Response,
};
use catalog_shared::{
    AppError,
    auth::{Role, hash_password, verify_password},
    config::Config,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{extract::Form, state::AppState};

/// A signed-in account.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: Uuid,
    pub role: String,
}

impl User {
    pub fn role(&self) -> Role {
        Role::parse(&self.role).unwrap_or(Role::Viewer)
    }
    pub fn is_admin(&self) -> bool {
        self.role() == Role::Admin
    }
}

/// The resolved identity of a request: anonymous or a user.
#[derive(Clone, Debug, Default)]
pub struct Caller(pub Option<User>);

impl Caller {
    pub fn user(&self) -> Option<&User> {
        self.0.as_ref()
    }
    pub fn user_id(&self) -> Option<Uuid> {
        self.0.as_ref().map(|u| u.id)
    }
    pub fn is_admin(&self) -> bool {
        self.0.as_ref().is_some_and(User::is_admin)
    }
    /// The user, or 401 for anonymous callers.
    pub fn signed_in(&self) -> Result<&User, AppError> {
        self.user()
            .ok_or_else(|| AppError::unauthorized("sign in or send an API credential"))
    }
    /// The user when it may create and edit content (editor or admin).
    pub fn editor(&self) -> Result<&User, AppError> {
        let user = self.signed_in()?;
        if user.role() >= Role::Editor {
            Ok(user)
        } else {
            Err(AppError::forbidden("this needs the editor or admin role"))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_default())
    }
}

/// Resolves the bearer credential once per request. A credential that was
/// sent but cannot be resolved is a 401, never a silent anonymous request.
pub async fn resolve_caller(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, AppError> {
    let caller = match bearer_token(request.headers()) {
        None => Caller(None),
        Some(token) => {
            let claims = state
                .keys
                .verify_access(token)
                .ok_or_else(|| AppError::unauthorized("the access token is invalid or expired"))?;
            let user: Option<User> = sqlx::query_as(
                "SELECT id, role FROM users WHERE id = $1 AND status = 'active' AND is_active",
            )
            .bind(claims.sub)
            .fetch_optional(&state.pool)
            .await?;
            Caller(Some(user.ok_or_else(|| {
                AppError::unauthorized("the account of this token is not active")
            })?))
        }
    };
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct LoginForm {
    username: String,
    password: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TokenPair {
    access_token: String,
    refresh_token: Option<String>,
    token_type: &'static str,
    /// Seconds until the access token expires.
    expires_in: u64,
}

const REFRESH_TOKEN_DAYS: i32 = 30;

/// Password sign-in.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth",
    request_body(content = LoginForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, body = TokenPair), (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn login(
    State(state): State<AppState>,
    Form(form): Form<LoginForm>,
) -> Result<Json<TokenPair>, AppError> {
    let account: Option<(Uuid, Option<String>, String, bool)> = sqlx::query_as(
        "SELECT id, password_hash, status, is_active FROM users WHERE lower(username) = lower($1)",
    )
    .bind(&form.username)
    .fetch_optional(&state.pool)
    .await?;
    let refused = || AppError::unauthorized("wrong username or password");
    let (user_id, hash, status, is_active) = account.ok_or_else(refused)?;
    if !hash.is_some_and(|h| verify_password(&form.password, &h)) {
        return Err(refused());
    }
    if status != "active" || !is_active {
        return Err(AppError::unauthorized(format!(
            "the account is {status}; it cannot sign in"
        )));
    }
    let ttl = state.config.access_token_ttl;
    let access_token = state
        .keys
        .issue_access(user_id, ttl)
        .map_err(AppError::internal)?;
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let refresh_token = hex(&secret);
    sqlx::query(
        "INSERT INTO refresh_tokens (id, user_id, token_hash, expires_at)
         VALUES ($1, $2, sha256($3), now() + make_interval(days => $4))",
    )
    .bind(Uuid::now_v7())
    .bind(user_id)
    .bind(refresh_token.as_bytes())
    .bind(REFRESH_TOKEN_DAYS)
    .execute(&state.pool)
    .await?;
    Ok(Json(TokenPair {
        access_token,
        refresh_token: Some(refresh_token),
        token_type: "bearer",
        expires_in: ttl.as_secs(),
    }))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates the first admin from `BOOTSTRAP_ADMIN_*` when no user exists.
pub async fn bootstrap_admin(pool: &PgPool, config: &Config) -> anyhow::Result<()> {
    let (Some(username), Some(password)) = (
        &config.bootstrap_admin_username,
        &config.bootstrap_admin_password,
    ) else {
        return Ok(());
    };
    let hash = hash_password(password)?;
    let created = sqlx::query(
        "INSERT INTO users (id, username, password_hash, role)
         SELECT $1, $2, $3, 'admin' WHERE NOT EXISTS (SELECT 1 FROM users)",
    )
    .bind(Uuid::now_v7())
    .bind(username)
    .bind(hash)
    .execute(pool)
    .await?
    .rows_affected();
    if created == 1 {
        tracing::info!(%username, "bootstrap admin created");
    }
    Ok(())
}
