use axum::{Json, extract::State};
use catalog_shared::AppError;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health)).routes(routes!(ready))
}

/// The process is alive.
#[utoipa::path(get, path = "/api/health", tag = "operations", responses((status = 200, description = "alive")))]
async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
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
