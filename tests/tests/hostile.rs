//! Nothing a caller sends takes the service down (`docs/decisions.md`,
//! Values the service refuses; the attacks are listed in
//! `docs/security.md`): impossible coordinates are refused by writes and
//! ingest, and ones written into a table by hand leave every read route
//! answering without a 5xx and every database backend alive; deep CQL2
//! filters are refused while the API keeps answering; Part 4 writes count
//! against the quota; a map's picture is bounded.
use std::time::{Duration, Instant};

use catalog_tests::{Api, App, Stack, StackOptions};
use serde_json::{Value, json};

/// A public dataset of two ordinary points; its id and table.
async fn two_points(app: &App, token: &str) -> (String, String) {
    let geojson = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "a"}, "geometry": {"type": "Point", "coordinates": [5.1, 52.1]}},
        {"type": "Feature", "properties": {"name": "b"}, "geometry": {"type": "Point", "coordinates": [6.1, 50.1]}},
    ]});
    let id = app.ingest_geojson(token, &geojson, &[("visibility", "public")]).await;
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    (id, table)
}

/// The status of a POST of a feature with `geometry`, and its problem.
async fn post_feature(app: &App, token: &str, id: &str, geometry: Value) -> (u16, Value) {
    let body = json!({"type": "Feature", "geometry": geometry, "properties": {"name": "x"}});
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/collections/{id}/items")))
                .bearer_auth(token)
                .header("content-type", "application/geo+json")
                .body(body.to_string()),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn writes_refuse_coordinates_no_crs_has_and_name_them() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (id, _) = two_points(&app, &admin).await;
    for (geometry, named) in [
        (json!({"type": "Point", "coordinates": [1e308, 5.0]}), "1e+308"),
        (json!({"type": "Point", "coordinates": [600000, 4600000]}), "600000"),
        (json!({"type": "Point", "coordinates": []}), "coordinates"),
        (json!({"type": "Point", "coordinates": ["5", "52"]}), "finite numbers"),
        (json!({"type": "Point", "coordinates": [5.0]}), "2 to 4 numbers"),
        (json!({"type": "MultiPoint", "coordinates": []}), "empty"),
        (
            json!({"type": "MultiPoint", "coordinates": [[5, 52], [5, 91]]}),
            "coordinates[1]",
        ),
    ] {
        let (status, problem) = post_feature(&app, &admin, &id, geometry.clone()).await;
        assert_eq!(status, 422, "{geometry}: {problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(named), "{geometry}: {detail}");
    }
    let (status, _) = post_feature(&app, &admin, &id, json!({"type": "Point", "coordinates": [180, -90]})).await;
    assert_eq!(status, 201, "the world's corner is a coordinate");
    let (_, dataset) = app.get_json(Some(&admin), &format!("/api/datasets/{id}")).await;
    assert_eq!(dataset["feature_count"], 3);
}

/// Ingest never stores such a row: it is quarantined with its row and
/// coordinate (`docs/ingest-report.md`) and the good rows publish.
#[tokio::test]
async fn ingest_keeps_coordinates_no_crs_has_out_of_the_data_and_names_them() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    for (coordinates, named) in [(json!([1e308, 5.0]), "1e308"), (json!([600000, 4600000]), "600000")] {
        let geojson = json!({"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [5, 52]}},
            {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": coordinates}},
        ]});
        let job = app
            .upload_ok(&admin, "bad.geojson", geojson.to_string().into_bytes(), &[])
            .await;
        let job = app.wait_job(&admin, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        let (_, report) = app.get_json(Some(&admin), job["report_url"].as_str().unwrap()).await;
        let example = &report["examples"][0];
        assert_eq!(
            (example["reason"].as_str(), example["row"].as_u64()),
            (Some("coordinate_out_of_range"), Some(2)),
            "{report}"
        );
        assert!(example["message"].as_str().unwrap().contains(named), "{report}");
        let dataset = app.dataset(&admin, job["dataset_id"].as_str().unwrap()).await;
        assert_eq!(
            (dataset["feature_count"].as_i64(), dataset["quarantined_count"].as_i64()),
            (Some(1), Some(1))
        );
    }
}

/// Every read route of a dataset whose table holds, written there by
/// hand, coordinates no CRS has: each answers without a 5xx, and the
/// database server keeps every connection (no backend crashed).
#[tokio::test]
async fn reads_of_impossible_coordinates_written_by_hand_never_fail_or_crash_a_backend() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (id, table) = two_points(&app, &admin).await;
    let backend: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(app.pool())
        .await
        .unwrap();
    for statement in [
        format!(
            "INSERT INTO data.\"{table}\" (name, geom) VALUES
               ('huge', ST_SetSRID(ST_MakePoint(1e308, 5), 4326)),
               ('metres', ST_SetSRID(ST_MakePoint(600000, 4600000), 4326)),
               ('empty', 'SRID=4326;POINT EMPTY'::geometry),
               ('nan', ST_SetSRID(ST_MakePoint('NaN'::float8, 5), 4326))"
        ),
        format!(
            "UPDATE datasets SET extent_bbox = ARRAY[5.1, -1e308, 1e308, 4600000]::float8[],
                                 feature_count = 6, data_version = data_version + 1
             WHERE id = '{id}'"
        ),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(app.pool())
            .await
            .unwrap();
    }
    // A map of the dataset, for its picture and style.
    let (status, map) = {
        let response = app
            .send(app.http().post(app.url("/api/maps")).bearer_auth(&admin).json(&json!({
                "name": "hand-written", "visibility": "public",
                "layers": [{"dataset_id": id}],
            })))
            .await;
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    };
    assert_eq!(status, 201, "{map}");
    let map_id = map["id"].as_str().unwrap();
    let crs3857 = "crs=http://www.opengis.net/def/crs/EPSG/0/3857";
    for path in [
        format!("/api/collections/{id}/items?limit=100"),
        format!("/api/collections/{id}/items?limit=100&{crs3857}"),
        format!("/api/collections/{id}/items?limit=100&bbox=-180,-90,180,90"),
        format!("/api/collections/{id}/items?bbox=-1e300,-1e300,1e300,1e300&bbox-{crs3857}"),
        format!("/api/collections/{id}/items?bbox=1e300,1e300,1e301,1e301&bbox-{crs3857}"),
        format!("/api/collections/{id}/items?f=html"),
        format!("/api/collections/{id}"),
        format!("/api/datasets/{id}/download?format=csv&{crs3857}"),
        format!("/api/datasets/{id}/download?format=gpkg&{crs3857}"),
        format!("/api/datasets/{id}/download?format=geojson"),
        format!("/api/tiles/{id}/0/0/0"),
        format!("/api/tiles/{id}/1/1/0"),
        format!("/api/tiles/{id}/cluster/0/0/0"),
        format!("/api/tiles/{id}/tilejson.json"),
        format!("/api/collections/{id}/tiles/WebMercatorQuad/0/0/0"),
        format!("/api/collections/{id}/tiles"),
        format!("/api/collections/{id}/tiles/WebMercatorQuad"),
        format!("/api/collections/{id}/tiles/WorldCRS84Quad"),
        format!("/api/collections/{id}/items/1?{crs3857}"),
        format!("/api/collections/{id}?f=html"),
        "/api/collections".to_string(),
        "/api/collections/catalog/items?bbox=-10,-10,10,10".to_string(),
        format!("/api/datasets/{id}"),
        format!("/api/tiles/{id}/style.json"),
        "/api/stac/collections".to_string(),
        "/api/search?q=hand".to_string(),
        format!("/api/datasets/{id}/thumbnail.png"),
        format!("/api/maps/{map_id}/thumbnail.png"),
        format!("/api/maps/{map_id}/style.json"),
        format!("/api/stac/search?ids={id}"),
    ] {
        let response = app.send(app.http().get(app.url(&path))).await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        assert!(status < 500, "{path}: {status} {}", &body[..body.len().min(400)]);
    }
    let same: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(app.pool())
        .await
        .unwrap();
    let alive: bool = sqlx::query_scalar("SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1")
        .bind(backend)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert!(
        alive || same == backend,
        "a backend crashed: the server restarted its connections"
    );
    // A box in EPSG:3857 is cut to where that CRS has coordinates.
    for (bbox, matched) in [("-1e300,-1e300,1e300,1e300", 2), ("1e300,1e300,1e301,1e301", 0)] {
        let (status, page) = app
            .get_json(None, &format!("/api/collections/{id}/items?bbox={bbox}&bbox-{crs3857}"))
            .await;
        assert_eq!(status, 200, "{bbox}: {page}");
        assert_eq!(page["numberMatched"], matched, "{bbox}");
    }
    // Items, in the storage CRS and in EPSG:3857, keep every feature, the
    // impossible ones without a geometry.
    for crs in ["", crs3857] {
        let (status, page) = app
            .get_json(None, &format!("/api/collections/{id}/items?limit=100&{crs}"))
            .await;
        assert_eq!(status, 200, "{crs}: {page}");
        let features = page["features"].as_array().unwrap();
        assert_eq!(features.len(), 6);
        let mut without: Vec<&str> = features
            .iter()
            .filter(|f| f["geometry"].is_null())
            .map(|f| f["properties"]["name"].as_str().unwrap())
            .collect();
        without.sort();
        assert_eq!(without, ["empty", "huge", "metres", "nan"], "{crs}");
    }
    for format in ["geojson", "csv", "gpkg"] {
        let response = app
            .send(
                app.http()
                    .get(app.url(&format!("/api/datasets/{id}/download?format={format}&{crs3857}"))),
            )
            .await;
        assert_eq!(response.status(), 200, "{format}");
    }
}

