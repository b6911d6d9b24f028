//! Downloads: a download token for the dataset opens it, and so does any
//! read credential of a caller who may read it (data everyone may read
//! needs none). A raster comes as its COG with byte ranges (GDAL reads it
//! in place through `/vsicurl/`); a vector dataset as GeoPackage, GeoJSON,
//! CSV or a zipped shapefile, with its source's attribute names. Signed
//! asset links are tested with STAC (`stac.rs`), filtered exports in
//! `exports.rs`.
use std::time::{Duration, Instant};

use catalog_shared::auth::{DownloadClaims, TokenKeys};
use catalog_tests::{Api, App, JWT_SECRET, Stack, StackOptions, data_file};
use gdal::vector::LayerAccess;
use serde_json::Value;

async fn mint(api: &impl Api, token: Option<&str>, id: &str) -> Value {
    let mut request = api.http().post(api.url(&format!("/api/auth/download-token/{id}")));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = api.send(request).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn fetch(api: &impl Api, url: &str, range: Option<&str>) -> reqwest::Response {
    let mut request = api.http().get(url);
    if let Some(range) = range {
        request = request.header("range", range);
    }
    api.send(request).await
}

/// A download token for the dataset that expired a few seconds ago.
fn expired_token(dataset: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &DownloadClaims {
            sub: None,
            typ: "download".into(),
            scope: format!("dataset:{dataset}"),
            iat: now - 200,
            exp: now - 5,
        },
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )
    .unwrap()
}

#[tokio::test]
async fn downloads_open_with_their_token() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    let job = stack
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("visibility", "public")],
        )
        .await;
    let raster = stack.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = stack
        .upload_ok(
            &admin,
            "bikes.geojson",
            data_file("geojson/cycle_hire_osm.geojson"),
            &[("visibility", "private")],
        )
        .await;
    let vector = stack.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();

    // The COG, whole and in ranges; GDAL reads it over HTTP.
    let minted = mint(&stack, None, &raster).await;
    assert_eq!(minted["token_type"], "download");
    let url = minted["download_url"].as_str().unwrap().to_string();
    let whole = fetch(&stack, &url, None).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(
        whole.headers()["content-type"],
        "image/tiff; application=geotiff; profile=cloud-optimized"
    );
    let size = stack.dataset(&admin, &raster).await["raster"]["size_bytes"]
        .as_u64()
        .unwrap();
    assert_eq!(whole.bytes().await.unwrap().len() as u64, size);
    let part = fetch(&stack, &url, Some("bytes=0-99")).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().await.unwrap().len(), 100);
    let remote = url.clone();
    let (width, height) =
        tokio::task::spawn_blocking(move || gdal::Dataset::open(format!("/vsicurl/{remote}")).unwrap().raster_size())
            .await
            .unwrap();
    assert_eq!((width, height), (95, 90));

    // A public COG needs no token at all.
    let bare = url.split('?').next().unwrap().to_string();
    assert_eq!(fetch(&stack, &bare, Some("bytes=0-99")).await.status(), 206);
    // Refusals: a session token, another dataset's, an expired one: a
    // token sent is the credential, and a bad one is not passed over.
    assert_eq!(
        fetch(&stack, &format!("{bare}?token={admin}"), None).await.status(),
        401
    );
    let for_vector = mint(&stack, Some(&admin), &vector).await;
    let other = for_vector["token"].as_str().unwrap();
    assert_eq!(
        fetch(&stack, &format!("{bare}?token={other}"), None).await.status(),
        403
    );
    let expired = expired_token(&raster);
    assert_eq!(
        fetch(&stack, &format!("{bare}?token={expired}"), None).await.status(),
        401
    );
    assert!(TokenKeys::new(JWT_SECRET).verify_download(&expired).is_none());

    // A private vector dataset, in each format.
    let source: Value = serde_json::from_slice(&data_file("geojson/cycle_hire_osm.geojson")).unwrap();
    let count = source["features"].as_array().unwrap().len();
    let vector_url = for_vector["download_url"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    for (format, file) in [
        ("", "bikes.gpkg"),
        ("&format=shp", "bikes.zip"),
        ("&format=csv", "bikes.csv"),
    ] {
        let response = fetch(&stack, &format!("{vector_url}{format}"), None).await;
        assert_eq!(response.status(), 200, "{format}: {}", stack.logs());
        let path = dir.path().join(file);
        std::fs::write(&path, response.bytes().await.unwrap()).unwrap();
        let opened = if file.ends_with(".zip") {
            format!("/vsizip/{}", path.display())
        } else {
            path.display().to_string()
        };
        let ds = gdal::Dataset::open(&opened).unwrap();
        let layer = ds.layer(0).unwrap();
        assert_eq!(layer.feature_count() as usize, count, "{format}");
    }
    let geojson: Value = fetch(&stack, &format!("{vector_url}&format=geojson"), None)
        .await
        .json()
        .await
        .unwrap();
    let features = geojson["features"].as_array().unwrap();
    assert_eq!(features.len(), count);
    let first_source = source["features"][0]["properties"].as_object().unwrap();
    let first = features[0]["properties"].as_object().unwrap();
    assert!(
        first_source.keys().all(|k| first.contains_key(k)),
        "source names: {first:?}"
    );
    assert_eq!(
        fetch(&stack, &format!("{vector_url}&format=kml"), None).await.status(),
        400
    );
}

