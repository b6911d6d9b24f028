//! Metadata assist: a draft quality statement (2 to 4 sentences) for a
//! dataset, written from what the catalog knows of it — its shape, extent,
//! source, attributes and how complete its geometries are. No text
//! generation service is involved, so the draft is the same every time for
//! the same data and nothing leaves the service.
use axum::{Json, extract::State};
use catalog_raster::RasterInfo;
use catalog_shared::{AppError, datasets::GeometryType, db::quote_ident};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::visible_dataset},
    dataset_record::{Dataset, published_columns},
    extract::Json as JsonBody,
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(quality_statement))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct MetadataAssistRequest {
    /// UUID of the dataset.
    #[schema(format = Uuid)]
    dataset_id: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MetadataAssistDraft {
    draft: String,
}

fn kind_of(geometry_type: Option<GeometryType>) -> &'static str {
    match geometry_type.and_then(GeometryType::dimension) {
        Some(0) => "point",
        Some(1) => "line",
        Some(2) => "polygon",
        _ => "mixed-geometry",
    }
}

fn coordinate(value: f64, positive: char, negative: char) -> String {
    let hemisphere = if value < 0.0 { negative } else { positive };
    format!("{:.2}°{hemisphere}", value.abs())
}

fn listed(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// " covering W to E and S to N", or nothing without an extent.
fn covering(dataset: &Dataset) -> String {
    match dataset.extent_bbox.as_deref() {
        Some([w, s, e, n]) => format!(
            " covering {} to {} and {} to {}{}",
            coordinate(*w, 'E', 'W'),
            coordinate(*e, 'E', 'W'),
            coordinate(*s, 'N', 'S'),
            coordinate(*n, 'N', 'S'),
            if w > e { ", across the antimeridian" } else { "" }
        ),
        _ => String::new(),
    }
}

/// "It was loaded from …": where the data came from.
fn origin(dataset: &Dataset) -> String {
    if dataset.is_registered {
        format!(
            "It is read in place from the table {}.{}",
            dataset.table_names().0,
            dataset.table_names().1
        )
    } else {
        match (&dataset.source_filename, &dataset.source_format) {
            (Some(file), Some(format)) => format!("It was loaded from {file} ({format})"),
            _ => "It was loaded into the catalog".to_string(),
        }
    }
}

/// The draft: what the dataset is and covers; where it came from; what
/// each feature carries; how complete it is.
fn draft(dataset: &Dataset, without_geometry: Option<i64>) -> String {
    let count = dataset.feature_count.unwrap_or(0);
    let mut sentences = vec![format!(
        "{} is a {} dataset of {count} feature{}{}.",
        dataset.title,
        kind_of(dataset.geometry_type),
        if count == 1 { "" } else { "s" },
        covering(dataset)
    )];
    let reprojected = match dataset.source_srid {
        Some(srid) if srid != 4326 && srid > 0 => format!(", reprojected from EPSG:{srid} to WGS 84"),
        _ => String::new(),
    };
    sentences.push(format!(
        "{}{reprojected} and last updated on {}.",
        origin(dataset),
        dataset.updated_at.format("%Y-%m-%d")
    ));
    let columns: Vec<String> = published_columns(dataset)
        .into_iter()
        .map(|c| c.original_name)
        .collect();
    if !columns.is_empty() {
        let shown: Vec<String> = columns.iter().take(5).cloned().collect();
        let more = columns.len() - shown.len();
        sentences.push(format!(
            "Each feature carries {} attribute{}, among them {}{}.",
            columns.len(),
            if columns.len() == 1 { "" } else { "s" },
            listed(&shown),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    match without_geometry {
        Some(0) => sentences.push("Every feature has a geometry.".to_string()),
        Some(missing) => sentences.push(format!(
            "{missing} of its features ({:.1} %) have no geometry.",
            missing as f64 * 100.0 / count.max(1) as f64
        )),
        None => {}
    }
    sentences.join(" ")
}

/// The draft of a raster: its grid and extent; where it came from and
/// how it is stored; what its bands hold.
fn raster_draft(dataset: &Dataset, info: &RasterInfo) -> String {
    let crs = info.srid.map_or_else(
        || "a coordinate system with no EPSG code".to_string(),
        |srid| format!("EPSG:{srid}"),
    );
    let bands = if info.band_count == 1 { "band" } else { "bands" };
    let mut sentences = vec![
        format!(
            "{} is a raster of {} by {} pixels in {} {bands}{}.",
            dataset.title,
            info.width,
            info.height,
            info.band_count,
            covering(dataset)
        ),
        format!(
            "{}, last updated on {}, and is kept in {crs} at {} by {} units a pixel, as a {}GeoTIFF with {} overview{}.",
            origin(dataset),
            dataset.updated_at.format("%Y-%m-%d"),
            significant(info.resolution[0]),
            significant(info.resolution[1]),
            if info.is_cog { "Cloud-Optimized " } else { "" },
            info.overview_count,
            if info.overview_count == 1 { "" } else { "s" }
        ),
    ];
    let described: Vec<String> = info
        .bands
        .iter()
        .take(4)
        .map(|band| {
            let range = match (band.min, band.max) {
                (Some(min), Some(max)) => format!(" from {} to {}", significant(min), significant(max)),
                _ => String::new(),
            };
            let nodata = band
                .nodata
                .map(|n| format!(", {} marking no data", significant(n)))
                .unwrap_or_default();
            format!(
                "band {} ({}, {}){range}{nodata}",
                band.index, band.data_type, band.color_interpretation
            )
        })
        .collect();
    if !described.is_empty() {
        let mut text = listed(&described);
        if let Some(first) = text.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        sentences.push(format!("{text}."));
    }
    sentences.join(" ")
}

/// A number with at most four significant decimals, trailing zeros dropped.
fn significant(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A draft quality statement for a dataset the caller may read.
#[utoipa::path(post, path = "/api/ai/metadata/quality-statement", tag = "datasets", request_body = MetadataAssistRequest,
    responses((status = 200, body = MetadataAssistDraft), (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn quality_statement(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<MetadataAssistRequest>,
) -> Result<Json<MetadataAssistDraft>, AppError> {
    let id: Uuid = body
        .dataset_id
        .trim()
        .parse()
        .map_err(|_| AppError::unprocessable("dataset_id: must be the UUID of a dataset"))?;
    let dataset = visible_dataset(&state, &caller, id).await?;
    if let Some(info) = &dataset.raster {
        return Ok(Json(MetadataAssistDraft {
            draft: raster_draft(&dataset, &info.0),
        }));
    }
    // As it is: a draft brings no archived dataset back (its count fails,
    // and the draft leaves the completeness sentence out, as it does when
    // counting a table too big to scan takes longer than allowed).
    let data = crate::read_gate::as_it_is(&state, &caller, &dataset);
    let sql = format!(
        "SELECT count(*) FROM {} WHERE {} IS NULL",
        data.table(),
        quote_ident(&dataset.geometry_column)
    );
    let mut tx = state.pool.begin().await?;
    sqlx::query("SET LOCAL statement_timeout = '3s'")
        .execute(&mut *tx)
        .await?;
    let without_geometry: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&mut *tx)
        .await
        .ok();
    drop(tx);
    Ok(Json(MetadataAssistDraft {
        draft: draft(&dataset, without_geometry),
    }))
}
