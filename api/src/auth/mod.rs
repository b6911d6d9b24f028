//! Accounts and sign-in: password sessions and refresh tokens, API keys,
//! registration and user administration, single sign-on providers. Who a
//! request is and what it may do is decided in `access`.
use catalog_shared::{auth::hash_password, config::Config};
use sqlx::PgPool;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::state::AppState;

pub mod accounts;
pub mod api_keys;
mod cookies;
pub mod cors;
mod oauth;
pub mod providers;
mod reset;
pub mod tokens;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(tokens::routes())
        .merge(api_keys::routes())
        .merge(accounts::routes())
        .merge(providers::routes())
        .merge(oauth::routes())
        .merge(reset::routes())
}

/// Creates the first admin from `BOOTSTRAP_ADMIN_*` when no user exists.
pub async fn bootstrap_admin(pool: &PgPool, config: &Config) -> anyhow::Result<()> {
    let (Some(username), Some(password)) = (&config.bootstrap_admin_username, &config.bootstrap_admin_password) else {
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