/// A `Range` the file cannot satisfy (past its end, malformed, several
/// ranges) is a 416 problem document that still gives the file's length in
/// `Content-Range`, never the COG's media type or plain text.
#[tokio::test]
async fn unsatisfiable_ranges_answer_problem_documents() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let job = app
        .upload_ok(&admin, "elev.tif", data_file("raster/elev_luxembourg.tif"), &[])
        .await;
    let raster = app.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let size = app.dataset(&admin, &raster).await["raster"]["size_bytes"]
        .as_u64()
        .unwrap();
    let url = mint(&app, Some(&admin), &raster).await["download_url"]
        .as_str()
        .unwrap()
        .to_string();
    for range in [
        format!("bytes={size}-"),
        "bytes=abc".to_string(),
        "bytes=0-1,5-6".to_string(),
    ] {
        let response = fetch(&app, &url, Some(&range)).await;
        assert_eq!(response.status(), 416, "{range}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{range}"
        );
        assert_eq!(
            response.headers()["content-range"],
            format!("bytes */{size}").as_str(),
            "{range}"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["status"], 416, "{range}: {problem}");
        assert!(problem["detail"].as_str().unwrap().contains("Range"), "{problem}");
    }
    assert_eq!(fetch(&app, &url, Some("bytes=0-9")).await.status(), 206);
}

/// `api_key` is taken on the download route as on every read: the key of
/// a caller who may read the dataset opens it, with or without a token. A
/// wrong key or an expired token is a 401 problem whatever else is sent,
/// and the key of a caller who may not see the dataset a 404.
#[tokio::test]
async fn a_query_key_opens_as_on_every_read() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (_, viewer) = app.user_token("vic", "viewer").await;
    let admin_key = app.api_key(&admin, "full").await;
    let viewer_key = app.api_key(&viewer, "read_only").await;
    let job = app
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("visibility", "private")],
        )
        .await;
    let raster = app.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let url = mint(&app, Some(&admin), &raster).await["download_url"]
        .as_str()
        .unwrap()
        .to_string();
    let (bare, query) = url.split_once('?').unwrap();
    // A client that adds its key to every request it sends.
    for opens in [
        format!("{url}&api_key={admin_key}"),
        format!("{bare}?api_key={admin_key}"),
    ] {
        let opened = fetch(&app, &opens, None).await;
        assert_eq!(opened.status(), 200);
        assert!(!opened.bytes().await.unwrap().is_empty());
    }

    let wrong = format!("sdc_{}", "0".repeat(64));
    let expired = expired_token(&raster);
    for (why, refused, status) in [
        ("a wrong key", format!("{bare}?{query}&api_key={wrong}"), 401),
        ("a key without the right", format!("{bare}?api_key={viewer_key}"), 404),
        (
            "an expired token",
            format!("{bare}?token={expired}&api_key={admin_key}"),
            401,
        ),
        ("nothing", bare.to_string(), 401),
    ] {
        let response = fetch(&app, &refused, None).await;
        assert_eq!(response.status(), status, "{why}");
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{why}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["status"], status, "{why}: {problem}");
    }
}

