//! The exported style drawn by MapLibre GL JS in headless Chromium, from a
//! page on another origin: a public map anonymously, a private one through
//! an embed token (CORS, signed tile URLs, vector tiles, all for real).
use std::process::Command;

use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

fn render(style_url: &str, layer: &str, embed_token: Option<&str>) -> Value {
    let modules = std::env::var("CATALOG_NODE_MODULES").expect("CATALOG_NODE_MODULES (set by scripts/test.sh)");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/maplibre_render.mjs");
    let mut command = Command::new("node");
    command
        .arg(script)
        .arg(style_url)
        .arg(layer)
        .env("CATALOG_NODE_MODULES", modules);
    if let Some(token) = embed_token {
        command.arg(token);
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
