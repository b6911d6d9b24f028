//! Accounts: the caller's own (me, change password), self-registration
//! (pending until an admin approves) and the admin's user management.
use axum::{Json, extract::State, http::StatusCode};
use catalog_shared::{
    AppError,
    auth::{AccountStatus, Role, hash_password, password_policy_violation, verify_password},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::api_keys;
use crate::{
    access::Caller,
    extract::{Json as JsonBody, Path, Query},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(auth_config))
        .routes(routes!(register))
        .routes(routes!(change_password))
        .routes(routes!(create_user, list_users))
        .routes(routes!(update_user))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct QuotaUsage {
    bytes_used: i64,
    dataset_count: i64,
    /// 0: no cap.
    storage_cap: i64,
    /// 0: no cap.
    count_cap: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct UserResponse {
    id: Uuid,
    username: String,
    email: Option<String>,
    is_active: bool,
    status: AccountStatus,
    created_at: DateTime<Utc>,
    roles: Vec<Role>,
    quota_usage: Option<QuotaUsage>,
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: Uuid,
    username: String,
    email: Option<String>,
    is_active: bool,
    status: AccountStatus,
    role: Role,
    created_at: DateTime<Utc>,
    dataset_count: i64,
    bytes_used: i64,
    quota_storage_bytes: Option<i64>,
    quota_dataset_count: Option<i64>,
}

const USER_SELECT: &str = "SELECT u.id, u.username, u.email, u.is_active, u.status, u.role, u.created_at,
        usage.dataset_count, usage.bytes_used, u.quota_storage_bytes, u.quota_dataset_count
     FROM users u CROSS JOIN LATERAL catalog_usage(u.id) AS usage";

impl From<UserRow> for UserResponse {
    fn from(row: UserRow) -> Self {
        Self {
            id: row.id,
            username: row.username,
            email: row.email,
            is_active: row.is_active,
            status: row.status,
            created_at: row.created_at,
            roles: vec![row.role],
            quota_usage: Some(QuotaUsage {
                bytes_used: row.bytes_used,
                dataset_count: row.dataset_count,
                storage_cap: row.quota_storage_bytes.unwrap_or(0),
                count_cap: row.quota_dataset_count.unwrap_or(0),
            }),
        }
    }
}

async fn user_response(state: &AppState, id: Uuid) -> Result<UserResponse, AppError> {
    let sql = format!("{USER_SELECT} WHERE u.id = $1");
    let row: Option<UserRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(&state.pool)
        .await?;
    row.map(Into::into)
        .ok_or_else(|| AppError::not_found(format!("no user {id}")))
}

/// The caller's own account.
#[utoipa::path(get, path = "/api/auth/me", tag = "auth", responses((status = 200, body = UserResponse)))]
async fn me(State(state): State<AppState>, caller: Caller) -> Result<Json<UserResponse>, AppError> {
    let user = caller.signed_in()?;
    Ok(Json(user_response(&state, user.id).await?))
}

/// The document says its length and that it is not only blanks: a
/// regular expression every validator reads alike has no class for
/// letters of every script.
fn check_username(username: &str) -> Result<(), AppError> {
    let ok = (1..=150).contains(&username.chars().count())
        && username
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '@' | '+' | '-'));
    if ok {
        Ok(())
    } else {
        Err(AppError::unprocessable(
            "username must be 1 to 150 letters, digits or _ . @ + -",
        ))
    }
}

/// Something before the first `@` and a dot after it, at most 254
/// characters; the document says this as a pattern.
fn check_email(email: &str) -> Result<(), AppError> {
    let ok = email.chars().count() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(AppError::unprocessable("email is not a valid address"))
    }
}

pub(super) fn check_password(password: &str) -> Result<(), AppError> {
    match password_policy_violation(password) {
        Some(why) => Err(AppError::unprocessable(why)),
        None => Ok(()),
    }
}

