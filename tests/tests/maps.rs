//! Maps: validation at every bound, visibility, optimistic concurrency,
//! forks, share links, and MapLibre style export and import.

use catalog_tests::{Api, App, layer_ids, validate_style};
use serde_json::{Value, json};

async fn point_dataset(app: &App, token: &str, visibility: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"name": "a"}}]});
    app.ingest_geojson(token, &body, &[("visibility", visibility), ("title", "p")])
        .await
}

async fn line_dataset(app: &App, token: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}, "properties": {}}]});
    app.ingest_geojson(token, &body, &[]).await
}

async fn post_map(app: &impl Api, token: &str, body: &Value) -> reqwest::Response {
    app.send(app.http().post(app.url("/api/maps/")).bearer_auth(token).json(body))
        .await
}

#[tokio::test]
async fn maps_are_created_read_updated_and_deleted() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("mara", "editor").await;
    let (_, other) = app.user_token("otto", "editor").await;
    let dataset = point_dataset(&app, &owner, "private").await;
    let response = post_map(&app, &owner, &json!({"name": "City", "description": "d"})).await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let id = map["id"].as_str().unwrap().to_string();
    for field in [
        "id",
        "name",
        "description",
        "center_lng",
        "center_lat",
        "zoom",
        "bearing",
        "pitch",
        "basemap_style",
        "show_basemap_labels",
        "visibility",
        "created_by",
        "created_at",
        "updated_at",
        "layers",
        "layer_count",
    ] {
        assert!(map.get(field).is_some(), "{field}");
    }
    assert_eq!(map["visibility"], "private");
    assert_eq!(map["basemap_config"]["label_mode"], "full");
    assert_eq!(map["basemap_config"]["opacity"], 1.0);
    assert_eq!(
        map["basemap_config"]["basemap_position"], "bottom",
        "the documented default"
    );
    assert_eq!(
        map["basemap_config"]["projection"], "mercator",
        "the documented default"
    );
    assert_eq!(map["layer_count"], 0);
    assert_eq!(map["created_by_username"], "mara");
    let nulls: Value = post_map(
        &app,
        &owner,
        &json!({"name": "Nulls", "basemap_config": {"basemap_position": null, "projection": null}}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        nulls["basemap_config"]["basemap_position"], "bottom",
        "null means the default"
    );
    assert_eq!(nulls["basemap_config"]["projection"], "mercator");

    let path = format!("/api/maps/{id}");
    let put = |token: &str, body: Value, if_match: Option<String>| {
        let mut request = app
            .http()
            .put(app.url(&path))
            .bearer_auth(token.to_string())
            .json(&body);
        if let Some(tag) = if_match {
            request = request.header("If-Match", tag);
        }
        app.send(request)
    };
    let layers = json!([{"dataset_id": dataset, "sort_order": 2, "paint": {"circle-color": "#ff0000"}, "display_name": "Points"}]);
    let response = put(
        &owner,
        json!({"zoom": 5, "center_lng": 10, "center_lat": 50, "layers": layers}),
        None,
    )
    .await;
    assert_eq!(response.status(), 200);
    let tag = response.headers()["etag"].to_str().unwrap().to_string();
    let updated: Value = response.json().await.unwrap();
    assert_eq!(updated["name"], "City", "absent fields keep their value");
    assert_eq!(updated["layer_count"], 1);
    let layer = &updated["layers"][0];
    assert_eq!(layer["dataset_name"], "p");
    assert_eq!(layer["dataset_geometry_type"], "Point");
    assert!(layer["dataset_table_name"].is_string() && layer["dataset_extent_bbox"].is_array());
    assert_eq!(layer["dataset_feature_count"], 1);
    assert_eq!(layer["layer_type"], "vector_service");
    assert_eq!(layer["show_in_legend"], true);

    // Optimistic concurrency: a stale ETag is a conflict.
    assert_eq!(
        put(&owner, json!({"name": "Town"}), Some(tag.clone())).await.status(),
        200
    );
    assert_eq!(put(&owner, json!({"name": "Village"}), Some(tag)).await.status(), 409);

    assert_eq!(app.get_json(Some(&other), &path).await.0, 404, "private");
    assert_eq!(put(&other, json!({"name": "x"}), None).await.status(), 404);
    assert_eq!(put(&owner, json!({"visibility": "internal"}), None).await.status(), 200);
    assert_eq!(
        app.get_json(Some(&other), &path).await.0,
        200,
        "internal: any signed-in user"
    );
    assert_eq!(app.get_json(None, &path).await.0, 404);
    assert_eq!(
        put(&other, json!({"name": "x"}), None).await.status(),
        403,
        "visible but not theirs"
    );
    let (_, list) = app.get_json(Some(&other), "/api/maps").await;
    assert_eq!(list["total"], 1);

    // A layer may only use a dataset the caller can see.
    let theirs = point_dataset(&app, &other, "private").await;
    let response = put(&owner, json!({"layers": [{"dataset_id": theirs}]}), None).await;
    assert_eq!(response.status(), 422);
    let problem: Value = response.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("layers[0].dataset_id"),
        "{problem}"
    );

    let fork = app
        .send(app.http().post(app.url(&format!("{path}/fork"))).bearer_auth(&other))
        .await;
    assert_eq!(fork.status(), 422, "the fork would use a dataset the forker cannot see");
    let deleted = app.send(app.http().delete(app.url(&path)).bearer_auth(&owner)).await;
    assert_eq!(deleted.status(), 204);
    assert_eq!(app.get_json(Some(&owner), &path).await.0, 404);
}

