//! Upgrades every recorded release with the current binaries, the way
//! docs/upgrade.md tells operators to: restore the release's backup (its
//! `pg_dump` and object store, recorded by scripts/release_fixture.sh with
//! that release's own binaries under tests/upgrade/<version>/), run
//! `catalog-api migrate`, start the service, and read everything back.
use std::{path::Path, process::Command};

use catalog_tests::{Api, Stack, StackOptions, TestDatabase, bin_dir, data_dir};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[tokio::test]
async fn every_recorded_release_upgrades_and_reads_back() {
    let recorded = data_dir().parent().unwrap().join("upgrade");
    let mut releases: Vec<_> = std::fs::read_dir(&recorded)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    releases.sort();
    assert!(!releases.is_empty(), "no release recorded under {}", recorded.display());
    for release in releases {
        upgrade_and_read_back(&release).await;
    }
}

async fn upgrade_and_read_back(release: &Path) {
    let manifest: Value = serde_json::from_slice(&std::fs::read(release.join("manifest.json")).unwrap()).unwrap();
    let version = manifest["version"].as_str().unwrap();
    let database = TestDatabase::restore(&release.join("catalog.dump")).await;
    let storage = tempfile::tempdir().unwrap();
    let untar = Command::new("tar")
        .arg("-xzf")
        .arg(release.join("storage.tar.gz"))
        .arg("-C")
        .arg(storage.path())
        .status()
        .unwrap();
    assert!(untar.success(), "{version}: the object store unpacks");
    let migrate = Command::new(bin_dir().join("catalog-api"))
        .arg("migrate")
        .env("DATABASE_URL", &database.url)
        .output()
        .unwrap();
    assert!(
        migrate.status.success(),
        "{version}: catalog-api migrate: {}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    let stack = Stack::start_on(database, storage, StackOptions::workers(1)).await;

    let admin = stack.token("admin", manifest["admin_password"].as_str().unwrap()).await;
    let viewer = &manifest["viewer"];
    stack
        .token(
            viewer["username"].as_str().unwrap(),
            viewer["password"].as_str().unwrap(),
        )
        .await;
    let me = stack
        .send(
            stack
                .http
                .get(stack.url("/api/auth/me"))
                .header("X-Api-Key", manifest["api_key"].as_str().unwrap()),
        )
        .await;
    assert_eq!(me.status(), 200, "{version}: the API key still resolves");

    let datasets = manifest["datasets"].as_array().unwrap();
    let (status, list) = stack.get_json(Some(&admin), "/api/datasets").await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], datasets.len(), "{version}: {list}");
    for dataset in datasets {
        let id = dataset["id"].as_str().unwrap();
        let (status, record) = stack.get_json(Some(&admin), &format!("/api/datasets/{id}")).await;
        assert_eq!(status, 200, "{version}: dataset {id}");
        assert_eq!(record["title"], dataset["title"]);
        assert_eq!(record["visibility"], dataset["visibility"]);
        assert_eq!(record["status"], "ready");
        let grant = stack
            .send(
                stack
                    .http
                    .post(stack.url(&format!("/api/auth/download-token/{id}")))
                    .bearer_auth(&admin),
            )
            .await;
        assert_eq!(grant.status(), 200);
        let grant: Value = grant.json().await.unwrap();
        let download = stack
            .send(stack.http.get(stack.url(&format!(
                "/api/datasets/{id}/download?token={}",
                grant["token"].as_str().unwrap()
            ))))
            .await;
        assert_eq!(download.status(), 200, "{version}: download of {id}");
        let bytes = download.bytes().await.unwrap();
        if dataset["kind"] == "raster" {
            assert_eq!(
                hex(&Sha256::digest(&bytes)),
                dataset["cog_sha256"].as_str().unwrap(),
                "{version}: the stored COG comes back byte for byte"
            );
            let tile = stack
                .send(
                    stack
                        .http
                        .get(stack.url(&format!("/api/tiles/{id}/0/0/0.png")))
                        .bearer_auth(&admin),
                )
                .await;
            assert_eq!(tile.status(), 200, "{version}: a raster tile of {id}");
            assert_eq!(tile.headers()["content-type"], "image/png");
        } else {
            assert!(bytes.starts_with(b"SQLite format 3"), "{version}: a GeoPackage of {id}");
            let (status, page) = stack
                .get_json(Some(&admin), &format!("/api/collections/{id}/items?limit=3"))
                .await;
            assert_eq!(status, 200);
            assert_eq!(page["numberMatched"], dataset["number_matched"], "{version}: {id}");
            let features: Vec<Value> = page["features"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| json!({"id": f["id"], "properties": f["properties"]}))
                .collect();
            // The same values: a float whole number is now written 1825.0
            // where the release wrote 1825.
            assert_eq!(
                as_floats(&Value::from(features)),
                as_floats(&dataset["first_features"]),
                "{version}: {id}"
            );
            let tile = stack
                .send(
                    stack
                        .http
                        .get(stack.url(&format!("/api/tiles/{id}/0/0/0.pbf")))
                        .bearer_auth(&admin),
                )
                .await;
            assert_eq!(tile.status(), 200, "{version}: a vector tile of {id}");
        }
    }

    let map = &manifest["map"];
    let map_id = map["id"].as_str().unwrap();
    let (status, saved) = stack.get_json(Some(&admin), &format!("/api/maps/{map_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(saved["layers"].as_array().unwrap().len(), map["layers"]);
    let (status, style) = stack
        .get_json(Some(&admin), &format!("/api/maps/{map_id}/style.json"))
        .await;
    assert_eq!(status, 200, "{version}: the map exports");
    catalog_tests::validate_style(&style);

    // The upgraded queue takes new work.
    let fresh = stack
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": [
                {"type": "Feature", "properties": {"n": 1}, "geometry": {"type": "Point", "coordinates": [6.1, 49.6]}}
            ]}),
            &[],
        )
        .await;
    let (status, _) = stack.get_json(Some(&admin), &format!("/api/datasets/{fresh}")).await;
    assert_eq!(status, 200, "{version}: a new upload after the upgrade");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` with every number as a float, so that 1825 and 1825.0 compare equal.
fn as_floats(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.iter().map(as_floats).collect()),
        Value::Object(members) => Value::Object(members.iter().map(|(k, v)| (k.clone(), as_floats(v))).collect()),
        other => other.clone(),
    }
}