/// Inserts an account; a taken username or email is a 409.
async fn insert_user(
    state: &AppState,
    username: &str,
    password: &str,
    email: Option<&str>,
    role: Role,
    status: AccountStatus,
) -> Result<Uuid, AppError> {
    check_username(username)?;
    if let Some(email) = email {
        check_email(email)?;
    }
    check_password(password)?;
    let hash = hash_password(password).map_err(AppError::internal)?;
    let id = Uuid::now_v7();
    let inserted = sqlx::query(
        "INSERT INTO users (id, username, email, password_hash, role, status) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id)
    .bind(username)
    .bind(email)
    .bind(hash)
    .bind(role)
    .bind(status)
    .execute(&state.pool)
    .await;
    match inserted {
        Ok(_) => Ok(id),
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("23505") => {
            Err(AppError::conflict("that username or email is already taken"))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// Letters, digits and `_ . @ + -`, at most 150 (blanks around them
    /// are dropped).
    #[schema(
        max_length = 150,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    username: String,
    /// At least 12 characters and 3 of: lower-case letters, upper-case
    /// letters, digits, symbols; at most 72 bytes in UTF-8.
    #[schema(min_length = 12, max_length = 72)]
    password: String,
    #[schema(
        max_length = 254,
        pattern = r"^[^@]*[^@\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^@]*@[^.]*\."
    )]
    email: String,
}

/// Asks for an account; it stays `pending` until an admin approves it.
#[utoipa::path(post, path = "/api/auth/register", tag = "auth", request_body = Registration,
    responses((status = 201, body = UserResponse), (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn register(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Registration>,
) -> Result<(StatusCode, Json<UserResponse>), AppError> {
    let id = insert_user(
        &state,
        body.username.trim(),
        &body.password,
        Some(body.email.trim()),
        Role::Viewer,
        AccountStatus::Pending,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(user_response(&state, id).await?)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    current_password: String,
    /// At least 12 characters and 3 of: lower-case letters, upper-case
    /// letters, digits, symbols; at most 72 bytes in UTF-8.
    #[schema(min_length = 12, max_length = 72)]
    new_password: String,
}

/// Changes the caller's password; every API key of the account stops
/// working, and so does every other sign-in session (their refresh tokens
/// are revoked, and with them their access tokens; the session making the
/// change keeps its own).
#[utoipa::path(post, path = "/api/auth/change-password", tag = "auth", request_body = PasswordChange,
    responses((status = 204, description = "changed"), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn change_password(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<PasswordChange>,
) -> Result<StatusCode, AppError> {
    let user = caller.signed_in()?;
    let hash: Option<String> = sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
        .bind(user.id)
        .fetch_one(&state.pool)
        .await?;
    if !hash.is_some_and(|h| verify_password(&body.current_password, &h)) {
        return Err(AppError::bad_request("the current password is wrong"));
    }
    check_password(&body.new_password)?;
    let new_hash = hash_password(&body.new_password).map_err(AppError::internal)?;
    let mut tx = state.pool.begin().await?;
    sqlx::query("UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1")
        .bind(user.id)
        .bind(new_hash)
        .execute(&mut *tx)
        .await?;
    api_keys::revoke_all(&mut *tx, user.id).await?;
    sqlx::query(
        "UPDATE refresh_tokens SET revoked_at = now()
         WHERE user_id = $1 AND revoked_at IS NULL AND session_id IS DISTINCT FROM $2",
    )
    .bind(user.id)
    .bind(caller.session)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Letters, digits and `_ . @ + -`, at most 150 (blanks around them
    /// are dropped).
    #[schema(
        max_length = 150,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    username: String,
    /// At least 12 characters and 3 of: lower-case letters, upper-case
    /// letters, digits, symbols; at most 72 bytes in UTF-8.
    #[schema(min_length = 12, max_length = 72)]
    password: String,
    #[schema(
        max_length = 254,
        pattern = r"^[^@]*[^@\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^@]*@[^.]*\."
    )]
    email: Option<String>,
    role: Role,
}

/// An admin creates an active account.
#[utoipa::path(post, path = "/api/admin/users", tag = "admin", request_body = NewUser,
    responses((status = 201, body = UserResponse), (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewUser>,
) -> Result<(StatusCode, Json<UserResponse>), AppError> {
    caller.admin()?;
    let id = insert_user(
        &state,
        body.username.trim(),
        &body.password,
        body.email.as_deref().map(str::trim),
        body.role,
        AccountStatus::Active,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(user_response(&state, id).await?)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct UserFilter {
    /// Only the accounts in this state (`pending`: those waiting for approval).
    status: Option<AccountStatus>,
}

/// Every account, or those in one state.
#[utoipa::path(get, path = "/api/admin/users", tag = "admin", params(UserFilter),
    responses((status = 200, body = Vec<UserResponse>),
              (status = 400, description = "a status that is not an account state", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn list_users(
    State(state): State<AppState>,
    caller: Caller,
    Query(filter): Query<UserFilter>,
) -> Result<Json<Vec<UserResponse>>, AppError> {
    caller.admin()?;
    let sql = format!("{USER_SELECT} WHERE $1::text IS NULL OR u.status = $1 ORDER BY u.created_at");
    let rows: Vec<UserRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(filter.status)
        .fetch_all(&state.pool)
        .await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Whether an update of one's own account would end one's admin access.
fn locks_out(update: &UserUpdate) -> bool {
    update.role.is_some_and(|r| r != Role::Admin)
        || update.status.is_some_and(|s| s != AccountStatus::Active)
        || update.is_active == Some(false)
        || update.auth_provider.is_some()
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserUpdate {
    #[schema(
        max_length = 254,
        pattern = r"^[^@]*[^@\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^@]*@[^.]*\."
    )]
    email: Option<String>,
    is_active: Option<bool>,
    status: Option<AccountStatus>,
    role: Option<Role>,
    /// `local` or the slug of a sign-in provider. A change is a conversion
    /// between auth providers: the account's API keys die, and converting
    /// to `local` removes its single sign-on links.
    auth_provider: Option<String>,
}

/// An admin edits an account. A role change, the approval of a pending
/// account or a conversion between auth providers revokes every API key of
/// the account. An admin cannot lock themselves out: their own account
/// keeps its admin role, its active status and its way of signing in.
#[utoipa::path(patch, path = "/api/admin/users/{user_id}", tag = "admin", params(("user_id" = Uuid, Path)), request_body = UserUpdate,
    responses((status = 200, body = UserResponse), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "the email is another account's, or the change would lock the admin making it out", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn update_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<UserUpdate>,
) -> Result<Json<UserResponse>, AppError> {
    let admin = caller.admin()?;
    if admin.id == id && locks_out(&body) {
        return Err(AppError::conflict(
            "you cannot take away your own admin role, suspend or deactivate your own account, or change how you sign \
             in: another admin can",
        ));
    }
    if let Some(email) = &body.email {
        check_email(email)?;
    }
    let mut tx = state.pool.begin().await?;
    let current: Option<(Role, AccountStatus, String)> =
        sqlx::query_as("SELECT role, status, auth_provider FROM users WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let (old_role, old_status, old_provider) = current.ok_or_else(|| AppError::not_found(format!("no user {id}")))?;
    if let Some(provider) = &body.auth_provider
        && provider != "local"
    {
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM oauth_providers WHERE slug = $1)")
            .bind(provider)
            .fetch_one(&mut *tx)
            .await?;
        if !exists {
            return Err(AppError::unprocessable(format!(
                "auth_provider must be local or the slug of a sign-in provider, not {provider:?}"
            )));
        }
    }
    let updated = sqlx::query(
        "UPDATE users SET email = coalesce($2, email), is_active = coalesce($3, is_active),
                          status = coalesce($4, status), role = coalesce($5, role),
                          auth_provider = coalesce($6, auth_provider), updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(&body.email)
    .bind(body.is_active)
    .bind(body.status)
    .bind(body.role)
    .bind(&body.auth_provider)
    .execute(&mut *tx)
    .await;
    if let Err(sqlx::Error::Database(db)) = &updated
        && db.code().as_deref() == Some("23505")
    {
        return Err(AppError::conflict("that email is already taken"));
    }
    updated?;
    let role_changed = body.role.is_some_and(|r| r != old_role);
    let approved = old_status == AccountStatus::Pending && body.status == Some(AccountStatus::Active);
    let converted = body.auth_provider.as_ref().is_some_and(|p| *p != old_provider);
    if role_changed || approved || converted {
        api_keys::revoke_all(&mut *tx, id).await?;
    }
    if converted && body.auth_provider.as_deref() == Some("local") {
        sqlx::query("DELETE FROM oauth_accounts WHERE user_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(Json(user_response(&state, id).await?))
}

/// What the sign-in screen needs: how people can sign in (read fresh on
/// every call, so provider changes show at once), and the site banner.
#[utoipa::path(get, path = "/api/auth/config", tag = "auth", responses((status = 200, description = "sign-in options and the site banner")))]
async fn auth_config(State(state): State<AppState>) -> Result<Json<serde_json::Value>, AppError> {
    let config = &state.config;
    let settings = super::providers::auth_settings(&state.pool).await?;
    let providers: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT slug, display_name, provider_type FROM oauth_providers WHERE enabled ORDER BY display_name, slug",
    )
    .fetch_all(&state.pool)
    .await?;
    let providers: Vec<serde_json::Value> = providers
        .into_iter()
        .map(|(slug, display_name, provider_type)| {
            serde_json::json!({
                "slug": slug,
                "display_name": display_name,
                "provider_type": provider_type,
                "login_url": format!("{}/api/auth/oauth/{slug}/login", config.public_url),
            })
        })
        .collect();
    let mails = catalog_shared::notify::channels(&state.pool).await?.smtp.is_some();
    Ok(Json(serde_json::json!({
        "password_login_enabled": settings.password_login_enabled,
        // Forgotten passwords: a link by mail, or (false) from an admin.
        "password_reset_by_mail": mails,
        "registration_enabled": true,
        "oauth_providers": providers,
        "banner": {
            "enabled": config.banner_enabled,
            "text": config.banner_text,
            "color": config.banner_color,
        },
    })))
}
