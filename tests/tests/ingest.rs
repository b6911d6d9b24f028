//! Every vector file of the shared data ingests with the right counts,
//! types, extents and decoded text; bad inputs fail clearly and leave nothing.
use catalog_tests::{Api, App, data_file, shapefile_members, zip_of, zip_owned};
use serde_json::Value;

async fn ingest_one(app: &App, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> Vec<Value> {
    let job_id = app.upload_ok(token, filename, bytes, fields).await;
    let job = app.wait_job(token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}\n{}", app.process_logs());
    assert_eq!(job["error"], Value::Null);
    let mut datasets = Vec::new();
    for id in job["dataset_ids"].as_array().unwrap() {
        datasets.push(app.dataset(token, id.as_str().unwrap()).await);
    }
    assert_eq!(job["dataset_id"], datasets[0]["id"]);
    datasets
}

fn assert_extent(dataset: &Value, expected: [f64; 4]) {
    let bbox: Vec<f64> = dataset["extent_bbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(bbox.len(), 4, "extent {bbox:?}");
    for (got, want) in bbox.iter().zip(expected) {
        assert!((got - want).abs() < 0.01, "extent {bbox:?} is not {expected:?}");
    }
}

async fn count_rows(app: &App, dataset: &Value) -> i64 {
    let sql = format!(
        "SELECT count(*) FROM data.\"{}\"",
        dataset["table_name"].as_str().unwrap()
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn geopackage_in_nad27_is_reprojected() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let datasets = ingest_one(
        &app,
        &token,
        "nc.gpkg",
        data_file("gpkg/nc.gpkg"),
        &[("title", "NC counties")],
    )
    .await;
    assert_eq!(datasets.len(), 1);
    let nc = &datasets[0];
    assert_eq!(nc["title"], "NC counties");
    assert_eq!(nc["feature_count"], 100);
    assert_eq!(nc["geometry_type"], "MultiPolygon");
    assert_eq!(nc["srid"], 4326);
    assert_eq!(nc["source_srid"], 4267);
    assert_eq!(nc["visibility"], "private");
    assert_eq!(nc["status"], "ready");
    assert_eq!(nc["publication_version"], 1);
    assert_extent(nc, [-84.32, 33.88, -75.46, 36.59]);
    assert_eq!(count_rows(&app, nc).await, 100);
    let names: Vec<&str> = nc["column_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["original_name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"NAME"), "{names:?}");
    assert!(nc["sample_values"]["name"].as_array().is_some_and(|v| !v.is_empty()));
    // GiST index and primary key are in place once the job says succeeded.
    let indexes: Vec<String> =
        sqlx::query_scalar("SELECT indexdef FROM pg_indexes WHERE schemaname = 'data' AND tablename = $1")
            .bind(nc["table_name"].as_str().unwrap())
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(indexes.iter().any(|d| d.contains("USING gist (geom)")), "{indexes:?}");
    assert!(indexes.iter().any(|d| d.contains("(gid)")), "{indexes:?}");
    let srid: i32 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT DISTINCT ST_SRID(geom) FROM data.\"{}\"",
        nc["table_name"].as_str().unwrap()
    )))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(srid, 4326);
}

/// A job's page names its file's size, who sent it and the steps it went
/// through, in order, each once.
#[tokio::test]
async fn a_job_names_its_file_size_owner_and_steps() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let bytes = data_file("gpkg/nc.gpkg");
    let size = bytes.len();
    let job_id = app.upload_ok(&token, "nc.gpkg", bytes, &[]).await;
    let job = app.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (_, me) = app.get_json(Some(&token), "/api/auth/me").await;
    assert_eq!(job["owner"], me["username"], "{job}");
    assert_eq!(job["file_bytes"].as_u64(), Some(size as u64), "{job}");
    let steps = job["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert!(names.len() >= 2, "{names:?}");
    assert!(
        names.windows(2).all(|w| w[0] != w[1]),
        "a step is listed when it begins: {names:?}"
    );
    let times: Vec<chrono::DateTime<chrono::Utc>> = steps
        .iter()
        .map(|s| s["at"].as_str().unwrap().parse().unwrap())
        .collect();
    let started: chrono::DateTime<chrono::Utc> = job["started_at"].as_str().unwrap().parse().unwrap();
    let finished: chrono::DateTime<chrono::Utc> = job["finished_at"].as_str().unwrap().parse().unwrap();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");
    assert!(times[0] >= started && *times.last().unwrap() <= finished, "{job}");
}

