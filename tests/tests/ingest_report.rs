//! Ingest says what it did to every row (`docs/ingest-report.md`): a corpus
//! of broken real files, each checked against what is known to be wrong
//! in it. For each, the rows loaded and the rows quarantined add up to the
//! rows in the file, every quarantined row has its reason, and nothing is
//! lost without one.
use std::process::Command;

use catalog_tests::{Api, App, data_dir, shapefile_members, zip_owned};
use serde_json::{Value, json};

/// Uploads and waits for the job; answers it and its report.
async fn ingest(app: &App, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> (Value, Value) {
    let job_id = app.upload_ok(token, filename, bytes, fields).await;
    let job = app.wait_job(token, &job_id).await;
    let (status, report) = app.get_json(Some(token), &format!("/api/jobs/{job_id}/report")).await;
    if job["status"] == "succeeded" {
        assert_eq!(status, 200, "{filename}: {report}");
        assert_eq!(job["report_url"], format!("/api/jobs/{job_id}/report"), "{job}");
    }
    (job, report)
}

/// The report's own arithmetic: every row read is loaded or quarantined,
/// and every quarantined row is counted under a reason.
fn check_counts(report: &Value, rows_in_file: u64) {
    let n = |k: &str| report[k].as_u64().unwrap_or_else(|| panic!("{k}: {report}"));
    assert_eq!(n("rows_read"), rows_in_file, "{report}");
    assert_eq!(n("rows_loaded") + n("rows_quarantined"), rows_in_file, "{report}");
    let quarantining = [
        "invalid_geometry",
        "non_finite_coordinate",
        "coordinate_out_of_range",
        "empty_geometry",
        "wrong_geometry_family",
        "value_does_not_fit",
        "duplicate_key",
    ];
    let by_reason: u64 = quarantining
        .iter()
        .map(|r| report["by_reason"][r].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(by_reason, n("rows_quarantined"), "{report}");
    for example in report["examples"].as_array().unwrap() {
        assert!(example["message"].as_str().is_some_and(|m| !m.is_empty()), "{example}");
        assert!(example["row"].as_u64().is_some(), "{example}");
    }
}

fn reasons_of(report: &Value, reason: &str) -> Vec<u64> {
    report["examples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == reason)
        .map(|e| e["row"].as_u64().unwrap())
        .collect()
}

fn assumed(report: &Value, code: &str) -> Option<String> {
    report["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["code"] == code)
        .map(|a| a["message"].as_str().unwrap().to_string())
}

async fn quarantine(app: &App, token: &str, dataset_id: &str) -> Vec<Value> {
    let response = app
        .send(
            app.http()
                .get(app.url(&format!("/api/datasets/{dataset_id}/quarantine")))
                .bearer_auth(token),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/geo+json");
    let collection: Value = response.json().await.unwrap();
    assert_eq!(collection["type"], "FeatureCollection");
    collection["features"].as_array().unwrap().clone()
}

fn feature(geometry: Value, n: i64) -> Value {
    json!({"type": "Feature", "properties": {"n": n}, "geometry": geometry})
}

/// Natural Earth's countries (the QGIS world map) as GeoJSON, read by
/// GDAL, for editing.
fn world_countries_geojson() -> Value {
    let out = Command::new("ogr2ogr")
        .args(["-f", "GeoJSON", "/vsistdout/"])
        .arg(data_dir().join("gpkg/world_map.gpkg"))
        .arg("countries")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn impossible_coordinates_are_quarantined_with_their_row_and_the_rest_publishes() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;

    // Points: NaN and Infinity (JSON5 words GDAL reads), 1e308, a point with
    // no coordinates, and good ones.
    let points = r#"{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"n":1},"geometry":{"type":"Point","coordinates":[NaN,1]}},
{"type":"Feature","properties":{"n":2},"geometry":{"type":"Point","coordinates":[1e308,1]}},
{"type":"Feature","properties":{"n":3},"geometry":{"type":"Point","coordinates":[2,1]}},
{"type":"Feature","properties":{"n":4},"geometry":{"type":"Point","coordinates":[Infinity,1]}},
{"type":"Feature","properties":{"n":5},"geometry":{"type":"Point","coordinates":[]}},
{"type":"Feature","properties":{"n":6},"geometry":{"type":"Point","coordinates":[3,91]}},
{"type":"Feature","properties":{"n":7},"geometry":{"type":"Point","coordinates":[4,2]}},
{"type":"Feature","properties":{"n":8},"geometry":null},
{"type":"Feature","properties":{"n":9},"geometry":{"type":"Point","coordinates":[5,3]}}
]}"#;
    let (job, report) = ingest(&app, &token, "points.geojson", points.as_bytes().to_vec(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 9);
    // The empty point is a row with no place: quarantined as such, or
    // loaded with a null geometry; never lost.
    let empty = report["by_reason"]["empty_geometry"].as_u64().unwrap_or(0);
    assert_eq!(report["rows_quarantined"], 4 + empty, "{report}");
    assert_eq!(reasons_of(&report, "non_finite_coordinate"), [1, 4], "{report}");
    assert_eq!(reasons_of(&report, "coordinate_out_of_range"), [2, 6], "{report}");
    let dataset_id = job["dataset_id"].as_str().unwrap();
    let dataset = app.dataset(&token, dataset_id).await;
    assert_eq!(dataset["feature_count"], 5 - empty, "{dataset}");
    assert_eq!(dataset["quarantined_count"], report["rows_quarantined"], "{dataset}");
    let kept = quarantine(&app, &token, dataset_id).await;
    assert_eq!(kept.len() as u64, report["rows_quarantined"].as_u64().unwrap());
    let rows: Vec<i64> = kept
        .iter()
        .map(|f| f["properties"]["source_row"].as_i64().unwrap())
        .collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "{rows:?}");
    for f in &kept {
        let properties = &f["properties"];
        assert!(properties["reason"].is_string(), "{f}");
        assert_eq!(
            properties["n"], properties["source_row"],
            "the row's attributes come along: {f}"
        );
    }
    // 91° north is drawn where it was read; NaN cannot be written in JSON.
    let north = kept.iter().find(|f| f["properties"]["n"] == 6).unwrap();
    assert_eq!(north["geometry"]["coordinates"], json!([3.0, 91.0]), "{north}");
    let nan = kept.iter().find(|f| f["properties"]["n"] == 1).unwrap();
    assert!(nan["geometry"].is_null(), "{nan}");
    // The items are the good rows only.
    let (_, items) = app
        .get_json(Some(&token), &format!("/api/collections/{dataset_id}/items?limit=100"))
        .await;
    let ns: Vec<i64> = items["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["properties"]["n"].as_i64().unwrap())
        .collect();
    assert!([3, 7, 8, 9].iter().all(|n| ns.contains(n)), "{ns:?}");
    assert!([1, 2, 4, 6].iter().all(|n| !ns.contains(n)), "{ns:?}");

    // The report as CSV: one line a row it shows, with a header.
    let response = app
        .send(
            app.http()
                .get(app.url(&format!("/api/jobs/{}/report?f=csv", job["id"].as_str().unwrap())))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let csv = response.text().await.unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("reason,layer,row,fid,field,value,message"));
    assert_eq!(lines.count(), report["examples"].as_array().unwrap().len());
    let (status, _) = app
        .get_json(
            Some(&token),
            &format!("/api/jobs/{}/report?f=xml", job["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 400);

    // Natural Earth's countries with five moved off the world.
    let mut world = world_countries_geojson();
    let features = world["features"].as_array_mut().unwrap();
    let total = features.len() as u64;
    let moved = [3_usize, 50, 100, 150, 200];
    for &i in &moved {
        let geometry = &mut features[i]["geometry"]["coordinates"];
        geometry[0][0][0][0] = json!(geometry[0][0][0][0].as_f64().unwrap() + 400.0);
    }
    let (job, report) = ingest(&app, &token, "world.geojson", world.to_string().into_bytes(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, total);
    let expected: Vec<u64> = moved.iter().map(|&i| i as u64 + 1).collect();
    assert_eq!(reasons_of(&report, "coordinate_out_of_range"), expected, "{report}");
    let dataset = app.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], total - 5);
    assert_eq!(dataset["quarantined_count"], 5);
}

#[tokio::test]
async fn invalid_polygons_are_repaired_or_quarantined() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let square = json!({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]});
    let bowtie = json!({"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]});
    let unclosed = json!({"type": "Polygon", "coordinates": [[[2, 0], [3, 0], [3, 1], [2, 1]]]});
    let two_corners = json!({"type": "Polygon", "coordinates": [[[4, 0], [5, 0], [4, 0]]]});
    let flat = json!({"type": "Polygon", "coordinates": [[[6, 0], [7, 1], [8, 2], [6, 0]]]});
    // Not closed and crossing itself: closed, then repaired; one row repaired.
    let open_bowtie = json!({"type": "Polygon", "coordinates": [[[10, 0], [11, 1], [11, 0], [10, 1]]]});
    // Not closed, and nothing of its kind once closed: quarantined, not repaired.
    let open_flat = json!({"type": "Polygon", "coordinates": [[[12, 0], [13, 1], [14, 2]]]});
    let geojson = json!({"type": "FeatureCollection", "features": [
        feature(square.clone(), 1), feature(bowtie, 2), feature(unclosed, 3),
        feature(two_corners, 4), feature(flat, 5), feature(square, 6),
        feature(open_bowtie, 7), feature(open_flat, 8),
    ]});
    let (job, report) = ingest(&app, &token, "polygons.geojson", geojson.to_string().into_bytes(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}\n{report}");
    check_counts(&report, 8);
    assert_eq!(reasons_of(&report, "repaired_geometry"), [2, 3, 7], "{report}");
    assert_eq!(reasons_of(&report, "invalid_geometry"), [4, 5, 8], "{report}");
    assert_eq!(report["rows_repaired"], 3, "a row counts once: {report}");
    assert_eq!(report["by_reason"]["repaired_geometry"], 3, "{report}");
    let bowtie = report["examples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["row"] == 2)
        .unwrap();
    assert!(
        bowtie["message"].as_str().unwrap().contains("Self-intersection"),
        "{bowtie}"
    );
    let dataset_id = job["dataset_id"].as_str().unwrap();
    let dataset = app.dataset(&token, dataset_id).await;
    assert_eq!(dataset["feature_count"], 5);
    // The rows kept aside after the load (up to x = 14) are not in the extent.
    assert_eq!(dataset["extent_bbox"], json!([0.0, 0.0, 11.0, 1.0]), "{dataset}");
    let (_, items) = app
        .get_json(Some(&token), &format!("/api/collections/{dataset_id}/items?limit=10"))
        .await;
    for f in items["features"].as_array().unwrap() {
        assert_eq!(f["geometry"]["type"], "MultiPolygon", "{f}");
    }
    let valid: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT bool_and(ST_IsValid(geom)) FROM data.{}",
        dataset["table_name"].as_str().unwrap()
    )))
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(valid);
    let kept = quarantine(&app, &token, dataset_id).await;
    let rows: Vec<i64> = kept
        .iter()
        .map(|f| f["properties"]["source_row"].as_i64().unwrap())
        .collect();
    assert_eq!(rows, [4, 5, 8]);
    assert!(kept.iter().all(|f| f["properties"]["reason"] == "invalid_geometry"));
}

#[tokio::test]
async fn assumptions_and_skipped_layers_are_said() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;

    // A shapefile without its .prj: taken as WGS 84, and the report says so.
    let members: Vec<(String, Vec<u8>)> = shapefile_members("shp/naturalearth_lowres")
        .into_iter()
        .filter(|(name, _)| !name.ends_with(".prj"))
        .collect();
    let (job, report) = ingest(&app, &token, "countries.zip", zip_owned(&members), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 177);
    let crs = assumed(&report, "crs_assumed_wgs84").unwrap_or_else(|| panic!("{report}"));
    assert!(crs.contains(".prj") && crs.contains("WGS 84"), "{crs}");
    assert!(assumed(&report, "geometry_promoted").is_some(), "{report}");

    // A .dbf whose .cpg says UTF-8 while its bytes are Latin-1.
    let members: Vec<(String, Vec<u8>)> = shapefile_members("shp/naturalearth_cities")
        .into_iter()
        .map(|(name, bytes)| {
            if name.ends_with(".cpg") {
                (name, b"UTF-8".to_vec())
            } else {
                (name, bytes)
            }
        })
        .collect();
    let (job, report) = ingest(&app, &token, "cities.zip", zip_owned(&members), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 243);
    assert!(report["by_reason"]["encoding"].as_u64().unwrap() >= 3, "{report}");
    assert!(assumed(&report, "encoding_guessed").is_some(), "{report}");
    let asuncion = report["examples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["reason"] == "encoding" && e["value"] == "Asunción");
    assert!(
        asuncion.is_some(),
        "read as Latin-1, the value is what the file meant: {report}"
    );

    // A zip of two shapefiles: two datasets, one report.
    let mut both = shapefile_members("shp/naturalearth_lowres");
    both.extend(shapefile_members("shp/naturalearth_cities"));
    let (job, report) = ingest(&app, &token, "two.zip", zip_owned(&both), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["dataset_ids"].as_array().unwrap().len(), 2);
    check_counts(&report, 177 + 243);

    // A GeoPackage with a table without geometry and QGIS's layer_styles;
    // one layer asked for.
    let dir = tempfile::tempdir().unwrap();
    let gpkg = dir.path().join("world.gpkg");
    std::fs::copy(data_dir().join("gpkg/world_map.gpkg"), &gpkg).unwrap();
    let notes = dir.path().join("notes.csv");
    std::fs::write(&notes, "topic,text\nsource,QGIS sample data\n").unwrap();
    let status = Command::new("ogr2ogr")
        .args(["-update", "-f", "GPKG", "-nln", "notes"])
        .arg(&gpkg)
        .arg(&notes)
        .status()
        .unwrap();
    assert!(status.success());
    let (job, report) = ingest(
        &app,
        &token,
        "world.gpkg",
        std::fs::read(&gpkg).unwrap(),
        &[("layer", "countries")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 240);
    let skipped: Vec<(&str, &str)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["layer"].as_str().unwrap(), s["why"].as_str().unwrap()))
        .collect();
    for layer in ["states_provinces", "disputed_borders", "layer_styles", "notes"] {
        assert!(skipped.iter().any(|(l, _)| *l == layer), "{layer}: {skipped:?}");
    }
    assert!(assumed(&report, "non_spatial_table_skipped").unwrap().contains("notes"));
    assert!(assumed(&report, "layers_chosen").is_some(), "{report}");

    // A CSV whose column turns from numbers to text at row 90,000: text,
    // every value as written, and the report says how types were chosen.
    let mut csv = String::from("lon,lat,code\n");
    for i in 1..=100_000u32 {
        let code = if i < 90_000 { i.to_string() } else { format!("X{i}") };
        csv.push_str(&format!(
            "{},{},{code}\n",
            (i % 360) as f64 - 179.5,
            (i % 170) as f64 - 84.5
        ));
    }
    let (job, report) = ingest(&app, &token, "codes.csv", csv.into_bytes(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 100_000);
    assert_eq!(report["rows_quarantined"], 0);
    let types = assumed(&report, "csv_types_inferred").unwrap_or_else(|| panic!("{report}"));
    assert!(types.contains("code text"), "{types}");
    assert!(assumed(&report, "crs_assumed_wgs84").is_some(), "{report}");
}

#[tokio::test]
async fn broken_files_and_mostly_bad_layers_fail_with_words_and_publish_nothing() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;

    // Truncated: the message names the file and where reading stopped,
    // never GDAL's "returned a NULL pointer".
    let whole = world_countries_geojson().to_string();
    let cut = whole.as_bytes()[..whole.len() / 3].to_vec();
    let (job, _) = ingest(&app, &token, "cut.geojson", cut, &[]).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(detail.contains("cut.geojson"), "{detail}");
    assert!(!detail.contains("NULL pointer"), "{detail}");
    assert!(
        detail.contains("line") || detail.contains("byte") || detail.contains("feature"),
        "{detail}"
    );

    // Three rows of four impossible: over the 50% limit, nothing publishes,
    // and the report says which.
    let geojson = json!({"type": "FeatureCollection", "features": [
        feature(json!({"type": "Point", "coordinates": [1, 1]}), 1),
        feature(json!({"type": "Point", "coordinates": [1, 95]}), 2),
        feature(json!({"type": "Point", "coordinates": [500, 1]}), 3),
        feature(json!({"type": "Point", "coordinates": [1, -95]}), 4),
    ]});
    let before = app.get_json(Some(&token), "/api/datasets/").await.1;
    let (job, report) = ingest(&app, &token, "bad.geojson", geojson.to_string().into_bytes(), &[]).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("75.0%") && detail.contains("INGEST_MAX_QUARANTINE_PERCENT"),
        "{detail}"
    );
    assert_eq!(
        job["report_url"],
        format!("/api/jobs/{}/report", job["id"].as_str().unwrap())
    );
    check_counts(&report, 4);
    assert_eq!(reasons_of(&report, "coordinate_out_of_range"), [2, 3, 4]);
    assert!(job["dataset_ids"].as_array().unwrap().is_empty());
    let after = app.get_json(Some(&token), "/api/datasets/").await.1;
    assert_eq!(before, after, "nothing was published");
    let leftovers: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_tables WHERE schemaname IN ('data', 'quarantine') AND tablename LIKE '\\_staging\\_%'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(leftovers, 0);

    // Another user may not read the report of a job that is not theirs.
    let (_, other) = app.user_token("someone", "editor").await;
    let (status, _) = app
        .get_json(
            Some(&other),
            &format!("/api/jobs/{}/report", job["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_million_rows_with_one_percent_bad_load_the_rest_and_keep_every_bad_one() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let mut csv = String::with_capacity(32 << 20);
    csv.push_str("id,lon,lat\n");
    for i in 1..=1_000_000u32 {
        // Every hundredth row has a latitude no place has.
        let lat = if i % 100 == 0 {
            100.5
        } else {
            (i % 17_000) as f64 / 100.0 - 85.0
        };
        csv.push_str(&format!("{i},{:.4},{lat}\n", (i % 36_000) as f64 / 100.0 - 180.0));
    }
    let (job, report) = ingest(&app, &token, "million.csv", csv.into_bytes(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    check_counts(&report, 1_000_000);
    assert_eq!(report["rows_quarantined"], 10_000);
    let shown = reasons_of(&report, "coordinate_out_of_range");
    assert_eq!(shown.len(), 100, "the first 100 of a reason are shown");
    assert_eq!(shown[..3], [100, 200, 300]);
    let dataset_id = job["dataset_id"].as_str().unwrap();
    let dataset = app.dataset(&token, dataset_id).await;
    assert_eq!(dataset["feature_count"], 990_000);
    let kept = quarantine(&app, &token, dataset_id).await;
    assert_eq!(kept.len(), 10_000);
    assert!(kept.iter().all(|f| f["properties"]["id"].as_i64().unwrap() % 100 == 0));
}

fn coded_points(rows: &[(&str, f64, f64, i64)]) -> Vec<u8> {
    let features: Vec<Value> = rows
        .iter()
        .map(|(code, lon, lat, n)| {
            json!({"type": "Feature", "properties": {"code": code, "n": n},
                   "geometry": {"type": "Point", "coordinates": [lon, lat]}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

async fn reupload(app: &App, token: &str, id: &str, bytes: Vec<u8>, preview: bool) -> Value {
    let fields: &[(&str, &str)] = if preview { &[("preview", "true")] } else { &[] };
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            token,
            "stops.geojson",
            bytes,
            fields,
        )
        .await;
    assert_eq!(response.status(), 202);
    let job: Value = response.json().await.unwrap();
    app.wait_job(token, job["job_id"].as_str().unwrap()).await
}

#[tokio::test]
async fn a_reupload_shows_its_report_and_row_diff_first_and_each_version_keeps_its_own_quarantine() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let first = coded_points(&[
        ("A", 1.0, 1.0, 1),
        ("B", 2.0, 2.0, 2),
        ("C", 3.0, 3.0, 3),
        ("Z", 4.0, 99.0, 4),
    ]);
    let (job, _) = ingest(&app, &token, "stops.geojson", first, &[]).await;
    let id = job["dataset_id"].as_str().unwrap().to_string();
    assert_eq!(app.dataset(&token, &id).await["quarantined_count"], 1);

    // B moved, C as it was, A gone, D new, and one row off the world.
    let second = coded_points(&[
        ("B", 2.5, 2.0, 2),
        ("C", 3.0, 3.0, 3),
        ("D", 5.0, 5.0, 5),
        ("Y", 500.0, 1.0, 6),
        ("X", 6.0, -91.0, 7),
    ]);
    let job = reupload(&app, &token, &id, second.clone(), true).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let preview = &job["result"];
    assert_eq!(
        preview["row_diff"],
        json!({"key": "code", "added": 1, "removed": 1, "changed": 1, "unchanged": 1, "compared_columns": ["code", "n"]}),
        "{preview}"
    );
    check_counts(&preview["report"], 5);
    assert_eq!(reasons_of(&preview["report"], "coordinate_out_of_range"), [4, 5]);
    // A preview changes nothing.
    let dataset = app.dataset(&token, &id).await;
    assert_eq!(
        (dataset["feature_count"].clone(), dataset["quarantined_count"].clone()),
        (json!(3), json!(1))
    );
    let leftovers: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'data' AND tablename LIKE '\\_staging\\_%'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(leftovers, 0);

    let job = reupload(&app, &token, &id, second, false).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (_, report) = app
        .get_json(
            Some(&token),
            job["report_url"]
                .as_str()
                .unwrap()
                .trim_start_matches("http://catalog.test"),
        )
        .await;
    check_counts(&report, 5);
    let dataset = app.dataset(&token, &id).await;
    assert_eq!(
        (dataset["feature_count"].clone(), dataset["quarantined_count"].clone()),
        (json!(3), json!(2))
    );
    let kept = quarantine(&app, &token, &id).await;
    let codes: Vec<&str> = kept.iter().map(|f| f["properties"]["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["Y", "X"], "the current version's rows kept aside");

    // Restoring the first version: its rows, none kept aside in its era.
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/versions/1/restore")))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    let restored: Value = response.json().await.unwrap();
    let job_id = restored["job_id"].as_str().unwrap();
    let job = app.wait_job(&token, job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (_, report) = app.get_json(Some(&token), &format!("/api/jobs/{job_id}/report")).await;
    check_counts(&report, 3);
    let dataset = app.dataset(&token, &id).await;
    assert_eq!(dataset["quarantined_count"], 0);

    // Deleting the dataset takes every era's quarantine with it.
    let kept_tables = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_tables WHERE schemaname = 'quarantine'")
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    assert_eq!(kept_tables().await, 2);
    let response = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&token),
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(kept_tables().await, 0);
}
