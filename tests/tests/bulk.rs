//! Bulk reads through users' own tools: item pages sized and budgeted for
//! whole-layer copies, float values that stay floats, the schema GDAL and
//! QGIS type columns from, raster collections no feature client takes for
//! features, the older `cql-text` name, STAC's Filter and Sort extensions,
//! the collections list in pages, raster records' links, and exports made
//! once and read in place by ranges.
use std::{process::Command, time::Duration};

use catalog_tests::{Api, App, Stack, StackOptions, data_file};
use serde_json::{Value, json};

/// `n` points with a float column whose first values are whole numbers
/// (`pop`: 1000.0, 1001.0, ... then 1000.5 from row `n / 2` on) and an
/// integer one.
fn points(n: usize) -> Value {
    let features: Vec<Value> = (0..n)
        .map(|i| {
            let pop = if i < n / 2 { 1000.0 + i as f64 } else { 1000.5 + i as f64 };
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [-170.0 + (i % 340) as f64, -60.0 + (i / 340) as f64 * 0.1]},
                   "properties": {"name": format!("place {i}"), "pop": pop, "rank": i as i64}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
}

/// Waits for a job by reading its row, so the wait costs no request.
async fn job_done(api: &impl Api, job_id: &str) -> Value {
    for _ in 0..1200 {
        let row: (String, Option<String>) =
            sqlx::query_as("SELECT status, dataset_id::text FROM jobs WHERE id = $1::uuid")
                .bind(job_id)
                .fetch_one(api.pool())
                .await
                .unwrap();
        if matches!(row.0.as_str(), "succeeded" | "failed" | "cancelled") {
            return json!({"status": row.0, "dataset_id": row.1});
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {job_id} did not finish");
}

/// `ogr2ogr -f GPKG <target> OAPIF:<url>` with GDAL's defaults, which must
/// succeed; answers what it printed on stderr.
fn ogr2ogr_oapif(url: &str, target: &std::path::Path) -> String {
    let output = Command::new("ogr2ogr")
        .args(["-f", "GPKG"])
        .arg(target)
        .arg(format!("OAPIF:{url}"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "ogr2ogr OAPIF:{url}: {err}");
    err
}

fn link<'a>(document: &'a Value, rel: &str) -> Option<&'a str> {
    document["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == rel)
        .and_then(|l| l["href"].as_str())
}

#[tokio::test]
async fn pages_that_follow_next_links_have_a_budget_of_their_own() {
    let app = App::start_with_worker_and(&[("RATE_LIMIT_PER_MINUTE", "5")]).await;
    let admin = app.admin_token().await;
    let job = app
        .upload_ok(
            &admin,
            "p.geojson",
            points(60).to_string().into_bytes(),
            &[("visibility", "public")],
        )
        .await;
    let job = job_done(&app, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();

    // A whole layer at two a page: 30 requests, 29 of them `next` links,
    // past the general limit of 5 a minute.
    let mut url = app.url(&format!("/api/collections/{id}/items?limit=2"));
    let mut features = 0;
    let mut pages = 0;
    loop {
        let response = app.send(app.http().get(&url)).await;
        assert_eq!(response.status(), 200, "page {pages}: {url}");
        let page: Value = response.json().await.unwrap();
        features += page["features"].as_array().unwrap().len();
        pages += 1;
        match link(&page, "next") {
            Some(next) => url = next.to_string(),
            None => break,
        }
    }
    assert_eq!((features, pages), (60, 30));

    // First pages and everything else keep the general limit: the upload
    // and the first page took two of five.
    let first = app.url(&format!("/api/collections/{id}/items?limit=2"));
    for n in 0..3 {
        assert_eq!(app.send(app.http().get(&first)).await.status(), 200, "first page {n}");
    }
    let refused = app.send(app.http().get(&first)).await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    // A next link still goes through.
    let next = app.url(&format!("/api/collections/{id}/items?limit=2&after_gid=10"));
    assert_eq!(app.send(app.http().get(&next)).await.status(), 200);
}

#[tokio::test]
async fn floats_stay_floats_and_the_schema_types_every_column() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app
        .ingest_geojson(&admin, &points(20), &[("visibility", "public")])
        .await;

    let response = app
        .send(app.http().get(app.url(&format!("/api/collections/{id}/items?limit=3"))))
        .await;
    assert_eq!(response.status(), 200);
    // As written, without the blanks PostgreSQL puts around members.
    let text = response.text().await.unwrap().replace(' ', "");
    assert!(
        text.contains(r#""pop":1000.0"#),
        "a whole float keeps its fraction: {text}"
    );
    assert!(
        text.contains(r#""rank":0"#) && !text.contains(r#""rank":0.0"#),
        "integers stay integers: {text}"
    );
    let last = app
        .send(app.http().get(app.url(&format!("/api/collections/{id}/items/20"))))
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(last["properties"]["pop"], json!(1019.5));

    let (status, collection) = app.get_json(None, &format!("/api/collections/{id}")).await;
    assert_eq!(status, 200);
    let schema_href = link(&collection, "http://www.opengis.net/def/rel/ogc/1.0/schema").expect("a schema link");
    assert_eq!(link(&collection, "describedby"), Some(schema_href));
    let response = app.send(app.http().get(schema_href)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/schema+json");
    let schema: Value = response.json().await.unwrap();
    assert_eq!(schema["$id"], schema_href);
    assert_eq!(schema["properties"]["pop"]["type"], "number");
    assert_eq!(schema["properties"]["rank"]["type"], "integer");
    assert_eq!(schema["properties"]["name"]["type"], "string");

    // The OpenAPI document sizes pages for bulk clients.
    let (_, document) = app.get_json(None, "/api/openapi.json").await;
    for path in [
        "/collections/{collectionId}/items".to_string(),
        format!("/collections/{id}/items"),
    ] {
        let limit = document["paths"][&path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} in the document"))
            .iter()
            .find(|p| p["name"] == "limit")
            .unwrap();
        assert_eq!(limit["schema"]["default"], 10, "{path}");
        assert_eq!(limit["schema"]["maximum"], 1000, "{path}");
    }

    // `cql-text`, CQL2 text's older name (GDAL 3.6 sends it), is taken.
    let (status, page) = app
        .get_json(
            None,
            &format!("/api/collections/{id}/items?filter=rank%3C3&filter-lang=cql-text"),
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["numberMatched"], 3);
    let (status, problem) = app
        .get_json(
            None,
            &format!("/api/collections/{id}/items?filter=rank%3C3&filter-lang=sql"),
        )
        .await;
    assert_eq!(status, 400);
    assert!(problem["detail"].as_str().unwrap().contains("cql-text"), "{problem}");
}

#[tokio::test]
async fn collections_page_and_rasters_are_not_features() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let mut ids = Vec::new();
    for title in ["Alpha rivers", "Beta roads", "Gamma parks"] {
        ids.push(app.ingest_geojson(&admin, &points(2), &[("title", title)]).await);
    }
    let job = app
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("title", "Delta elevation")],
        )
        .await;
    let job = app.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let raster = job["dataset_id"].as_str().unwrap().to_string();

    let (status, first) = app.get_json(Some(&admin), "/api/collections?limit=2").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["numberMatched"], 5, "four datasets and the records");
    assert_eq!(first["numberReturned"], 2);
    let collections = first["collections"].as_array().unwrap();
    assert_eq!(collections[0]["id"], "catalog");
    assert_eq!(collections[1]["title"], "Alpha rivers");
    let next = link(&first, "next").expect("a next page").to_string();
    let mut seen: Vec<String> = Vec::new();
    let mut url = next;
    loop {
        let response = app.send(app.http().get(&url).bearer_auth(&admin)).await;
        assert_eq!(response.status(), 200);
        let page: Value = response.json().await.unwrap();
        assert!(link(&page, "prev").is_some());
        seen.extend(
            page["collections"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["title"].as_str().unwrap().to_string()),
        );
        match link(&page, "next") {
            Some(next) => url = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, ["Beta roads", "Delta elevation", "Gamma parks"]);

    let (_, found) = app.get_json(Some(&admin), "/api/collections?q=roads").await;
    let titles: Vec<&str> = found["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Beta roads"], "a filtered list leaves the records out");
    assert_eq!(found["numberMatched"], 1);
    let (_, luxembourg) = app
        .get_json(Some(&admin), "/api/collections?bbox=5.9,49.4,6.5,50.2")
        .await;
    let titles: Vec<&str> = luxembourg["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Delta elevation"], "{luxembourg}");
    for bad in ["limit=0", "limit=10001", "offset=-1", "bbox=1,2", "colour=red"] {
        assert_eq!(
            app.get_json(Some(&admin), &format!("/api/collections?{bad}")).await.0,
            400,
            "{bad}"
        );
    }

    // A raster is a coverage, never a layer of features.
    let (_, all) = app.get_json(Some(&admin), "/api/collections").await;
    let by_id = |id: &str| {
        all["collections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_id(&raster)["itemType"], "coverage");
    assert_eq!(by_id(&raster)["layerDataType"], "Raster");
    assert!(link(&by_id(&raster), "items").is_none());
    assert_eq!(by_id(&ids[0])["itemType"], "feature");

    // Its record leads to its file, its tiles and its STAC item.
    let (status, record) = app
        .get_json(Some(&admin), &format!("/api/collections/catalog/items/{raster}"))
        .await;
    assert_eq!(status, 200, "{record}");
    assert!(link(&record, "item").is_none(), "no items link: {record}");
    let enclosure = record["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "enclosure")
        .unwrap();
    assert_eq!(
        enclosure["type"],
        "image/tiff; application=geotiff; profile=cloud-optimized"
    );
    let cog = app
        .send(app.http().get(enclosure["href"].as_str().unwrap()).bearer_auth(&admin))
        .await;
    assert_eq!(cog.status(), 200);
    assert_eq!(
        &cog.bytes().await.unwrap()[..4],
        b"II*\0",
        "the enclosure is the GeoTIFF"
    );
    let tiles = link(&record, "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map").unwrap();
    assert_eq!(app.send(app.http().get(tiles).bearer_auth(&admin)).await.status(), 200);
    let stac = link(&record, "alternate")
        .filter(|h| h.contains("/api/stac/"))
        .or_else(|| {
            record["links"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|l| l["href"].as_str())
                .find(|h| h.contains("/api/stac/"))
        })
        .expect("the STAC item");
    let item = app.send(app.http().get(stac).bearer_auth(&admin)).await;
    assert_eq!(item.status(), 200);
    let (_, vector) = app
        .get_json(Some(&admin), &format!("/api/collections/catalog/items/{}", ids[0]))
        .await;
    assert!(link(&vector, "item").is_some_and(|h| h.ends_with("/items")));
}

#[tokio::test]
async fn stac_search_filters_and_sorts_or_refuses() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let mut ids = Vec::new();
    for (title, n) in [("Gamma", 3), ("Alpha", 1), ("Beta", 2)] {
        ids.push(app.ingest_geojson(&admin, &points(n), &[("title", title)]).await);
    }
    let titles = |page: &Value| -> Vec<String> {
        page["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["properties"]["title"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, conformance) = app.get_json(None, "/api/stac/conformance").await;
    let classes = conformance["conformsTo"].as_array().unwrap();
    for class in ["item-search#filter", "item-search#sort", "cql2-text", "cql2-json"] {
        assert!(classes.iter().any(|c| c.as_str().unwrap().ends_with(class)), "{class}");
    }

    let (status, page) = app
        .get_json(Some(&admin), "/api/stac/search?filter=title%20%3D%20'Beta'")
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(titles(&page), ["Beta"]);
    assert_eq!(page["numberMatched"], 1);
    let (_, page) = app
        .get_json(
            Some(&admin),
            "/api/stac/search?filter=feature_count%20%3E%3D%202&sortby=-title",
        )
        .await;
    assert_eq!(titles(&page), ["Gamma", "Beta"]);
    let (_, page) = app
        .get_json(Some(&admin), "/api/stac/search?sortby=%2Btitle&limit=2")
        .await;
    assert_eq!(titles(&page), ["Alpha", "Beta"]);
    let next = link(&page, "next").expect("a second page").to_string();
    let response = app.send(app.http().get(&next).bearer_auth(&admin)).await;
    let second: Value = response.json().await.unwrap();
    assert_eq!(titles(&second), ["Gamma"], "a sorted search pages in its order");

    let body = json!({"filter": {"op": "and", "args": [
        {"op": "=", "args": [{"property": "collection"}, "vector"]},
        {"op": "like", "args": [{"property": "properties.title"}, "%a"]}]},
        "sortby": [{"field": "properties.title", "direction": "desc"}]});
    let response = app
        .send(
            app.http()
                .post(app.url("/api/stac/search"))
                .bearer_auth(&admin)
                .json(&body),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(titles(&response.json().await.unwrap()), ["Gamma", "Beta", "Alpha"]);
    let (_, page) = app
        .get_json(
            Some(&admin),
            &format!("/api/stac/collections/vector/items?filter=id%3D'{}'", ids[1]),
        )
        .await;
    assert_eq!(titles(&page), ["Alpha"], "collection items filter too");

    for bad in [
        "filter=colour%3D'red'",
        "filter=title%20%3D",
        "filter=title%3D'a'&filter-lang=cql2-json",
        "filter=title%3D'a'&filter-crs=EPSG:3857",
        "filter=id%3D'not-a-uuid'",
        "sortby=geometry",
        "sort=title",
        "query=%7B%7D",
        "fields=title",
    ] {
        let (status, problem) = app.get_json(Some(&admin), &format!("/api/stac/search?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {problem}");
        assert_eq!(problem["status"], 400, "{bad}: a problem document");
    }
    let response = app
        .send(
            app.http()
                .post(app.url("/api/stac/search"))
                .bearer_auth(&admin)
                .json(&json!({"sortby": [{"field": "title", "direction": "sideways"}]})),
        )
        .await;
    assert_eq!(response.status(), 400);

    let (status, queryables) = app.get_json(None, "/api/stac/queryables").await;
    assert_eq!(status, 200);
    for name in ["id", "collection", "datetime", "title", "geometry"] {
        assert!(queryables["properties"][name].is_object(), "{name}: {queryables}");
    }
    assert_eq!(
        app.get_json(None, "/api/stac/collections/raster/queryables").await.0,
        200
    );
    assert_eq!(app.get_json(None, "/api/stac/collections/nope/queryables").await.0, 404);
}

#[tokio::test]
async fn an_export_is_made_once_per_data_version_and_read_in_place() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app
        .ingest_geojson(&admin, &points(500), &[("visibility", "public")])
        .await;
    let url = app.url(&format!("/api/datasets/{id}/download?format=fgb"));
    let first = app.send(app.http().get(&url)).await;
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].to_str().unwrap().to_string();
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "a strong ETag: {etag}"
    );
    let made = first.headers()["last-modified"].clone();
    let whole = first.bytes().await.unwrap();

    // Each range is read from the one file: same ETag, same time, the bytes
    // of the whole.
    let kept = || {
        std::fs::read_dir(app.storage_dir().join("exports").join(&id))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(kept(), 1);
    for (start, end) in [(0usize, 7usize), (100, 4099), (whole.len() - 10, whole.len() - 1)] {
        let response = app
            .send(app.http().get(&url).header("range", format!("bytes={start}-{end}")))
            .await;
        assert_eq!(response.status(), 206);
        assert_eq!(response.headers()["etag"].to_str().unwrap(), etag);
        assert_eq!(response.headers()["last-modified"], made);
        assert_eq!(response.bytes().await.unwrap(), whole[start..=end]);
    }
    assert_eq!(kept(), 1, "ranges made no new export");
    let unchanged = app.send(app.http().get(&url).header("if-none-match", &etag)).await;
    assert_eq!(unchanged.status(), 304);
    let weakly = app
        .send(app.http().get(&url).header("if-none-match", format!("W/{etag}")))
        .await;
    assert_eq!(weakly.status(), 304, "If-None-Match compares weakly");
    // A range asked only if the file is still the one named: another is
    // sent whole, so a resumed download never mixes two files.
    let stale = app
        .send(
            app.http()
                .get(&url)
                .header("range", "bytes=0-7")
                .header("if-range", "\"an-old-export\""),
        )
        .await;
    assert_eq!(stale.status(), 200);
    assert_eq!(stale.bytes().await.unwrap(), whole);
    let same = app
        .send(
            app.http()
                .get(&url)
                .header("range", "bytes=0-7")
                .header("if-range", &etag),
        )
        .await;
    assert_eq!(same.status(), 206);

    // The FlatGeobuf says its geometry type and holds its spatial index.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("points.fgb");
    std::fs::write(&file, &whole).unwrap();
    let info = Command::new("ogrinfo")
        .arg("-so")
        .arg("-al")
        .arg(&file)
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout).to_string();
    assert!(info.contains("Geometry: Point"), "{info}");
    assert!(info.contains("Feature Count: 500"), "{info}");
    assert_eq!(&whole[..8], b"fgb\x03fgb\x01");
    // (the header's index node size, 16 by default, is not 0: it is indexed)
    let header_len = u32::from_le_bytes(whole[8..12].try_into().unwrap()) as usize;
    assert!(header_len > 0 && whole.len() > 12 + header_len);

    // Another selection is another export; new data, a new version.
    let other = app.send(app.http().get(format!("{url}&properties=name"))).await;
    assert_ne!(other.headers()["etag"].to_str().unwrap(), etag);
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/features")))
                .bearer_auth(&admin)
                .json(&json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 1]}, "properties": {"name": "new"}})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let after = app.send(app.http().get(&url)).await;
    assert_eq!(after.status(), 200);
    assert_ne!(
        after.headers()["etag"].to_str().unwrap(),
        etag,
        "the new data is a new export"
    );
    std::fs::write(&file, after.bytes().await.unwrap()).unwrap();
    let info = Command::new("ogrinfo")
        .arg("-so")
        .arg("-al")
        .arg(&file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&info.stdout).contains("Feature Count: 501"));

    // The dataset's exports go with it.
    let deleted = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&admin),
        )
        .await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    assert_eq!(kept(), 0);
}

