//! Existing tables into the catalog, table checks, and bulk deletion.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

async fn sql(app: &App, statement: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_string()))
        .execute(app.pool())
        .await
        .unwrap();
}

async fn ingest(app: &App, token: &str, title: &str) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"name": "a", "n": 1}}]});
    app.ingest_geojson(token, &body, &[("title", title)]).await
}

#[tokio::test]
async fn existing_tables_are_discovered_and_registered_in_place() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let ingested = ingest(&app, &admin, "Ingested").await;
    sql(&app, "
        CREATE TABLE public.parks (id serial PRIMARY KEY, name text, area real, geom geometry(Point, 4326));
        INSERT INTO public.parks (name, area, geom) VALUES ('a', 1.5, 'SRID=4326;POINT(1 1)'), ('b', 2, 'SRID=4326;POINT(2 2)'), ('c', 3, 'SRID=4326;POINT(3 3)');
        CREATE TABLE public.roads_old (id serial PRIMARY KEY, geom geometry(LineString, 4326));
        CREATE TABLE public.no_key (name text, geom geometry(Point, 4326));
        CREATE TABLE public.web (id bigint PRIMARY KEY, label text, geom geometry(Point, 3857));
        INSERT INTO public.web VALUES (7, 'paris', ST_Transform('SRID=4326;POINT(2.35 48.85)'::geometry, 3857));
        CREATE TABLE public.plain (id serial PRIMARY KEY, name text);
        CREATE TABLE data._staging_leftover_0 (gid bigint, geom geometry(Point, 4326));
        ANALYZE public.parks;
    ").await;

    let (status, found) = app.get_json(Some(&admin), "/api/ingest/discover/").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = found["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["no_key", "parks", "web"],
        "staging, old, non-spatial and catalogued tables are left out"
    );
    let parks = found["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table_name"] == "parks")
        .unwrap();
    assert_eq!(parks["geometry_type"], "Point");
    assert_eq!(parks["srid"], 4326);
    assert_eq!(parks["estimated_rows"], 3);
    assert_eq!(
        app.get_json(Some(&admin), "/api/ingest/discover?limit=1").await.1["tables"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    for bad in ["0", "5001"] {
        assert_eq!(
            app.get_json(Some(&admin), &format!("/api/ingest/discover?limit={bad}"))
                .await
                .0,
            400
        );
    }
    let (_, viewer) = app.user_token("vic", "viewer").await;
    assert_eq!(app.get_json(Some(&viewer), "/api/ingest/discover").await.0, 403);

    let request = json!({"tables": [
        {"table_name": "parks", "title": "Parks", "visibility": "public"},
        {"table_name": "missing", "title": "Missing"},
        {"table_name": "no_key", "title": "No key"},
        {"table_name": "web", "title": "Web mercator"},
        {"table_name": "public.parks", "title": "Parks again"},
        {"table_name": "x".repeat(64), "title": "Too long"}
    ]});
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(&admin)
                .json(&request),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let statuses: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        vec!["success", "error", "error", "success", "skipped", "error"],
        "{body}"
    );
    let results = body["results"].as_array().unwrap();
    assert!(results[2]["error"].as_str().unwrap().contains("primary key"));
    // A table in another CRS is served in WGS 84 and filtered in its own.
    let web = results[3]["dataset_id"].as_str().unwrap();
    let record = app.dataset(&admin, web).await;
    assert_eq!(record["srid"], 3857);
    let bbox: Vec<f64> = record["extent_bbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        (bbox[0] - 2.35).abs() < 1e-6 && (bbox[1] - 48.85).abs() < 1e-6,
        "{bbox:?}"
    );
    let (_, paris) = app
        .get_json(
            Some(&admin),
            &format!("/api/collections/{web}/items?bbox=2,48,3,49&filter=S_INTERSECTS(geom,BBOX(2,48,3,49))"),
        )
        .await;
    assert_eq!(paris["numberMatched"], 1, "{paris}");
    let coordinates = paris["features"][0]["geometry"]["coordinates"].as_array().unwrap();
    assert!((coordinates[0].as_f64().unwrap() - 2.35).abs() < 1e-6);
    assert_eq!(paris["features"][0]["id"], 7);
    assert_eq!(results[0]["dataset_id"], results[4]["dataset_id"]);
    let id = results[0]["dataset_id"].as_str().unwrap();

    let dataset = app.dataset(&admin, id).await;
    assert_eq!(dataset["is_registered"], true);
    assert_eq!(dataset["feature_count"], 3);
    assert_eq!(dataset["geometry_type"], "Point");
    assert_eq!(dataset["key_column"], "id");
    let (status, items) = app
        .get_json(None, &format!("/api/collections/{id}/items?filter=area%20%3E%201.6"))
        .await;
    assert_eq!(status, 200, "{items}");
    assert_eq!(items["numberMatched"], 2);
    assert_eq!(items["features"][0]["id"], 2);
    assert_eq!(items["features"][0]["properties"]["name"], "b");

    // A registered table is read in place: OGC API Features Part 4 and the
    // history refuse it with 409, and the table keeps its rows untouched.
    let items_url = app.url(&format!("/api/collections/{id}/items"));
    let tagged = app.send(app.http().get(format!("{items_url}/2"))).await;
    assert_eq!(tagged.status(), 200);
    let tag = tagged.headers()["etag"].to_str().unwrap().to_string();
    let feature =
        json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [4, 4]}, "properties": {"name": "d"}});
    let attempts = [
        (
            "POST",
            app.http()
                .post(&items_url)
                .header("content-type", "application/geo+json")
                .body(feature.to_string()),
        ),
        (
            "PUT",
            app.http()
                .put(format!("{items_url}/2"))
                .header("content-type", "application/geo+json")
                .body(feature.to_string()),
        ),
        (
            "PATCH",
            app.http()
                .patch(format!("{items_url}/2"))
                .header("content-type", "application/merge-patch+json")
                .body(json!({"properties": {"name": "z"}}).to_string()),
        ),
        ("DELETE", app.http().delete(format!("{items_url}/2"))),
        (
            "versions",
            app.http().get(app.url(&format!("/api/datasets/{id}/versions"))),
        ),
    ];
    for (what, attempt) in attempts {
        let response = app.send(attempt.bearer_auth(&admin).header("if-match", &tag)).await;
        assert_eq!(response.status(), 409, "{what}");
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{what}");
    }
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM public.parks ORDER BY id")
        .fetch_all(app.pool())
        .await
        .unwrap();
    assert_eq!(names, ["a", "b", "c"]);

    // Deleting a registered dataset keeps the table; an ingested one goes.
    let deleted = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&admin),
        )
        .await;
    assert_eq!(deleted.status(), 204);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM public.parks")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(rows, 3);
    let table = app.dataset(&admin, &ingested).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    app.send(
        app.http()
            .delete(app.url(&format!("/api/datasets/{ingested}")))
            .bearer_auth(&admin),
    )
    .await;
    assert!(!app.data_tables().await.contains(&table));
}