#[tokio::test]
async fn every_spatial_layer_of_a_geopackage_becomes_a_dataset() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let datasets = ingest_one(
        &app,
        &token,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[("title", "World")],
    )
    .await;
    let mut found: Vec<(String, i64, String)> = datasets
        .iter()
        .map(|d| {
            (
                d["source_layer"].as_str().unwrap().to_string(),
                d["feature_count"].as_i64().unwrap(),
                d["geometry_type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("countries".to_string(), 240, "MultiPolygon".to_string()),
            ("disputed_borders".to_string(), 46, "MultiLineString".to_string()),
            ("states_provinces".to_string(), 4556, "MultiPolygon".to_string()),
        ]
    );
    assert!(
        datasets
            .iter()
            .all(|d| d["title"].as_str().unwrap().starts_with("World — "))
    );
    // The non-spatial layer_styles table is not a dataset.
    assert_eq!(app.dataset_count().await, 3);
}

#[tokio::test]
async fn one_layer_can_be_chosen_and_a_missing_one_is_named() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let datasets = ingest_one(
        &app,
        &token,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[("layer", "countries")],
    )
    .await;
    assert_eq!(datasets.len(), 1);
    assert_eq!(datasets[0]["feature_count"], 240);
    let job_id = app
        .upload_ok(
            &token,
            "world_map.gpkg",
            data_file("gpkg/world_map.gpkg"),
            &[("layer", "rivers")],
        )
        .await;
    let job = app.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "failed");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(detail.contains("rivers") && detail.contains("countries"), "{detail}");
}

#[tokio::test]
async fn shapefile_with_mixed_polygons_and_wide_reals() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let zip = zip_owned(&shapefile_members("shp/naturalearth_lowres"));
    let datasets = ingest_one(&app, &token, "lowres.zip", zip, &[]).await;
    let d = &datasets[0];
    assert_eq!(d["feature_count"], 177);
    assert_eq!(d["geometry_type"], "MultiPolygon");
    let pop = d["column_info"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "pop_est")
        .unwrap();
    assert_eq!(pop["type"], "double precision");
    assert_eq!(count_rows(&app, d).await, 177);
}

#[tokio::test]
async fn shapefile_latin1_attributes_are_decoded() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let zip = zip_owned(&shapefile_members("shp/naturalearth_cities"));
    let datasets = ingest_one(&app, &token, "cities.zip", zip, &[]).await;
    let d = &datasets[0];
    assert_eq!(d["feature_count"], 243);
    assert_eq!(d["geometry_type"], "Point");
    let sql = format!(
        "SELECT count(*) FROM data.\"{}\" WHERE name IN ('Asunción', 'São Tomé', 'Reykjavík')",
        d["table_name"].as_str().unwrap()
    );
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 3);
}