/// A NaN inside a line or a polygon, where the box PostGIS keeps skips it
/// (its lines and rings are measured instead): items in both CRSs answer
/// valid JSON with that feature's geometry null (PostGIS would write `NaN`,
/// which is no JSON), and tiles, downloads and the picture answer.
#[tokio::test]
async fn a_nan_inside_a_line_or_polygon_written_by_hand_is_left_out_of_every_read() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let geojson = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "a"},
         "geometry": {"type": "LineString", "coordinates": [[5.1, 52.1], [6.1, 50.1]]}},
        {"type": "Feature", "properties": {"name": "b"},
         "geometry": {"type": "Polygon", "coordinates": [[[5.0, 50.0], [6.0, 50.0], [6.0, 51.0], [5.0, 50.0]]]}},
    ]});
    let id = app.ingest_geojson(&admin, &geojson, &[("visibility", "public")]).await;
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let statement = format!(
        "INSERT INTO data.\"{table}\" (name, geom) VALUES
           ('nan line', 'SRID=4326;LINESTRING(0 0, NaN 5, 10 10)'::geometry),
           ('nan ring', 'SRID=4326;POLYGON((0 0, 0 10, NaN NaN, 10 0, 0 0))'::geometry);
         UPDATE datasets SET feature_count = 4, data_version = data_version + 1 WHERE id = '{id}'"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
        .execute(app.pool())
        .await
        .unwrap();
    let crs3857 = "crs=http://www.opengis.net/def/crs/EPSG/0/3857";
    for crs in ["", crs3857] {
        let (status, page) = app
            .get_json(None, &format!("/api/collections/{id}/items?limit=100&{crs}"))
            .await;
        assert_eq!(status, 200, "{crs}: {page}");
        let features = page["features"].as_array().unwrap();
        assert_eq!(features.len(), 4, "{crs}");
        let mut without: Vec<&str> = features
            .iter()
            .filter(|f| f["geometry"].is_null())
            .map(|f| f["properties"]["name"].as_str().unwrap())
            .collect();
        without.sort();
        assert_eq!(without, ["nan line", "nan ring"], "{crs}");
    }
    for path in [
        format!("/api/tiles/{id}/0/0/0"),
        format!("/api/tiles/{id}/5/16/10"),
        format!("/api/datasets/{id}/download?format=geojson"),
        format!("/api/datasets/{id}/download?format=gpkg&{crs3857}"),
        format!("/api/datasets/{id}/thumbnail.png"),
    ] {
        let response = app.send(app.http().get(app.url(&path))).await;
        let status = response.status().as_u16();
        assert!(status == 200 || status == 204, "{path}: {status}");
        if path.contains("geojson") {
            let body: Value = serde_json::from_str(&response.text().await.unwrap()).expect("the download is JSON");
            assert_eq!(body["features"].as_array().unwrap().len(), 4);
        }
    }
}

