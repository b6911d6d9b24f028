//! Editing (OGC API Features Part 4) and history: writers create, replace,
//! merge and delete features with strong ETags and If-Match; everything
//! read downstream (items, counts, extent, tiles) follows at once; every
//! edit and reupload is a version, a diff lists what changed, and a
//! restore brings back a version exactly (rows compared in PostGIS).
use catalog_tests::{Api, App, shapefile_members, zip_owned};
use serde_json::{Value, json};

async fn ingested(app: &App, token: &str, filename: &str, bytes: Vec<u8>) -> String {
    let job = app.upload_ok(token, filename, bytes, &[("visibility", "public")]).await;
    let job = app.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

/// Status, ETag and body of a request.
async fn call(app: &App, request: reqwest::RequestBuilder) -> (u16, Option<String>, Value) {
    let response = app.send(request).await;
    let status = response.status().as_u16();
    let etag = response.headers().get("etag").map(|v| v.to_str().unwrap().to_string());
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    (status, etag, body)
}

async fn matched(app: &App, id: &str) -> i64 {
    let (status, page) = app
        .get_json(None, &format!("/api/collections/{id}/items?limit=1"))
        .await;
    assert_eq!(status, 200);
    page["numberMatched"].as_i64().unwrap()
}

/// The dataset table's rows as exact JSON (geometry as hex EWKB), by key.
async fn rows(app: &App, id: &str) -> Vec<(i64, Value)> {
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT gid, {} FROM data.\"{table}\" t ORDER BY gid",
        catalog_shared::history::row_json("t", "geom")
    )))
    .fetch_all(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn writers_edit_features_with_etags_and_every_version_comes_back_exactly() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = ingested(
        &app,
        &admin,
        "countries.zip",
        zip_owned(&shapefile_members("shp/naturalearth_lowres")),
    )
    .await;
    let original = rows(&app, &id).await;
    assert_eq!(original.len(), 177);
    let items = format!("/api/collections/{id}/items");

    // Only writers write: anonymous 401, a viewer and an editor without a
    // grant 403.
    let (_, viewer) = app.user_token("viewer1", "viewer").await;
    let (editor_id, editor) = app.user_token("editor1", "editor").await;
    let island = json!({"type": "Feature",
        "geometry": {"type": "MultiPolygon", "coordinates": [[[[-160, 84], [-150, 84], [-150, 86], [-160, 86], [-160, 84]]]]},
        "properties": {"name": "Northland", "pop_est": 12, "continent": "Arctic"}});
    let (status, _, _) = call(&app, app.http().post(app.url(&items)).json(&island)).await;
    assert_eq!(status, 401);
    for token in [&viewer, &editor] {
        let (status, _, problem) = call(&app, app.http().post(app.url(&items)).bearer_auth(token).json(&island)).await;
        assert_eq!(status, 403, "{problem}");
    }
    let (status, _, _) = call(
        &app,
        app.http()
            .put(app.url(&format!("/api/datasets/{id}/grants/{editor_id}")))
            .bearer_auth(&admin)
            .json(&json!({"permission": "write"})),
    )
    .await;
    assert!(status < 300, "grant: {status}");

    // Create: 201, Location, ETag; everything downstream follows.
    let tile = "/api/tiles/{id}/3/0/0.pbf".replace("{id}", &id);
    let empty_tile = app.send(app.http().get(app.url(&tile))).await.status().as_u16();
    let response = app
        .send(
            app.http()
                .post(app.url(&items))
                .bearer_auth(&editor)
                .header("content-type", "application/geo+json")
                .body(island.to_string()),
        )
        .await;
    assert_eq!(response.status(), 201);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    let created_tag = response.headers()["etag"].to_str().unwrap().to_string();
    let created: Value = response.json().await.unwrap();
    let fid = created["id"].as_i64().unwrap();
    assert!(location.ends_with(&format!("{items}/{fid}")), "{location}");
    assert_eq!(created["properties"]["name"], "Northland");
    assert_eq!(matched(&app, &id).await, 178);
    let (_, dataset) = app.get_json(Some(&admin), &format!("/api/datasets/{id}")).await;
    assert_eq!(dataset["feature_count"], 178);
    assert_eq!(
        dataset["extent_bbox"][3], 86.0,
        "the extent reaches the new island: {dataset}"
    );
    let (status, read_tag, _) = call(&app, app.http().get(app.url(&format!("{items}/{fid}")))).await;
    assert_eq!((status, read_tag.as_deref()), (200, Some(created_tag.as_str())));
    let drawn = app.send(app.http().get(app.url(&tile))).await;
    assert_eq!(drawn.status(), 200, "the tile over the new island (was {empty_tile})");

    // Mistakes are 4xx problems and change nothing.
    for (body, why) in [
        (
            json!({"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}, "properties": {}}),
            "a line in a polygon dataset",
        ),
        (
            json!({"type": "Feature", "geometry": null, "properties": {"nosuch": 1}}),
            "an unknown property",
        ),
        (
            json!({"type": "Feature", "geometry": null, "properties": {"pop_est": "many"}}),
            "text for a number",
        ),
        (json!({"type": "FeatureCollection", "features": []}), "not a feature"),
    ] {
        let (status, _, problem) = call(&app, app.http().post(app.url(&items)).bearer_auth(&editor).json(&body)).await;
        assert_eq!(status, 422, "{why}: {problem}");
    }
    assert_eq!(matched(&app, &id).await, 178);

    // Replace: If-Match required (428), a stale tag 412, the current 200.
    let feature_url = app.url(&format!("{items}/{fid}"));
    let replacement =
        json!({"type": "Feature", "geometry": island["geometry"], "properties": {"name": "Northland Isles"}});
    let (status, _, _) = call(
        &app,
        app.http().put(&feature_url).bearer_auth(&editor).json(&replacement),
    )
    .await;
    assert_eq!(status, 428);
    let (status, _, _) = call(
        &app,
        app.http()
            .put(&feature_url)
            .bearer_auth(&editor)
            .header("if-match", "\"0123\"")
            .json(&replacement),
    )
    .await;
    assert_eq!(status, 412);
    let (status, replaced_tag, replaced) = call(
        &app,
        app.http()
            .put(&feature_url)
            .bearer_auth(&editor)
            .header("if-match", &created_tag)
            .json(&replacement),
    )
    .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["properties"]["name"], "Northland Isles");
    assert_eq!(replaced["properties"]["pop_est"], Value::Null, "replaced whole");
    let replaced_tag = replaced_tag.unwrap();
    assert_ne!(replaced_tag, created_tag);

    // Merge: what the patch names, nothing else.
    let (status, patched_tag, patched) = call(
        &app,
        app.http()
            .patch(&feature_url)
            .bearer_auth(&editor)
            .header("if-match", &replaced_tag)
            .header("content-type", "application/merge-patch+json")
            .body(json!({"properties": {"pop_est": 40}}).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["properties"]["pop_est"], 40.0);
    assert_eq!(patched["properties"]["name"], "Northland Isles");

    // Twenty pairs of writers holding the same tag: one wins, one gets 412.
    let mut tag = patched_tag.unwrap();
    for round in 0..20 {
        let write = |value: i64| {
            app.send(
                app.http()
                    .patch(&feature_url)
                    .bearer_auth(&editor)
                    .header("if-match", &tag)
                    .json(&json!({"properties": {"pop_est": value}})),
            )
        };
        let (first, second) = tokio::join!(write(round * 2), write(round * 2 + 1));
        let mut statuses = [first.status().as_u16(), second.status().as_u16()];
        statuses.sort();
        assert_eq!(statuses, [200, 412], "round {round}");
        let winner = if first.status() == 200 { first } else { second };
        tag = winner.headers()["etag"].to_str().unwrap().to_string();
    }

    // Edit an original country, delete another.
    let (_, france_page) = app.get_json(None, &format!("{items}?name=France")).await;
    let france = france_page["features"][0]["id"].as_i64().unwrap();
    let (status, france_tag, _) = call(&app, app.http().get(app.url(&format!("{items}/{france}")))).await;
    assert_eq!(status, 200);
    let (status, _, _) = call(
        &app,
        app.http()
            .patch(app.url(&format!("{items}/{france}")))
            .bearer_auth(&admin)
            .header("if-match", france_tag.unwrap())
            .json(&json!({"properties": {"pop_est": 1}})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, chile_page) = app.get_json(None, &format!("{items}?name=Chile")).await;
    let chile = chile_page["features"][0]["id"].as_i64().unwrap();
    let (_, chile_tag, _) = call(&app, app.http().get(app.url(&format!("{items}/{chile}")))).await;
    let (status, _, _) = call(
        &app,
        app.http()
            .delete(app.url(&format!("{items}/{chile}")))
            .bearer_auth(&admin)
            .header("if-match", chile_tag.unwrap()),
    )
    .await;
    assert_eq!(status, 204);
    let (status, _, _) = call(&app, app.http().get(app.url(&format!("{items}/{chile}")))).await;
    assert_eq!(status, 404);
    assert_eq!(matched(&app, &id).await, 177);

    // History: every edit a version, each change with who and before/after.
    let (status, versions) = app
        .get_json(Some(&editor), &format!("/api/datasets/{id}/versions?limit=200"))
        .await;
    assert_eq!(status, 200, "{versions}");
    let list = versions["versions"].as_array().unwrap();
    // The load, the island, its replacement and patch, 20 winning patches,
    // France and Chile.
    assert_eq!(list.len(), 1 + 1 + 2 + 20 + 2, "{versions}");
    assert_eq!(list.last().unwrap()["kind"], "load");
    assert_eq!(list[0]["current"], true);
    let latest = list[0]["version"].as_i64().unwrap();
    let (status, changes) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/changes?limit=2"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(changes["changes"][0]["feature_id"], chile);
    assert_eq!(changes["changes"][0]["changed_by"], "admin");
    assert_eq!(changes["changes"][0]["after"], Value::Null);
    assert_eq!(changes["changes"][0]["before"]["properties"]["name"], "Chile");
    assert_eq!(changes["changes"][1]["feature_id"], france);
    assert_eq!(changes["changes"][1]["after"]["properties"]["pop_est"], 1.0);
    let (status, _) = app
        .get_json(Some(&viewer), &format!("/api/datasets/{id}/changes"))
        .await;
    assert_eq!(status, 403, "history is for writers");

    // The diff from the load: the island added, Chile removed, France changed.
    let (status, diff) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/versions/1/diff/{latest}"))
        .await;
    assert_eq!(status, 200, "{diff}");
    assert_eq!(diff["added"].as_array().unwrap().len(), 1, "{diff}");
    assert_eq!(diff["added"][0]["id"], fid);
    assert_eq!(diff["removed"][0]["properties"]["name"], "Chile");
    assert_eq!(diff["changed"].as_array().unwrap().len(), 1, "{diff}");
    assert_eq!(diff["changed"][0]["after"]["properties"]["pop_est"], 1.0);
    assert_eq!(diff["complete"], true);

    // A reupload is a version of its own (another file, other columns);
    // restoring the load brings back its rows, keys and columns exactly.
    let columns_before: Value = sqlx::query_scalar("SELECT column_info FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &admin,
            "cities.zip",
            zip_owned(&shapefile_members("shp/naturalearth_cities")),
            &[],
        )
        .await;
    assert_eq!(response.status(), 202);
    let job: Value = response.json().await.unwrap();
    let job = app.wait_job(&admin, job["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(matched(&app, &id).await, 243);
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/versions/1/restore")))
                .bearer_auth(&editor),
        )
        .await;
    assert_eq!(response.status(), 202);
    let job: Value = response.json().await.unwrap();
    assert_eq!(job["status"], "queued");
    let job = app.wait_job(&admin, job["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(rows(&app, &id).await, original, "the load's rows, keys and values");
    let columns_after: Value = sqlx::query_scalar("SELECT column_info FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(columns_after, columns_before);
    assert_eq!(matched(&app, &id).await, 177);
    let (_, versions) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/versions?limit=2"))
        .await;
    assert_eq!(versions["versions"][0]["kind"], "restore");
    assert_eq!(versions["versions"][0]["restored_from"], 1);
    assert_eq!(versions["versions"][1]["kind"], "reupload");
    let now = versions["versions"][0]["version"].as_i64().unwrap();
    let (_, diff) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/versions/1/diff/{now}"))
        .await;
    assert_eq!(
        (
            diff["added"].as_array().unwrap().len(),
            diff["removed"].as_array().unwrap().len(),
            diff["changed"].as_array().unwrap().len()
        ),
        (0, 0, 0),
        "{diff}"
    );
    // New features never reuse a key any version had.
    let (status, _, again) = call(&app, app.http().post(app.url(&items)).bearer_auth(&admin).json(&island)).await;
    assert_eq!(status, 201);
    assert!(again["id"].as_i64().unwrap() > fid, "{again}");
    // A version never made is not there to compare.
    let (status, _) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/versions/999/diff/1"))
        .await;
    assert_eq!(status, 404);

    // A raster has no features to write.
    let raster = ingested(
        &app,
        &admin,
        "elev.tif",
        catalog_tests::data_file("raster/elev_luxembourg.tif"),
    )
    .await;
    let (status, _, problem) = call(
        &app,
        app.http()
            .post(app.url(&format!("/api/collections/{raster}/items")))
            .bearer_auth(&admin)
            .json(&island),
    )
    .await;
    assert_eq!(status, 409, "{problem}");
}

/// Adding a column is a version too: restoring a version from before it
/// brings back the table without the column, and one from after it with
/// the column and its values.
#[tokio::test]
async fn a_column_added_mid_era_comes_and_goes_with_its_versions() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"name": "a"}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 4]}, "properties": {"name": "b"}}]});
    let id = ingested(&app, &admin, "points.geojson", points.to_string().into_bytes()).await;
    let items = format!("/api/collections/{id}/items");
    let patch = |gid: i64, properties: Value| {
        let app = &app;
        let admin = &admin;
        let url = app.url(&format!("{items}/{gid}"));
        async move {
            let tag = app.send(app.http().get(&url)).await.headers()["etag"]
                .to_str()
                .unwrap()
                .to_string();
            let (status, _, body) = call(
                app,
                app.http()
                    .patch(&url)
                    .bearer_auth(admin)
                    .header("if-match", tag)
                    .header("content-type", "application/merge-patch+json")
                    .body(json!({"properties": properties}).to_string()),
            )
            .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    let column_info = || async {
        sqlx::query_scalar::<_, Value>("SELECT column_info FROM datasets WHERE id = $1::uuid")
            .bind(&id)
            .fetch_one(app.pool())
            .await
            .unwrap()
    };
    let restore = |version: i64| {
        let app = &app;
        let admin = &admin;
        let id = &id;
        async move {
            let response = app
                .send(
                    app.http()
                        .post(app.url(&format!("/api/datasets/{id}/versions/{version}/restore")))
                        .bearer_auth(admin),
                )
                .await;
            assert_eq!(response.status(), 202);
            let job: Value = response.json().await.unwrap();
            let job = app.wait_job(admin, job["job_id"].as_str().unwrap()).await;
            assert_eq!(job["status"], "succeeded", "{job}");
        }
    };

    patch(1, json!({"name": "a2"})).await; // version 2
    let (rows_2, columns_2) = (rows(&app, &id).await, column_info().await);
    let (status, _, body) = call(
        &app,
        app.http()
            .post(app.url(&format!("/api/layers/{id}/columns")))
            .bearer_auth(&admin)
            .json(&json!({"column": {"name": "note", "type": "text"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}"); // version 3
    patch(2, json!({"note": "checked"})).await; // version 4
    let (rows_4, columns_4) = (rows(&app, &id).await, column_info().await);
    assert!(rows_4[1].1["note"] == "checked", "{:?}", rows_4[1]);
    let (_, versions) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/versions"))
        .await;
    let kinds: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["edit", "edit", "edit", "load"], "{versions}");

    restore(2).await;
    assert_eq!(rows(&app, &id).await, rows_2, "version 2's rows, without the column");
    assert_eq!(column_info().await, columns_2);
    let (_, page) = app.get_json(None, &format!("{items}?limit=5")).await;
    assert!(page["features"][1]["properties"].get("note").is_none(), "{page}");
    let (status, queryables) = app.get_json(None, &format!("/api/collections/{id}/queryables")).await;
    assert_eq!(status, 200);
    assert!(queryables["properties"].get("note").is_none(), "{queryables}");

    restore(4).await;
    assert_eq!(
        rows(&app, &id).await,
        rows_4,
        "version 4's rows, with the column and its value"
    );
    assert_eq!(column_info().await, columns_4);
}

/// Past `VERSION_RETENTION_DAYS` the workers' sweep forgets a dataset's
/// past versions (never its current one), their changes and the kept
/// tables no version lives in; a restore of a forgotten version is a 404.
/// Kept versions count in the owner's storage: a restore past the quota
/// is refused before it is queued.
#[tokio::test]
async fn past_versions_go_after_their_retention_and_count_in_the_quota() {
    use catalog_tests::{Stack, StackOptions};
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("VERSION_RETENTION_DAYS", "0")
            .env("CLEANUP_INTERVAL_SECONDS", "1"),
    )
    .await;
    let (owner_id, owner) = stack.user_token("owner1", "editor").await;
    let points = |n: usize| {
        json!({"type": "FeatureCollection", "features": (0..n).map(|i| json!({"type": "Feature",
            "geometry": {"type": "Point", "coordinates": [i as f64, 1.0]}, "properties": {"n": i}})).collect::<Vec<_>>()})
    };
    // The first version also keeps a row aside (off the world): its
    // quarantine goes with its version.
    let mut first = points(3);
    first["features"].as_array_mut().unwrap().push(json!({"type": "Feature",
        "geometry": {"type": "Point", "coordinates": [1.0, 95.0]}, "properties": {"n": 3}}));
    let id = stack.ingest_geojson(&owner, &first, &[]).await;
    assert_eq!(stack.dataset(&owner, &id).await["quarantined_count"], 1);
    let items = format!("/api/collections/{id}/items");
    let response = stack
        .send(stack.http().get(stack.url(&format!("{items}/1"))).bearer_auth(&owner))
        .await;
    let tag = response.headers()["etag"].to_str().unwrap().to_string();
    let response = stack
        .send(
            stack
                .http()
                .patch(stack.url(&format!("{items}/1")))
                .bearer_auth(&owner)
                .header("if-match", tag)
                .json(&json!({"properties": {"n": 10}})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let response = stack
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &owner,
            "more.geojson",
            points(5).to_string().into_bytes(),
            &[],
        )
        .await;
    assert_eq!(response.status(), 202);
    let job: Value = response.json().await.unwrap();
    assert_eq!(
        stack.wait_job(&owner, job["job_id"].as_str().unwrap()).await["status"],
        "succeeded"
    );

    // The sweep leaves the current version alone and nothing else.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, versions) = stack
            .get_json(Some(&owner), &format!("/api/datasets/{id}/versions"))
            .await;
        let kept: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM pg_tables WHERE schemaname IN ('history', 'quarantine'))
                  + (SELECT count(*) FROM feature_changes WHERE dataset_id = $1::uuid)",
        )
        .bind(&id)
        .fetch_one(stack.pool())
        .await
        .unwrap();
        let list = versions["versions"].as_array().unwrap();
        if list.len() == 1 && kept == 0 {
            assert_eq!(list[0]["kind"], "reupload");
            assert_eq!(list[0]["current"], true);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still kept: {versions}, {kept} tables and changes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let response = stack
        .send(
            stack
                .http()
                .post(stack.url(&format!("/api/datasets/{id}/versions/1/restore")))
                .bearer_auth(&owner),
        )
        .await;
    assert_eq!(response.status(), 404, "version 1 is forgotten");

    // A full storage quota refuses a restore before it is queued.
    let admin = stack.admin_token().await;
    let response = stack
        .send(
            stack
                .http()
                .put(stack.url(&format!("/api/admin/users/{owner_id}/quota")))
                .bearer_auth(&admin)
                .json(&json!({"storage_bytes": 1})),
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    let (_, versions) = stack
        .get_json(Some(&owner), &format!("/api/datasets/{id}/versions"))
        .await;
    let current = versions["versions"][0]["version"].as_i64().unwrap();
    let response = stack
        .send(
            stack
                .http()
                .post(stack.url(&format!("/api/datasets/{id}/versions/{current}/restore")))
                .bearer_auth(&owner),
        )
        .await;
    assert_eq!(response.status(), 422);
    let problem: Value = response.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("storage quota"),
        "{problem}"
    );
}
