//! Quotas: an admin caps a user's storage and datasets; uploads, URL
//! imports and reuploads past a cap answer 422 naming the quota, its limit
//! and the usage, with nothing queued or kept; the account shows usage and
//! caps; concurrent uploads cannot overshoot by more than one file.
use catalog_tests::{Api, App};
use serde_json::{Value, json};
use uuid::Uuid;

fn points(n: usize) -> Vec<u8> {
    let features: Vec<Value> = (0..n)
        .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64 / 100.0, 1]}, "properties": {"name": format!("point {i}")}}))
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

async fn set_quota(app: &App, token: &str, user: Uuid, body: Value) -> (u16, Value) {
    let request = app
        .http()
        .put(app.url(&format!("/api/admin/users/{user}/quota")))
        .bearer_auth(token)
        .json(&body);
    let response = app.send(request).await;
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn usage(app: &App, token: &str) -> Value {
    let (status, me) = app.get_json(Some(token), "/api/auth/me").await;
    assert_eq!(status, 200);
    me["quota_usage"].clone()
}

async fn job_count(app: &App) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Asserts a 422 naming the quota, its limit and the usage.
async fn assert_refused(response: reqwest::Response, quota: &str, limit: i64, usage: Option<i64>) {
    assert_eq!(response.status(), 422);
    let problem: Value = response.json().await.unwrap();
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("the {quota} quota")), "{detail}");
    assert!(detail.contains(&format!("limit {limit},")), "{detail}");
    if let Some(usage) = usage {
        assert!(detail.contains(&format!("usage {usage} ")), "{detail}");
    }
}