#[tokio::test]
async fn bulk_delete_confirms_each_title() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let first = ingest(&app, &admin, "First").await;
    let second = ingest(&app, &admin, "Second").await;
    let request = json!({"datasets": [
        {"dataset_id": first, "confirm_title": "First"},
        {"dataset_id": second, "confirm_title": "second"},
        {"dataset_id": uuid::Uuid::now_v7(), "confirm_title": "Ghost"}
    ]});
    let response = app
        .send(
            app.http()
                .post(app.url("/api/datasets/bulk-delete/"))
                .bearer_auth(&admin)
                .json(&request),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["deleted"], 1);
    assert_eq!(body["errors"], 2);
    let codes: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["deleted", "title_mismatch", "not_found"]);
    assert_eq!(app.dataset_count().await, 1);
    for count in [0, 101] {
        let items: Vec<Value> = (0..count)
            .map(|_| json!({"dataset_id": second, "confirm_title": "Second"}))
            .collect();
        let response = app
            .send(
                app.http()
                    .post(app.url("/api/datasets/bulk-delete"))
                    .bearer_auth(&admin)
                    .json(&json!({"datasets": items})),
            )
            .await;
        assert_eq!(response.status(), 422, "{count} items");
    }
}

#[tokio::test]
async fn validation_reports_drift_and_caches_its_result() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = ingest(&app, &admin, "Checked").await;
    let path = format!("/api/datasets/{id}/validate/");
    let (status, fresh) = app.get_json(Some(&admin), &format!("{path}?refresh=true")).await;
    assert_eq!(status, 200);
    assert_eq!(fresh["valid"], true, "{fresh}");
    let table = app.dataset(&admin, &id).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    sql(&app, &format!("ALTER TABLE data.\"{table}\" DROP COLUMN name")).await;
    let (_, cached) = app.get_json(Some(&admin), &path).await;
    assert_eq!(cached["valid"], true, "without refresh the cached result");
    let (_, rechecked) = app.get_json(Some(&admin), &format!("{path}?refresh=true")).await;
    assert_eq!(rechecked["valid"], false);
    assert!(rechecked["problems"].to_string().contains("name"), "{rechecked}");

    let read_only_key = app.api_key(&admin, "read_only").await;
    let read_only = read_only_key.as_str();
    let refused = app
        .send(
            app.http()
                .get(app.url(&format!("{path}?refresh=true")))
                .header("X-Api-Key", read_only),
        )
        .await;
    assert_eq!(refused.status(), 403, "refresh writes, so read-only keys may not");
    let allowed = app
        .send(app.http().get(app.url(&path)).header("X-Api-Key", read_only))
        .await;
    assert_eq!(allowed.status(), 200);

    // A query-string key never authorises a write, even a full one on the
    // GET that writes: there it is absent and the request anonymous.
    let full_key = app.api_key(&admin, "full").await;
    sql(
        &app,
        &format!("UPDATE datasets SET validation = NULL WHERE id = '{id}'"),
    )
    .await;
    let (status, body) = app
        .get_json(None, &format!("{path}?refresh=true&api_key={full_key}"))
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["status"], 401);
    let stored: Option<Value> = sqlx::query_scalar("SELECT validation FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(stored, None, "nothing was written");
    let (status, _) = app.get_json(None, &format!("{path}?api_key={full_key}")).await;
    assert_eq!(status, 200, "a plain read with the query-string key still works");
}

