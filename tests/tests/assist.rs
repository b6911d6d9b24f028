//! Metadata assist: a draft quality statement of 2 to 4 sentences from
//! what the catalog knows of a dataset.
use catalog_tests::{Api, App, data_file};
use serde_json::{Value, json};

async fn draft(app: &App, token: &str, dataset_id: &str) -> (u16, Value) {
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ai/metadata/quality-statement"))
                .bearer_auth(token)
                .json(&json!({"dataset_id": dataset_id})),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn sentences(text: &str) -> usize {
    text.matches(". ").count() + usize::from(text.ends_with('.'))
}

#[tokio::test]
async fn drafts_describe_the_dataset_as_it_is() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("ada", "editor").await;
    let (_, other) = app.user_token("bo", "viewer").await;
    let job = app
        .upload_ok(
            &owner,
            "nc.gpkg",
            data_file("gpkg/nc.gpkg"),
            &[("title", "North Carolina counties")],
        )
        .await;
    let id = app.wait_job(&owner, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = draft(&app, &owner, &id).await;
    assert_eq!(status, 200, "{body}");
    let text = body["draft"].as_str().unwrap();
    assert!((2..=4).contains(&sentences(text)), "{text}");
    assert!(
        text.starts_with("North Carolina counties is a polygon dataset of 100 features covering"),
        "{text}"
    );
    assert!(text.contains("reprojected from EPSG:4267 to WGS 84"), "{text}");
    assert!(text.contains("loaded from nc.gpkg (gpkg)"), "{text}");
    assert!(text.contains("among them AREA"), "{text}");
    assert!(text.ends_with("Every feature has a geometry."), "{text}");

    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "a"}, "geometry": {"type": "Point", "coordinates": [1, 2]}},
        {"type": "Feature", "properties": {"name": "b"}, "geometry": null},
        {"type": "Feature", "properties": {"name": "c"}, "geometry": {"type": "Point", "coordinates": [3, 4]}},
        {"type": "Feature", "properties": {"name": "d"}, "geometry": {"type": "Point", "coordinates": [5, 6]}}]});
    let gappy = app.ingest_geojson(&owner, &body, &[("title", "Gappy")]).await;
    let (_, body) = draft(&app, &owner, &gappy).await;
    let text = body["draft"].as_str().unwrap();
    assert!(text.contains("1 of its features (25.0 %) have no geometry."), "{text}");

    assert_eq!(
        draft(&app, &other, &id).await.0,
        404,
        "a private dataset of someone else"
    );
    assert_eq!(draft(&app, &owner, "not-a-uuid").await.0, 422);
}

#[tokio::test]
async fn rasters_are_drafted_from_their_grid_and_bands() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let job = app
        .upload_ok(
            &token,
            "elev_luxembourg.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[],
        )
        .await;
    let job = app.wait_job(&token, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (status, body) = draft(&app, &token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{body}");
    let text = body["draft"].as_str().unwrap();
    assert!((2..=4).contains(&sentences(text)), "{text}");
    for expected in [
        "elev_luxembourg is a raster of 95 by 90 pixels in 1 band covering 5.74°E to 6.53°E and 49.44°N to 50.19°N.",
        "It was loaded from elev_luxembourg.tif (geotiff)",
        "EPSG:4326",
        "Cloud-Optimized GeoTIFF",
        "Band 1 (Int16, Gray) from ",
        "-32768 marking no data.",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(!text.contains("feature"), "{text}");
}
