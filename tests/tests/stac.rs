//! The STAC API over the catalog: collections per kind, items that are
//! valid STAC and whose `self` links return them, item search driven by
//! pystac-client, and the assets that stay readable: COGs read in place
//! by GDAL (`gdalinfo /vsicurl/`) anonymously when public and through a
//! signed asset link when private, which lives `SIGNED_ASSET_TTL_SECONDS`
//! and ends with a change of publication.
use std::{
    collections::BTreeSet,
    process::Command,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use catalog_tests::{Api, App, Stack, StackOptions, data_file};
use gdal::{DriverManager, raster::Buffer, spatial_ref::SpatialRef};
use serde_json::{Value, json};

async fn dataset_at(api: &impl Api, token: &str, x: f64, visibility: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, 10.0]}, "properties": {}}]});
    api.ingest_geojson(token, &body, &[("visibility", visibility)]).await
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
    // `datasets`, the one collection of earlier versions, names both kinds.
    assert_eq!(result["collections"], json!(["vector"]));
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
    for (collections, matched) in [("other", 0), ("raster", 0), ("vector", 1), ("raster,vector", 1)] {
        let (status, page) = stack
            .get_json(
                None,
                &format!("/api/stac/search?bbox=99,0,101,20&collections={collections}"),
            )
            .await;
        assert_eq!(
            (status, &page["numberMatched"]),
            (200, &json!(matched)),
            "{collections}"
        );
    }
    assert_eq!(stack.get_json(None, "/api/stac/search?limit=0").await.0, 400);
    assert_eq!(stack.get_json(None, "/api/stac/search?bbox=1,2").await.0, 400);
    assert_eq!(stack.get_json(None, "/api/stac/search?datetime=yesterday").await.0, 400);
    assert_eq!(stack.get_json(None, "/api/stac/search?ids=not-an-id").await.0, 400);
}

/// A GeoTIFF in UTM zone 33N (EPSG:32633): 64 x 48 Byte pixels of 30 m.
fn utm_geotiff() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("utm.tif");
    let driver = DriverManager::get_driver_by_name("GTiff").unwrap();
    let mut ds = driver.create_with_band_type::<u8, _>(&path, 64, 48, 1).unwrap();
    ds.set_geo_transform(&UTM_TRANSFORM).unwrap();
    ds.set_spatial_ref(&SpatialRef::from_epsg(32633).unwrap()).unwrap();
    let pixels: Vec<u8> = (0..64 * 48).map(|i| (i % 64 * 4) as u8).collect();
    ds.rasterband(1)
        .unwrap()
        .write((0, 0), (64, 48), &mut Buffer::new((64, 48), pixels))
        .unwrap();
    drop(ds);
    std::fs::read(path).unwrap()
}

const UTM_TRANSFORM: [f64; 6] = [500_000.0, 30.0, 0.0, 5_600_000.0, 0.0, -30.0];

async fn ingest_raster(api: &impl Api, token: &str, name: &str, bytes: Vec<u8>, visibility: &str) -> String {
    let job = api.upload_ok(token, name, bytes, &[("visibility", visibility)]).await;
    let job = api.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

/// A GET with optional headers.
async fn get(api: &impl Api, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = api.http().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    api.send(request).await
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The `exp` of a signed link.
fn expiry(href: &str) -> i64 {
    let query = href.split_once('?').expect("a signed link").1;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "exp")
        .expect("exp")
        .1
        .parse()
        .unwrap()
}

fn link<'a>(document: &'a Value, rel: &str) -> &'a str {
    document["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == rel)
        .unwrap_or_else(|| panic!("no {rel} link: {document}"))["href"]
        .as_str()
        .unwrap()
}

/// What STAC 1.0.0 requires of every item (the core schema's required
/// fields), beside the validation by pystac in `stac_client.py`.
fn assert_core_item(item: &Value, id: &str, collection: &str) {
    assert_eq!(item["type"], "Feature");
    assert_eq!(item["stac_version"], "1.0.0");
    assert_eq!(item["id"], id);
    assert_eq!(item["collection"], collection);
    assert!(item["geometry"].is_object(), "{item}");
    assert_eq!(item["bbox"].as_array().map(Vec::len), Some(4), "{item}");
    assert!(item["properties"]["datetime"].is_string(), "{item}");
    assert!(item["assets"].as_object().is_some_and(|a| !a.is_empty()), "{item}");
    for (name, asset) in item["assets"].as_object().unwrap() {
        assert!(
            asset["href"].is_string() && asset["type"].is_string(),
            "{name}: {asset}"
        );
    }
    for rel in ["self", "root", "parent", "collection"] {
        link(item, rel);
    }
    for extension in item["stac_extensions"].as_array().unwrap() {
        assert!(
            extension
                .as_str()
                .unwrap()
                .starts_with("https://stac-extensions.github.io/")
        );
    }
}