/// Whether a pixel is in the first layer colour (#1b9e77), whole or
/// blended over land or sea: green well above red, and above blue.
fn green(pixel: [u8; 4]) -> bool {
    let [r, g, b, _] = pixel.map(i32::from);
    g > r + 40 && g > b
}

/// A dataset's picture (catalog cards, link previews): its data drawn in
/// the first layer colour over the land, framed on its extent; cached by
/// data version; only for those who may read the dataset.
/// Makes the map `body` describes; the URL of its picture.
async fn map_picture(app: &App, token: &str, body: Value) -> String {
    let response = app
        .send(app.http().post(app.url("/api/maps")).bearer_auth(token).json(&body))
        .await;
    assert_eq!(response.status(), 201, "{body}");
    let map: Value = response.json().await.unwrap();
    app.url(&format!("/api/maps/{}/thumbnail.png", map["id"].as_str().unwrap()))
}

#[tokio::test]
async fn datasets_and_maps_have_pictures_of_their_data() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let world = app.world_countries(&admin, &[("visibility", "public")]).await;
    let picture = |id: &str, token: Option<&str>, etag: Option<&str>| {
        let mut request = app.http().get(app.url(&format!("/api/datasets/{id}/thumbnail.png")));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        app.send(request)
    };
    let response = picture(&world, None, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/png");
    assert_eq!(response.headers()["cache-control"], "public, max-age=300");
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    let (width, height, pixels) = catalog_tests::decode_png(&response.bytes().await.unwrap());
    assert_eq!((width, height), (240, 120));
    // The whole world's width, cut to the picture's shape round the
    // data's middle: Africa's middle (20° E, at 40% of the height) is in
    // the layer's colour (#1b9e77, blended), the Pacific (150° W, half way
    // down) is sea.
    let at =
        |across: f64, down: f64| pixels[(down * height as f64) as usize * width + (across * width as f64) as usize];
    assert!(
        green(at(200.0 / 360.0, 0.4)),
        "Africa in green: {:?}",
        at(200.0 / 360.0, 0.4)
    );
    let [r, g, b, _] = at(30.0 / 360.0, 0.5);
    assert!(
        b > r && b > g && r > 150,
        "the Pacific in the sea's blue: {:?}",
        [r, g, b]
    );
    assert_eq!(picture(&world, None, Some(&etag)).await.status(), 304);

    // A small dataset is framed on its extent: a point near Paris fills the
    // picture's middle.
    let paris = app
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": [
                {"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.35, 48.85]}, "properties": {"name": "Paris"}}]}),
            &[("title", "Paris")],
        )
        .await;
    assert_eq!(picture(&paris, None, None).await.status(), 404, "private");
    let response = picture(&paris, Some(&admin), None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "private, max-age=60");
    let (width, height, pixels) = catalog_tests::decode_png(&response.bytes().await.unwrap());
    let middle = pixels[height / 2 * width + width / 2];
    assert!(green(middle), "the point in the middle: {middle:?}");
    assert!(!green(pixels[0]), "nothing drawn in the corner: {:?}", pixels[0]);

    // A map's picture: its visible vector layers, each in its colour.
    let url = map_picture(
        &app,
        &admin,
        json!({"name": "World in red", "layers": [
            {"dataset_id": world, "paint": {"fill-color": "#e31a1c"}},
            {"dataset_id": paris, "visible": false}]}),
    )
    .await;
    assert_eq!(app.send(app.http().get(&url)).await.status(), 404, "a private map");
    let response = app.send(app.http().get(&url).bearer_auth(&admin)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/png");
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    let (width, height, pixels) = catalog_tests::decode_png(&response.bytes().await.unwrap());
    assert_eq!((width, height), (240, 120));
    let [r, g, b, _] = pixels[(height as f64 * 0.4) as usize * width + width * 200 / 360].map(i32::from);
    assert!(r > g + 40 && r > b + 40, "Africa in the layer's red: {:?}", [r, g, b]);
    let again = app
        .send(app.http().get(&url).bearer_auth(&admin).header("if-none-match", &etag))
        .await;
    assert_eq!(again.status(), 304);

    // A reader sees in a map's picture only the layers it may read: a
    // viewer of a public map over a private dataset sees none of it.
    let url = map_picture(
        &app,
        &admin,
        json!({"name": "Paris in red", "visibility": "public",
               "layers": [{"dataset_id": paris, "paint": {"circle-color": "#e31a1c"}}]}),
    )
    .await;
    let (_, viewer) = app.user_token("vera", "viewer").await;
    for (token, sees_paris) in [(&admin, true), (&viewer, false)] {
        let response = app.send(app.http().get(&url).bearer_auth(token)).await;
        assert_eq!(response.status(), 200);
        let (_, _, pixels) = catalog_tests::decode_png(&response.bytes().await.unwrap());
        let red = pixels
            .iter()
            .filter(|p| {
                let [r, g, b, _] = p.map(i32::from);
                r > g + 40 && r > b + 40
            })
            .count();
        assert_eq!(red > 0, sees_paris, "{red} red pixels");
    }

    // An archived dataset's picture outlines its extent, and does not
    // bring the data back.
    let archived = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{world}/archive")))
                .bearer_auth(&admin)
                .json(&json!({})),
        )
        .await;
    assert_eq!(archived.status(), 202);
    let job = archived.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app.wait_job(&admin, &job).await["status"], "succeeded");
    let response = picture(&world, None, Some(&etag)).await;
    assert_eq!(response.status(), 200, "another picture than the hot one's");
    let (width, height, pixels) = catalog_tests::decode_png(&response.bytes().await.unwrap());
    let africa = pixels[(height as f64 * 0.4) as usize * width + width * 200 / 360];
    assert!(!green(africa), "Africa is not filled: {africa:?}");
    let outline = pixels.iter().filter(|p| green(**p)).count();
    assert!(outline > 100, "the extent's outline (its west edge): {outline} pixels");
    assert_eq!(app.dataset(&admin, &world).await["storage"], "cold");
    let rehydrating = app.get_json(Some(&admin), "/api/jobs?limit=100").await.1["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["kind"] == "rehydrate")
        .count();
    assert_eq!(rehydrating, 0);

    // A raster's pictures are its tiles.
    let job = app
        .upload_ok(
            &admin,
            "elev.tif",
            catalog_tests::data_file("raster/elev_luxembourg.tif"),
            &[],
        )
        .await;
    let raster = app.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let response = picture(&raster, Some(&admin), None).await;
    assert_eq!(response.status(), 409);
}
