//! The styles a dataset's GeoPackage brought (`layer_styles`: QML and
//! SLD), listed and downloaded byte for byte as they came; the default
//! one's MapLibre paint is the dataset's `default_paint`, which map layers
//! start from (`maps::style`). Read access to the dataset reads them.
use axum::{
    Json,
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use catalog_shared::AppError;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::visible_dataset},
    extract::Path,
    state::AppState,
};

#[derive(Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub(super) struct StyleEntry {
    id: Uuid,
    name: String,
    description: Option<String>,
    /// The one QGIS marked to use by default.
    default: bool,
    created_at: DateTime<Utc>,
    /// The encodings it came in: `qml`, `sld`.
    formats: Vec<String>,
    /// A link to each encoding.
    #[sqlx(skip)]
    #[schema(value_type = Vec<Object>)]
    links: Vec<Value>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct StyleList {
    styles: Vec<StyleEntry>,
    /// The MapLibre paint the default style became (null when it had none
    /// this service reads: single symbol, categorized, graduated).
    #[schema(value_type = Option<Object>)]
    default_paint: Option<Value>,
}

/// The styles a dataset's source brought.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/styles", tag = "datasets",
    params(("dataset_id" = Uuid, Path)),
    responses((status = 200, body = StyleList),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn list_styles(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<StyleList>, AppError> {
    visible_dataset(&state, &caller, id).await?;
    let mut styles: Vec<StyleEntry> = sqlx::query_as(
        "SELECT id, name, description, is_default AS default, created_at,
                array_remove(ARRAY[CASE WHEN qml IS NOT NULL THEN 'qml' END, CASE WHEN sld IS NOT NULL THEN 'sld' END], NULL) AS formats
         FROM dataset_styles WHERE dataset_id = $1 ORDER BY is_default DESC, created_at, id",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    let base = &state.config.public_url;
    for style in &mut styles {
        style.links = style
            .formats
            .iter()
            .map(|f| {
                json!({"href": format!("{base}/api/datasets/{id}/styles/{}/{f}", style.id), "rel": "stylesheet",
                       "type": media_type(f), "title": format!("{} ({})", style.name, f.to_uppercase())})
            })
            .collect();
    }
    let default_paint: Option<Value> = sqlx::query_scalar("SELECT default_paint FROM datasets WHERE id = $1")
        .bind(id)
        .fetch_one(&state.pool)
        .await?;
    Ok(Json(StyleList { styles, default_paint }))
}

fn media_type(format: &str) -> &'static str {
    match format {
        "sld" => "application/vnd.ogc.sld+xml",
        _ => "application/vnd.qgis.qml+xml",
    }
}

/// One style in one encoding, as it came.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/styles/{style_id}/{format}", tag = "datasets",
    params(("dataset_id" = Uuid, Path), ("style_id" = Uuid, Path),
        ("format" = String, Path, pattern = "^(qml|sld)$", description = "`qml` or `sld`")),
    responses((status = 200, description = "the style's text, byte for byte",
                  content(("application/vnd.qgis.qml+xml"), ("application/vnd.ogc.sld+xml"))),
              (status = 404, description = "no such dataset, style or encoding of it", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn style_file(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, style_id, format)): Path<(Uuid, Uuid, String)>,
) -> Result<Response, AppError> {
    visible_dataset(&state, &caller, id).await?;
    let missing = || AppError::not_found(format!("no {format} of style {style_id} in dataset {id}"));
    let column = match format.as_str() {
        "qml" => "qml",
        "sld" => "sld",
        _ => return Err(missing()),
    };
    let found: Option<(String, Option<String>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT name, {column} FROM dataset_styles WHERE id = $1 AND dataset_id = $2"
    )))
    .bind(style_id)
    .bind(id)
    .fetch_optional(&state.pool)
    .await?;
    let (name, text) = found.ok_or_else(missing)?;
    let text = text.ok_or_else(missing)?;
    let file_name: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type(&format)));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}.{format}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}