#[tokio::test]
async fn every_bound_is_enforced() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dataset = point_dataset(&app, &token, "private").await;
    let layer = |extra: Value| {
        let mut l = json!({"dataset_id": dataset});
        l.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        l
    };
    let sub = |extra: Value| json!({"basemap_config": {"sublayer_overrides": {"roads": extra}}});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "name",
            json!({"name": "n".repeat(255)}),
            json!({"name": "n".repeat(256)}),
        ),
        ("name empty", json!({"name": "n"}), json!({"name": ""})),
        (
            "description",
            json!({"description": "d".repeat(2000)}),
            json!({"description": "d".repeat(2001)}),
        ),
        (
            "notes",
            json!({"notes": "n".repeat(50_000)}),
            json!({"notes": "n".repeat(50_001)}),
        ),
        ("zoom", json!({"zoom": 24}), json!({"zoom": 24.01})),
        ("pitch", json!({"pitch": 85}), json!({"pitch": 85.1})),
        ("bearing low", json!({"bearing": -180}), json!({"bearing": -180.1})),
        ("bearing high", json!({"bearing": 180}), json!({"bearing": 180.1})),
        (
            "basemap_style",
            json!({"basemap_style": "s".repeat(2000)}),
            json!({"basemap_style": "s".repeat(2001)}),
        ),
        (
            "legend_title",
            json!({"legend_title": "l".repeat(120)}),
            json!({"legend_title": "l".repeat(121)}),
        ),
        (
            "visibility",
            json!({"visibility": "public"}),
            json!({"visibility": "everyone"}),
        ),
        (
            "plugins",
            json!({"plugins": vec!["p"; 50]}),
            json!({"plugins": vec!["p"; 51]}),
        ),
        (
            "layers",
            json!({"layers": vec![json!({"dataset_id": dataset}); 200]}),
            json!({"layers": vec![json!({"dataset_id": dataset}); 201]}),
        ),
        (
            "sort_order high",
            json!({"layers": [layer(json!({"sort_order": 32767}))]}),
            json!({"layers": [layer(json!({"sort_order": 32768}))]}),
        ),
        (
            "sort_order low",
            json!({"layers": [layer(json!({"sort_order": 0}))]}),
            json!({"layers": [layer(json!({"sort_order": -1}))]}),
        ),
        (
            "layer opacity",
            json!({"layers": [layer(json!({"opacity": 1}))]}),
            json!({"layers": [layer(json!({"opacity": 1.01}))]}),
        ),
        (
            "display_name",
            json!({"layers": [layer(json!({"display_name": "d".repeat(255)}))]}),
            json!({"layers": [layer(json!({"display_name": "d".repeat(256)}))]}),
        ),
        (
            "layer_type",
            json!({"layers": [layer(json!({"layer_type": "geojson"}))]}),
            json!({"layers": [layer(json!({"layer_type": "wms"}))]}),
        ),
        (
            "popup expression",
            json!({"layers": [layer(json!({"popup_config": {"enabled": true, "expression": "e".repeat(500)}}))]}),
            json!({"layers": [layer(json!({"popup_config": {"enabled": true, "expression": "e".repeat(501)}}))]}),
        ),
        (
            "popup fields",
            json!({"layers": [layer(json!({"popup_config": {"enabled": true, "visible_fields": vec!["f"; 100]}}))]}),
            json!({"layers": [layer(json!({"popup_config": {"enabled": true, "visible_fields": vec!["f"; 101]}}))]}),
        ),
        (
            "popup enabled",
            json!({"layers": [layer(json!({"popup_config": {"enabled": false}}))]}),
            json!({"layers": [layer(json!({"popup_config": {}}))]}),
        ),
        (
            "basemap opacity",
            json!({"basemap_config": {"opacity": 1}}),
            json!({"basemap_config": {"opacity": 1.5}}),
        ),
        (
            "label_mode",
            json!({"basemap_config": {"label_mode": "subtle"}}),
            json!({"basemap_config": {"label_mode": "loud"}}),
        ),
        (
            "land_water_tone",
            json!({"basemap_config": {"land_water_tone": "monochrome"}}),
            json!({"basemap_config": {"land_water_tone": "sepia"}}),
        ),
        (
            "relief_contrast",
            json!({"basemap_config": {"relief_contrast": "strong"}}),
            json!({"basemap_config": {"relief_contrast": "extreme"}}),
        ),
        (
            "basemap_position",
            json!({"basemap_config": {"basemap_position": "top"}}),
            json!({"basemap_config": {"basemap_position": "middle"}}),
        ),
        (
            "projection",
            json!({"basemap_config": {"projection": "globe"}}),
            json!({"basemap_config": {"projection": "mollweide"}}),
        ),
        (
            "stroke_color",
            sub(json!({"stroke_color": "#A0b1C2"})),
            sub(json!({"stroke_color": "red"})),
        ),
        (
            "casing_color",
            sub(json!({"casing_color": "#000000"})),
            sub(json!({"casing_color": "#00000"})),
        ),
        (
            "stroke_width",
            sub(json!({"stroke_width": 20})),
            sub(json!({"stroke_width": 20.5})),
        ),
        (
            "casing_width",
            sub(json!({"casing_width": 20})),
            sub(json!({"casing_width": 21})),
        ),
        ("min_zoom", sub(json!({"min_zoom": 24})), sub(json!({"min_zoom": 25}))),
        ("max_zoom", sub(json!({"max_zoom": 24})), sub(json!({"max_zoom": 24.5}))),
        (
            "override opacity",
            sub(json!({"opacity": 1})),
            sub(json!({"opacity": 1.1})),
        ),
        (
            "override fields",
            sub(json!({"opacity": null})),
            sub(json!({"glow": 1})),
        ),
        (
            "exaggeration",
            json!({"terrain_config": {"enabled": true, "exaggeration": 3}}),
            json!({"terrain_config": {"enabled": true, "exaggeration": 3.01}}),
        ),
    ];
    for (what, inside, outside) in cases {
        let mut ok = json!({"name": "Bounds"});
        ok.as_object_mut().unwrap().extend(inside.as_object().unwrap().clone());
        let response = post_map(&app, &token, &ok).await;
        assert_eq!(response.status(), 201, "{what} just inside");
        let mut bad = json!({"name": "Bounds"});
        bad.as_object_mut()
            .unwrap()
            .extend(outside.as_object().unwrap().clone());
        let response = post_map(&app, &token, &bad).await;
        assert_eq!(response.status(), 422, "{what} just outside");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
    assert_eq!(
        post_map(&app, &token, &json!({"description": "no name"}))
            .await
            .status(),
        422
    );
}

