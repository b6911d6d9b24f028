//! What the OGC routes of this folder share: links, and the dataset a
//! feature route serves.
use catalog_shared::AppError;
use serde_json::{Value, json};

use crate::{
    access::{Caller, datasets::visible_collection},
    dataset_record::Dataset,
    state::AppState,
};

pub fn link(href: String, rel: &str, media_type: &str, title: &str) -> Value {
    json!({"href": href, "rel": rel, "type": media_type, "title": title})
}

/// A dataset the caller may read, as a collection of features: a raster
/// dataset has none (it is served as tiles and its COG).
pub async fn feature_collection(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<std::sync::Arc<Dataset>, AppError> {
    let dataset = visible_collection(state, caller, id).await?;
    if dataset.is_raster() {
        return Err(AppError::not_found(format!(
            "no feature collection {id}: the dataset is a raster"
        )));
    }
    Ok(dataset)
}
