//! The built-in basemap: its style (valid for MapLibre's validator, all
//! URLs on this service), its vector tiles as GDAL reads them, the glyphs
//! its labels need, and new maps exported on it.

use catalog_tests::{Api, App, layer_ids, ogrinfo_of_tile, validate_style};
use pbf_font_tools::{Glyphs, prost::Message};
use serde_json::{Value, json};

/// The features of each layer of a tile, as GDAL's MVT driver reads them:
/// (layer, properties as `ogrinfo` prints them).
fn tile_features(tile: &[u8], (z, x, y): (u32, u32, u32)) -> String {
    ogrinfo_of_tile(tile, (z, u64::from(x), u64::from(y)))
}

/// What `ogrinfo` printed of `layer`.
fn layer_in<'a>(ogrinfo: &'a str, layer: &str) -> &'a str {
    ogrinfo
        .split("\nLayer name: ")
        .find(|section| section.starts_with(&format!("{layer}\n")))
        .unwrap_or_default()
}

/// How many features `ogrinfo` printed for `layer`.
fn count_in(ogrinfo: &str, layer: &str) -> usize {
    layer_in(ogrinfo, layer).matches("\nOGRFeature(").count()
}

#[tokio::test]
async fn the_basemap_serves_land_borders_and_names_to_anyone() {
    let app = App::start().await;
    let (status, style) = app.get_json(None, "/api/basemap/style.json").await;
    assert_eq!(status, 200);
    validate_style(&style);
    let base = app.base();
    assert_eq!(
        style["glyphs"],
        format!("{base}/api/basemap/fonts/{{fontstack}}/{{range}}.pbf")
    );
    assert_eq!(
        style["sources"]["countries"]["tiles"],
        json!([format!("{base}/api/basemap/tiles/{{z}}/{{x}}/{{y}}.pbf")])
    );

    // The whole world: every country and the borders between them; no
    // name yet at zoom 0, then the biggest countries' first.
    let response = app.send(app.http.get(app.url("/api/basemap/tiles/0/0/0.pbf"))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/vnd.mapbox-vector-tile");
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    let world = tile_features(&response.bytes().await.unwrap(), (0, 0, 0));
    assert!(count_in(&world, "earth") > 200, "{world}");
    assert!(count_in(&world, "boundary") > 100);
    assert_eq!(count_in(&world, "place"), 0);
    let response = app.send(app.http.get(app.url("/api/basemap/tiles/1/1/0.pbf"))).await;
    let north_east = tile_features(&response.bytes().await.unwrap(), (1, 1, 0));
    let names = layer_in(&north_east, "place");
    assert!(names.contains("name (String) = Russia"), "{north_east}");
    assert!(
        !names.contains("name (String) = Luxembourg"),
        "small countries are named later"
    );

    // Western Europe at zoom 5: Luxembourg's name, its borders; for a
    // viewer on any site.
    let response = app
        .send(
            app.http
                .get(app.url("/api/basemap/tiles/5/16/10.pbf"))
                .header("origin", "https://viewer.example"),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let europe = tile_features(&response.bytes().await.unwrap(), (5, 16, 10));
    let names = layer_in(&europe, "place");
    assert!(names.contains("name (String) = Luxembourg"), "{europe}");
    assert!(names.contains("class (String) = country"));
    assert!(count_in(&europe, "boundary") >= 3);

    // The same for everyone: a stale or wrong credential is not read.
    let response = app
        .send(
            app.http
                .get(app.url("/api/basemap/tiles/5/16/10.pbf"))
                .bearer_auth("expired-or-garbage"),
        )
        .await;
    assert_eq!(response.status(), 200);

    // Conditional requests, and what is not a basemap tile.
    let response = app
        .send(
            app.http
                .get(app.url("/api/basemap/tiles/0/0/0"))
                .header("if-none-match", &etag),
        )
        .await;
    assert_eq!(response.status(), 304);
    // What is no basemap tile is the caller's mistake (a 400), not a tile
    // that is missing: past zoom 6 (the style's maxzoom), outside the
    // matrix, a template sent as is.
    for (path, status) in [
        ("/api/basemap/tiles/7/0/0.pbf", 400),
        ("/api/basemap/tiles/2/4/0.pbf", 400),
        ("/api/basemap/tiles/2/0/4.pbf", 400),
        ("/api/basemap/tiles/a/0/0.pbf", 400),
        ("/api/basemap/tiles/%7Bz%7D/%7Bx%7D/%7By%7D.pbf", 400),
    ] {
        let response = app.send(app.http.get(app.url(path))).await;
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
}

async fn glyphs(app: &App, stack: &str, range: &str) -> Glyphs {
    let response = app
        .send(app.http.get(app.url(&format!("/api/basemap/fonts/{stack}/{range}"))))
        .await;
    assert_eq!(response.status(), 200, "{stack} {range}");
    assert_eq!(response.headers()["content-type"], "application/x-protobuf");
    Glyphs::decode(response.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn labels_get_glyphs_whatever_font_they_name() {
    let app = App::start().await;
    // The basemap's own font: Latin letters as signed distance fields.
    let latin = glyphs(&app, "DejaVu%20Sans%20Book", "0-255.pbf").await;
    let stack = &latin.stacks[0];
    assert_eq!(stack.range, "0-255");
    let a = stack.glyphs.iter().find(|g| g.id == u32::from('A')).expect("an A");
    assert!(a.width > 0 && a.height > 0 && a.advance > 0);
    assert!(a.bitmap.as_ref().is_some_and(|b| !b.is_empty()));
    // "São Tomé", "Curaçao", "Côte d'Ivoire" and Cyrillic names.
    let extended = glyphs(&app, "DejaVu%20Sans%20Book", "1024-1279.pbf").await;
    assert!(extended.stacks[0].glyphs.iter().any(|g| g.id == 0x0416), "Ж");

    // A stack of fonts this service lacks (as styles written for other
    // servers name them) still gets glyphs, from the default font.
    let fallback = glyphs(
        &app,
        "Open%20Sans%20Regular,Arial%20Unicode%20MS%20Regular",
        "0-255.pbf",
    )
    .await;
    assert_eq!(fallback.stacks[0].glyphs.len(), stack.glyphs.len());

    // A stack is only ever compared with the fonts' names, never made a path.
    let traversal = glyphs(&app, "..%2F..%2F..%2F..%2Fetc%2Fpasswd", "0-255.pbf").await;
    assert_eq!(traversal.stacks[0].glyphs.len(), stack.glyphs.len());

    // A range that is not one of the 256 is the caller's mistake: a 400.
    for range in ["1-256.pbf", "0-511.pbf", "65536-65791.pbf", "x.pbf", "%7Brange%7D.pbf"] {
        let response = app
            .send(
                app.http
                    .get(app.url(&format!("/api/basemap/fonts/DejaVu%20Sans%20Book/{range}"))),
            )
            .await;
        assert_eq!(response.status(), 400, "{range}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{range}"
        );
    }
}

#[tokio::test]
async fn new_maps_sit_on_the_basemap() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let response = app
        .send(
            app.http
                .post(app.url("/api/maps"))
                .bearer_auth(&token)
                .json(&json!({"name": "Plain"})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    assert_eq!(map["basemap_style"], "/api/basemap/style.json");
    let id = map["id"].as_str().unwrap();
    let (status, style) = app.get_json(Some(&token), &format!("/api/maps/{id}/style.json")).await;
    assert_eq!(status, 200);
    validate_style(&style);
    let base = app.base();
    assert_eq!(
        style["sources"]["basemap-countries"]["tiles"],
        json!([format!("{base}/api/basemap/tiles/{{z}}/{{x}}/{{y}}.pbf")])
    );
    assert_eq!(
        style["glyphs"],
        format!("{base}/api/basemap/fonts/{{fontstack}}/{{range}}.pbf")
    );
    let ids = layer_ids(&style);
    assert!(ids.contains(&"basemap-place-country"), "{ids:?}");

    // Labels hidden and the basemap over the data: the settings apply to
    // it, and its own background (which would hide the data) is left out.
    let response = app
        .send(
            app.http
                .put(app.url(&format!("/api/maps/{id}")))
                .bearer_auth(&token)
                .json(&json!({
                    "show_basemap_labels": false,
                    "basemap_config": {"basemap_position": "top", "boundary_visibility": "hidden"}
                })),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (_, style) = app.get_json(Some(&token), &format!("/api/maps/{id}/style.json")).await;
    let layers = style["layers"].as_array().unwrap();
    let layer = |id: &str| layers.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("{id}"));
    assert_eq!(layer("basemap-place-country")["layout"]["visibility"], "none");
    assert_eq!(layer("basemap-boundary-country")["layout"]["visibility"], "none");
    assert!(layers.iter().all(|l| l["id"] != "basemap-water"), "{layers:?}");
}

#[tokio::test]
async fn a_dataset_opens_in_any_maplibre_viewer_over_the_basemap() {
    let stack = catalog_tests::Stack::start_with(catalog_tests::StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [6.1, 49.6]}, "properties": {"name": "a"}}]});
    let id = stack
        .ingest_geojson(&token, &body, &[("visibility", "private"), ("title", "Stops")])
        .await;
    let (status, style) = stack
        .get_json(Some(&token), &format!("/api/tiles/{id}/style.json"))
        .await;
    assert_eq!(status, 200);
    validate_style(&style);
    assert_eq!(style["name"], "Stops");
    let ids = layer_ids(&style);
    assert_eq!(
        ids,
        [
            "water",
            "land",
            "coastline",
            "boundary-country",
            "data-point",
            "place-country"
        ],
        "the points over the land, under the names"
    );
    // A private dataset's TileJSON comes signed, so a viewer needs no credential.
    let tilejson = style["sources"]["data"]["url"].as_str().unwrap().to_string();
    assert!(tilejson.contains("&sig="), "{tilejson}");
    let response = stack.send(stack.http.get(&tilejson)).await;
    assert_eq!(response.status(), 200);
    let tiles: Value = response.json().await.unwrap();
    let tile = tiles["tiles"][0].as_str().unwrap().replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(stack.send(stack.http.get(&tile)).await.status(), 200);
    // Nobody else learns it exists.
    let (status, _) = stack.get_json(None, &format!("/api/tiles/{id}/style.json")).await;
    assert_eq!(status, 404);
}

/// Land is where the countries are, at every longitude: no ring of the
/// source that crosses the antimeridian (Chukotka, Wrangel Island, a Fijian
/// island) becomes a band of land round the globe across the oceans, and
/// the land on both sides of 180° is kept.
#[tokio::test]
async fn no_band_of_land_crosses_the_oceans() {
    let app = App::start().await;
    let land_at = |lon: f64, lat: f64| {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT min(name) FROM basemap.countries
             WHERE ST_Intersects(geom, ST_Transform(ST_SetSRID(ST_MakePoint($1, $2), 4326), 3857))",
        )
        .bind(lon)
        .bind(lat)
        .fetch_one(&app.pool)
    };
    // The open sea at the latitudes of the rings that crossed 180°.
    for (lon, lat) in [(-30.0, 67.5), (0.0, 66.0), (-140.0, 71.2), (-120.0, -16.45)] {
        assert_eq!(
            land_at(lon, lat).await.unwrap(),
            None,
            "land in the sea at {lon}, {lat}"
        );
    }
    // Both sides of the antimeridian are still land.
    assert_eq!(land_at(175.0, 67.0).await.unwrap().as_deref(), Some("Russia"));
    assert_eq!(land_at(-175.0, 65.0).await.unwrap().as_deref(), Some("Russia"));
    assert_eq!(
        land_at(-179.5, 71.2).await.unwrap().as_deref(),
        Some("Russia"),
        "Wrangel Island"
    );
    // And every part of a country but Antarctica's round the pole spans less than half the globe.
    let wide: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT name FROM basemap.countries, ST_Dump(ST_Transform(geom, 4326)) d
         WHERE ST_XMax(d.geom) - ST_XMin(d.geom) > 180 AND name <> 'Antarctica'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(wide.is_empty(), "{wide:?}");
}
