//! Forgotten passwords: a one-time link that sets a new one. An admin
//! makes it for an account and passes it on (no mail needed); with a mail
//! server configured, anyone may ask for it by username or address and it
//! goes to the account's own address. Only the token's hash is stored; the
//! link lives a day, works once, and a newer link retires the older ones.
//! Setting the password ends every sign-in and API key of the account, as
//! a password change does.
use std::time::Duration;

use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{
    AppError,
    auth::{hash_password, random_secret},
    notify,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{accounts::check_password, api_keys};
use crate::{
    access::Caller,
    extract::{Json as JsonBody, Path},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_reset_link))
        .routes(routes!(request_reset))
        .routes(routes!(reset_password))
}

const LINK_LIFETIME: Duration = Duration::from_secs(24 * 3600);
const TOKEN_PREFIX: &str = "pr_";
const MAIL_INTERVAL: Duration = Duration::from_secs(5 * 60);

#[derive(Serialize, utoipa::ToSchema)]
pub struct ResetLink {
    /// The web UI's page that sets the new password; the token is in the
    /// fragment, so it never reaches a server's logs.
    url: String,
    expires_at: DateTime<Utc>,
}

/// A new one-time link for the account, and the end of its older ones.
async fn new_link(state: &AppState, user_id: Uuid, created_by: Option<Uuid>) -> Result<ResetLink, AppError> {
    let token = random_secret(TOKEN_PREFIX);
    let mut tx = state.pool.begin().await?;
    sqlx::query("UPDATE password_resets SET used_at = now() WHERE user_id = $1 AND used_at IS NULL")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    let expires_at: DateTime<Utc> = sqlx::query_scalar(
        "INSERT INTO password_resets (token_hash, user_id, created_by, expires_at)
         VALUES (sha256($1), $2, $3, now() + make_interval(secs => $4)) RETURNING expires_at",
    )
    .bind(token.as_bytes())
    .bind(user_id)
    .bind(created_by)
    .bind(LINK_LIFETIME.as_secs_f64())
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ResetLink {
        url: format!("{}/reset-password#token={token}", state.config.public_url),
        expires_at,
    })
}

/// A link that lets the account set a new password, for an admin to pass on.
#[utoipa::path(post, path = "/api/admin/users/{user_id}/password-reset", tag = "admin",
    params(("user_id" = Uuid, Path)),
    responses((status = 201, body = ResetLink),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_reset_link(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<Uuid>,
) -> Result<(StatusCode, Json<ResetLink>), AppError> {
    let admin = caller.admin()?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)")
        .bind(user_id)
        .fetch_one(&state.pool)
        .await?;
    if !exists {
        return Err(AppError::not_found(format!("no user {user_id}")));
    }
    Ok((
        StatusCode::CREATED,
        Json(new_link(&state, user_id, Some(admin.id)).await?),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    /// The account's username or email address.
    #[schema(min_length = 1, max_length = 254)]
    account: String,
}

/// Mails a reset link to the account's own address, when a mail server is
/// configured and an active account with an address matches. The answer is
/// the same whether or not one matched, so it tells nobody which accounts
/// exist; without a mail server it says to ask an admin.
#[utoipa::path(post, path = "/api/auth/password-reset/request", tag = "auth",
    request_body = ResetRequest,
    responses((status = 202, description = "a link is on its way if an account matches"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "no mail server is configured: an admin makes reset links", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn request_reset(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<ResetRequest>,
) -> Result<StatusCode, AppError> {
    let account = body.account.trim();
    if account.is_empty() || account.len() > 254 {
        return Err(AppError::unprocessable(
            "account must be a username or an email address",
        ));
    }
    let channels = notify::channels(&state.pool).await?;
    if channels.smtp.is_none() {
        return Err(AppError::new(
            StatusCode::CONFLICT,
            "this service sends no mail: ask an administrator for a password reset link",
        ));
    }
    let found: Option<(Uuid, String)> = sqlx::query_as(
        "SELECT id, email FROM users
         WHERE (lower(username) = lower($1) OR lower(email) = lower($1))
           AND email IS NOT NULL AND status = 'active' AND is_active
         ORDER BY lower(username) = lower($1) DESC LIMIT 1",
    )
    .bind(account)
    .fetch_optional(&state.pool)
    .await?;
    if let Some((user_id, email)) = found {
        // One mail per account every few minutes, however often it is asked for.
        let recent: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM password_resets
                            WHERE user_id = $1 AND created_by IS NULL AND created_at > now() - make_interval(secs => $2))",
        )
        .bind(user_id)
        .bind(MAIL_INTERVAL.as_secs_f64())
        .fetch_one(&state.pool)
        .await?;
        if recent {
            return Ok(StatusCode::ACCEPTED);
        }
        let link = new_link(&state, user_id, None).await?;
        let text = format!(
            "Someone asked to set a new password for your account.\n\nOpen this link within a day to choose one:\n{}\n\nIf it was not you, ignore this mail: your password stays as it is.",
            link.url
        );
        // Sent in the background, so the answer takes as long whether or not an account matched.
        let secret = state.config.jwt_secret.clone();
        tokio::spawn(async move {
            if let Err(error) = notify::mail_person(&channels, &secret, &email, "Set a new password", &text).await {
                tracing::warn!(%error, "a password reset mail was not sent");
            }
        });
    }
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordReset {
    /// The token of the link.
    #[schema(min_length = 1, max_length = 200)]
    token: String,
    /// At least 12 characters and 3 of: lower-case letters, upper-case
    /// letters, digits, symbols; at most 72 bytes in UTF-8.
    #[schema(min_length = 8)]
    new_password: String,
}

/// Sets a new password with a reset link's token; every sign-in and API
/// key of the account ends.
#[utoipa::path(post, path = "/api/auth/password-reset", tag = "auth",
    request_body = PasswordReset,
    responses((status = 204, description = "the password is set"),
              (status = 400, description = "the link is unknown, used or expired", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, description = "the password does not meet the policy", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn reset_password(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<PasswordReset>,
) -> Result<StatusCode, AppError> {
    let spent = || AppError::bad_request("this reset link is unknown, already used or expired: ask for a new one");
    if !body.token.starts_with(TOKEN_PREFIX) {
        return Err(spent());
    }
    check_password(&body.new_password)?;
    let hash = hash_password(&body.new_password).map_err(AppError::internal)?;
    let mut tx = state.pool.begin().await?;
    // Used in the same statement that finds it: two tabs with one link set one password.
    let user_id: Uuid = sqlx::query_scalar(
        "UPDATE password_resets SET used_at = now()
         WHERE token_hash = sha256($1) AND used_at IS NULL AND expires_at > now() RETURNING user_id",
    )
    .bind(body.token.as_bytes())
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(spent)?;
    sqlx::query(
        "UPDATE users SET password_hash = $2, token_version = token_version + 1, updated_at = now() WHERE id = $1",
    )
    .bind(user_id)
    .bind(hash)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    api_keys::revoke_all(&mut *tx, user_id).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