#[tokio::test]
async fn share_links_serve_read_only_until_revoked() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let map: Value = post_map(&app, &token, &json!({"name": "Shared"}))
        .await
        .json()
        .await
        .unwrap();
    let id = map["id"].as_str().unwrap();
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{id}/shares")))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(response.status(), 201);
    let share: Value = response.json().await.unwrap();
    let link = format!("/api/maps/shared/{}", share["token"].as_str().unwrap());
    assert!(share["api_url"].as_str().unwrap().ends_with(&link));
    let shares = format!("/api/maps/{id}/shares");
    let (status, listed) = app.get_json(Some(&token), &shares).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["shares"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["shares"][0]["token"], share["token"]);
    assert_eq!(listed["shares"][0]["url"], share["url"]);
    assert_eq!(
        app.get_json(None, &shares).await.0,
        404,
        "nobody else is told the map exists"
    );
    let page = format!("/maps/shared/{}", share["token"].as_str().unwrap());
    assert_eq!(
        share["url"].as_str().unwrap(),
        app.url(&page),
        "people get the web UI's page"
    );
    let (status, shared) = app.get_json(None, &link).await;
    assert_eq!(status, 200);
    assert_eq!(shared["name"], "Shared");
    let garbage = app
        .send(app.http().get(app.url(&link)).header("X-Api-Key", "garbage"))
        .await;
    assert_eq!(garbage.status(), 200, "the link reads no credential");
    assert_eq!(app.get_json(None, "/api/maps/shared/unknown-token").await.0, 404);
    let revoke = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/maps/{id}/shares/{}", share["token"].as_str().unwrap())))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(revoke.status(), 204);
    assert_eq!(app.get_json(None, &link).await.0, 410);
    let (_, listed) = app.get_json(Some(&token), &shares).await;
    assert_eq!(listed["shares"], json!([]), "a revoked link is no longer listed");
    let with_key = app
        .send(app.http().get(app.url(&link)).header("X-Api-Key", "garbage"))
        .await;
    assert_eq!(with_key.status(), 410, "whatever credential is sent");
}

