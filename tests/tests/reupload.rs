//! Reupload: new data for an existing dataset, previewed first (schema
//! diff, row counts, sample rows, nothing changed), then applied in place
//! (same id and table, maps and signed tile links still valid, served at
//! once), refused cleanly when the file does not fit.
use catalog_tests::{Api, App, data_file};
use serde_json::{Value, json};

fn points(n: usize, with_height: bool) -> Vec<u8> {
    let features: Vec<Value> = (0..n)
        .map(|i| {
            let mut properties = json!({"name": format!("p{i}")});
            if with_height {
                properties["height"] = json!(i as f64 * 1.5);
            } else {
                properties["rank"] = json!(i);
            }
            json!({"type": "Feature", "properties": properties,
                   "geometry": {"type": "Point", "coordinates": [5.0 + i as f64 * 0.01, 52.0]}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

async fn reupload(app: &App, token: &str, id: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> Value {
    let response = app
        .post_file(&format!("/api/datasets/{id}/reupload"), token, filename, bytes, fields)
        .await;
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.unwrap();
    let job = app.wait_job(token, accepted["job_id"].as_str().unwrap()).await;
    assert_eq!(job["kind"], "reupload");
    job
}

#[tokio::test]
async fn a_dataset_takes_new_data_in_place_after_a_preview() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("rhea", "editor").await;
    let job = app
        .upload_ok(&owner, "stops.geojson", points(3, false), &[("visibility", "public")])
        .await;
    let id = app.wait_job(&owner, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = app.dataset(&owner, &id).await;
    let (_, items) = app.get_json(None, &format!("/api/collections/{id}/items")).await;
    assert_eq!(items["numberMatched"], 3);
    let (_, signed) = app.get_json(Some(&owner), &format!("/api/tiles/token/{id}")).await;
    let tile = signed["tile_url"].as_str().unwrap().replace("{z}/{x}/{y}", "0/0/0");

    // The preview compares and changes nothing.
    let preview = reupload(
        &app,
        &owner,
        &id,
        "stops-v2.geojson",
        points(5, true),
        &[("preview", "true")],
    )
    .await;
    assert_eq!(preview["status"], "succeeded", "{preview}");
    let result = &preview["result"];
    assert_eq!(result["job_id"], preview["id"]);
    assert_eq!(result["source_filename"], "stops-v2.geojson");
    assert_eq!(result["geometry_type"], "Point");
    assert_eq!(result["feature_count"], 5);
    assert_eq!(result["crs"], 4326);
    assert_eq!(result["sample_rows"].as_array().unwrap().len(), 5);
    assert_eq!(result["sample_rows"][1]["name"], "p1");
    let diff = &result["schema_diff"];
    assert_eq!(
        diff["columns_added"],
        json!([{"name": "height", "type": "double precision"}])
    );
    assert_eq!(diff["columns_removed"], json!([{"name": "rank", "type": "integer"}]));
    assert_eq!(diff["type_changes"], json!([]));
    assert_eq!(
        (
            diff["row_count_old"].clone(),
            diff["row_count_new"].clone(),
            diff["row_count_delta"].clone()
        ),
        (json!(3), json!(5), json!(2))
    );
    assert_eq!(result["previous_source_layer"], before["source_layer"]);
    assert_eq!(
        app.dataset(&owner, &id).await["feature_count"],
        3,
        "a preview changes nothing"
    );

    // Applied: same dataset and table, new rows and columns, served at once
    // (the API had the old record cached), links and maps still valid.
    let applied = reupload(&app, &owner, &id, "stops-v2.geojson", points(5, true), &[]).await;
    assert_eq!(applied["status"], "succeeded", "{applied}");
    assert_eq!(applied["dataset_id"], json!(id));
    let after = app.dataset(&owner, &id).await;
    assert_eq!(after["table_name"], before["table_name"]);
    assert_eq!(after["feature_count"], 5);
    assert_eq!(after["publication_version"], before["publication_version"]);
    assert_eq!(after["title"], before["title"]);
    assert_eq!(after["source_filename"], "stops-v2.geojson");
    let (_, items) = app.get_json(None, &format!("/api/collections/{id}/items")).await;
    assert_eq!(items["numberMatched"], 5);
    assert_eq!(items["features"][4]["properties"]["height"], 6.0);
    assert!(items["features"][0]["properties"].get("rank").is_none());
    let (status, queryables) = app.get_json(None, &format!("/api/collections/{id}/queryables")).await;
    assert_eq!(status, 200);
    assert!(queryables["properties"]["height"].is_object());
    // The link names the old data version: it is sent on to the new one,
    // still signed.
    let moved = app.send(app.http().get(&tile)).await;
    assert_eq!(moved.status(), 307, "signed links survive a reupload");
    let location = moved.headers()["location"].to_str().unwrap().to_string();
    let location = if location.starts_with('/') {
        app.url(&location)
    } else {
        location
    };
    assert_eq!(
        app.send(app.http().get(&location)).await.status(),
        200,
        "signed links survive a reupload: {location}"
    );
    let tables = app.data_tables().await;
    assert_eq!(tables.len(), 1, "the old table is gone, no staging left: {tables:?}");
}

#[tokio::test]
async fn a_file_that_does_not_fit_leaves_the_data_alone() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("remy", "editor").await;
    let (_, viewer) = app.user_token("vic", "viewer").await;
    let job = app
        .upload_ok(&owner, "stops.geojson", points(3, false), &[("visibility", "public")])
        .await;
    let id = app.wait_job(&owner, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Several layers and none named like the old one: say which.
    let failed = reupload(
        &app,
        &owner,
        &id,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[],
    )
    .await;
    assert_eq!(failed["status"], "failed");
    let detail = failed["error"]["detail"].as_str().unwrap();
    assert!(detail.contains("countries") && detail.contains("layer"), "{detail}");
    let failed = reupload(
        &app,
        &owner,
        &id,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[("layer", "oceans")],
    )
    .await;
    assert!(failed["error"]["detail"].as_str().unwrap().contains("not in the file"));
    // A CSV without coordinates.
    let failed = reupload(&app, &owner, &id, "plain.csv", b"a,b\n1,2\n".to_vec(), &[]).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["error"]["detail"].as_str().unwrap().contains("coordinates"));
    let dataset = app.dataset(&owner, &id).await;
    assert_eq!(dataset["feature_count"], 3);
    let (_, items) = app.get_json(None, &format!("/api/collections/{id}/items")).await;
    assert_eq!(items["numberMatched"], 3);
    assert_eq!(app.data_tables().await.len(), 1, "no staging table left behind");

    // A chosen layer replaces points with polygons.
    let done = reupload(
        &app,
        &owner,
        &id,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[("layer", "countries")],
    )
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let dataset = app.dataset(&owner, &id).await;
    assert_eq!(dataset["feature_count"], 240);
    assert_eq!(dataset["geometry_type"], "MultiPolygon");
    assert_eq!(dataset["source_layer"], "countries");

    // Who may: only those who may change the dataset; unknown form fields refused.
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &viewer,
            "p.geojson",
            points(1, false),
            &[],
        )
        .await;
    assert_eq!(response.status(), 403);
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &owner,
            "p.geojson",
            points(1, false),
            &[("title", "x")],
        )
        .await;
    assert_eq!(response.status(), 422);
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &owner,
            "p.txt",
            b"x".to_vec(),
            &[],
        )
        .await;
    assert_eq!(response.status(), 422);
}