/// GDAL copying whole layers with its own defaults, over the network.
#[tokio::test]
async fn gdal_copies_a_whole_layer_with_its_defaults_and_its_floats_survive() {
    // A general limit GDAL's pages (10 features each) would meet at once.
    let stack = Stack::start_with(StackOptions::workers(1).env("RATE_LIMIT_PER_MINUTE", "40")).await;
    let admin = stack.admin_token().await;
    let job = stack
        .upload_ok(
            &admin,
            "p.geojson",
            points(1000).to_string().into_bytes(),
            &[("visibility", "public")],
        )
        .await;
    let job = job_done(&stack, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let raster = stack
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("visibility", "public")],
        )
        .await;
    assert_eq!(job_done(&stack, &raster).await["status"], "succeeded", "the raster");

    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.gpkg");
    ogr2ogr_oapif(&stack.url(&format!("/api/collections/{id}")), &copy);
    let ds = gdal::Dataset::open(&copy).unwrap();
    use gdal::vector::LayerAccess;
    let mut layer = ds.layer(0).unwrap();
    assert_eq!(layer.feature_count(), 1000, "every feature, no 429");
    let pop = layer.defn().field_index("pop").unwrap();
    let field = layer.defn().fields().nth(pop).unwrap();
    assert_eq!(
        field.field_type(),
        gdal::vector::OGRFieldType::OFTReal,
        "pop stays a float column"
    );
    let mut values: Vec<f64> = layer
        .features()
        .map(|f| f.field_as_double(pop).unwrap().unwrap())
        .collect();
    values.sort_by(f64::total_cmp);
    assert_eq!(values[0], 1000.0);
    assert_eq!(values[999], 1999.5, "the fractions of later pages survive");

    // The whole service lists its feature layers and nothing else, with no error.
    let output = Command::new("ogrinfo")
        .args(["-ro", "-so"])
        .arg(format!("OAPIF:{}", stack.url("/api")))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success() && !err.contains("ERROR"), "{out}{err}");
    assert!(out.contains(&id), "{out}");
    let layers = out
        .lines()
        .filter(|l| l.split_once(": ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
        .count();
    assert_eq!(layers, 2, "the records and the points, not the raster: {out}");

    // And copies the whole service: every feature layer, whole, and no raster.
    let all = dir.path().join("all.gpkg");
    let err = ogr2ogr_oapif(&stack.url("/api"), &all);
    assert!(!err.contains("ERROR"), "ogr2ogr OAPIF:<root>: {err}");
    let all = gdal::Dataset::open(&all).unwrap();
    let mut counts: Vec<(String, u64)> = all.layers().map(|l| (l.name(), l.feature_count())).collect();
    counts.sort();
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.contains(&(id.clone(), 1000)), "the points, whole: {counts:?}");

    // GDAL's OGC API driver opens the collection, with its defaults, as
    // its features (not as the vector tiles it builds no layer from).
    let output = Command::new("ogrinfo")
        .args(["-ro", "-so", "-al"])
        .arg(format!("OGCAPI:{}", stack.url(&format!("/api/collections/{id}"))))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "ogrinfo OGCAPI: {out}{err}");
    assert!(out.contains("Feature Count: 1000"), "{out}{err}");
    assert!(out.contains("pop: Real"), "{out}");
}

