//! Vector tiles read back by GDAL's MVT driver, cluster tiles, TileJSON,
//! signed tile templates (served whatever credential is sent, retired when
//! visibility or publication status changes) and embed tokens.
use std::process::Command;

use catalog_shared::auth::TokenKeys;
use catalog_tests::{Api, App, JWT_SECRET, Stack, StackOptions, data_file, metric_value, metrics_text};
use serde_json::{Value, json};

/// What GDAL's MVT driver reads from a tile: `ogrinfo -al` of it.
fn ogrinfo_tile(tile: &[u8], z: u32, x: u32, y: u32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tile.pbf");
    std::fs::write(&path, tile).unwrap();
    let output = Command::new("ogrinfo")
        .args(["-ro", "-al", "-oo"])
        .arg(format!("Z={z}"))
        .arg("-oo")
        .arg(format!("X={x}"))
        .arg("-oo")
        .arg(format!("Y={y}"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn feature_count(ogrinfo: &str) -> usize {
    ogrinfo.matches("\nOGRFeature(").count()
}

async fn get(stack: &impl Api, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = stack.http().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    stack.send(request).await
}

async fn points(stack: &impl Api, token: &str, visibility: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10.0, 10.0]}, "properties": {"name": "a", "rank": 1}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10.1, 10.1]}, "properties": {"name": "b", "rank": 2}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10.2, 10.0]}, "properties": {"name": "c", "rank": 3}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [-120.0, -40.0]}, "properties": {"name": "far", "rank": 4}}]});
    stack
        .ingest_geojson(token, &body, &[("visibility", visibility), ("title", "Points")])
        .await
}

#[tokio::test]
async fn vector_tiles_are_read_by_gdal() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let job = app
        .upload_ok(
            &admin,
            "world_map.gpkg",
            data_file("gpkg/world_map.gpkg"),
            &[("layer", "countries"), ("visibility", "public")],
        )
        .await;
    let job = app.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap();
    let dataset = app.dataset(&admin, id).await;
    let table = dataset["table_name"].as_str().unwrap();

    // The whole world at zoom 0, generalized: every country a pixel of a
    // 512-pixel tile across that the tile's grid can draw (Antarctica
    // included; not an archipelago of islands each under a tile unit), and
    // of the smaller ones those alone in their cell.
    let response = get(
        &app,
        &app.url(&format!("/api/tiles/{id}/0/0/0.pbf")),
        &[("origin", "https://viewer.example")],
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/vnd.mapbox-vector-tile");
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(response.headers()["cache-control"], "public, max-age=300");
    let tile = response.bytes().await.unwrap();
    let info = ogrinfo_tile(&tile, 0, 0, 0);
    assert!(info.contains(&format!("Layer name: {table}")), "{info}");
    let count = feature_count(&info);
    let wide: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT name FROM data.\"{table}\" WHERE greatest((ST_XMax(geom) - ST_XMin(geom)) / 360,
                (asinh(tan(radians(least(85.0511, ST_YMax(geom))))) - asinh(tan(radians(greatest(-85.0511, ST_YMin(geom))))))
                / (2 * pi())) >= 1.0 / 512 AND name IS NOT NULL
                AND ST_AsMVTGeom(ST_Transform(geom, 3857), ST_TileEnvelope(0, 0, 0), 4096, 64, true) IS NOT NULL"
    )))
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert!(
        wide.len() > 150 && count >= wide.len() && count < 240,
        "{count} countries at zoom 0"
    );
    for name in &wide {
        assert!(
            info.contains(&format!("name (String) = {name}\n")),
            "{name} is a pixel across: drawn at zoom 0"
        );
    }
    assert!(info.contains("name (String) = Antarctica"), "{info}");
    assert!(info.contains("MULTIPOLYGON") || info.contains("POLYGON"), "{info}");

    // A tile over Belgium holds Belgium and its neighbours, not Australia.
    let tile = get(&app, &app.url(&format!("/api/tiles/{id}/6/32/21")), &[])
        .await
        .bytes()
        .await
        .unwrap();
    let info = ogrinfo_tile(&tile, 6, 32, 21);
    assert!(info.contains("name (String) = Belgium"), "{info}");
    assert!(!info.contains("name (String) = Australia"), "{info}");
    // Monaco, too small for zoom 0, is there at zoom 6.
    let tile = get(&app, &app.url(&format!("/api/tiles/{id}/6/33/23")), &[])
        .await
        .bytes()
        .await
        .unwrap();
    assert!(ogrinfo_tile(&tile, 6, 33, 23).contains("name (String) = Monaco"));

    // The open Pacific at zoom 10 holds nothing.
    let response = get(&app, &app.url(&format!("/api/tiles/{id}/10/40/500.pbf")), &[]).await;
    assert_eq!(response.status(), 204);

    // Tiles are compressed for clients that accept it.
    let response = get(
        &app,
        &app.url(&format!("/api/tiles/{id}/1/1/0.pbf")),
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(response.headers()["content-encoding"], "gzip");

    for (path, status) in [("3/8/0", 404), ("25/0/0", 404), ("a/0/0", 404), ("1/0/-1", 404)] {
        let response = get(&app, &app.url(&format!("/api/tiles/{id}/{path}")), &[]).await;
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{path}");
    }

    let (status, tilejson) = app.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    assert_eq!(status, 200);
    assert_eq!(tilejson["tilejson"], "3.0.0");
    assert_eq!(tilejson["vector_layers"][0]["id"], table);
    assert_eq!(tilejson["vector_layers"][0]["fields"]["name"], "String");
    let template = tilejson["tiles"][0].as_str().unwrap();
    assert_eq!(template, app.url(&format!("/api/tiles/{id}/{{z}}/{{x}}/{{y}}.pbf?v=1")));
}