#[tokio::test]
async fn styles_validate_and_round_trip() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let points = point_dataset(&app, &token, "private").await;
    let lines = line_dataset(&app, &token).await;
    let body = json!({
        "name": "Layers", "description": "Several kinds", "zoom": 6, "center_lng": 4.5, "center_lat": 51.2, "bearing": 10, "pitch": 30,
        "basemap_style": "https://tiles.example/{z}/{x}/{y}.png",
        "basemap_config": {"label_mode": "subtle", "opacity": 0.8, "background_color": "#eeeeee", "basemap_position": "bottom",
                           "land_water_tone": "muted", "relief_contrast": "standard", "projection": "globe"},
        "terrain_config": {"enabled": true, "source_dataset_id": points, "exaggeration": 1.5},
        "plugins": ["measure"], "legend_title": "Legend",
        "layers": [
            {"dataset_id": points, "sort_order": 1, "paint": {"circle-radius": 7}, "opacity": 0.5, "display_name": "Stops",
             "popup_config": {"enabled": true, "visible_fields": ["name"]}, "filter": ["==", ["get", "name"], "a"]},
            {"dataset_id": lines, "sort_order": 0, "visible": false, "layout": {"line-cap": "round"}, "show_in_legend": false},
            {"dataset_id": points, "sort_order": 2, "layer_type": "geojson", "display_name": "Stops as GeoJSON"}
        ]
    });
    let map: Value = post_map(&app, &token, &body).await.json().await.unwrap();
    let id = map["id"].as_str().unwrap();
    let (status, style) = app.get_json(Some(&token), &format!("/api/maps/{id}/style.json")).await;
    assert_eq!(status, 200);
    assert_eq!(style["version"], 8);
    assert!(
        style["sprite"].is_array() && style["sprite"][0]["id"].is_string() && style["sprite"][0]["url"].is_string()
    );
    assert_eq!(style["center"], json!([4.5, 51.2]));
    assert_eq!(style["terrain"]["exaggeration"], 1.5);
    let kinds: Vec<&str> = style["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["background", "raster", "hillshade", "line", "circle", "circle"],
        "basemap below, layers in draw order"
    );
    assert_eq!(style["projection"]["type"], "globe");
    assert_eq!(
        style["layers"][1]["paint"]["raster-saturation"], -0.5,
        "a muted basemap"
    );
    let line = &style["layers"][3];
    assert_eq!(line["layout"]["visibility"], "none");
    let circle = &style["layers"][4];
    assert_eq!(circle["paint"]["circle-opacity"], 0.5);
    assert_eq!(circle["paint"]["circle-radius"], 7);
    // Vector layers draw the service's tiles, signed for a private dataset
    // so a browser needs no credential; GeoJSON layers its items.
    let tiles = style["sources"][format!("dataset-{points}")]["tiles"][0]
        .as_str()
        .unwrap();
    assert!(
        tiles.starts_with(&format!(
            "{}/api/tiles/{points}/{{z}}/{{x}}/{{y}}.pbf?v=1&scope=",
            app.base()
        )),
        "{tiles}"
    );
    assert!(tiles.contains("&sig="), "{tiles}");
    let table = app.dataset(&token, &points).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(circle["source-layer"], table);
    let tile = app.send(app.http().get(tiles.replace("{z}/{x}/{y}", "0/0/0"))).await;
    assert_eq!(tile.status(), 200, "the signed tile URL serves with no credential");
    let geojson = style["sources"][format!("dataset-{points}-geojson")]["data"]
        .as_str()
        .unwrap();
    assert!(
        geojson.starts_with(&format!("{}/api/collections/{points}/items", app.base())),
        "{geojson}"
    );
    assert_eq!(style["layers"][5]["source"], format!("dataset-{points}-geojson"));
    assert!(style["layers"][5].get("source-layer").is_none());
    validate_style(&style);
    let sprite = style["sprite"][0]["url"].as_str().unwrap();
    for suffix in [".json", "@2x.json", ".png", "@2x.png"] {
        let response = app.send(app.http().get(format!("{sprite}{suffix}"))).await;
        assert_eq!(response.status(), 200, "the sprite {suffix} loads");
    }

    // Export, import, export: the same document.
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps/import"))
                .bearer_auth(&token)
                .json(&style),
        )
        .await;
    assert_eq!(response.status(), 201);
    let imported: Value = response.json().await.unwrap();
    assert_eq!(imported["layer_count"], 3);
    assert_eq!(imported["layers"][1]["display_name"], "Stops");
    let (_, again) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", imported["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(again, style, "export → import → export round trip");

    // A plain MapLibre style: sprite as a string, layers found by source URL.
    let foreign = json!({
        "version": 8, "name": "Foreign", "sprite": "https://sprites.example/sprite",
        "sources": {"pts": {"type": "geojson", "data": format!("{}/api/collections/{points}/items", app.base())}},
        "layers": [{"id": "p", "type": "circle", "source": "pts", "paint": {"circle-opacity": 0.25, "circle-color": "#123456"}}]
    });
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps/import"))
                .bearer_auth(&token)
                .json(&foreign),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    assert_eq!(map["layers"][0]["opacity"], 0.25);
    assert_eq!(map["layers"][0]["paint"], json!({"circle-color": "#123456"}));
    let (_, exported) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    validate_style(&exported);
    let old = app
        .send(
            app.http()
                .post(app.url("/api/maps/import"))
                .bearer_auth(&token)
                .json(&json!({"version": 7, "layers": []})),
        )
        .await;
    assert_eq!(old.status(), 422);
}