#[tokio::test]
async fn heights_are_said_by_map_layers_and_kept_by_exports() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let high = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [6.1, 49.6, 310.5]}, "properties": {"name": "a"}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [6.2, 49.7, 402.0]}, "properties": {"name": "b"}}]});
    let with_z = app.ingest_geojson(&admin, &high, &[("title", "Summits")]).await;
    let flat = app.ingest_geojson(&admin, &points(2), &[("title", "Flat")]).await;
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&admin)
                .json(&json!({"name": "Heights", "layers": [{"dataset_id": with_z}, {"dataset_id": flat}]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let said: Vec<(&str, bool)> = map["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["dataset_name"].as_str().unwrap(), l["is_3d"].as_bool().unwrap()))
        .collect();
    assert_eq!(said, [("Summits", true), ("Flat", false)]);
    // The map says where its picture is.
    let picture = map["thumbnail_url"].as_str().expect("a thumbnail_url");
    assert!(
        picture.ends_with(&format!("/api/maps/{}/thumbnail.png", map["id"].as_str().unwrap())),
        "{picture}"
    );
    let drawn = app.send(app.http().get(picture).bearer_auth(&admin)).await;
    assert_eq!(drawn.status(), 200);
    assert_eq!(drawn.headers()["content-type"], "image/png");

    let response = app
        .send(
            app.http()
                .get(app.url(&format!("/api/datasets/{with_z}/download?format=gpkg")))
                .bearer_auth(&admin),
        )
        .await;
    assert_eq!(response.status(), 200);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("summits.gpkg");
    std::fs::write(&file, response.bytes().await.unwrap()).unwrap();
    let info = Command::new("ogrinfo").arg("-al").arg(&file).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout).to_string();
    assert!(info.contains("Geometry: 3D Point"), "{info}");
    assert!(info.contains("POINT Z (6.1 49.6 310.5)"), "{info}");
}

/// GeoNames' 234,908 places (`.data/fixtures`, from a PyPI wheel): GDAL
/// 3.6's `ogr2ogr OAPIF:` with its defaults copies every one, each value as
/// the CSV wrote it (codes with leading zeros stay text) and each point
/// where the CSV put it; QGIS 3.22's OAPIF provider reads every one, its
/// fields typed as the source's.
#[tokio::test]
async fn gdal_and_qgis_copy_every_place_of_a_big_real_layer_with_its_values() {
    use gdal::vector::LayerAccess;
    let app = Stack::start_with(StackOptions::workers(1)).await;
    let admin = app.admin_token().await;
    let csv = catalog_tests::fixture_file("geonames_cities500.csv");
    let job = app
        .upload_ok(
            &admin,
            "geonames_cities500.csv",
            csv.clone(),
            &[("visibility", "public")],
        )
        .await;
    let job = job_done(&app, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();

    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.gpkg");
    ogr2ogr_oapif(&app.url(&format!("/api/collections/{id}")), &copy);
    let source = dir.path().join("geonames.csv");
    std::fs::write(&source, csv).unwrap();
    let original = gdal::Dataset::open_ex(
        &source,
        gdal::DatasetOptions {
            open_options: Some(&["X_POSSIBLE_NAMES=longitude", "Y_POSSIBLE_NAMES=latitude"]),
            ..Default::default()
        },
    )
    .unwrap();
    let mut original = original.layer(0).unwrap();
    let fields = ["name", "countrycode", "admin1code", "population", "timezone"];
    let mut expected = std::collections::HashMap::new();
    for feature in original.features() {
        let text = |name: &str| {
            feature
                .field_as_string(feature.field_index(name).unwrap())
                .unwrap()
                .unwrap_or_default()
        };
        let (x, y, _) = feature.geometry().unwrap().get_point(0);
        let values: Vec<String> = fields.iter().map(|f| text(f)).collect();
        expected.insert(text("geonameid"), (values, x, y));
    }
    assert_eq!(expected.len(), 234_908);

    let copied = gdal::Dataset::open(&copy).unwrap();
    let mut layer = copied.layer(0).unwrap();
    assert_eq!(layer.feature_count(), 234_908, "every place, no 429");
    let mut seen = 0;
    for feature in layer.features() {
        let text = |name: &str| {
            feature
                .field_as_string(feature.field_index(name).unwrap())
                .unwrap()
                .unwrap_or_default()
        };
        let key = text("geonameid");
        let (values, x, y) = expected.get(&key).unwrap_or_else(|| panic!("{key} is not a place"));
        let copied: Vec<String> = fields.iter().map(|f| text(f)).collect();
        assert_eq!(&copied, values, "place {key}");
        let (cx, cy, _) = feature.geometry().unwrap().get_point(0);
        assert!(
            (cx - x).abs() < 1e-9 && (cy - y).abs() < 1e-9,
            "place {key} at {cx},{cy}, not {x},{y}"
        );
        seen += 1;
    }
    assert_eq!(seen, 234_908);

    let qgis = std::env::var("CATALOG_QGIS_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let output = Command::new(qgis)
        .arg(catalog_tests::package_dir().join("clients/qgis_oapif_read.py"))
        .args([&app.url("/api"), &id, "geonameid"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let read: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(read["valid"], true, "{read}");
    assert_eq!(read["read"], 234_908, "{read}");
    assert_eq!(read["distinct_keys"], 234_908, "{read}");
    assert_eq!(read["null_geometries"], 0, "{read}");
    let fields = &read["fields"];
    for (name, kind) in [
        ("name", "String"),
        ("countrycode", "String"),
        ("admin1code", "String"),
        ("timezone", "String"),
    ] {
        assert_eq!(fields[name], kind, "{name}: {read}");
    }
    for name in ["geonameid", "population"] {
        assert!(
            matches!(fields[name].as_str(), Some("Integer" | "Integer64")),
            "{name} is an integer: {read}"
        );
    }
}

/// A catalog of 10,000 datasets: GDAL 3.6 follows the `next` links of
/// `/collections` to every one; OWSLib's `collections()` reads the first
/// page (1,000, with `numberMatched` and a `next` link) and its
/// `collection(id)` opens any of them.
#[tokio::test]
async fn gdal_and_owslib_reach_the_collections_of_a_catalog_of_ten_thousand() {
    use gdal::vector::LayerAccess;
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    let id = stack
        .ingest_geojson(&admin, &points(3), &[("visibility", "public")])
        .await;
    // 9,999 more records like it, straight into the catalog: the listing
    // is under test, not ingest.
    sqlx::query(
        "INSERT INTO datasets
         SELECT (jsonb_populate_record(d, jsonb_build_object(
                   'id', gen_random_uuid(), 'job_id', NULL,
                   'table_name', d.table_name || '_' || i, 'title', 'copy ' || i))).*
         FROM datasets d, generate_series(1, 9999) AS i WHERE d.id = $1::uuid",
    )
    .bind(&id)
    .execute(stack.pool())
    .await
    .unwrap();
    let last: String = sqlx::query_scalar("SELECT id::text FROM datasets WHERE title = 'copy 9999'")
        .fetch_one(stack.pool())
        .await
        .unwrap();

    let root = gdal::Dataset::open(format!("OAPIF:{}", stack.url("/api"))).unwrap();
    assert_eq!(root.layer_count(), 10_001, "10,000 datasets and the records");
    // (GDAL 3.6 asks a layer's first items page for its name: two, not all.)
    let ids: std::collections::HashSet<String> = sqlx::query_scalar("SELECT id::text FROM datasets")
        .fetch_all(stack.pool())
        .await
        .unwrap()
        .into_iter()
        .collect();
    for index in [1, 10_000] {
        let name = root.layer(index).unwrap().name();
        assert!(ids.contains(&name), "layer {index} is a dataset: {name}");
    }

    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let script = r#"
import json, sys
from owslib.ogcapi.features import Features
api = Features(sys.argv[1])
page = api.collections()
print(json.dumps({"page": len(page["collections"]), "matched": page.get("numberMatched"),
                  "next": any(l["rel"] == "next" for l in page["links"]),
                  "last": api.collection(sys.argv[2])["id"]}))
"#;
    let output = Command::new(python)
        .args(["-c", script, &stack.url("/api"), &last])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let owslib: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        owslib,
        json!({"page": 1000, "matched": 10_001, "next": true, "last": last})
    );
}
