use axum::{Json, extract::State};
use catalog_shared::AppError;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health)).routes(routes!(ready))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct Health {
    /// Always `ok`: the process answers.
    status: &'static str,
    /// The product's release (semver), not the interface version.
    version: &'static str,
}

/// The process is alive, and its release.
#[utoipa::path(get, path = "/api/health", tag = "operations", responses((status = 200, description = "alive", body = Health)))]
async fn health() -> Json<Health> {
    Json(Health {
        status: "ok",
        version: catalog_shared::VERSION,
    })
}

/// The database and the object store can be reached.
#[utoipa::path(get, path = "/api/ready", tag = "operations", responses(
    (status = 200, description = "ready"),
    (status = 503, description = "a dependency is down", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn ready(State(state): State<AppState>) -> Result<Json<Value>, AppError> {
    sqlx::query("SELECT 1").execute(&state.pool).await?;
    state.storage.ping().await?;
    Ok(Json(json!({"status": "ready", "database": "ok", "storage": "ok"})))
}