/// Serves the basemap style fixture on loopback; answers its URL and a
/// counter of the requests it saw.
async fn serve_basemap() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let style = std::fs::read(catalog_tests::package_dir().join("fixtures/basemap/style.json")).unwrap();
    let app = axum::Router::new().route(
        "/styles/bright.json",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let style = style.clone();
            async move { ([("content-type", "application/json")], style) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/styles/bright.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits)
}

fn layer<'a>(style: &'a Value, id: &str) -> &'a Value {
    style["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no layer {id} in {style:#}"))
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[tokio::test]
async fn vector_basemaps_follow_the_basemap_settings() {
    let (basemap_url, hits) = serve_basemap().await;
    let host = basemap_url.split('/').nth(2).unwrap().to_string();
    let app = App::start_with_worker_and(&[("OUTBOUND_ALLOWED_HOSTS", host.as_str())]).await;
    let token = app.admin_token().await;
    let points = point_dataset(&app, &token, "private").await;
    let body = json!({
        "name": "On a vector basemap", "zoom": 5, "center_lng": 4.5, "center_lat": 51.2,
        "basemap_style": basemap_url,
        "basemap_config": {
            "label_mode": "subtle", "road_visibility": "subtle", "boundary_visibility": "hidden",
            "building_visibility": false, "land_water_tone": "monochrome", "opacity": 0.8,
            "background_color": "#eeeeee",
            "sublayer_overrides": {
                "roads": {"stroke_color": "#ff0000", "casing_color": "#000000", "casing_width": 3},
                "boundary_country": {"min_zoom": 3, "max_zoom": 12},
                "a-key-this-basemap-does-not-have": {"opacity": 0.1}
            }
        },
        "layers": [{"dataset_id": points}]
    });
    let map: Value = post_map(&app, &token, &body).await.json().await.unwrap();
    let id = map["id"].as_str().unwrap();
    let (status, style) = app.get_json(Some(&token), &format!("/api/maps/{id}/style.json")).await;
    assert_eq!(status, 200);
    validate_style(&style);

    let ids = layer_ids(&style);
    assert_eq!(ids.first(), Some(&"background"));
    assert_eq!(ids.last(), Some(&"layer-0"), "data above the basemap: {ids:?}");
    assert_eq!(ids.len(), 2 + 16, "every basemap layer, renamed: {ids:?}");
    assert_eq!(
        style["sources"]["basemap-openmaptiles"]["url"],
        "https://tiles.example.org/planet.json"
    );
    assert_eq!(layer(&style, "basemap-water")["source"], "basemap-openmaptiles");
    assert_eq!(style["glyphs"], "https://fonts.example.org/{fontstack}/{range}.pbf");
    assert_eq!(
        style["sprite"],
        json!([{"id": "default", "url": "https://sprites.example.org/bright"}])
    );

    // Labels subtle (0.6) under the master opacity (0.8).
    assert!(close(
        &layer(&style, "basemap-place_city")["paint"]["text-opacity"],
        0.9 * 0.6 * 0.8
    ));
    assert!(close(
        &layer(&style, "basemap-water_name")["paint"]["text-opacity"],
        0.6 * 0.8
    ));
    // An icon without text is no label: only the master opacity.
    assert!(close(&layer(&style, "basemap-poi_icon")["paint"]["icon-opacity"], 0.8));
    // Roads subtle (0.4), zoom curves scaled stop by stop, overrides on top.
    let motorway = layer(&style, "basemap-road_motorway");
    assert!(close(&motorway["paint"]["line-opacity"], 0.9 * 0.4 * 0.8));
    assert_eq!(motorway["paint"]["line-color"], "#ff0000");
    let casing = layer(&style, "basemap-road_motorway_casing");
    assert_eq!(casing["paint"]["line-color"], "#000000");
    assert_eq!(casing["paint"]["line-width"], 3.0);
    let road_label = layer(&style, "basemap-road_label");
    assert!(
        close(&road_label["paint"]["text-opacity"], 0.4 * 0.6 * 0.8),
        "{road_label}"
    );
    let wood = &layer(&style, "basemap-landcover-wood")["paint"]["fill-opacity"];
    assert_eq!(wood[0], "interpolate");
    assert!(close(&wood[4], 0.4 * 0.8) && close(&wood[6], 0.8 * 0.8), "{wood}");
    // Boundaries and buildings hidden; sublayer zooms applied.
    for hidden in [
        "basemap-boundary_country",
        "basemap-boundary_state",
        "basemap-building",
        "basemap-building-3d",
    ] {
        assert_eq!(layer(&style, hidden)["layout"]["visibility"], "none", "{hidden}");
    }
    assert_eq!(layer(&style, "basemap-boundary_country")["minzoom"], 3.0);
    assert_eq!(layer(&style, "basemap-boundary_country")["maxzoom"], 12.0);
    // Land and water toned to grey; the background colour replaced.
    assert_eq!(
        layer(&style, "basemap-water")["paint"]["fill-color"],
        "rgba(183, 183, 183, 1)"
    );
    assert_eq!(
        layer(&style, "basemap-park")["paint"]["fill-color"],
        "rgba(201, 201, 201, 0.5)"
    );
    assert_eq!(
        layer(&style, "basemap-background")["paint"]["background-color"],
        "rgba(238, 238, 238, 1)"
    );
    // Not land or water: colours untouched.
    assert_eq!(layer(&style, "basemap-road_minor")["paint"]["line-color"], "#ff0000");
    assert_eq!(layer(&style, "basemap-place_city")["paint"]["text-color"], "#333");

    // Round trip, and the basemap fetched once for all of it.
    let imported: Value = app
        .send(
            app.http()
                .post(app.url("/api/maps/import"))
                .bearer_auth(&token)
                .json(&style),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(imported["layer_count"], 1, "basemap layers are not map layers");
    let (_, again) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", imported["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(again, style, "export → import → export round trip");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Labels hidden, by mode or by show_basemap_labels.
    for settings in [
        json!({"basemap_config": {"label_mode": "hidden"}}),
        json!({"show_basemap_labels": false}),
    ] {
        let mut body = json!({"name": "Quiet", "basemap_style": basemap_url});
        body.as_object_mut()
            .unwrap()
            .extend(settings.as_object().unwrap().clone());
        let map: Value = post_map(&app, &token, &body).await.json().await.unwrap();
        let (_, style) = app
            .get_json(
                Some(&token),
                &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
            )
            .await;
        for label in ["basemap-place_city", "basemap-road_label", "basemap-water_name"] {
            assert_eq!(
                layer(&style, label)["layout"]["visibility"],
                "none",
                "{settings}: {label}"
            );
        }
        assert!(layer(&style, "basemap-poi_icon")["layout"].get("visibility").is_none());
        assert!(
            layer(&style, "basemap-road_motorway")["layout"]
                .get("visibility")
                .is_none()
        );
        validate_style(&style);
    }

    // A basemap that cannot be loaded leaves the export without it.
    let body = json!({"name": "Offline basemap", "basemap_style": "http://10.255.255.1/style.json", "layers": [{"dataset_id": points}]});
    let map: Value = post_map(&app, &token, &body).await.json().await.unwrap();
    let (status, style) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200);
    let ids = layer_ids(&style);
    assert_eq!(ids, vec!["background", "layer-0"]);
    validate_style(&style);
}

