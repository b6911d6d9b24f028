//! STAC item search over the catalog, driven by pystac-client.
use std::{collections::BTreeSet, process::Command};

use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

async fn dataset_at(stack: &Stack, token: &str, x: f64, visibility: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, 10.0]}, "properties": {}}]});
    stack.ingest_geojson(token, &body, &[("visibility", visibility)]).await
}

#[tokio::test]
async fn stac_search_pages_and_filters() {
    let stack = Stack::start_with(StackOptions::workers(2)).await;
    let token = stack.admin_token().await;
    let mut inside = BTreeSet::new();
    for i in 0..5 {
        inside.insert(dataset_at(&stack, &token, i as f64, "public").await);
    }
    let outside = dataset_at(&stack, &token, 100.0, "public").await;
    let hidden = dataset_at(&stack, &token, 2.5, "private").await;

    let (status, landing) = stack.get_json(None, "/api/stac").await;
    assert_eq!(status, 200);
    assert_eq!(landing["type"], "Catalog");
    assert!(
        landing["conformsTo"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().ends_with("item-search"))
    );

    let python = std::env::var("CATALOG_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = catalog_tests::package_dir().join("clients/pystac_search.py");
    let script = script.to_str().expect("a UTF-8 path");
    let output = Command::new(python)
        .args([script, &stack.url("/api/stac"), "-1,0,5,20", "2"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: BTreeSet<String> = result["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(found, inside, "public datasets in the box, each once");
    assert!(!found.contains(&outside) && !found.contains(&hidden));
    assert_eq!(result["collections"], json!(["datasets"]));
    assert_eq!(result["pages"], 3, "pages of two, followed through next links");

    let body = json!({"ids": [outside, hidden], "limit": 10});
    let response = stack
        .http
        .post(stack.url("/api/stac/search"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let page: Value = response.json().await.unwrap();
    assert_eq!(page["numberReturned"], 1, "the private one stays hidden");
    let as_owner: Value = stack
        .http
        .post(stack.url("/api/stac/search"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(as_owner["numberReturned"], 2);
    let intersects = json!({"intersects": {"type": "Point", "coordinates": [100.0, 10.0]}});
    let hit: Value = stack
        .http
        .post(stack.url("/api/stac/search"))
        .json(&intersects)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(hit["features"][0]["id"], outside.as_str());
    let (status, by_get) = stack
        .get_json(None, "/api/stac/search?bbox=99,0,101,20&collections=datasets")
        .await;
    assert_eq!(status, 200);
    assert_eq!(by_get["numberMatched"], 1);
    assert_eq!(
        stack.get_json(None, "/api/stac/search?collections=other").await.1["numberMatched"],
        0
    );
    assert_eq!(stack.get_json(None, "/api/stac/search?limit=0").await.0, 400);
    assert_eq!(stack.get_json(None, "/api/stac/search?bbox=1,2").await.0, 400);
    assert_eq!(stack.get_json(None, "/api/stac/search?datetime=yesterday").await.0, 400);
}
