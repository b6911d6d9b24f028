//! The exported style drawn by MapLibre GL JS in headless Chromium, from a
//! page on another origin: a public map anonymously, a private one through
//! an embed token (CORS, signed tile URLs, vector tiles, all for real).
use std::process::Command;

use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

fn render(style_url: &str, layer: &str, embed_token: Option<&str>) -> Value {
    render_to(style_url, layer, embed_token, None)
}

/// `render`, writing a PNG of the map to `screenshot` when given.
fn render_to(style_url: &str, layer: &str, embed_token: Option<&str>, screenshot: Option<&std::path::Path>) -> Value {
    let modules = std::env::var("CATALOG_NODE_MODULES").expect("CATALOG_NODE_MODULES (set by scripts/test.sh)");
    let script = catalog_tests::package_dir().join("clients/maplibre_render.mjs");
    let script = script.to_str().expect("a UTF-8 path");
    let mut command = Command::new("node");
    command
        .arg(script)
        .arg(style_url)
        .arg(layer)
        .env("CATALOG_NODE_MODULES", modules);
    if let Some(token) = embed_token {
        command.arg(token);
    }
    if let Some(path) = screenshot {
        command.env("CATALOG_SCREENSHOT", path);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the viewer failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

async fn map_of(stack: &Stack, token: &str, dataset: &str, visibility: &str) -> String {
    let response = stack
        .http
        .post(stack.url("/api/maps"))
        .bearer_auth(token)
        .json(&json!({
            "name": "Viewer", "visibility": visibility, "center_lng": 4.4, "center_lat": 51.2, "zoom": 7,
            "layers": [{"dataset_id": dataset, "paint": {"circle-radius": 8}}]
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    map["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn maplibre_draws_exported_maps_from_another_site() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let (_, owner) = stack.user_token("vivian", "editor").await;
    let features: Vec<Value> = (0..20)
        .map(|i| {
            json!({"type": "Feature", "properties": {"name": format!("stop {i}")},
                   "geometry": {"type": "Point", "coordinates": [4.0 + 0.04 * f64::from(i), 51.0 + 0.02 * f64::from(i)]}})
        })
        .collect();
    let body = json!({"type": "FeatureCollection", "features": features});
    let public = stack
        .ingest_geojson(&owner, &body, &[("visibility", "public"), ("title", "Stops")])
        .await;
    let private = stack
        .ingest_geojson(&owner, &body, &[("visibility", "private"), ("title", "Hidden stops")])
        .await;

    let map = map_of(&stack, &owner, &public, "public").await;
    let report = render(&stack.url(&format!("/api/maps/{map}/style.json")), "layer-0", None);
    assert_eq!(report["idle"], true, "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert!(report["rendered"].as_u64().unwrap() >= 10, "{report}");
    assert!(
        report["properties"][0]["name"].as_str().unwrap().starts_with("stop "),
        "{report}"
    );

    // A private map: nothing without the token, everything with it.
    let map = map_of(&stack, &owner, &private, "private").await;
    let style_url = stack.url(&format!("/api/maps/{map}/style.json"));
    let refused = render(&style_url, "layer-0", None);
    assert_ne!(refused["errors"], json!([]), "{refused}");
    assert_eq!(refused["rendered"], 0);
    let response = stack
        .http
        .post(stack.url(&format!("/api/maps/{map}/embed-tokens")))
        .bearer_auth(&owner)
        .json(&json!({"label": "viewer test"}))
        .send()
        .await
        .unwrap();
    let embed: Value = response.json().await.unwrap();
    let report = render(&style_url, "layer-0", embed["token"].as_str());
    assert_eq!(report["idle"], true, "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert!(report["rendered"].as_u64().unwrap() >= 10, "{report}");
}

/// A three-band GeoTIFF of one colour over Luxembourg, as GDAL writes it.
fn red_over_luxembourg(dir: &std::path::Path) -> Vec<u8> {
    use gdal::{DriverManager, raster::Buffer, spatial_ref::SpatialRef};
    let path = dir.join("red.tif");
    let (width, height) = (400, 400);
    let mut ds = DriverManager::get_driver_by_name("GTiff")
        .unwrap()
        .create_with_band_type::<u8, _>(&path, width, height, 3)
        .unwrap();
    ds.set_geo_transform(&[5.6, 0.0025, 0.0, 50.3, 0.0, -0.0025]).unwrap();
    ds.set_spatial_ref(&SpatialRef::from_epsg(4326).unwrap()).unwrap();
    for (band, value) in [(1, 230u8), (2, 40), (3, 40)] {
        let data = vec![value; width * height];
        ds.rasterband(band)
            .unwrap()
            .write((0, 0), (width, height), &mut Buffer::new((width, height), data))
            .unwrap();
    }
    drop(ds);
    std::fs::read(path).unwrap()
}

#[tokio::test]
async fn maplibre_draws_a_raster_layer_over_terrain() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let (_, owner) = stack.user_token("rory", "editor").await;
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for (name, bytes) in [
        ("red.tif", red_over_luxembourg(dir.path())),
        (
            "elev_luxembourg.tif",
            catalog_tests::data_file("raster/elev_luxembourg.tif"),
        ),
    ] {
        let job = stack.upload_ok(&owner, name, bytes, &[("visibility", "public")]).await;
        let job = stack.wait_job(&owner, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        ids.push(job["dataset_id"].as_str().unwrap().to_string());
    }
    let response = stack
        .http
        .post(stack.url("/api/maps"))
        .bearer_auth(&owner)
        .json(&json!({
            "name": "Relief", "visibility": "public", "center_lng": 6.1, "center_lat": 49.75, "zoom": 9,
            "layers": [{"dataset_id": ids[0], "layer_type": "raster_service"}],
            "terrain_config": {"enabled": true, "source_dataset_id": ids[1], "exaggeration": 1.0}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let style_url = stack.url(&format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()));

    let screenshot = dir.path().join("map.png");
    let report = render_to(&style_url, "layer-0", None, Some(&screenshot));
    assert_eq!(report["idle"], true, "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert_eq!(report["terrain"], true, "{report}");
    // The ground at the centre stands where Luxembourg's heights are.
    let elevation = report["elevation"].as_f64().unwrap_or_default();
    assert!((150.0..600.0).contains(&elevation), "{report}");

    // The raster layer covers the map in its own colour.
    let image = gdal::Dataset::open(&screenshot).unwrap();
    let (width, height) = image.raster_size();
    let band = |b| {
        image
            .rasterband(b)
            .unwrap()
            .read_as::<u8>((0, 0), (width, height), (width, height), None)
            .unwrap()
            .into_shape_and_vec()
            .1
    };
    let (r, g, b) = (band(1), band(2), band(3));
    let red = (0..width * height)
        .filter(|&i| r[i] > 180 && g[i] < 90 && b[i] < 90)
        .count();
    assert!(red * 2 > width * height, "{red} of {} pixels red", width * height);
}

#[tokio::test]
async fn maplibre_draws_the_builtin_basemap_with_its_labels() {
    let stack = Stack::start().await;
    let token = stack.admin_token().await;
    // A new map, on the basemap by default, with no layer of its own.
    let response = stack
        .http
        .post(stack.url("/api/maps"))
        .bearer_auth(&token)
        .json(&json!({"name": "Benelux", "visibility": "public", "center_lng": 5.0, "center_lat": 50.3, "zoom": 7}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let style_url = stack.url(&format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()));
    // Names are placed only once their glyphs have loaded from the service.
    let report = render(&style_url, "basemap-place-country", None);
    assert_eq!(report["idle"], true, "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    let names: Vec<&str> = report["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"Belgium") && names.contains(&"Luxembourg"), "{report}");
    let land = render(&style_url, "basemap-land", None);
    assert!(land["rendered"].as_u64().unwrap() >= 3, "{land}");
}