#[tokio::test]
async fn geojson_and_both_kinds_of_csv() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let bikes = &ingest_one(
        &app,
        &token,
        "cycle_hire_osm.geojson",
        data_file("geojson/cycle_hire_osm.geojson"),
        &[],
    )
    .await[0];
    assert_eq!(bikes["feature_count"], 532);
    assert_eq!(bikes["geometry_type"], "Point");
    assert_extent(bikes, [-0.2291, 51.4593, -0.0080, 51.5468]);
    let airports = &ingest_one(&app, &token, "airports.csv", data_file("csv/airports.csv"), &[]).await[0];
    assert_eq!(airports["feature_count"], 3376);
    assert_eq!(airports["geometry_type"], "Point");
    let world = &ingest_one(&app, &token, "world_wkt.csv", data_file("csv/world_wkt.csv"), &[]).await[0];
    assert_eq!(world["feature_count"], 177);
    assert_eq!(world["geometry_type"], "MultiPolygon");
    // The coordinate and WKT columns became the geometry, not attributes.
    let columns: Vec<&str> = world["column_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(!columns.contains(&"wkt"), "{columns:?}");
}

#[tokio::test]
async fn extent_across_the_antimeridian_is_in_rfc7946_form() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let fiji = serde_json::json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "Suva"}, "geometry": {"type": "Point", "coordinates": [178.44, -18.14]}},
        {"type": "Feature", "properties": {"name": "Lau"}, "geometry": {"type": "Point", "coordinates": [-178.8, -17.6]}},
        {"type": "Feature", "properties": {"name": "Rotuma"}, "geometry": {"type": "Point", "coordinates": [177.05, -12.5]}}
    ]});
    let d = &ingest_one(&app, &token, "fiji.geojson", fiji.to_string().into_bytes(), &[]).await[0];
    assert_extent(d, [177.05, -18.14, -178.8, -12.5]);
}

/// Uploads something that must fail in the job; answers the error detail.
async fn failed_job_detail(app: &App, token: &str, filename: &str, bytes: Vec<u8>) -> String {
    let job_id = app.upload_ok(token, filename, bytes, &[]).await;
    let job = app.wait_job(token, &job_id).await;
    assert_eq!(job["status"], "failed", "{filename}: {job}");
    assert_eq!(job["error"]["status"], 422, "{job}");
    assert!(job["error"]["title"].is_string());
    assert_eq!(job["dataset_id"], Value::Null);
    job["error"]["detail"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn bad_files_fail_with_clear_errors_and_leave_nothing() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let shp = shapefile_members("shp/naturalearth_cities");
    let full_zip = zip_owned(&shp);

    let truncated = full_zip[..full_zip.len() / 2].to_vec();
    let detail = failed_job_detail(&app, &token, "truncated.zip", truncated).await;
    assert!(detail.contains("zip"), "{detail}");

    let slip = zip_of(&[("../../evil.geojson", b"{}".to_vec())]);
    let detail = failed_job_detail(&app, &token, "slip.zip", slip).await;
    assert!(detail.contains("unsafe path"), "{detail}");

    let without_dbf: Vec<(String, Vec<u8>)> = shp.iter().filter(|(n, _)| !n.ends_with(".dbf")).cloned().collect();
    let detail = failed_job_detail(&app, &token, "nodbf.zip", zip_owned(&without_dbf)).await;
    assert!(detail.contains(".dbf"), "{detail}");

    let without_shx: Vec<(String, Vec<u8>)> = shp.iter().filter(|(n, _)| !n.ends_with(".shx")).cloned().collect();
    let detail = failed_job_detail(&app, &token, "noshx.zip", zip_owned(&without_shx)).await;
    assert!(detail.contains(".shx"), "{detail}");

    let detail = failed_job_detail(
        &app,
        &token,
        "broken.geojson",
        b"{\"type\": \"FeatureCollection\", \"features\": [".to_vec(),
    )
    .await;
    assert!(detail.contains("geojson"), "{detail}");

    let detail = failed_job_detail(&app, &token, "plain.csv", b"name,population\nA,1\nB,2\n".to_vec()).await;
    assert!(detail.contains("no coordinates"), "{detail}");

    let empty = br#"{"type": "FeatureCollection", "features": []}"#.to_vec();
    let detail = failed_job_detail(&app, &token, "empty.geojson", empty).await;
    // GDAL reads an empty FeatureCollection as one spatial layer, empty.
    assert!(detail.contains("no features"), "{detail}");

    assert_eq!(app.dataset_count().await, 0);
    assert_eq!(app.data_tables().await, Vec::<String>::new());
}

#[tokio::test]
async fn unknown_extensions_and_oversize_files_are_refused_at_upload() {
    let app = App::start_with_worker_and(&[("MAX_UPLOAD_BYTES", "1000")]).await;
    let token = app.admin_token().await;
    let response = app.upload(&token, "notes.txt", b"hello".to_vec(), &[]).await;
    assert_eq!(response.status(), 422);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let body: Value = response.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("notes.txt"), "{body}");

    let response = app
        .upload(
            &token,
            "cities.zip",
            zip_owned(&shapefile_members("shp/naturalearth_cities")),
            &[],
        )
        .await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], 413);
    assert!(body["detail"].as_str().unwrap().contains("1000"), "{body}");

    let response = app
        .upload(&token, "a.geojson", b"{}".to_vec(), &[("visibility", "secret")])
        .await;
    assert_eq!(response.status(), 422);

    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0, "refused uploads enqueue nothing");
}

