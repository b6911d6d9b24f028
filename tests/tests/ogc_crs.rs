//! OGC API Features Part 2 (coordinate reference systems) and the items'
//! `sortby`, `properties` and `skipGeometry`, read by real clients: GDAL's
//! OAPIF driver and OWSLib get items in EPSG:3857 and in the British
//! National Grid (EPSG:27700, rgdal's `scot_BNG`) with the coordinates
//! `ogr2ogr -t_srs` gives; sorted pages stay exact.
use std::{collections::BTreeMap, process::Command};

use catalog_tests::{Api, App, Stack, StackOptions, fixture_members, zip_owned};
use serde_json::{Value, json};

const E: &str = "http://www.opengis.net/def/crs/EPSG/0";
const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";
/// `ogr2ogr`'s output as GeoJSON with the coordinates as read (not forced
/// to WGS 84) to a micrometre.
const GEOJSON_OUTPUT: [&str; 6] = ["-f", "GeoJSON", "-lco", "RFC7946=NO", "-lco", "COORDINATE_PRECISION=6"];

async fn ingested(api: &impl Api, token: &str, filename: &str, bytes: Vec<u8>) -> String {
    let job = api.upload_ok(token, filename, bytes, &[("visibility", "public")]).await;
    let job = api.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{filename}: {job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

/// Every coordinate pair of a GeoJSON geometry, in order.
fn coordinates(geometry: &Value) -> Vec<[f64; 2]> {
    fn walk(value: &Value, out: &mut Vec<[f64; 2]>) {
        match value.as_array() {
            Some(items) if items.first().is_some_and(Value::is_number) => {
                out.push([items[0].as_f64().unwrap(), items[1].as_f64().unwrap()]);
            }
            Some(items) => items.iter().for_each(|i| walk(i, out)),
            None => {}
        }
    }
    let mut out = Vec::new();
    walk(&geometry["coordinates"], &mut out);
    out
}

/// Coordinates by feature id.
fn by_id(collection: &Value) -> BTreeMap<i64, Vec<[f64; 2]>> {
    collection["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_i64().unwrap(), coordinates(&f["geometry"])))
        .collect()
}

fn assert_close(
    what: &str,
    got: &BTreeMap<i64, Vec<[f64; 2]>>,
    expected: &BTreeMap<i64, Vec<[f64; 2]>>,
    tolerance: f64,
) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{what}: the same features"
    );
    for (id, points) in got {
        let other = &expected[id];
        assert_eq!(points.len(), other.len(), "{what}: feature {id}");
        for (a, b) in points.iter().zip(other) {
            assert!(
                (a[0] - b[0]).abs() <= tolerance && (a[1] - b[1]).abs() <= tolerance,
                "{what}: feature {id}: {a:?} is not {b:?}"
            );
        }
    }
}

/// `ogr2ogr -t_srs` of a GeoJSON document in CRS84.
fn ogr2ogr_to(target: &str, collection: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("crs84.geojson");
    let target_file = dir.path().join("out.geojson");
    let mut plain = collection.clone();
    plain
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k == "type" || k == "features");
    std::fs::write(&source, plain.to_string()).unwrap();
    let output = Command::new("ogr2ogr")
        .args(GEOJSON_OUTPUT)
        .args(["-t_srs", target])
        .arg(&target_file)
        .arg(&source)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut converted: Value = serde_json::from_slice(&std::fs::read(&target_file).unwrap()).unwrap();
    // ogr2ogr keeps the key as the `id` member only when asked; match by order.
    for (feature, original) in converted["features"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(collection["features"].as_array().unwrap())
    {
        feature["id"] = original["id"].clone();
    }
    converted
}

#[tokio::test]
async fn gdal_and_owslib_read_items_in_web_mercator_and_the_british_national_grid() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let id = ingested(&stack, &token, "scot_BNG.zip", zip_owned(&fixture_members("scot_BNG"))).await;

    let (status, collection) = stack.get_json(None, &format!("/api/collections/{id}")).await;
    assert_eq!(status, 200);
    let offered: Vec<&str> = collection["crs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for crs in [CRS84, &format!("{E}/4326"), &format!("{E}/3857"), &format!("{E}/27700")] {
        assert!(offered.contains(&crs), "{crs} in {offered:?}");
    }
    assert_eq!(collection["storageCrs"], CRS84);
    let conformance = stack.get_json(None, "/api/conformance").await.1;
    assert!(
        conformance["conformsTo"]
            .as_array()
            .unwrap()
            .contains(&json!("http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"))
    );

    let items = |crs: Option<String>| {
        let stack = &stack;
        let id = id.clone();
        async move {
            let query = crs.map(|c| format!("&crs={c}")).unwrap_or_default();
            let response = stack
                .http
                .get(stack.url(&format!("/api/collections/{id}/items?limit=1000{query}")))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            let content_crs = response.headers()["content-crs"].to_str().unwrap().to_string();
            (content_crs, response.json::<Value>().await.unwrap())
        }
    };
    let (content_crs, crs84) = items(None).await;
    assert_eq!(content_crs, format!("<{CRS84}>"));
    assert_eq!(
        crs84["features"].as_array().unwrap().len(),
        56,
        "scot_BNG's 56 districts"
    );

    // Projected CRSs: the coordinates ogr2ogr gives, within a millimetre.
    for code in [27700, 3857] {
        let (content_crs, projected) = items(Some(format!("{E}/{code}"))).await;
        assert_eq!(content_crs, format!("<{E}/{code}>"));
        let expected = ogr2ogr_to(&format!("EPSG:{code}"), &crs84);
        assert_close(&format!("EPSG:{code}"), &by_id(&projected), &by_id(&expected), 0.001);
        // The CRS is the response's (`Content-Crs`), not each geometry's:
        // no pre-RFC 7946 `crs` member.
        for feature in projected["features"].as_array().unwrap() {
            assert!(feature["geometry"].get("crs").is_none(), "{}", feature["geometry"]);
        }
    }
    // EPSG:4326 is latitude first, as its EPSG definition says.
    let (_, latitude_first) = items(Some(format!("{E}/4326"))).await;
    let swapped: BTreeMap<i64, Vec<[f64; 2]>> = by_id(&crs84)
        .into_iter()
        .map(|(id, points)| (id, points.into_iter().map(|[x, y]| [y, x]).collect()))
        .collect();
    assert_close("EPSG:4326", &by_id(&latitude_first), &swapped, 1e-9);

    // One feature, in a CRS of its own.
    let first = crs84["features"][0]["id"].as_i64().unwrap();
    let response = stack
        .http
        .get(stack.url(&format!("/api/collections/{id}/items/{first}?crs={E}/27700")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-crs"], format!("<{E}/27700>").as_str());
    let (_, bng) = items(Some(format!("{E}/27700"))).await;
    let one: Value = response.json().await.unwrap();
    assert_eq!(coordinates(&one["geometry"]), by_id(&bng)[&first]);

    // bbox in the national grid (easting, northing) and in EPSG:4326
    // (latitude first) find what the same box in CRS84 finds.
    let count = |query: String| {
        let stack = &stack;
        let id = id.clone();
        async move {
            let (status, page) = stack
                .get_json(None, &format!("/api/collections/{id}/items?limit=1000&{query}"))
                .await;
            assert_eq!(status, 200, "{query}: {page}");
            page["features"].as_array().unwrap().len()
        }
    };
    let north_of_edinburgh = count("bbox=-4.5,56.2,-1.5,59".into()).await;
    assert!((1..56).contains(&north_of_edinburgh), "{north_of_edinburgh}");
    assert_eq!(
        count(format!("bbox=56.2,-4.5,59,-1.5&bbox-crs={E}/4326")).await,
        north_of_edinburgh
    );
    assert_eq!(count(format!("bbox=0,0,700000,1300000&bbox-crs={E}/27700")).await, 56);
    assert_eq!(count(format!("bbox=0,0,100000,100000&bbox-crs={E}/27700")).await, 0);

    // A CRS the collection does not offer, or none at all, is a 400 problem.
    for crs in [format!("{E}/2157"), format!("{E}/999999"), "EPSG:4326".to_string()] {
        let response = stack
            .http
            .get(stack.url(&format!("/api/collections/{id}/items?crs={crs}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{crs}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }

    // GDAL 3.6's OAPIF driver takes the CRS in the dataset name and keeps
    // it on every page it follows.
    let url = format!("OAPIF:{}/api/collections/{id}?crs={E}/3857", stack.base);
    let read = Command::new("ogr2ogr")
        .args(GEOJSON_OUTPUT)
        .args(["-oo", "PAGE_SIZE=20"])
        .args(["/vsistdout/", &url])
        .output()
        .unwrap();
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    let gdal: Value = serde_json::from_slice(&read.stdout).unwrap();
    let (_, mercator) = items(Some(format!("{E}/3857"))).await;
    let gdal_coordinates: Vec<Vec<[f64; 2]>> = gdal["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| coordinates(&f["geometry"]))
        .collect();
    let ours: Vec<Vec<[f64; 2]>> = by_id(&mercator).into_values().collect();
    assert_eq!(gdal_coordinates.len(), 56, "GDAL followed every page");
    for (a, b) in gdal_coordinates.iter().flatten().zip(ours.iter().flatten()) {
        assert!(
            (a[0] - b[0]).abs() < 0.001 && (a[1] - b[1]).abs() < 0.001,
            "{a:?} {b:?}"
        );
    }

    // OWSLib, with crs and bbox-crs in the national grid.
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let script = catalog_tests::package_dir().join("clients/owslib_crs.py");
    let output = Command::new(python)
        .arg(script)
        .args([
            &format!("{}/api", stack.base),
            &id,
            &format!("{E}/27700"),
            "0,0,700000,1300000",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let owslib: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(owslib["content_crs"], format!("<{E}/27700>"));
    assert_eq!(owslib["storageCrs"], CRS84);
    assert_close(
        "OWSLib EPSG:27700",
        &by_id(&json!({"features": owslib["features"]})),
        &by_id(&bng),
        1e-9,
    );
}

/// 61 points whose `pop` repeats and is sometimes null and whose `name`
/// repeats, so that every sort has ties and nulls to get through.
fn sortable_points() -> Vec<u8> {
    let features: Vec<Value> = (0..61)
        .map(|i: i64| {
            let pop = if i % 7 == 3 { Value::Null } else { json!((i * 37) % 11) };
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64 / 10.0, 45.0]},
                   "properties": {"name": format!("n{}", i % 9), "pop": pop, "rank": i}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

/// The feature ids of every page of `query`, following `next` links.
async fn every_page(app: &App, id: &str, query: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut path = format!("/api/collections/{id}/items?{query}");
    for _ in 0..100 {
        let (status, page) = app.get_json(None, &path).await;
        assert_eq!(status, 200, "{path}: {page}");
        ids.extend(
            page["features"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_i64().unwrap()),
        );
        let Some(next) = page["links"].as_array().unwrap().iter().find(|l| l["rel"] == "next") else {
            return ids;
        };
        path = next["href"]
            .as_str()
            .unwrap()
            .trim_start_matches(app.base())
            .to_string();
    }
    panic!("{query}: more than 100 pages");
}

#[tokio::test]
async fn sorted_pages_hold_every_feature_once_in_order() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = ingested(&app, &token, "sortable.geojson", sortable_points()).await;
    let dataset = app.dataset(&token, &id).await;
    let table = format!(
        "\"{}\".\"{}\"",
        dataset["schema_name"].as_str().unwrap(),
        dataset["table_name"].as_str().unwrap()
    );
    let key = dataset["key_column"].as_str().unwrap();
    for (sortby, order, filter) in [
        ("-pop,name", "pop DESC, name ASC", ""),
        ("pop", "pop ASC", ""),
        ("%2Bname,-rank", "name ASC, rank DESC", ""),
        ("-pop", "pop DESC", "&filter=rank%20%3E%2010"),
        ("name,pop", "name ASC, pop ASC", "&name=n3"),
    ] {
        let condition = match filter {
            "" => "TRUE",
            "&name=n3" => "name = 'n3'",
            _ => "rank > 10",
        };
        let expected: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT \"{key}\"::bigint FROM {table} WHERE {condition} ORDER BY {order}, \"{key}\""
        )))
        .fetch_all(&app.pool)
        .await
        .unwrap();
        for limit in [1, 4, 7, 1000] {
            let got = every_page(&app, &id, &format!("sortby={sortby}&limit={limit}{filter}")).await;
            assert_eq!(got, expected, "sortby={sortby} limit={limit}{filter}");
        }
        // Offset pages of the same order agree.
        let (_, page) = app
            .get_json(
                None,
                &format!("/api/collections/{id}/items?sortby={sortby}&limit=5&offset=10{filter}"),
            )
            .await;
        let offset: Vec<i64> = page["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_i64().unwrap())
            .collect();
        assert_eq!(
            offset,
            expected.iter().skip(10).take(5).copied().collect::<Vec<_>>(),
            "{sortby} offset"
        );
    }

    // properties: those asked, in that order; skipGeometry: none.
    let (status, page) = app
        .get_json(
            None,
            &format!("/api/collections/{id}/items?properties=rank,name&skipGeometry=true&limit=2"),
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let feature = &page["features"][0];
    assert!(feature["geometry"].is_null(), "{feature}");
    let keys: Vec<&String> = feature["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["rank", "name"]);

    for bad in [
        "sortby=nope",
        "sortby=name,name",
        "sortby=name&cursor=garbage",
        "cursor=e30",
        "sortby=name&after_gid=3",
        "properties=nope",
        "skipGeometry=maybe",
    ] {
        let (status, body) = app.get_json(None, &format!("/api/collections/{id}/items?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
}

/// Ten points seen on the first ten days of 2024, with a second date
/// whose name says nothing of time.
fn dated_points() -> Vec<u8> {
    let features: Vec<Value> = (1..=10)
        .map(|day| {
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [day, 10]},
                   "properties": {"observed_date": format!("2024-01-{day:02}"), "other": "2000-01-01", "n": day}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn datetime_filters_items_on_the_time_axis() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = ingested(&app, &token, "dated.geojson", dated_points()).await;
    let dataset = app.dataset(&token, &id).await;
    assert_eq!(
        dataset["temporal_column"], "observed_date",
        "detected at ingest: {dataset}"
    );
    let (_, collection) = app.get_json(None, &format!("/api/collections/{id}")).await;
    let interval = &collection["extent"]["temporal"]["interval"][0];
    assert!(
        interval[0].as_str().unwrap().starts_with("2024-01-01T00:00:00"),
        "{collection}"
    );
    assert!(
        interval[1].as_str().unwrap().starts_with("2024-01-10T00:00:00"),
        "{collection}"
    );

    let matched = |query: &str| {
        let app = &app;
        let path = format!("/api/collections/{id}/items?limit=100&{query}");
        async move {
            let (status, page) = app.get_json(None, &path).await;
            assert_eq!(status, 200, "{path}: {page}");
            let mut days: Vec<i64> = page["features"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["properties"]["n"].as_i64().unwrap())
                .collect();
            days.sort();
            (days, page["numberMatched"].as_i64())
        }
    };
    assert_eq!(
        matched("datetime=2024-01-03/2024-01-05").await,
        (vec![3, 4, 5], Some(3))
    );
    assert_eq!(matched("datetime=2024-01-09/..").await.0, vec![9, 10]);
    assert_eq!(matched("datetime=2024-01-02").await.0, vec![2]);
    assert_eq!(matched("datetime=2024-01-02T12:00:00Z").await.0, Vec::<i64>::new());

    let patch = |body: Value| {
        let app = &app;
        let token = &token;
        let id = &id;
        async move {
            let response = app
                .send(
                    app.http()
                        .patch(app.url(&format!("/api/datasets/{id}")))
                        .bearer_auth(token)
                        .json(&body),
                )
                .await;
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = patch(json!({"temporal_column": "n"})).await;
    assert_eq!(status, 422, "a number is no time: {body}");
    let (status, body) = patch(json!({"temporal_column": null})).await;
    assert_eq!((status, &body["temporal_column"]), (200, &Value::Null), "{body}");
    assert_eq!(
        matched("datetime=2024-01-03/2024-01-05").await.0.len(),
        10,
        "no time axis: ignored"
    );
    let (_, collection) = app.get_json(None, &format!("/api/collections/{id}")).await;
    assert!(collection["extent"]["temporal"].is_null(), "{collection}");
    let (status, body) = patch(json!({"temporal_column": "other"})).await;
    assert_eq!((status, &body["temporal_column"]), (200, &json!("other")), "{body}");
    assert_eq!(matched("datetime=2000-01-01").await.0.len(), 10);
}
