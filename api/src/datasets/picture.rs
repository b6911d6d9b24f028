//! A vector dataset's picture (`thumbnail.png`): its data over the land,
//! for catalog cards, STAC thumbnails and link previews. Cached like the
//! dataset's tiles, by data version; an archived dataset shows its extent
//! (drawing its data would bring it back from the store).
use axum::{extract::State, http::HeaderMap, response::Response};
use catalog_shared::{AppError, datasets::StorageTier};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::cached_visible_dataset},
    extract::Path,
    maps::style::LAYER_COLOURS,
    pictures,
    state::AppState,
};

/// A PNG of a vector dataset's features over the land, 240 by 120 pixels.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/thumbnail.png", tag = "datasets",
    params(("dataset_id" = Uuid, Path)),
    responses((status = 200, description = "the picture", content_type = "image/png"),
              (status = 304, description = "the picture the client has (`If-None-Match`)"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster: its tiles are its pictures", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn dataset_thumbnail(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let dataset = cached_visible_dataset(&state, &caller, id).await?;
    if dataset.is_raster() {
        return Err(AppError::conflict(format!(
            "a raster's pictures are its tiles: /api/tiles/{id}/{{z}}/{{x}}/{{y}}.png"
        )));
    }
    let cold = dataset.storage == StorageTier::Cold;
    let etag = format!("\"picture-{}-{}\"", dataset.data_version, u8::from(cold));
    let key = format!("{id}/{etag}");
    pictures::respond(
        &state.pictures,
        key,
        &headers,
        &etag,
        crate::access::policy::cache_control(&dataset, false),
        async {
            // As it is: an archived dataset shows its extent, and stays archived.
            let data = crate::read_gate::as_it_is(&state, &caller, &dataset);
            let pool = data.reader().await.pool;
            let colour = pictures::rgba(LAYER_COLOURS[0], 255).expect("the layer colours are #rrggbb");
            let mut picture = pictures::basemap(pool, pictures::frame(dataset.extent_bbox.as_deref())).await?;
            pictures::draw_dataset(
                (pool, data.table()),
                &mut picture,
                &dataset,
                colour,
                pictures::MOST_PICTURE_FEATURES,
            )
            .await?;
            Ok(picture)
        },
    )
    .await
}