#[tokio::test]
async fn messy_files_still_load() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;

    // Mixed geometry kinds, a feature without geometry, nested properties.
    let mixed = serde_json::json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 1]}, "properties": {"kind": "p", "meta": {"a": 1}}},
        {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[0, 0], [2, 2]]}, "properties": {"kind": "l"}},
        {"type": "Feature", "geometry": null, "properties": {"kind": "none"}}
    ]});
    let d = &ingest_one(&app, &token, "mixed.geojson", mixed.to_string().into_bytes(), &[]).await[0];
    assert_eq!(d["feature_count"], 3);
    assert_eq!(d["geometry_type"], "Geometry");
    assert_extent(d, [0.0, 0.0, 2.0, 2.0]);

    // Semicolons, Latin-1 bytes, capitalised coordinate headers.
    let mut csv = b"Name;Longitude;Latitude\n".to_vec();
    csv.extend_from_slice(b"Z\xfcrich;8.54;47.37\nM\xfcnchen;11.58;48.14\n");
    let d = &ingest_one(&app, &token, "cities.csv", csv, &[]).await[0];
    assert_eq!(d["feature_count"], 2);
    assert_eq!(d["geometry_type"], "Point");
    let sql = format!(
        "SELECT count(*) FROM data.\"{}\" WHERE name IN ('Zürich', 'München')",
        d["table_name"].as_str().unwrap()
    );
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 2, "Latin-1 text is decoded");

    // A shapefile set in a folder with upper-case extensions, beside a readme.
    let members: Vec<(String, Vec<u8>)> = shapefile_members("shp/naturalearth_cities")
        .into_iter()
        .map(|(name, bytes)| {
            let (stem, ext) = name.rsplit_once('.').unwrap();
            (format!("export/{stem}.{}", ext.to_uppercase()), bytes)
        })
        .chain([("export/README.txt".to_string(), b"cities".to_vec())])
        .collect();
    let d = &ingest_one(&app, &token, "export.zip", zip_owned(&members), &[]).await[0];
    assert_eq!(d["feature_count"], 243);

    // A wide table: more columns than one json_build_object call takes.
    let properties: serde_json::Map<String, Value> =
        (0..120).map(|i| (format!("Column {i}"), Value::from(i))).collect();
    let wide = serde_json::json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 4]}, "properties": properties}]});
    let d = ingest_one(
        &app,
        &token,
        "wide.geojson",
        wide.to_string().into_bytes(),
        &[("visibility", "public")],
    )
    .await;
    let id = d[0]["id"].as_str().unwrap();
    let (status, item) = app.get_json(None, &format!("/api/collections/{id}/items/1")).await;
    assert_eq!(status, 200);
    assert_eq!(item["properties"].as_object().unwrap().len(), 120);
    assert_eq!(item["properties"]["column_119"], 119);
}
