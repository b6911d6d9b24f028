//! Sessions: password sign-in, refresh-token rotation (optionally in
//! cookies with a CSRF check), sign-out of one sign-in or everywhere,
//! download tokens.
use std::time::Duration;

use axum::{
    Json,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
};
use catalog_shared::{
    AppError,
    auth::{AccountStatus, DOWNLOAD_TOKEN_TTL, random_secret, verify_sign_in},
};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::cookies;
use crate::{
    access::{Caller, bearer_token, datasets::visible_dataset},
    extract::{Body, Form, Path},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(refresh))
        .routes(routes!(logout))
        .routes(routes!(logout_session))
        .routes(routes!(download_token))
}

const REFRESH_TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// Two tabs refreshing at once both present the same token; the one that
/// comes second within this window still gets a new pair.
const ROTATION_GRACE: Duration = Duration::from_secs(30);

#[derive(Deserialize, utoipa::ToSchema)]
pub struct LoginForm {
    username: String,
    password: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TokenPair {
    access_token: String,
    /// Null in cookie mode, where the refresh token travels in an httpOnly cookie.
    refresh_token: Option<String>,
    token_type: &'static str,
    /// Seconds until the access token expires.
    expires_in: u64,
}

/// A new access token and a new (stored) refresh token for the account,
/// in the given sign-in session or, for a new sign-in, a new one.
pub(super) async fn mint_pair(
    state: &AppState,
    user_id: Uuid,
    token_version: i32,
    session: Option<Uuid>,
) -> Result<(String, String), AppError> {
    let session = session.unwrap_or_else(Uuid::now_v7);
    let access_token = state
        .keys
        .issue_session_access(user_id, token_version, state.config.access_token_ttl, Some(session))
        .map_err(AppError::internal)?;
    let refresh_token = random_secret("rt_");
    sqlx::query(
        "INSERT INTO refresh_tokens (id, user_id, token_hash, expires_at, session_id)
         VALUES ($1, $2, sha256($3), now() + make_interval(secs => $4), $5)",
    )
    .bind(Uuid::now_v7())
    .bind(user_id)
    .bind(refresh_token.as_bytes())
    .bind(REFRESH_TOKEN_TTL.as_secs() as f64)
    .bind(session)
    .execute(&state.pool)
    .await?;
    Ok((access_token, refresh_token))
}

/// Sets the refresh-token and CSRF cookies of cookie mode.
pub(super) fn set_session_cookies(state: &AppState, headers: &mut HeaderMap, refresh_token: &str) {
    let secure = state.config.public_url.starts_with("https://");
    cookies::set(
        headers,
        refresh_token,
        &random_secret(""),
        REFRESH_TOKEN_TTL.as_secs() as i64,
        secure,
    );
}

/// Issues an access token and a new refresh token; in cookie mode the
/// refresh token and a CSRF value go into cookies instead of the body.
async fn issue_pair(
    state: &AppState,
    user_id: Uuid,
    token_version: i32,
    session: Option<Uuid>,
    cookie_mode: bool,
) -> Result<impl IntoResponse + use<>, AppError> {
    let (access_token, refresh_token) = mint_pair(state, user_id, token_version, session).await?;
    let mut headers = HeaderMap::new();
    let body_refresh = if cookie_mode {
        set_session_cookies(state, &mut headers, &refresh_token);
        None
    } else {
        Some(refresh_token)
    };
    Ok((
        headers,
        Json(TokenPair {
            access_token,
            refresh_token: body_refresh,
            token_type: "bearer",
            expires_in: state.config.access_token_ttl.as_secs(),
        }),
    ))
}

/// Password sign-in. With `X-Service-Auth-Mode: cookie` the refresh token
/// is set as an httpOnly cookie and a CSRF cookie comes with it.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth",
    request_body(content = LoginForm, content_type = "application/x-www-form-urlencoded"),
    params(("X-Service-Auth-Mode" = Option<String>, Header, description = "`cookie` for cookie mode")),
    responses((status = 200, body = TokenPair), (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Result<impl IntoResponse, AppError> {
    let account: Option<(Uuid, Option<String>, AccountStatus, bool, i32)> = sqlx::query_as(
        "SELECT id, password_hash, status, is_active, token_version FROM users WHERE lower(username) = lower($1)",
    )
    .bind(&form.username)
    .fetch_optional(&state.pool)
    .await?;
    if !super::providers::password_login_enabled(&state.pool).await? {
        return Err(AppError::forbidden(
            "password sign-in is disabled; sign in with a single sign-on provider",
        ));
    }
    let refused = || AppError::unauthorized("wrong username or password");
    let hash = account.as_ref().and_then(|(_, hash, ..)| hash.as_deref());
    if !verify_sign_in(&form.password, hash) {
        return Err(refused());
    }
    let (user_id, _, status, is_active, token_version) = account.ok_or_else(refused)?;
    if status != AccountStatus::Active || !is_active {
        let state_name = if status == AccountStatus::Active {
            "deactivated"
        } else {
            status.as_str()
        };
        return Err(AppError::unauthorized(format!(
            "the account is {state_name}; it cannot sign in"
        )));
    }
    issue_pair(&state, user_id, token_version, None, cookies::cookie_mode(&headers)).await
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
pub struct RefreshRequest {
    refresh_token: Option<String>,
}

/// The refresh token of a request: the cookie in cookie mode (after the
/// CSRF check), otherwise the JSON body.
fn presented_refresh_token(headers: &HeaderMap, body: &Bytes, check_csrf: bool) -> Result<Option<String>, AppError> {
    if cookies::cookie_mode(headers) {
        let token = cookies::get(headers, cookies::REFRESH_COOKIE);
        if check_csrf && token.is_some() {
            let cookie = cookies::get(headers, cookies::CSRF_COOKIE);
            let header = headers.get(cookies::CSRF_HEADER).and_then(|v| v.to_str().ok());
            if cookie.is_none() || cookie.as_deref() != header {
                return Err(AppError::forbidden(
                    "the X-CSRF-Token header does not match the CSRF cookie",
                ));
            }
        }
        return Ok(token);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let request: RefreshRequest = serde_json::from_slice(body)
        .map_err(|e| AppError::unprocessable(format!("the body must be {{\"refresh_token\": \"...\"}}: {e}")))?;
    Ok(request.refresh_token)
}

#[derive(sqlx::FromRow)]
struct StoredRefresh {
    id: Uuid,
    user_id: Uuid,
    session_id: Uuid,
    token_version: i32,
    usable: bool,
    rotated_too_long_ago: bool,
}

async fn find_refresh(state: &AppState, token: &str) -> Result<Option<StoredRefresh>, AppError> {
    Ok(sqlx::query_as(
        "SELECT r.id, r.user_id, r.session_id, u.token_version,
                (r.revoked_at IS NULL AND r.expires_at > now() AND u.status = 'active' AND u.is_active) AS usable,
                (r.rotated_at IS NOT NULL AND r.rotated_at < now() - make_interval(secs => $2)) AS rotated_too_long_ago
         FROM refresh_tokens r JOIN users u ON u.id = r.user_id
         WHERE r.token_hash = sha256($1)",
    )
    .bind(token.as_bytes())
    .bind(ROTATION_GRACE.as_secs() as f64)
    .fetch_optional(&state.pool)
    .await?)
}

/// Trades a refresh token for a new pair; the refresh token rotates.
#[utoipa::path(post, path = "/api/auth/refresh", tag = "auth", request_body(content = RefreshRequest, description = "outside cookie mode"),
    responses((status = 200, body = TokenPair),
              (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, description = "CSRF header and cookie disagree", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn refresh(
    State(state): State<AppState>,
    headers: HeaderMap,
    Body(body): Body,
) -> Result<impl IntoResponse, AppError> {
    let token = presented_refresh_token(&headers, &body, true)?
        .ok_or_else(|| AppError::unauthorized("no refresh token was presented"))?;
    let stored = find_refresh(&state, &token)
        .await?
        .filter(|r| r.usable && !r.rotated_too_long_ago)
        .ok_or_else(|| {
            AppError::unauthorized("the refresh token is invalid, expired, revoked or already used; sign in again")
        })?;
    sqlx::query("UPDATE refresh_tokens SET rotated_at = coalesce(rotated_at, now()) WHERE id = $1")
        .bind(stored.id)
        .execute(&state.pool)
        .await?;
    // The new pair continues the same sign-in session.
    issue_pair(
        &state,
        stored.user_id,
        stored.token_version,
        Some(stored.session_id),
        cookies::cookie_mode(&headers),
    )
    .await
}

/// Signs the account out on every device: all its access and refresh
/// tokens stop working; API keys stay valid. A dead access token is
/// accepted; without one, the refresh credential is used.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth",
    request_body(content = RefreshRequest, description = "the refresh token, when no access token is sent"),
    responses((status = 204, description = "signed out everywhere"), (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Body(body): Body,
) -> Result<impl IntoResponse, AppError> {
    let from_access = bearer_token(&headers)
        .and_then(|t| state.keys.verify_access(t, true))
        .map(|c| c.sub);
    let user_id = match from_access {
        Some(id) => Some(id),
        None => match presented_refresh_token(&headers, &body, false).ok().flatten() {
            Some(token) => find_refresh(&state, &token).await?.map(|r| r.user_id),
            None => None,
        },
    };
    let user_id =
        user_id.ok_or_else(|| AppError::unauthorized("no valid access or refresh credential was presented"))?;
    let mut tx = state.pool.begin().await?;
    sqlx::query("UPDATE users SET token_version = token_version + 1, updated_at = now() WHERE id = $1")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok((StatusCode::NO_CONTENT, cleared_cookies(&state, &headers)))
}

/// Headers that clear the session cookies, for a sign-out in cookie mode.
fn cleared_cookies(state: &AppState, headers: &HeaderMap) -> HeaderMap {
    let mut cleared = HeaderMap::new();
    if cookies::cookie_mode(headers) {
        cookies::set(&mut cleared, "", "", 0, state.config.public_url.starts_with("https://"));
    }
    cleared
}

/// Signs out one sign-in (this device): the refresh tokens of the session
/// the presented refresh credential belongs to stop working; the account's
/// other sign-ins stay. The short-lived access token held by that device is
/// dropped by the client and lapses on its own.
#[utoipa::path(post, path = "/api/auth/logout/session", tag = "auth",
    request_body(content = RefreshRequest, description = "outside cookie mode"),
    responses((status = 204, description = "this sign-in ended"),
              (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, description = "CSRF header and cookie disagree", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn logout_session(
    State(state): State<AppState>,
    headers: HeaderMap,
    Body(body): Body,
) -> Result<impl IntoResponse, AppError> {
    let token = presented_refresh_token(&headers, &body, true)?
        .ok_or_else(|| AppError::unauthorized("no refresh credential was presented"))?;
    let stored = find_refresh(&state, &token)
        .await?
        .filter(|stored| stored.usable)
        .ok_or_else(|| AppError::unauthorized("the refresh credential is unknown, expired or already signed out"))?;
    sqlx::query("UPDATE refresh_tokens SET revoked_at = now() WHERE session_id = $1 AND revoked_at IS NULL")
        .bind(stored.session_id)
        .execute(&state.pool)
        .await?;
    Ok((StatusCode::NO_CONTENT, cleared_cookies(&state, &headers)))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct DownloadToken {
    token: String,
    /// Always `download`.
    token_type: &'static str,
    expires_in: u64,
    /// The dataset's download, with this token.
    download_url: String,
}

/// A two-minute token that lets its bearer download one dataset.
#[utoipa::path(post, path = "/api/auth/download-token/{dataset_id}", tag = "auth", params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = DownloadToken), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn download_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(dataset_id): Path<Uuid>,
) -> Result<Json<DownloadToken>, AppError> {
    visible_dataset(&state, &caller, dataset_id).await?;
    let token = state
        .keys
        .issue_download(caller.user_id(), dataset_id)
        .map_err(AppError::internal)?;
    let download_url = format!(
        "{}/api/datasets/{dataset_id}/download?token={token}",
        state.config.public_url
    );
    Ok(Json(DownloadToken {
        token,
        token_type: "download",
        expires_in: DOWNLOAD_TOKEN_TTL.as_secs(),
        download_url,
    }))
}