#[tokio::test]
async fn map_lists_carry_each_map_with_its_own_layers() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let points = point_dataset(&app, &token, "private").await;
    let lines = line_dataset(&app, &token).await;
    let mut made = Vec::new();
    for (name, layers) in [
        ("none", json!([])),
        ("one", json!([{"dataset_id": lines}])),
        (
            "two",
            json!([{"dataset_id": points, "sort_order": 5}, {"dataset_id": lines, "sort_order": 1}]),
        ),
    ] {
        let map: Value = post_map(&app, &token, &json!({"name": name, "layers": layers}))
            .await
            .json()
            .await
            .unwrap();
        made.push(map);
    }
    let (status, list) = app.get_json(Some(&token), "/api/maps?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], 3);
    let names: Vec<&str> = list["maps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["two", "one"], "most recently changed first, paged");
    let two = &list["maps"][0];
    assert_eq!(two["layer_count"], 2);
    assert_eq!(two["layers"][0]["dataset_id"], json!(lines), "draw order");
    assert_eq!(two["layers"][1]["dataset_id"], json!(points));
    assert_eq!(two, &made[2], "a listed map is the map");
    assert_eq!(list["maps"][1]["layers"][0]["dataset_id"], json!(lines));
    let (_, rest) = app.get_json(Some(&token), "/api/maps?limit=2&offset=2").await;
    assert_eq!(rest["maps"][0]["name"], "none");
    assert_eq!(rest["maps"][0]["layers"], json!([]));
}

/// A grantee puts a restricted dataset on a public map: every reader the
/// dataset itself answers 404 to (anonymous, a viewer without a grant, the
/// shared link) sees the layer as unavailable and nothing that describes
/// the data, in the map, the map list, the shared link and the style.
#[tokio::test]
async fn maps_show_each_reader_only_the_layers_it_may_see() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("olga", "editor").await;
    let (grantee_id, grantee) = app.user_token("gus", "editor").await;
    let (_, viewer) = app.user_token("vera", "viewer").await;
    let secret = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [7.5, 46.5]},
         "properties": {"wellcode": "classified-value-123"}}]});
    let restricted = app
        .ingest_geojson(
            &owner,
            &secret,
            &[("visibility", "restricted"), ("title", "Secret wells")],
        )
        .await;
    let table = app.dataset(&owner, &restricted).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    let public = point_dataset(&app, &owner, "public").await;
    let grant = app
        .send(
            app.http()
                .put(app.url(&format!("/api/datasets/{restricted}/grants/{grantee_id}")))
                .bearer_auth(&owner)
                .json(&json!({"permission": "read"})),
        )
        .await;
    assert_eq!(grant.status(), 200);
    let response = post_map(
        &app,
        &grantee,
        &json!({"name": "Everyone's map", "visibility": "public", "layers": [
            {"dataset_id": restricted, "display_name": "Secret wells", "filter": ["==", "wellcode", "classified-value-123"],
             "popup_config": {"enabled": true, "visible_fields": ["wellcode"]}},
            {"dataset_id": public, "sort_order": 1}]}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let id = map["id"].as_str().unwrap().to_string();
    assert_eq!(
        map["layers"][0]["dataset_name"], "Secret wells",
        "the grantee sees its layer"
    );
    let share: Value = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{id}/shares")))
                .bearer_auth(&grantee),
        )
        .await
        .json()
        .await
        .unwrap();
    let link = format!("/api/maps/shared/{}", share["token"].as_str().unwrap());

    let leaks = |what: &str, body: &Value| {
        let text = body.to_string();
        for secret in ["Secret wells", table.as_str(), "wellcode", "classified-value-123"] {
            assert!(!text.contains(secret), "{what} shows {secret:?}: {text}");
        }
    };
    for (who, token) in [("anonymous", None), ("a viewer without a grant", Some(viewer.as_str()))] {
        assert_eq!(
            app.get_json(token, &format!("/api/datasets/{restricted}")).await.0,
            404,
            "{who} may not see the dataset itself"
        );
        let (status, read) = app.get_json(token, &format!("/api/maps/{id}")).await;
        assert_eq!(status, 200);
        leaks(&format!("the map read by {who}"), &read);
        assert_eq!(read["layer_count"], 2);
        let hidden = &read["layers"][0];
        assert_eq!(hidden["dataset_id"], json!(restricted));
        assert_eq!(hidden["dataset_available"], false);
        assert_eq!(hidden["dataset_status"], "unavailable");
        assert_eq!(hidden["dataset_visibility"], "unavailable");
        assert_eq!(hidden["dataset_kind"], "");
        assert_eq!(hidden["dataset_extent_bbox"], Value::Null);
        let shown = &read["layers"][1];
        assert_eq!(shown["dataset_available"], true, "the public layer stays");
        assert_eq!(shown["dataset_name"], "p");
        assert_eq!(
            [
                &shown["dataset_kind"],
                &shown["dataset_visibility"],
                &shown["dataset_status"]
            ],
            ["vector", "public", "ready"]
        );

        let (_, list) = app.get_json(token, "/api/maps").await;
        leaks(&format!("the map list read by {who}"), &list);

        let (status, style) = app.get_json(token, &format!("/api/maps/{id}/style.json")).await;
        assert_eq!(status, 200);
        leaks(&format!("the style read by {who}"), &style);
        assert!(style["sources"].get(format!("dataset-{restricted}")).is_none());
        assert!(style["sources"].get(format!("dataset-{public}")).is_some());
    }
    let (status, shared) = app.get_json(None, &link).await;
    assert_eq!(status, 200);
    leaks("the shared link", &shared);
    assert_eq!(shared["layers"][0]["dataset_available"], false);

    // A fork by someone who may not see a layer's dataset is refused, by
    // the dataset's id only.
    let fork = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{id}/fork")))
                .bearer_auth(&owner),
        )
        .await;
    assert_eq!(fork.status(), 201, "the owner sees both datasets");
    let (_, editor) = app.user_token("edna", "editor").await;
    let fork = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{id}/fork")))
                .bearer_auth(&editor),
        )
        .await;
    assert_eq!(fork.status(), 422);
    let fork: Value = fork.json().await.unwrap();
    leaks("a fork by an editor without a grant", &fork);
    assert!(
        fork["detail"].as_str().unwrap().contains("layers[0].dataset_id"),
        "{fork}"
    );
}