/// What is in a folder.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

/// A million points download as GeoJSON and as GeoPackage in bounded
/// memory; the file GDAL writes is gone once the answer starts (a slow
/// reader leaves nothing on disk), and a client that leaves while it is
/// written stops the export, which leaves nothing either.
#[tokio::test]
async fn a_million_features_download_in_bounded_memory_and_leave_no_file() {
    let scratch = tempfile::tempdir().unwrap();
    let stack = Stack::start_with(StackOptions::workers(1).env("TMPDIR", scratch.path().to_str().unwrap())).await;
    let admin = stack.admin_token().await;
    let body = serde_json::json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [0, 0]}, "properties": {"name": "seed", "value": 0.5}}]});
    let id = stack.ingest_geojson(&admin, &body, &[("title", "Many")]).await;
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(stack.pool())
        .await
        .unwrap();
    // 999,999 more rows straight into the table: the export is under test,
    // not the ingest.
    let geometry: String = sqlx::query_scalar("SELECT geometry_column FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(stack.pool())
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "INSERT INTO data.\"{table}\" (\"{geometry}\", name, value)
         SELECT ST_SetSRID(ST_MakePoint(-180 + (i % 3600) * 0.1, -80 + (i / 3600) * 0.05), 4326),
                'feature number ' || i, i * 0.25
         FROM generate_series(1, 999999) AS i"
    )))
    .execute(stack.pool())
    .await
    .unwrap();
    let left_before = entries(scratch.path());

    let before = stack.api_peak_rss_kib();
    let mut largest = 0;
    // FlatGeobuf's index holds every feature's box while GDAL writes it,
    // in a process of its own; GeoParquet holds at most a row group.
    for (format, name) in [
        ("geojson", "many.geojson"),
        ("gpkg", "many.gpkg"),
        ("fgb", "many.fgb"),
        ("parquet", "many.parquet"),
    ] {
        let minted = mint(&stack, Some(&admin), &id).await;
        let url = format!("{}&format={format}", minted["download_url"].as_str().unwrap());
        let mut response = fetch(&stack, &url, None).await;
        assert_eq!(response.status(), 200, "{format}");
        let path = tempfile::tempdir().unwrap();
        let file_path = path.path().join(name);
        let mut file = std::fs::File::create(&file_path).unwrap();
        let mut bytes = 0usize;
        while let Some(chunk) = response.chunk().await.unwrap() {
            if bytes == 0 {
                assert_eq!(
                    entries(scratch.path()),
                    left_before,
                    "{format}: nothing on disk once the answer starts"
                );
            }
            bytes += chunk.len();
            std::io::Write::write_all(&mut file, &chunk).unwrap();
        }
        drop(file);
        largest = largest.max(bytes);
        if format == "parquet" {
            // Read back in full by tests/tests/geoparquet.rs; here its frame.
            let written = std::fs::read(&file_path).unwrap();
            assert!(written.starts_with(b"PAR1") && written.ends_with(b"PAR1"), "{format}");
            continue;
        }
        let ds = gdal::Dataset::open(&file_path).unwrap();
        assert_eq!(ds.layer(0).unwrap().feature_count(), 1_000_000, "{format}");
    }
    let grown_mib = (stack.api_peak_rss_kib() - before) / 1024;
    assert!(largest > 100 << 20, "a large file: {largest} bytes");
    assert!(
        grown_mib < 64,
        "the API's peak memory grew {grown_mib} MiB for a {} MiB export",
        largest >> 20
    );

    // A client that gives up while a GeoPackage is being written (one not
    // made before: a made one is served at once).
    let minted = mint(&stack, Some(&admin), &id).await;
    let url = format!(
        "{}&format=gpkg&properties=name",
        minted["download_url"].as_str().unwrap()
    );
    let gave_up = tokio::time::timeout(Duration::from_millis(500), stack.http.get(&url).send()).await;
    assert!(gave_up.is_err(), "the export takes longer than half a second");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stack.logs().contains("export stopped: the client left") {
        assert!(Instant::now() < deadline, "the export went on: {}", stack.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while entries(scratch.path()) != left_before {
        assert!(Instant::now() < deadline, "left behind: {:?}", entries(scratch.path()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
