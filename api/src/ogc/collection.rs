//! A dataset as an OGC collection document, as `/collections` lists it
//! and `/collections/{id}` answers it.
use serde_json::{Value, json};

use super::{common::link, crs, crs::CRS84, tiles};
use crate::{
    access::{Caller, signed_assets::cog_href},
    dataset_record::Dataset,
    extract::LinkCredential,
    ogc_html::alternate_link,
    state::AppState,
};

/// A dataset as a collection: a vector dataset's features with the CRSs
/// they are served in, a raster's tilesets; both with their tiles.
pub fn collection_json(state: &AppState, caller: &Caller, d: &Dataset, credential: &LinkCredential) -> Value {
    let base = &state.config.public_url;
    let id = d.id;
    let this = credential.on(format!("{base}/api/collections/{id}"));
    let mut collection = if d.is_raster() {
        // Named as a coverage (and, for GDAL 3.6's OGCAPI driver, a raster
        // layer), so that no feature client takes it for a layer of features.
        json!({
            "id": id,
            "title": d.title,
            "description": d.summary.clone().unwrap_or_default(),
            "itemType": "coverage",
            "layerDataType": "Raster",
            "links": [
                link(this.clone(), "self", "application/json", "this collection"),
                alternate_link(&this),
                tiles::tilesets_link(base, d, credential),
                link(cog_href(state, caller, d), "enclosure", catalog_raster::cog::MEDIA_TYPE, "the Cloud-Optimized GeoTIFF"),
            ],
        })
    } else {
        json!({
            "id": id,
            "title": d.title,
            "description": d.summary.clone().unwrap_or_default(),
            "itemType": "feature",
            "crs": crs::collection_crs(d, &state.config.extra_crs).iter().map(|c| c.uri()).collect::<Vec<_>>(),
            "storageCrs": crs::storage_crs(d).uri(),
            "links": [
                link(this.clone(), "self", "application/json", "this collection"),
                alternate_link(&this),
                link(credential.on(format!("{base}/api/collections/{id}/items")), "items", "application/geo+json", "the features"),
                link(credential.on(format!("{base}/api/collections/{id}/queryables")), "http://www.opengis.net/def/rel/ogc/1.0/queryables", "application/schema+json", "the queryables"),
                link(credential.on(format!("{base}/api/collections/{id}/schema")), "http://www.opengis.net/def/rel/ogc/1.0/schema", "application/schema+json", "the schema of the features"),
                link(credential.on(format!("{base}/api/collections/{id}/schema")), "describedby", "application/schema+json", "the schema of the features"),
                tiles::tilesets_link(base, d, credential),
            ],
        })
    };
    if let Some(bbox) = &d.extent_bbox {
        collection["extent"] = json!({"spatial": {"bbox": [bbox], "crs": CRS84}});
    }
    if let Some([first, last]) = d.temporal_extent.as_deref() {
        collection["extent"]["temporal"] = json!({
            "interval": [[first, last]],
            "trs": "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian",
        });
    }
    collection
}