#[tokio::test]
async fn caps_refuse_what_goes_past_them_and_usage_shows() {
    // The import URL passes the outbound check, so only the quota refuses it.
    let app = App::start_with_worker_and(&[("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1:9")]).await;
    let admin = app.admin_token().await;
    let (erin_id, erin) = app.user_token("erin", "editor").await;
    let (_, viewer) = app.user_token("vic", "viewer").await;

    assert_eq!(
        set_quota(&app, &viewer, erin_id, json!({"dataset_count": 1})).await.0,
        403
    );
    assert_eq!(
        set_quota(&app, &admin, Uuid::now_v7(), json!({"dataset_count": 1}))
            .await
            .0,
        404
    );
    assert_eq!(
        set_quota(&app, &admin, erin_id, json!({"dataset_count": -1})).await.0,
        422
    );
    let (status, quota) = set_quota(
        &app,
        &admin,
        erin_id,
        json!({"storage_bytes": null, "dataset_count": 1}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(quota, json!({"storage_bytes": null, "dataset_count": 1}));

    let job = app.upload_ok(&erin, "first.geojson", points(50), &[]).await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let dataset_id = job["dataset_id"].as_str().unwrap().to_string();
    let shown = usage(&app, &erin).await;
    assert_eq!(shown["dataset_count"], 1);
    assert_eq!(shown["count_cap"], 1);
    assert_eq!(shown["storage_cap"], 0, "0: unlimited");
    let bytes_used = shown["bytes_used"].as_i64().unwrap();
    assert!(bytes_used > 0, "the table's bytes count: {shown}");

    let jobs_before = job_count(&app).await;
    assert_refused(
        app.upload(&erin, "second.geojson", points(5), &[]).await,
        "dataset_count",
        1,
        Some(1),
    )
    .await;
    let request = app
        .http()
        .post(app.url("/api/datasets/import-url"))
        .bearer_auth(&erin)
        .json(&json!({"url": "http://127.0.0.1:9/never-fetched.geojson"}));
    assert_refused(app.send(request).await, "dataset_count", 1, Some(1)).await;
    assert_eq!(job_count(&app).await, jobs_before, "nothing queued");

    // A storage cap just above the usage: a reupload larger than what is
    // left is refused; the datasets cap lifted.
    let cap = bytes_used + 1000;
    set_quota(
        &app,
        &admin,
        erin_id,
        json!({"storage_bytes": cap, "dataset_count": null}),
    )
    .await;
    let reupload = app
        .post_file(
            &format!("/api/datasets/{dataset_id}/reupload"),
            &erin,
            "more.geojson",
            points(200),
            &[],
        )
        .await;
    assert_refused(reupload, "storage", cap, Some(bytes_used)).await;
    assert_eq!(job_count(&app).await, jobs_before, "nothing queued");
    let uploads: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE upload_bytes > 0 AND status = 'queued'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(uploads, 0);
    let shown = usage(&app, &erin).await;
    assert_eq!(shown["storage_cap"], cap);
    assert_eq!(shown["count_cap"], 0);

    // Lifting both caps lets uploads through again.
    let (status, _) = set_quota(
        &app,
        &admin,
        erin_id,
        json!({"storage_bytes": null, "dataset_count": null}),
    )
    .await;
    assert_eq!(status, 200);
    let job = app.upload_ok(&erin, "third.geojson", points(5), &[]).await;
    assert_eq!(app.wait_job(&erin, &job).await["status"], "succeeded");
}

#[tokio::test]
async fn concurrent_uploads_overshoot_by_at_most_one_file() {
    // No worker: admitted uploads stay held against the quota.
    let app = App::start().await;
    let admin = app.admin_token().await;
    let (erin_id, erin) = app.user_token("erin", "editor").await;
    let file = points(300);
    let size = file.len() as i64;
    // Room for one file and a half.
    let cap = size * 3 / 2;
    set_quota(&app, &admin, erin_id, json!({"storage_bytes": cap})).await;
    let names: Vec<String> = (0..6).map(|i| format!("p{i}.geojson")).collect();
    let uploads = names.iter().map(|name| app.upload(&erin, name, file.clone(), &[]));
    let statuses: Vec<u16> = futures::future::join_all(uploads)
        .await
        .iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert_eq!(statuses.iter().filter(|s| **s == 202).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 422).count(), 5, "{statuses:?}");
    let held: i64 = sqlx::query_scalar("SELECT coalesce(sum(upload_bytes), 0)::bigint FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(held, size);
    assert_eq!(usage(&app, &erin).await["bytes_used"], size);
}

/// The store's files whose path names `id`.
fn stored_files_of(app: &App, id: &str) -> Vec<(String, u64)> {
    fn walk(dir: &std::path::Path, found: &mut Vec<(String, u64)>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else {
                found.push((path.display().to_string(), entry.metadata().unwrap().len()));
            }
        }
    }
    let mut found = Vec::new();
    walk(app.storage_dir(), &mut found);
    found.retain(|(path, _)| path.contains(id));
    found
}

async fn delete_dataset(app: &App, token: &str, id: &str) {
    let request = app
        .http()
        .delete(app.url(&format!("/api/datasets/{id}")))
        .bearer_auth(token);
    assert_eq!(app.send(request).await.status(), 204);
}

#[tokio::test]
async fn a_datasets_files_count_until_it_is_deleted_and_go_with_it() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (_, erin) = app.user_token("erin", "editor").await;
    let before = usage(&app, &erin).await["bytes_used"].as_i64().unwrap();

    // A raster: its COG counts, byte for byte.
    let dem = catalog_tests::data_file("raster/elev_luxembourg.tif");
    let job = app.upload_ok(&erin, "elev_luxembourg.tif", dem, &[]).await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let size = app.dataset(&erin, &id).await["raster"]["size_bytes"].as_i64().unwrap();
    let files = stored_files_of(&app, &id);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].1 as i64, size, "{files:?}");
    assert_eq!(usage(&app, &erin).await["bytes_used"].as_i64().unwrap(), before + size);
    delete_dataset(&app, &erin, &id).await;
    assert_eq!(stored_files_of(&app, &id), [], "the COG goes with its dataset");
    assert_eq!(usage(&app, &erin).await["bytes_used"].as_i64().unwrap(), before);

    // A cold table: its archive counts, and goes with it too.
    let job = app.upload_ok(&erin, "points.geojson", points(500), &[]).await;
    let job = app.wait_job(&erin, &job).await;
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let request = app
        .http()
        .post(app.url(&format!("/api/datasets/{id}/archive")))
        .bearer_auth(&admin)
        .json(&json!({}));
    let archiving: Value = app.send(request).await.json().await.unwrap();
    let job = app.wait_job(&admin, archiving["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let files = stored_files_of(&app, &id);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        usage(&app, &erin).await["bytes_used"].as_i64().unwrap(),
        before + files[0].1 as i64
    );
    delete_dataset(&app, &erin, &id).await;
    assert_eq!(stored_files_of(&app, &id), [], "the archive goes with its dataset");
    assert_eq!(usage(&app, &erin).await["bytes_used"].as_i64().unwrap(), before);
}