/// A basemap style at an address the outbound policy refuses (here a
/// loopback address not in OUTBOUND_ALLOWED_HOSTS) is never requested:
/// the map exports without it.
#[tokio::test]
async fn a_basemap_at_a_refused_address_is_never_fetched() {
    let (basemap_url, hits) = serve_basemap().await;
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let points = point_dataset(&app, &token, "private").await;
    let body = json!({"name": "Inward", "basemap_style": basemap_url, "layers": [{"dataset_id": points}]});
    let map: Value = post_map(&app, &token, &body).await.json().await.unwrap();
    let id = map["id"].as_str().unwrap();
    let (status, style) = app.get_json(Some(&token), &format!("/api/maps/{id}/style.json")).await;
    assert_eq!(status, 200);
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the basemap was requested"
    );
    assert!(
        !style["layers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["id"].as_str().unwrap().starts_with("basemap-")),
        "{style:#}"
    );
}

/// The repository's DEM rewritten by a GDAL tool (`gdal_translate`,
/// `gdalwarp`) with `args` before the input and output files.
fn gdal_made(dir: &std::path::Path, tool: &str, args: &[&str], name: &str) -> Vec<u8> {
    let output = dir.join(name);
    let status = std::process::Command::new(tool)
        .args(["-q"])
        .args(args)
        .arg(catalog_tests::data_dir().join("raster/elev_luxembourg.tif"))
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success(), "{tool} {args:?}");
    std::fs::read(output).unwrap()
}

