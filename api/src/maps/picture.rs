//! A map's picture (`thumbnail.png`): its visible vector layers, each in
//! its colour, over the land, framed on their extents. Layers on datasets
//! the reader may not see are left out, as the map's style leaves them.
use std::{
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
};

use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::Response,
};
use catalog_shared::{AppError, datasets::StorageTier};
use uuid::Uuid;

use super::{
    model::{LayerType, MapLayerResponse},
    store::readable_map,
    style::LAYER_COLOURS,
};
use crate::{
    access::{Caller, datasets::cached_visible_dataset},
    dataset_record::Dataset,
    extract::Path,
    pictures,
    state::AppState,
};

/// The layers a map's picture draws at most (the top ones).
const MOST_LAYERS: usize = 20;

/// The colour a layer draws in: its paint's plain colour, or the colour
/// of its place in the map.
fn colour_of(layer: &MapLayerResponse, place: usize) -> [u8; 4] {
    ["fill-color", "line-color", "circle-color"]
        .iter()
        .find_map(|key| {
            layer
                .paint
                .get(*key)
                .and_then(|c| c.as_str())
                .and_then(|c| pictures::rgba(c, 255))
        })
        .or_else(|| pictures::rgba(LAYER_COLOURS[place % LAYER_COLOURS.len()], 255))
        .expect("the layer colours are #rrggbb")
}

/// One extent holding all of `extents`; none when one crosses the
/// antimeridian (the picture then shows the world).
fn union(extents: &[Vec<f64>]) -> Option<Vec<f64>> {
    let mut all = extents.iter().filter(|e| e.len() >= 4);
    let first = all.next()?.clone();
    all.try_fold(first, |u, e| {
        (e[0] <= e[2] && u[0] <= u[2]).then(|| vec![u[0].min(e[0]), u[1].min(e[1]), u[2].max(e[2]), u[3].max(e[3])])
    })
}

/// A PNG of the map's visible vector layers over the land, 240 by 120 pixels.
#[utoipa::path(get, path = "/api/maps/{map_id}/thumbnail.png", tag = "maps",
    params(("map_id" = Uuid, Path)),
    responses((status = 200, description = "the picture", content_type = "image/png"),
              (status = 304, description = "the picture the client has (`If-None-Match`)"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn map_thumbnail(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let map = readable_map(&state, &caller, id).await?;
    // The top layers only (the last drawn), each dataset once, in the
    // colour of its top layer: what one request may cost is bounded.
    let top = map
        .layers
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, l)| l.visible && l.dataset_available && l.layer_type == LayerType::VectorService)
        .take(MOST_LAYERS);
    let mut drawn: Vec<(Arc<Dataset>, [u8; 4])> = Vec::new();
    for (place, layer) in top {
        if drawn.iter().any(|(d, _)| d.id == layer.dataset_id) {
            continue;
        }
        match cached_visible_dataset(&state, &caller, layer.dataset_id).await {
            Ok(dataset) if !dataset.is_raster() => drawn.push((dataset, colour_of(layer, place))),
            Ok(_) => {}
            Err(e) if e.status() == StatusCode::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
    }
    drawn.reverse();
    let mut version = DefaultHasher::new();
    map.updated_at.timestamp_micros().hash(&mut version);
    for (dataset, _) in &drawn {
        (dataset.id, dataset.data_version, dataset.storage == StorageTier::Cold).hash(&mut version);
    }
    let etag = format!("\"map-picture-{:x}\"", version.finish());
    let key = format!("{id}/{etag}");
    pictures::respond(&state.pictures, key, &headers, &etag, "private, max-age=60", async {
        let pool = state.db.reader(caller.user_id(), 0).await.pool;
        let extents: Vec<Vec<f64>> = drawn.iter().filter_map(|(d, _)| d.extent_bbox.clone()).collect();
        let frame = pictures::frame(union(&extents).as_deref());
        let mut picture = pictures::basemap(pool, frame).await?;
        let budget = pictures::MOST_PICTURE_FEATURES / drawn.len().max(1) as i64;
        for (dataset, colour) in &drawn {
            // As it is: an archived dataset shows its extent, and stays archived.
            let data = crate::read_gate::as_it_is(&state, &caller, dataset);
            let reader = data.reader().await;
            pictures::draw_dataset((reader.pool, data.table()), &mut picture, dataset, *colour, budget).await?;
        }
        Ok(picture)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_are_joined_unless_one_crosses_the_antimeridian() {
        let europe = vec![-10.0, 35.0, 30.0, 60.0];
        let japan = vec![129.0, 31.0, 146.0, 45.0];
        assert_eq!(
            union(&[europe.clone(), japan.clone()]),
            Some(vec![-10.0, 31.0, 146.0, 60.0])
        );
        assert_eq!(union(&[europe, vec![170.0, -20.0, -170.0, -10.0]]), None);
        assert_eq!(union(&[]), None);
    }
}