/// Anonymous filters of 1,500 `NOT`s and 2,000 unary minus signs (6 KB,
/// under the length limit) each overflowed a worker's stack in the parser
/// and aborted the API; now each is a 400, and the process answers its
/// health check throughout.
#[tokio::test]
async fn deep_filters_are_refused_and_the_api_keeps_answering() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    let geojson = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"pop": 1}, "geometry": {"type": "Point", "coordinates": [5, 52]}},
    ]});
    let id = stack
        .ingest_geojson(&admin, &geojson, &[("visibility", "public")])
        .await;
    let filters = [
        format!("{}pop = 1", "NOT ".repeat(1500)),
        format!("pop = {}1", "-".repeat(2000)),
        format!("pop = 1{}", " + 1".repeat(2400)),
        format!("{}pop = 1{}", "(".repeat(3000), ")".repeat(3000)),
        format!("{}1,2{}", "(".repeat(99), ")".repeat(99)),
        vec!["pop = 1"; 900].join(" AND "),
    ];
    let started = Instant::now();
    for filter in &filters {
        for path in [
            format!("/api/collections/{id}/items"),
            format!("/api/datasets/{id}/download"),
        ] {
            let response = stack
                .http()
                .get(stack.url(&path))
                .query(&[("filter", filter.as_str())])
                .send()
                .await
                .expect("the API answers (it did not abort)");
            let status = response.status().as_u16();
            assert!(status == 200 || status == 400, "{path} {}…: {status}", &filter[..40]);
            let health = stack.http().get(stack.url("/api/health")).send().await.unwrap();
            assert_eq!(health.status(), 200);
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "filters are refused in bounded time"
    );
    let (status, page) = stack
        .get_json(None, &format!("/api/collections/{id}/items?filter=pop%20%3D%201"))
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["numberMatched"], 1);
}