/// A GeoPackage with one layer per file given, written by GDAL itself.
fn geopackage_of(layers: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let gpkg = dir.path().join("layers.gpkg");
    for (name, geojson) in layers {
        let source = dir.path().join(format!("{name}.geojson"));
        std::fs::write(&source, geojson).unwrap();
        let mut command = std::process::Command::new("ogr2ogr");
        command.args(["-f", "GPKG"]).arg(&gpkg).arg(&source);
        if gpkg.exists() {
            command.arg("-update");
        }
        let output = command.args(["-nln", name]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    std::fs::read(gpkg).unwrap()
}

/// A user capped at one dataset sends files of two layers (a GeoPackage,
/// a zip): each job fails naming the quota, and nothing of it is
/// published or left behind; with room for two, the same file makes two.
#[tokio::test]
async fn a_cap_holds_for_files_of_several_layers() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (erin_id, erin) = app.user_token("erin", "editor").await;
    let (status, _) = set_quota(&app, &admin, erin_id, json!({"dataset_count": 1})).await;
    assert_eq!(status, 200);
    let two_layers = geopackage_of(&[("first", points(5)), ("second", points(7))]);
    let zipped = catalog_tests::zip_of(&[("first.geojson", points(5)), ("second.geojson", points(7))]);
    for (name, file) in [("two.gpkg", two_layers.clone()), ("two.zip", zipped)] {
        let job = app.upload_ok(&erin, name, file, &[]).await;
        let job = app.wait_job(&erin, &job).await;
        assert_eq!(job["status"], "failed", "{name}: {job}");
        assert_eq!(job["error"]["status"], 422, "{job}");
        let detail = job["error"]["detail"].as_str().unwrap();
        assert!(detail.contains("the dataset_count quota"), "{detail}");
        assert!(detail.contains("limit 1,"), "{detail}");
        assert!(detail.contains("none was published"), "{detail}");
        assert_eq!(job["dataset_ids"], json!([]), "{job}");
    }
    let (datasets, tables): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM datasets WHERE created_by = $1),
                (SELECT count(*) FROM pg_tables WHERE schemaname = 'data')",
    )
    .bind(erin_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((datasets, tables), (0, 0), "nothing published, nothing half made");
    assert_eq!(usage(&app, &erin).await["dataset_count"], 0);

    set_quota(&app, &admin, erin_id, json!({"dataset_count": 2})).await;
    let job = app.upload_ok(&erin, "two.gpkg", two_layers, &[]).await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["dataset_ids"].as_array().unwrap().len(), 2, "{job}");
    assert_refused(
        app.upload(&erin, "third.geojson", points(3), &[]).await,
        "dataset_count",
        2,
        Some(2),
    )
    .await;
}

/// Layers chosen at upload: a preview lists a file's layers (with counts
/// and types, loading nothing); then only the chosen ones load, so a user
/// capped at one dataset takes one layer of a two-layer file. A layer the
/// file lacks fails the job, naming it and the layers there are.
#[tokio::test]
async fn a_multi_layer_file_loads_the_layers_chosen() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (erin_id, erin) = app.user_token("erin", "editor").await;
    set_quota(&app, &admin, erin_id, json!({"dataset_count": 1})).await;
    let two_layers = geopackage_of(&[("first", points(5)), ("second", points(7))]);
    let job = app
        .upload_ok(&erin, "two.gpkg", two_layers.clone(), &[("preview", "true")])
        .await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let layers: Vec<(String, i64, String)> = job["result"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["layer"].as_str().unwrap().to_string(),
                l["feature_count"].as_i64().unwrap(),
                l["geometry_type"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        layers,
        [
            ("first".to_string(), 5, "Point".to_string()),
            ("second".to_string(), 7, "Point".to_string())
        ]
    );
    assert_eq!(job["dataset_ids"], json!([]));
    assert_eq!(usage(&app, &erin).await["dataset_count"], 0, "a preview loads nothing");

    // The layer chosen loads from the file the preview kept: it is not sent again.
    let preview_id = job["id"].as_str().unwrap().to_string();
    let load = |token: String, id: String, body: Value| {
        let app = &app;
        async move {
            let response = app
                .send(
                    app.http()
                        .post(app.url(&format!("/api/datasets/upload/{id}/load")))
                        .bearer_auth(&token)
                        .json(&body),
                )
                .await;
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (_, mallory) = app.user_token("mallory", "editor").await;
    let (status, body) = load(mallory, preview_id.clone(), json!({"layers": ["second"]})).await;
    assert_eq!(status, 404, "another's preview is not found: {body}");
    let (status, body) = load(
        erin.clone(),
        preview_id.clone(),
        json!({"layers": ["second"], "title": "Second layer"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let job = app.wait_job(&erin, body["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let made = job["dataset_ids"].as_array().unwrap();
    assert_eq!(made.len(), 1, "{job}");
    let dataset = app.dataset(&erin, made[0].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], 7);
    assert_eq!(dataset["title"], "Second layer");
    // Only a finished preview's file loads this way.
    let (status, body) = load(erin.clone(), job["id"].as_str().unwrap().to_string(), json!({})).await;
    assert_eq!(status, 409, "{body}");
    // The cap holds as for an upload: a second dataset is refused.
    let (status, body) = load(erin.clone(), preview_id.clone(), json!({"layers": ["first"]})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("quota"), "{body}");

    set_quota(&app, &admin, erin_id, json!({"dataset_count": 5})).await;
    let job = app
        .upload_ok(
            &erin,
            "two.gpkg",
            two_layers.clone(),
            &[("layer", "first"), ("layer", "third")],
        )
        .await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("\"third\"") && detail.contains("first, second"),
        "{detail}"
    );
    let job = app
        .upload_ok(
            &erin,
            "two.gpkg",
            two_layers,
            &[("layer", "first"), ("layer", "second"), ("title", "Survey")],
        )
        .await;
    let job = app.wait_job(&erin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let mut titles = Vec::new();
    for id in job["dataset_ids"].as_array().unwrap() {
        titles.push(
            app.dataset(&erin, id.as_str().unwrap()).await["title"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    titles.sort();
    assert_eq!(
        titles,
        ["Survey — first", "Survey — second"],
        "each layer's dataset is named apart"
    );
}