/// A map over three private rasters (the repository's DEM, an image of
/// three bands, the DEM placed across the antimeridian in UTM zone 60
/// south) and a vector dataset, with the DEM as terrain; answers the map
/// and the rasters' ids.
async fn raster_map(app: &App, token: &str) -> (Value, [String; 3]) {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for (name, bytes) in [
        ("dem.tif", catalog_tests::data_file("raster/elev_luxembourg.tif")),
        (
            "bands.tif",
            gdal_made(
                dir.path(),
                "gdal_translate",
                &["-b", "1", "-b", "1", "-b", "1"],
                "bands.tif",
            ),
        ),
        (
            "fiji.tif",
            gdal_made(
                dir.path(),
                "gdal_translate",
                &[
                    "-a_srs",
                    "EPSG:32760",
                    "-a_ullr",
                    "400000",
                    "8230000",
                    "1000000",
                    "7900000",
                ],
                "fiji.tif",
            ),
        ),
    ] {
        let job = app.upload_ok(token, name, bytes, &[("visibility", "private")]).await;
        let job = app.wait_job(token, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        ids.push(job["dataset_id"].as_str().unwrap().to_string());
    }
    let points = point_dataset(app, token, "private").await;
    let body = json!({
        "name": "Relief",
        "terrain_config": {"enabled": true, "source_dataset_id": ids[0], "exaggeration": 1.2},
        "layers": [
            {"dataset_id": ids[0], "sort_order": 0},
            {"dataset_id": ids[1], "sort_order": 1},
            {"dataset_id": ids[2], "sort_order": 2},
            {"dataset_id": points, "sort_order": 3}
        ]
    });
    let response = post_map(app, token, &body).await;
    assert_eq!(response.status(), 201);
    (response.json().await.unwrap(), ids.try_into().unwrap())
}

#[tokio::test]
async fn raster_layers_say_what_their_dataset_is() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let (map, _) = raster_map(&app, &token).await;
    let described: Vec<Value> = map["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| json!([l["layer_type"], l["is_dem"], l["band_count"]]))
        .collect();
    assert_eq!(
        described,
        [
            json!(["raster_service", true, 1]),
            json!(["raster_service", false, 3]),
            json!(["raster_service", true, 1]),
            json!(["vector_service", false, null]),
        ],
        "a layer says what its dataset is: {map}"
    );
    let (status, again) = app
        .get_json(Some(&token), &format!("/api/maps/{}", map["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    assert_eq!(again["layers"], map["layers"]);
}

#[tokio::test]
async fn raster_and_terrain_sources_stop_where_the_data_does() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let (map, [dem, bands, fiji]) = raster_map(&app, &token).await;
    // Raster and terrain sources stop at the raster's own resolution (as
    // its TileJSON says) and, unless the data crosses 180°, at its extent.
    let (_, style) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    validate_style(&style);
    for id in [&dem, &bands, &fiji] {
        let (status, tilejson) = app
            .get_json(Some(&token), &format!("/api/tiles/{id}/tilejson.json"))
            .await;
        assert_eq!(status, 200);
        let maxzoom = tilejson["maxzoom"].as_u64().unwrap();
        assert!((3..=14).contains(&maxzoom), "{tilejson}");
        let source = &style["sources"][format!("dataset-{id}-raster")];
        assert_eq!(source["maxzoom"], maxzoom, "{source}");
        let extent = &app.dataset(&token, id).await["extent_bbox"];
        if *id == fiji {
            assert!(extent[0].as_f64() > extent[2].as_f64(), "crosses 180°: {extent}");
            assert!(source.get("bounds").is_none(), "bounds cannot cross 180°: {source}");
        } else {
            assert_eq!(source["bounds"], *extent, "{source}");
        }
    }
    let terrain = &style["sources"]["terrain"];
    assert_eq!(terrain["type"], "raster-dem");
    assert_eq!(terrain["bounds"], app.dataset(&token, &dem).await["extent_bbox"]);
    let (_, tilejson) = app
        .get_json(Some(&token), &format!("/api/tiles/{dem}/tilejson.json"))
        .await;
    assert_eq!(
        terrain["maxzoom"].as_u64().map(|z| z + 1),
        tilejson["maxzoom"].as_u64(),
        "terrain tiles are 512 px: one zoom fewer for the same detail: {terrain}"
    );
}

/// A map whose name is at its limit (255 characters) forks: the copy's
/// name keeps the start and says it is a copy, within the limit.
#[tokio::test]
async fn a_map_with_the_longest_name_forks() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let name = "n".repeat(255);
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&token)
                .json(&json!({"name": name})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/maps/{}/fork", map["id"].as_str().unwrap())))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(response.status(), 201);
    let fork: Value = response.json().await.unwrap();
    let forked = fork["name"].as_str().unwrap();
    assert_eq!(forked.chars().count(), 255, "{forked}");
    assert!(forked.starts_with("nnnn") && forked.ends_with(" (copy)"), "{forked}");
}