/// Part 4 writes are admitted against the owner's storage quota, as
/// uploads are: a user capped a few hundred KB above what it holds gets a
/// 422 for a write of 1.5 MB, and a small write still fits.
#[tokio::test]
async fn part_4_writes_count_against_the_storage_quota() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (erin, token) = app.user_token("erin", "editor").await;
    let (id, _) = two_points(&app, &token).await;
    let usage: i64 = sqlx::query_scalar("SELECT bytes_used FROM catalog_usage($1)")
        .bind(erin)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let response = app
        .send(
            app.http()
                .put(app.url(&format!("/api/admin/users/{erin}/quota")))
                .bearer_auth(&admin)
                .json(&json!({"storage_bytes": usage + 200_000})),
        )
        .await;
    assert_eq!(response.status(), 200);
    // A name of 1.5 MB: the row and its version would take erin 3 MB past the cap.
    let body = json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [5, 52]},
                      "properties": {"name": "x".repeat(1_500_000)}});
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/collections/{id}/items")))
                .bearer_auth(&token)
                .header("content-type", "application/geo+json")
                .body(body.to_string()),
        )
        .await;
    assert_eq!(response.status(), 422);
    let problem: Value = response.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("the storage quota"),
        "{problem}"
    );
    let (status, problem) = post_feature(&app, &token, &id, json!({"type": "Point", "coordinates": [1, 1]})).await;
    assert_eq!(status, 201, "a small write still fits: {problem}");
}

/// A map's picture draws its top 20 layers, each dataset once: a map of
/// a layer on Australia under twenty layers on one European dataset is
/// the same picture as a map of that dataset alone.
#[tokio::test]
async fn a_map_picture_draws_the_top_layers_each_dataset_once() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (europe, _) = two_points(&app, &admin).await;
    let australia = app
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": [
                {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [134, -25]}},
            ]}),
            &[("visibility", "public")],
        )
        .await;
    let layer =
        |id: &str, place: usize| json!({"dataset_id": id, "sort_order": place, "paint": {"circle-color": "#d01010"}});
    let picture = async |layers: Vec<Value>| {
        let response = app
            .send(
                app.http()
                    .post(app.url("/api/maps"))
                    .bearer_auth(&admin)
                    .json(&json!({"name": "layers", "visibility": "public", "layers": layers})),
            )
            .await;
        assert_eq!(response.status(), 201);
        let map: Value = response.json().await.unwrap();
        let response = app
            .send(
                app.http()
                    .get(app.url(&format!("/api/maps/{}/thumbnail.png", map["id"].as_str().unwrap()))),
            )
            .await;
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap()
    };
    let mut many = vec![layer(&australia, 0)];
    many.extend((1..=20).map(|place| layer(&europe, place)));
    let alone = picture(vec![layer(&europe, 0)]).await;
    assert_eq!(
        picture(many.clone()).await,
        alone,
        "Australia is below the top 20 layers"
    );
    many.pop();
    assert_ne!(picture(many).await, alone, "within the top 20, Australia is drawn");
}