#[tokio::test]
async fn items_are_valid_stac_and_their_assets_stay_readable() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    let key = stack.api_key(&admin, "read_only").await;
    let public_raster = ingest_raster(
        &stack,
        &admin,
        "elev.tif",
        data_file("raster/elev_luxembourg.tif"),
        "public",
    )
    .await;
    let private_raster = ingest_raster(&stack, &admin, "utm.tif", utm_geotiff(), "private").await;
    let public_vector = dataset_at(&stack, &admin, 1.0, "public").await;
    let private_vector = dataset_at(&stack, &admin, 2.0, "private").await;

    // The landing page leads to the collections and the conformance classes.
    let (_, landing) = stack.get_json(None, "/api/stac").await;
    let classes = landing["conformsTo"].as_array().unwrap();
    for class in ["collections", "ogcapi-features", "item-search", "core"] {
        assert!(
            classes.contains(&json!(format!("https://api.stacspec.org/v1.0.0/{class}"))),
            "{class}"
        );
    }
    let (status, conformance) = stack
        .get_json(None, &link(&landing, "conformance").replace(&stack.base, ""))
        .await;
    assert_eq!((status, &conformance["conformsTo"]), (200, &landing["conformsTo"]));
    let (status, listed) = stack
        .get_json(None, &link(&landing, "data").replace(&stack.base, ""))
        .await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = listed["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["vector", "raster"]);
    for collection in listed["collections"].as_array().unwrap() {
        assert_eq!(collection["type"], "Collection");
        assert_eq!(collection["license"], "various");
        assert_eq!(
            collection["extent"]["spatial"]["bbox"][0].as_array().map(Vec::len),
            Some(4)
        );
        for rel in ["self", "root", "parent", "items"] {
            link(collection, rel);
        }
        let (status, alone) = stack
            .get_json(None, &link(collection, "self").replace(&stack.base, ""))
            .await;
        assert_eq!((status, &alone), (200, collection));
    }
    // Anonymous callers see the public raster's extent only (Luxembourg).
    let raster_box = &listed["collections"][1]["extent"]["spatial"]["bbox"][0];
    assert!((raster_box[0].as_f64().unwrap() - 5.7417).abs() < 1e-3, "{raster_box}");
    let missing = get(&stack, &stack.url("/api/stac/collections/datasets"), &[]).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["content-type"], "application/problem+json");

    // Every item, read as its owner; its self link returns it.
    let mut items = std::collections::HashMap::new();
    for (kind, id) in [
        ("raster", &public_raster),
        ("raster", &private_raster),
        ("vector", &public_vector),
        ("vector", &private_vector),
    ] {
        let path = format!("/api/stac/collections/{kind}/items/{id}");
        let (status, item) = stack.get_json(Some(&admin), &path).await;
        assert_eq!(status, 200, "{item}");
        assert_core_item(&item, id, kind);
        assert_eq!(link(&item, "self"), stack.url(&path));
        assert_eq!(
            link(&item, "collection"),
            stack.url(&format!("/api/stac/collections/{kind}"))
        );
        let other = if kind == "raster" { "vector" } else { "raster" };
        let (status, _) = stack
            .get_json(Some(&admin), &format!("/api/stac/collections/{other}/items/{id}"))
            .await;
        assert_eq!(status, 404, "an item is in its own kind's collection only");
        items.insert(id.clone(), item);
    }
    let (status, _) = stack
        .get_json(None, &format!("/api/stac/collections/raster/items/{private_raster}"))
        .await;
    assert_eq!(status, 404, "a private item is hidden from others");

    // The public raster: its COG needs no credential, GDAL reads it in place.
    let item = &items[&public_raster];
    let data = &item["assets"]["data"];
    assert_eq!(data["type"], "image/tiff; application=geotiff; profile=cloud-optimized");
    assert_eq!(data["roles"], json!(["data"]));
    let href = data["href"].as_str().unwrap();
    assert_eq!(href, stack.url(&format!("/api/datasets/{public_raster}/download")));
    let info = catalog_tests::gdalinfo_vsicurl(href);
    assert!(info.contains("Size is 95, 90"), "{info}");
    let properties = &item["properties"];
    assert_eq!(properties["proj:code"], "EPSG:4326");
    assert_eq!(properties["proj:shape"], json!([90, 95]));
    assert_eq!(properties["proj:transform"].as_array().map(Vec::len), Some(6));
    let band = &data["raster:bands"][0];
    assert_eq!(band["data_type"], "int16");
    assert_eq!(band["nodata"], -32768.0);
    assert!(
        band["statistics"]["minimum"].as_f64() < band["statistics"]["maximum"].as_f64(),
        "{band}"
    );
    let extensions = item["stac_extensions"].as_array().unwrap();
    for name in ["projection", "raster", "web-map-links"] {
        assert!(
            extensions
                .iter()
                .any(|e| e.as_str().unwrap().contains(&format!("/{name}/"))),
            "{name}"
        );
    }
    let thumbnail = get(&stack, item["assets"]["thumbnail"]["href"].as_str().unwrap(), &[]).await;
    assert_eq!(thumbnail.status(), 200);
    assert_eq!(thumbnail.headers()["content-type"], "image/png");
    assert!(link(item, "xyz").ends_with("/{z}/{x}/{y}.png?v=1"), "{item}");

    // The private raster: a signed link any reader of the item can hand to
    // GDAL, living SIGNED_ASSET_TTL_SECONDS (an hour), not the download
    // token's two minutes.
    let item = &items[&private_raster];
    let properties = &item["properties"];
    assert_eq!(properties["proj:code"], "EPSG:32633");
    assert_eq!(properties["proj:shape"], json!([48, 64]));
    assert_eq!(
        properties["proj:transform"],
        json!([30.0, 0.0, 500000.0, 0.0, -30.0, 5600000.0])
    );
    assert_eq!(
        properties["proj:bbox"],
        json!([500000.0, 5598560.0, 501920.0, 5600000.0])
    );
    assert_eq!(item["assets"]["data"]["raster:bands"][0]["data_type"], "uint8");
    let signed = item["assets"]["data"]["href"].as_str().unwrap().to_string();
    assert!(signed.contains("sig="), "{signed}");
    let lifetime = expiry(&signed) - now();
    assert!((3590..=3600).contains(&lifetime), "{lifetime} s");
    let info = catalog_tests::gdalinfo_vsicurl(&signed);
    assert!(info.contains("Size is 64, 48") && info.contains("32633"), "{info}");
    let thumbnail = get(&stack, item["assets"]["thumbnail"]["href"].as_str().unwrap(), &[]).await;
    assert_eq!(thumbnail.status(), 200, "the thumbnail is a signed tile");
    assert_eq!(thumbnail.headers()["content-type"], "image/png");
    let xyz = link(item, "xyz").replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(get(&stack, &xyz, &[]).await.status(), 200);

    // The COG route itself: anonymous is asked for a credential; the
    // caller's own credentials open it with ranges.
    let cog = stack.url(&format!("/api/datasets/{private_raster}/download"));
    let refused = get(&stack, &cog, &[("range", "bytes=0-99")]).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["content-type"], "application/problem+json");
    let bearer_key = format!("Bearer {key}");
    let bearer_session = format!("Bearer {admin}");
    for (how, header) in [
        ("X-Api-Key", ("x-api-key", key.as_str())),
        ("an API key as bearer", ("authorization", bearer_key.as_str())),
        ("a session", ("authorization", bearer_session.as_str())),
    ] {
        let part = get(&stack, &cog, &[header, ("range", "bytes=0-99")]).await;
        assert_eq!(part.status(), 206, "{how}");
        assert_eq!(part.bytes().await.unwrap().len(), 100, "{how}");
    }
    // Tampered or moved, a signed link opens nothing.
    let mut tampered = signed.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    assert_eq!(get(&stack, &tampered, &[]).await.status(), 401);
    let moved = signed.replace(&private_raster, &public_raster);
    assert_eq!(get(&stack, &moved, &[]).await.status(), 200, "public data opens anyway");
    let moved = signed.replace(&private_raster, &private_vector);
    assert_eq!(
        get(&stack, &moved, &[]).await.status(),
        401,
        "signed for another dataset"
    );
    // Each kind of signature opens its own routes only.
    let asset_query = signed.split_once('?').unwrap().1;
    let tile = stack.url(&format!("/api/tiles/{private_raster}/0/0/0.png?{asset_query}"));
    assert_eq!(get(&stack, &tile, &[]).await.status(), 404);
    let template_query = link(item, "xyz").split_once('?').unwrap().1;
    assert_eq!(get(&stack, &format!("{cog}?{template_query}"), &[]).await.status(), 401);

    // TileJSON gives the same signed COG link.
    let (_, tilejson) = stack
        .get_json(Some(&admin), &format!("/api/tiles/{private_raster}/tilejson.json"))
        .await;
    let enclosure = link(&tilejson, "enclosure");
    assert!(enclosure.contains("sig="), "{tilejson}");
    assert_eq!(get(&stack, enclosure, &[("range", "bytes=0-9")]).await.status(), 206);

    // Vector items: one asset per download format, and their features.
    for (id, public) in [(&public_vector, true), (&private_vector, false)] {
        let item = &items[id];
        for (name, media_type) in [
            ("gpkg", "application/geopackage+sqlite3"),
            ("geojson", "application/geo+json"),
            ("csv", "text/csv"),
            ("shp", "application/zip"),
            ("fgb", "application/flatgeobuf"),
            ("parquet", "application/vnd.apache.parquet"),
        ] {
            let asset = &item["assets"][name];
            assert_eq!(asset["type"], media_type, "{name}");
            assert_eq!(asset["href"].as_str().unwrap().contains("sig="), !public, "{name}");
        }
        let geojson = get(&stack, item["assets"]["geojson"]["href"].as_str().unwrap(), &[]).await;
        assert_eq!(geojson.status(), 200);
        let features: Value = geojson.json().await.unwrap();
        assert_eq!(features["features"].as_array().map(Vec::len), Some(1));
        let parquet = get(&stack, item["assets"]["parquet"]["href"].as_str().unwrap(), &[]).await;
        assert_eq!(parquet.status(), 200);
        let bytes = parquet.bytes().await.unwrap();
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"), "a Parquet file");
        let (status, page) = stack
            .get_json(Some(&admin), &link(item, "items").replace(&stack.base, ""))
            .await;
        assert_eq!((status, page["features"].as_array().map(Vec::len)), (200, Some(1)));
    }

    // A collection's items page as search does, in that collection only.
    let (status, page) = stack
        .get_json(Some(&admin), "/api/stac/collections/raster/items?limit=1")
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (&page["numberMatched"], &page["numberReturned"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(page["features"][0]["collection"], "raster");
    for rel in ["self", "root", "parent", "collection"] {
        link(&page, rel);
    }
    let (status, rest) = stack
        .get_json(Some(&admin), &link(&page, "next").replace(&stack.base, ""))
        .await;
    assert_eq!(status, 200);
    assert_eq!(rest["numberReturned"], 1);
    assert_ne!(rest["features"][0]["id"], page["features"][0]["id"]);
    let (_, boxed) = stack
        .get_json(None, "/api/stac/collections/vector/items?bbox=0.5,9,1.5,11")
        .await;
    assert_eq!(boxed["features"][0]["id"], public_vector.as_str(), "{boxed}");
    assert_eq!(boxed["numberMatched"], 1, "the private one stays hidden");
    let (status, _) = stack
        .get_json(None, "/api/stac/collections/vector/items?sortby=keywords")
        .await;
    assert_eq!(status, 400, "a field the route does not sort by");

    // pystac-client: collections, search, each item validated, its self link
    // and its data asset opened (the asset with no credential).
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let script = catalog_tests::package_dir().join("clients/stac_client.py");
    let output = Command::new(python)
        .args([script.to_str().unwrap(), &stack.url("/api/stac"), &key])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let by_kind = |a: &str, b: &str| {
        let mut ids = vec![a.to_string(), b.to_string()];
        ids.sort();
        json!(ids)
    };
    assert_eq!(
        seen["collections"],
        json!({"vector": by_kind(&public_vector, &private_vector), "raster": by_kind(&public_raster, &private_raster)})
    );
    let seen = seen["items"].as_object().unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (id, kind, media_type) in [
        (
            &public_raster,
            "raster",
            "image/tiff; application=geotiff; profile=cloud-optimized",
        ),
        (
            &private_raster,
            "raster",
            "image/tiff; application=geotiff; profile=cloud-optimized",
        ),
        (&public_vector, "vector", "application/geo+json"),
        (&private_vector, "vector", "application/geo+json"),
    ] {
        let found = &seen[id.as_str()];
        assert_eq!(found["collection"], kind, "{found}");
        assert_eq!(
            (&found["self_status"], &found["self_id"]),
            (&json!(200), &json!(id)),
            "{found}"
        );
        assert_eq!(found["self_collection"], kind, "{found}");
        assert_eq!(found["data_status"], 206, "{found}");
        assert_eq!(found["data_type"], media_type, "{found}");
    }

    // A change of visibility ends every signed link of the dataset.
    let response = stack
        .send(
            stack
                .http
                .patch(stack.url(&format!("/api/datasets/{private_raster}")))
                .bearer_auth(&admin)
                .json(&json!({"visibility": "internal"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(get(&stack, &signed, &[]).await.status(), 401);
    assert_eq!(get(&stack, enclosure, &[]).await.status(), 401);
}

/// A signed asset link opens its COG until its expiry, and from then on
/// is refused like no credential at all.
#[tokio::test]
async fn signed_asset_links_end_at_their_expiry() {
    const TTL: i64 = 5;
    let ttl = TTL.to_string();
    let app = App::start_with_worker_and(&[("SIGNED_ASSET_TTL_SECONDS", &ttl)]).await;
    let admin = app.admin_token().await;
    let id = ingest_raster(&app, &admin, "utm.tif", utm_geotiff(), "private").await;
    let (_, item) = app
        .get_json(Some(&admin), &format!("/api/stac/collections/raster/items/{id}"))
        .await;
    let signed = item["assets"]["data"]["href"].as_str().unwrap().to_string();
    let exp = expiry(&signed);
    assert!(exp - now() <= TTL, "{signed}");
    assert_eq!(get(&app, &signed, &[("range", "bytes=0-9")]).await.status(), 206);
    while now() <= exp {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let refused = get(&app, &signed, &[("range", "bytes=0-9")]).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["content-type"], "application/problem+json");
}

/// A POST search with `body`: its status and its document.
async fn search_post(app: &App, body: &Value) -> (u16, Value) {
    let response = app.send(app.http.post(app.url("/api/stac/search")).json(body)).await;
    let status = response.status().as_u16();
    if status >= 400 {
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{body}");
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What STAC API item-search refuses is refused, not answered some other
/// way: a `limit` past the maximum is taken as 200 (OGC API Features), a
/// `datetime` that is no date-time or interval of them, a POST `bbox` that
/// is no array of numbers, and a parameter search does not take are 400
/// problems; the landing page's `service-desc` names the type the
/// OpenAPI document is answered with.
#[tokio::test]
async fn stac_search_refuses_what_item_search_does_not_take() {
    let app = App::start().await;
    // 201 published public datasets (records only: search reads no data).
    sqlx::query(
        "INSERT INTO datasets (id, title, schema_name, table_name, geometry_type, visibility, extent_bbox)
         SELECT gen_random_uuid(), 'Point ' || i, 'data', 'stac_' || i, 'Point', 'public', ARRAY[i * 0.1, 1, i * 0.1, 1]
           FROM generate_series(1, 201) i",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let has_next = |page: &Value| page["links"].as_array().unwrap().iter().any(|l| l["rel"] == "next");

    // A limit past 200 is taken as 200, in the query string and the body,
    // on search and on a collection's items.
    for path in [
        "/api/stac/search?limit=201",
        "/api/stac/search?limit=1000",
        "/api/stac/search?limit=100000",
        "/api/stac/collections/vector/items?limit=5000",
    ] {
        let (status, page) = app.get_json(None, path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert_eq!(page["numberReturned"], 200, "{path}");
        assert_eq!(page["numberMatched"], 201, "{path}");
        assert!(has_next(&page), "{path}");
    }
    let (status, page) = search_post(&app, &json!({"limit": 5000})).await;
    assert_eq!((status, &page["numberReturned"]), (200, &json!(200)), "{page}");
    let (_, page) = app.get_json(None, "/api/stac/search?limit=200").await;
    assert_eq!(page["numberReturned"], 200);
    for limit in ["0", "-1", "ten"] {
        let (status, _) = app.get_json(None, &format!("/api/stac/search?limit={limit}")).await;
        assert_eq!(status, 400, "limit={limit}");
    }

    // datetime: a date-time, two of them, or one with an open end.
    let t = "1985-04-12T23:20:50Z";
    for datetime in [
        t.to_string(),
        "1985-04-12T23:20:50.52+01:00".to_string(),
        format!("{t}/.."),
        format!("../{t}"),
        format!("{t}/"),
        format!("/{t}"),
        format!("{t}/2100-01-01T00:00:00Z"),
    ] {
        let query: String = url::form_urlencoded::byte_serialize(datetime.as_bytes()).collect();
        let (status, page) = app.get_json(None, &format!("/api/stac/search?datetime={query}")).await;
        assert_eq!(status, 200, "{datetime}: {page}");
        let (status, page) = search_post(&app, &json!({"datetime": datetime})).await;
        assert_eq!(status, 200, "POST {datetime}: {page}");
    }
    for datetime in [
        "/",
        "../..",
        "/..",
        "../",
        "..",
        "",
        "1985-04-12",
        "1985-04-12/..",
        "../1985-04-12",
        "1985-04-12T23:20:50",
        "2100-01-01T00:00:00Z/1985-04-12T23:20:50Z",
        "yesterday",
    ] {
        let query: String = url::form_urlencoded::byte_serialize(datetime.as_bytes()).collect();
        let (status, _) = app.get_json(None, &format!("/api/stac/search?datetime={query}")).await;
        assert_eq!(status, 400, "GET datetime={datetime:?}");
        let (status, _) = search_post(&app, &json!({"datetime": datetime})).await;
        assert_eq!(status, 400, "POST datetime={datetime:?}");
        let (status, _) = app
            .get_json(None, &format!("/api/stac/collections/vector/items?datetime={query}"))
            .await;
        assert_eq!(status, 400, "items datetime={datetime:?}");
    }

    // A POST bbox is an array of 4 or 6 numbers.
    let (status, page) = search_post(&app, &json!({"bbox": [0, 0, 1, 2]})).await;
    assert_eq!((status, &page["numberMatched"]), (200, &json!(10)), "{page}");
    let (status, _) = search_post(&app, &json!({"bbox": [0, 0, -1, 1, 2, 3]})).await;
    assert_eq!(status, 200);
    for bbox in [
        json!("0,0,1,2"),
        json!(["0", "0", "1", "2"]),
        json!([0, 0, 1]),
        json!([0, 0, 1, 2, 3]),
        json!([[0, 0], [1, 2]]),
        json!({"west": 0}),
        json!(7),
    ] {
        let (status, _) = search_post(&app, &json!({ "bbox": bbox })).await;
        assert_eq!(status, 400, "bbox {bbox}");
    }

    // A parameter (or member) item search does not take is a 400, and so
    // is a field it neither filters nor sorts by (Filter and Sort: bulk.rs).
    for query in [
        "sortby=keywords",
        "fields=id",
        "f=json",
        "filter=keywords%3D'a'",
        "query=%7B%7D",
        "page=2",
    ] {
        let (status, problem) = app.get_json(None, &format!("/api/stac/search?{query}")).await;
        assert_eq!(status, 400, "{query}: {problem}");
    }
    for body in [
        json!({"sortby": [{"field": "keywords", "direction": "asc"}]}),
        json!({"fields": {"include": ["id"]}}),
        json!({"filter": {"op": "=", "args": [{"property": "keywords"}, 1]}}),
        json!({"limit": 1, "page": 2}),
        json!({"limit": "ten"}),
    ] {
        let (status, _) = search_post(&app, &body).await;
        assert_eq!(status, 400, "{body}");
    }
    // What it takes, together, is searched.
    let (status, page) = app
        .get_json(
            None,
            "/api/stac/search?bbox=0,0,1,2&datetime=../2100-01-01T00:00:00Z&collections=vector&limit=3",
        )
        .await;
    assert_eq!((status, &page["numberReturned"]), (200, &json!(3)), "{page}");

    // service-desc: the type the OpenAPI document is answered with, on the
    // STAC landing page and the OGC API one.
    let openapi = app.send(app.http.get(app.url("/api/openapi.json"))).await;
    assert_eq!(openapi.status(), 200);
    let served = openapi.headers()["content-type"].to_str().unwrap().to_string();
    for landing in ["/api/stac", "/api"] {
        let (_, document) = app.get_json(None, landing).await;
        let desc = document["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rel"] == "service-desc")
            .unwrap_or_else(|| panic!("{landing}: {document}"));
        assert_eq!(desc["type"], served.as_str(), "{landing}");
        assert_eq!(desc["href"], app.url("/api/openapi.json"), "{landing}");
    }
}

/// stac-api-validator, offline (`clients/stac_validate.py` serves every
/// schema it fetches from copies on this machine), over the conformance
/// classes the landing page declares, on a vector and a raster dataset.
#[tokio::test]
async fn stac_api_validator_finds_no_error() {
    let app = Stack::start_with(StackOptions::workers(1)).await;
    let admin = app.admin_token().await;
    let vector = app
        .upload_ok(
            &admin,
            "nc.gpkg",
            data_file("gpkg/nc.gpkg"),
            &[("visibility", "public")],
        )
        .await;
    let raster = app
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("visibility", "public")],
        )
        .await;
    for job in [vector, raster] {
        assert_eq!(app.wait_job(&admin, &job).await["status"], "succeeded");
    }
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let mut command = Command::new(python);
    command
        .arg(catalog_tests::package_dir().join("clients/stac_validate.py"))
        .args(["--root-url", &app.url("/api/stac"), "--collection", "vector"])
        .args([
            "--geometry",
            r#"{"type": "Polygon", "coordinates": [[[-80, 34], [-78, 34], [-78, 36], [-80, 36], [-80, 34]]]}"#,
        ]);
    for class in [
        "core",
        "collections",
        "features",
        "item-search",
        "filter",
        "item-search#sort",
        "features#sort",
    ] {
        command.args(["--conformance", class]);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = &stdout[stdout.find("Warnings").unwrap_or(0)..];
    assert!(
        output.status.success() && report.contains("Errors: none"),
        "{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// pystac-client's `search(filter=..., sortby=...)`, CQL2 text over GET and
/// CQL2 JSON over POST, returns what a local filter and sort of every item
/// gives, in that order, across pages.
#[tokio::test]
async fn pystac_client_filters_and_sorts_as_a_local_filter_of_every_item() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    for (title, count) in [
        ("place 1", 1),
        ("place 2", 2),
        ("place 3", 3),
        ("place 4", 4),
        ("place 5", 5),
        ("other", 7),
    ] {
        let features: Vec<Value> = (0..count)
            .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64, count as f64]}, "properties": {"n": i}}))
            .collect();
        let body = json!({"type": "FeatureCollection", "features": features});
        stack
            .ingest_geojson(&admin, &body, &[("title", title), ("visibility", "public")])
            .await;
    }
    let raster = stack
        .upload_ok(
            &admin,
            "elev.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[("visibility", "public")],
        )
        .await;
    assert_eq!(stack.wait_job(&admin, &raster).await["status"], "succeeded");

    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let output = Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/pystac_filter.py"))
        .arg(stack.url("/api/stac"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["every"], 7, "{result}");
    for (case, expected) in [("text", 4), ("json", 4)] {
        let found = &result["cases"][case];
        assert_eq!(found["served"], found["local"], "{case}: {result}");
        assert_eq!(found["local"].as_array().unwrap().len(), expected, "{case}: {result}");
    }
}

/// A filter nested past the limit, as text or JSON, on GET or POST, is a
/// 400 answered at once; the service answers the next request.
#[tokio::test]
async fn deep_stac_filters_are_refused_and_nothing_falls_over() {
    let app = App::start().await;
    let text = format!("{}title = 'a'{}", "(".repeat(5000), ")".repeat(5000));
    let mut json_filter = json!({"op": "=", "args": [{"property": "title"}, "a"]});
    for _ in 0..300 {
        json_filter = json!({"op": "not", "args": [json_filter]});
    }
    let not_chain = format!("{}title = 'a'", "NOT ".repeat(5000));
    for filter in [text.as_str(), not_chain.as_str()] {
        let response = app
            .send(app.http().get(app.url("/api/stac/search")).query(&[("filter", filter)]))
            .await;
        assert_eq!(response.status(), 400, "GET text of {} bytes", filter.len());
    }
    let response = app
        .send(
            app.http()
                .post(app.url("/api/stac/search"))
                .json(&json!({"filter": json_filter, "filter-lang": "cql2-json"})),
        )
        .await;
    assert_eq!(response.status(), 400, "POST JSON nested 300 deep");
    let (status, _) = app.get_json(None, "/api/stac/search?filter=title%20%3D%20'a'").await;
    assert_eq!(status, 200, "the service still answers");
}