#[tokio::test]
async fn cluster_tiles_count_nearby_points() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = points(&app, &admin, "public").await;
    let tile = get(&app, &app.url(&format!("/api/tiles/{id}/cluster/0/0/0.pbf")), &[])
        .await
        .bytes()
        .await
        .unwrap();
    let info = ogrinfo_tile(&tile, 0, 0, 0);
    assert_eq!(feature_count(&info), 2, "{info}");
    assert!(info.contains("point_count (Integer) = 3"), "{info}");
    assert!(info.contains("point_count (Integer) = 1"), "{info}");
    // Up close the three points part.
    let plain = get(&app, &app.url(&format!("/api/tiles/{id}/0/0/0.pbf")), &[])
        .await
        .bytes()
        .await
        .unwrap();
    let info = ogrinfo_tile(&plain, 0, 0, 0);
    assert_eq!(feature_count(&info), 4, "{info}");
    assert!(
        info.contains("rank (Integer) = 4") || info.contains("rank (Integer64) = 4"),
        "{info}"
    );
}

#[tokio::test]
async fn signed_tile_templates_serve_until_publication_changes() {
    let app = App::start_with_worker().await;
    let (owner_id, owner) = app.user_token("olga", "editor").await;
    let (_, viewer) = app.user_token("vera", "viewer").await;
    let id = points(&app, &owner, "private").await;
    let plain = app.url(&format!("/api/tiles/{id}/0/0/0.pbf"));
    assert_eq!(get(&app, &plain, &[]).await.status(), 404);

    let token = |bearer: String| {
        let app = &app;
        let id = id.clone();
        async move {
            let (status, body) = app.get_json(Some(&bearer), &format!("/api/tiles/token/{id}")).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let signed = token(owner.clone()).await;
    assert_eq!(signed["scope"], format!("dataset:{id}"));
    let expires_in = signed["expires_in"].as_i64().unwrap();
    assert!((86_400..=172_800).contains(&expires_in), "{signed}");
    let template = signed["tile_url"].as_str().unwrap().to_string();
    let url = template.replace("{z}/{x}/{y}", "0/0/0");

    // A valid template is served whatever else is sent (rule 5).
    let expired = TokenKeys::new(JWT_SECRET)
        .issue_access(owner_id, 0, std::time::Duration::from_secs(0))
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let dead_bearer = format!("Bearer {expired}");
    for headers in [
        vec![],
        vec![("authorization", dead_bearer.as_str())],
        vec![("x-api-key", "sdc_garbage")],
    ] {
        let response = get(&app, &url, &headers).await;
        assert_eq!(response.status(), 200, "{headers:?}");
        assert_eq!(response.headers()["cache-control"], "private, max-age=60");
    }
    let tile = get(&app, &url, &[]).await.bytes().await.unwrap();
    assert_eq!(feature_count(&ogrinfo_tile(&tile, 0, 0, 0)), 4);
    let cluster = signed["cluster_tile_url"]
        .as_str()
        .unwrap()
        .replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(get(&app, &cluster, &[]).await.status(), 200);
    // The owner's TileJSON of a private dataset hands out signed tiles too.
    let (_, tilejson) = app
        .get_json(Some(&owner), &format!("/api/tiles/{id}/tilejson.json"))
        .await;
    let from_tilejson = tilejson["tiles"][0].as_str().unwrap().replace("{z}/{x}/{y}", "0/0/0");
    assert!(from_tilejson.contains("&sig="), "{tilejson}");
    assert_eq!(get(&app, &from_tilejson, &[]).await.status(), 200);

    // A tampered, foreign or partial template is no capability: the request
    // answers as its credential says (rule 4).
    let tampered = format!(
        "{}{}",
        &url[..url.len() - 1],
        if url.ends_with('0') { '1' } else { '0' }
    );
    let other = points(&app, &owner, "private").await;
    let foreign = url.replace(&format!("/tiles/{id}/"), &format!("/tiles/{other}/"));
    let partial = url.split("&sig=").next().unwrap().to_string();
    for candidate in [&tampered, &foreign, &partial] {
        assert_eq!(get(&app, candidate, &[]).await.status(), 404, "{candidate}");
        assert_eq!(
            get(&app, candidate, &[("authorization", &dead_bearer)]).await.status(),
            401,
            "{candidate}"
        );
        assert_eq!(
            get(&app, candidate, &[("authorization", &format!("Bearer {owner}"))])
                .await
                .status(),
            200
        );
    }

    // Ordinary edits keep templates alive.
    let patch = |body: Value| {
        let app = &app;
        let owner = owner.clone();
        let id = id.clone();
        async move {
            let response = app
                .send(
                    app.http()
                        .patch(app.url(&format!("/api/datasets/{id}")))
                        .bearer_auth(&owner)
                        .json(&body),
                )
                .await;
            assert_eq!(response.status(), 200);
            let dataset: Value = response.json().await.unwrap();
            dataset
        }
    };
    let before = patch(json!({"summary": "edited"})).await["publication_version"]
        .as_i64()
        .unwrap();
    assert_eq!(get(&app, &url, &[]).await.status(), 200);

    // A change of visibility rolls the publication version and retires it.
    let after = patch(json!({"visibility": "internal"})).await["publication_version"]
        .as_i64()
        .unwrap();
    assert_eq!(after, before + 1);
    assert_eq!(get(&app, &url, &[]).await.status(), 404);
    let renewed = token(viewer.clone()).await["tile_url"]
        .as_str()
        .unwrap()
        .replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(get(&app, &renewed, &[]).await.status(), 200);

    // So does withdrawing it from publication; only its owner sees it then.
    let unpublished = patch(json!({"status": "unpublished"})).await;
    assert_eq!(unpublished["publication_version"].as_i64().unwrap(), before + 2);
    assert_eq!(get(&app, &renewed, &[]).await.status(), 404);
    let (status, _) = app.get_json(Some(&viewer), &format!("/api/datasets/{id}")).await;
    assert_eq!(status, 404);
    let (status, _) = app
        .get_json(Some(&viewer), &format!("/api/collections/{id}/items"))
        .await;
    assert_eq!(status, 404);
    let (status, _) = app
        .get_json(Some(&owner), &format!("/api/collections/{id}/items"))
        .await;
    assert_eq!(status, 200);
    let response = app
        .send(
            app.http()
                .patch(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&owner)
                .json(&json!({"status": "hidden"})),
        )
        .await;
    assert_eq!(response.status(), 422);
}

#[tokio::test]
async fn embed_tokens_open_a_map_and_its_data_only() {
    let app = App::start_with_worker().await;
    let (owner_id, owner) = app.user_token("emil", "editor").await;
    let shown = points(&app, &owner, "private").await;
    let hidden = points(&app, &owner, "private").await;
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&owner)
                .json(&json!({"name": "Embedded", "layers": [{"dataset_id": shown}]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let map_id = map["id"].as_str().unwrap().to_string();

    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{map_id}/embed-tokens")))
                .bearer_auth(&owner)
                .json(&json!({"label": "intranet page"})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    let secret = created["token"].as_str().unwrap().to_string();
    let (status, listed) = app
        .get_json(Some(&owner), &format!("/api/maps/{map_id}/embed-tokens"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed[0]["label"], "intranet page");
    assert!(listed[0].get("token").is_none() && !listed.to_string().contains(&secret));

    let expired = TokenKeys::new(JWT_SECRET)
        .issue_access(owner_id, 0, std::time::Duration::from_secs(0))
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let dead_bearer = format!("Bearer {expired}");
    let embed = [("x-embed-token", secret.as_str())];
    let embed_and_dead = [
        ("x-embed-token", secret.as_str()),
        ("authorization", dead_bearer.as_str()),
    ];
    let covered = [
        format!("/api/maps/{map_id}"),
        format!("/api/maps/{map_id}/style.json"),
        format!("/api/collections/{shown}/items"),
        format!("/api/tiles/{shown}/0/0/0.pbf"),
        format!("/api/datasets/{shown}/features"),
    ];
    for path in &covered {
        assert_eq!(get(&app, &app.url(path), &[]).await.status(), 404, "{path}");
        assert_eq!(get(&app, &app.url(path), &embed).await.status(), 200, "{path}");
        assert_eq!(get(&app, &app.url(path), &embed_and_dead).await.status(), 200, "{path}");
    }
    // Outside what the token covers, the request is its credential's:
    // anonymous, so 404 for what it may not see, 401 where it needs one.
    for (path, anonymous) in [
        (format!("/api/collections/{hidden}/items"), 404),
        (format!("/api/datasets/{shown}"), 404),
        (format!("/api/maps/{map_id}/embed-tokens"), 401),
    ] {
        assert_eq!(get(&app, &app.url(&path), &embed).await.status(), anonymous, "{path}");
        assert_eq!(
            get(&app, &app.url(&path), &embed_and_dead).await.status(),
            401,
            "{path}"
        );
    }
    // An unknown token is no capability either.
    let bogus = [
        ("x-embed-token", "embed_bogus"),
        ("authorization", dead_bearer.as_str()),
    ];
    assert_eq!(get(&app, &app.url(&covered[0]), &bogus).await.status(), 401);

    // The style read through the token carries plain tile URLs: the page
    // sends the token with them, so revoking it stops the tiles too.
    let style: Value = get(&app, &app.url(&covered[1]), &embed).await.json().await.unwrap();
    let source = &style["sources"][format!("dataset-{shown}")];
    assert_eq!(source["type"], "vector");
    let template = source["tiles"][0].as_str().unwrap();
    assert!(!template.contains("sig="), "{style}");
    let tile = template.replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(get(&app, &tile, &embed).await.status(), 200);
    assert_eq!(get(&app, &tile, &[]).await.status(), 404);

    // A dataset its creator can no longer see is not handed on.
    sqlx::query("UPDATE datasets SET created_by = NULL, visibility = 'restricted' WHERE id = $1::uuid")
        .bind(&shown)
        .execute(&app.pool)
        .await
        .unwrap();
    let items = format!("/api/collections/{shown}/items");
    assert_eq!(get(&app, &app.url(&items), &embed).await.status(), 404);
    sqlx::query("UPDATE datasets SET created_by = $2::uuid, visibility = 'private' WHERE id = $1::uuid")
        .bind(&shown)
        .bind(owner_id.to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(get(&app, &app.url(&items), &embed).await.status(), 200);

    // Revoked: gone at once.
    let response = app
        .send(
            app.http()
                .delete(app.url(&format!(
                    "/api/maps/{map_id}/embed-tokens/{}",
                    created["id"].as_str().unwrap()
                )))
                .bearer_auth(&owner),
        )
        .await;
    assert_eq!(response.status(), 204);
    assert_eq!(get(&app, &app.url(&covered[0]), &embed).await.status(), 404);

    for body in [
        json!({"expires_at": "2001-01-01T00:00:00Z"}),
        json!({"label": "x".repeat(256)}),
        json!({"scope": "all"}),
    ] {
        let response = app
            .send(
                app.http()
                    .post(app.url(&format!("/api/maps/{map_id}/embed-tokens")))
                    .bearer_auth(&owner)
                    .json(&body),
            )
            .await;
        assert_eq!(response.status(), 422, "{body}");
    }
}

/// A signed template valid until `exp`, made as the service makes them.
fn template_query(dataset: &str, publication_version: i64, exp: i64) -> String {
    use hmac::{KeyInit, Mac};
    let scope = format!("dataset:{dataset}");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(format!("tile-template:{JWT_SECRET}").as_bytes()).unwrap();
    mac.update(format!("{scope}\n{exp}\n{publication_version}").as_bytes());
    let sig: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("scope={scope}&exp={exp}&sig={sig}")
}

/// TileJSON read through a signed template hands back a template that
/// expires when the presented one does, so a template cannot be renewed
/// by reading TileJSON with it.
#[tokio::test]
async fn tilejson_through_a_template_never_extends_it() {
    let stack = App::start_with_worker().await;
    let (_, owner) = stack.user_token("olga", "editor").await;
    let id = points(&stack, &owner, "private").await;
    let version = stack.dataset(&owner, &id).await["publication_version"]
        .as_i64()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let exp = now + 120;
    let query = template_query(&id, version, exp);
    let tile = stack.url(&format!("/api/tiles/{id}/0/0/0.pbf?{query}"));
    assert_eq!(get(&stack, &tile, &[]).await.status(), 200, "a valid template");

    let (status, tilejson) = stack
        .get_json(None, &format!("/api/tiles/{id}/tilejson.json?{query}"))
        .await;
    assert_eq!(status, 200, "{tilejson}");
    let handed = tilejson["tiles"][0].as_str().unwrap();
    let handed_exp: i64 = url::Url::parse(&handed.replace("{z}/{x}/{y}", "0/0/0"))
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "exp")
        .map(|(_, v)| v.parse().unwrap())
        .expect("a signed template");
    assert_eq!(
        handed_exp, exp,
        "the template handed back expires with the one presented: {handed}"
    );
    let again = handed.replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(get(&stack, &again, &[]).await.status(), 200);
}

/// A count from this API process's metrics scrape.
async fn tile_cache_lookups(stack: &Stack, base: &str, result: &str) -> u64 {
    let text = metrics_text(&stack.http, base, METRICS_TOKEN).await;
    metric_value(
        &text,
        &format!("catalog_tile_cache_lookups_total{{result=\"{result}\"}}"),
    ) as u64
}

const METRICS_TOKEN: &str = "scrape-token-0123456789abcdef";

#[tokio::test]
async fn cached_tiles_follow_every_write_in_every_api_process() {
    let mut stack = Stack::start_with(StackOptions::workers(1).env("METRICS_TOKEN", METRICS_TOKEN)).await;
    let other = stack.add_api().await;
    let (_, owner) = stack.user_token("tess", "editor").await;
    let id = points(&stack, &owner, "public").await;
    let tile_at = |base: &str| format!("{base}/api/tiles/{id}/0/0/0.pbf");
    let tile_of = |url: String, etag: Option<String>| {
        let mut request = stack.http.get(url);
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let etag = response.headers().get("etag").map(|v| v.to_str().unwrap().to_owned());
            let cache = response
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap().to_owned());
            (status, etag, cache, response.bytes().await.unwrap())
        }
    };
    let here = stack.url("");
    let here = here.trim_end_matches('/');

    // Both processes cut the same tile; a second read is a cache hit, and a
    // viewer that kept the ETag gets 304 with no body.
    let (status, etag, cache, tile) = tile_of(tile_at(here), None).await;
    assert_eq!(status, 200);
    assert_eq!(cache.as_deref(), Some("public, max-age=300"));
    assert_eq!(feature_count(&ogrinfo_tile(&tile, 0, 0, 0)), 4);
    let first = etag.expect("tiles carry an ETag");
    assert!(first.starts_with("W/\""), "{first}");
    let hits = tile_cache_lookups(&stack, here, "hit").await;
    let (status, etag, _, again) = tile_of(tile_at(here), None).await;
    assert_eq!((status, etag.as_deref()), (200, Some(first.as_str())));
    assert_eq!(again, tile);
    assert_eq!(tile_cache_lookups(&stack, here, "hit").await, hits + 1);
    let (status, etag, cache, body) = tile_of(tile_at(here), Some(first.clone())).await;
    assert_eq!((status, etag.as_deref(), body.len()), (304, Some(first.as_str()), 0));
    assert_eq!(cache.as_deref(), Some("public, max-age=300"));
    assert_eq!(tile_cache_lookups(&stack, here, "not_modified").await, 1);
    let (status, etag, _, tile) = tile_of(tile_at(&other), None).await;
    assert_eq!((status, etag.as_deref()), (200, Some(first.as_str())));
    assert_eq!(feature_count(&ogrinfo_tile(&tile, 0, 0, 0)), 4);

    // A new feature changes the tile in both processes at once.
    let response = stack
        .http
        .post(stack.url(&format!("/api/datasets/{id}/features")))
        .bearer_auth(&owner)
        .json(
            &json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [30, 30]},
                      "properties": {"name": "new", "rank": 5}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let mut after_edit = None;
    for base in [here, other.as_str()] {
        let (status, etag, _, tile) = tile_of(tile_at(base), Some(first.clone())).await;
        assert_eq!(status, 200, "{base}: an edit makes the old ETag stale");
        assert_ne!(etag.as_deref(), Some(first.as_str()));
        let info = ogrinfo_tile(&tile, 0, 0, 0);
        assert_eq!(feature_count(&info), 5, "{base}: {info}");
        assert!(info.contains("name (String) = new"), "{info}");
        after_edit = etag;
    }

    // A reupload replaces the data the tiles show.
    let replacement = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1.0, 1.0]}, "properties": {"name": "only", "rank": 9}}]});
    let response = stack
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &owner,
            "points.geojson",
            replacement.to_string().into_bytes(),
            &[],
        )
        .await;
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.unwrap();
    let job = stack.wait_job(&owner, accepted["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    for base in [here, other.as_str()] {
        let (status, etag, _, tile) = tile_of(tile_at(base), after_edit.clone()).await;
        assert_eq!(status, 200, "{base}: a reupload makes the old ETag stale");
        assert_ne!(etag, after_edit);
        let info = ogrinfo_tile(&tile, 0, 0, 0);
        assert_eq!(feature_count(&info), 1, "{base}: {info}");
        assert!(info.contains("name (String) = only"), "{info}");
    }

    // Made private, the tile is refused to anonymous viewers in both
    // processes even with a cached copy and a matching ETag, and the owner's
    // copy may be kept only by their own browser.
    let response = stack
        .http
        .patch(stack.url(&format!("/api/datasets/{id}")))
        .bearer_auth(&owner)
        .json(&json!({"visibility": "private"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (_, current, _, _) = tile_of(tile_at(here), None).await;
    assert_eq!(current, None, "refused tiles carry no ETag");
    for base in [here, other.as_str()] {
        // The other process hears of the change from the database's
        // announcement, at once in practice (on a loaded machine, within
        // moments; the specification allows a minute for metadata).
        let mut status = 0;
        for _ in 0..50 {
            status = tile_of(tile_at(base), after_edit.clone()).await.0;
            if status == 404 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(status, 404, "{base}");
    }
    let response = stack.http.get(tile_at(here)).bearer_auth(&owner).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "private, max-age=60");
}

/// Tile queries run on connections lent without a check: one whose request
/// was abandoned mid-query must give the next request its own tile, and
/// ones the database dropped must give way to new ones once it is back.
#[tokio::test]
async fn tile_connections_outlive_abandoned_requests_and_an_outage() {
    let stack = Stack::start_with(StackOptions::workers(1).env("TILE_CACHE_MB", "0")).await;
    let admin = stack.admin_token().await;
    // Enough points that a world tile takes a while to cut.
    let features: Vec<Value> = (0..60_000)
        .map(|i| {
            let (x, y) = (f64::from(i % 300) * 1.2 - 179.0, f64::from(i / 300) * 0.8 - 79.0);
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]}, "properties": {"n": i}})
        })
        .collect();
    let id = stack
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": features}),
            &[("visibility", "public"), ("title", "Grid")],
        )
        .await;
    let tile = |z: u32, x: u32, y: u32| stack.url(&format!("/api/tiles/{id}/{z}/{x}/{y}.pbf"));
    let small = get(&stack, &tile(8, 128, 127), &[]).await;
    assert_eq!(small.status(), 200);
    let small = small.bytes().await.unwrap();

    // Clients that give up mid-query: on the heaviest tile there is, the
    // cluster tile of the complete zoom (below it clusters are read from
    // counted cells, and every tile is bounded), abandoned at a third of
    // the time it takes to cut, whatever this machine's speed.
    let (_, tilejson) = stack.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    let complete = tilejson["vector_layers"][0]["complete_zoom"].as_u64().unwrap() as u32;
    let n = f64::from(1u32 << complete);
    let (x, y) = (((-100.0 + 180.0) / 360.0 * n) as u32, {
        let lat = (-40.0f64).to_radians();
        ((1.0 - lat.tan().asinh() / std::f64::consts::PI) / 2.0 * n) as u32
    });
    let heavy = stack.url(&format!("/api/tiles/{id}/cluster/{complete}/{x}/{y}"));
    let mut cuts = Vec::new();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let response = get(&stack, &heavy, &[]).await;
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
        cuts.push(started.elapsed());
    }
    // A quarter of the quickest cut: most requests are dropped while
    // their query runs, even if the machine speeds up meanwhile.
    cuts.sort();
    let patience = (cuts[0] / 4).max(std::time::Duration::from_millis(1));
    let mut abandoned = 0;
    for _ in 0..12 {
        abandoned += usize::from(stack.http.get(&heavy).timeout(patience).send().await.is_err());
    }
    assert!(
        abandoned >= 8,
        "{abandoned} of 12 requests given up after {patience:?} (a quarter of the quickest of {cuts:?})"
    );
    for _ in 0..20 {
        let again = get(&stack, &tile(8, 128, 127), &[]).await;
        assert_eq!(again.status(), 200);
        assert_eq!(
            again.bytes().await.unwrap(),
            small,
            "a tile answered with another query's result"
        );
    }
    let world = get(&stack, &tile(0, 0, 0), &[]).await;
    assert_eq!(world.status(), 200);
    let drawn = feature_count(&ogrinfo_tile(&world.bytes().await.unwrap(), 0, 0, 0));
    assert!(
        (1_000..=4_096).contains(&drawn),
        "the world's tile draws a point a cell of 8 pixels at most, not {drawn}"
    );

    stack.cut_database().await;
    let during = get(&stack, &tile(8, 128, 127), &[]).await;
    assert_eq!(during.status(), 503, "{}", during.text().await.unwrap());
    stack.restore_database().await;
    let after = get(&stack, &tile(8, 128, 127), &[]).await;
    assert_eq!(after.status(), 200, "the tile connections recover by themselves");
    assert_eq!(after.bytes().await.unwrap(), small);
}
