//! Cold datasets: an admin archives a dataset into the object store; a read
//! of its data answers 202 with one rehydrate job however many readers ask;
//! afterwards the same rows with the same gids, indexes and statistics come
//! back; a failed rehydration leaves it cold.
use std::collections::BTreeMap;

use catalog_tests::{Api, App, Stack, StackOptions};
use serde_json::{Value, json};

fn points(n: usize) -> Vec<u8> {
    let features: Vec<Value> = (0..n)
        .map(|i| json!({"type": "Feature", "properties": {"n": i, "label": format!("p{i}")}, "geometry": {"type": "Point", "coordinates": [i as f64 * 0.01, 1.0]}}))
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

/// A public dataset of `n` points, archived; its id.
async fn archived_public_points(app: &App, admin: &str, n: usize) -> String {
    let job = app
        .upload_ok(admin, "points.geojson", points(n), &[("visibility", "public")])
        .await;
    let id = app.wait_job(admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let archived = post(app, admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    let archive_job = archived.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app.wait_job(admin, &archive_job).await["status"], "succeeded");
    id
}

async fn post(api: &impl Api, token: &str, path: &str, body: Value) -> reqwest::Response {
    api.send(api.http().post(api.url(path)).bearer_auth(token).json(&body))
        .await
}

/// Every feature by gid, with its properties and geometry.
async fn features(api: &impl Api, token: &str, id: &str) -> (u16, BTreeMap<i64, Value>) {
    let (status, page) = api
        .get_json(Some(token), &format!("/api/collections/{id}/items?limit=1000"))
        .await;
    let features = page["features"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|f| (f["id"].as_i64().unwrap(), json!([f["properties"], f["geometry"]])))
                .collect()
        })
        .unwrap_or_default();
    (status, features)
}

async fn indexes(app: &App, table: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT indexdef FROM pg_indexes WHERE schemaname = 'data' AND tablename = $1 ORDER BY 1")
        .bind(table)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

async fn rehydrate_jobs(app: &App) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs WHERE kind = 'rehydrate'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn archived_datasets_come_back_exactly_on_first_read() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (editor_id, editor) = app.user_token("erin", "editor").await;
    let (_, outsider) = app.user_token("otto", "viewer").await;
    let job = app
        .upload_ok(&admin, "points.geojson", points(40), &[("visibility", "restricted")])
        .await;
    let job = app.wait_job(&admin, &job).await;
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let added = post(&app, &admin, &format!("/api/datasets/{id}/features"),
        json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [5, 6]}, "properties": {"n": 99, "label": "added"}})).await;
    assert_eq!(added.status(), 201);
    let table = app.dataset(&admin, &id).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, before) = features(&app, &admin, &id).await;
    assert_eq!(before.len(), 41);
    let indexes_before = indexes(&app, &table).await;

    assert_eq!(
        post(&app, &editor, &format!("/api/datasets/{id}/archive"), json!({}))
            .await
            .status(),
        403
    );
    let archived = post(&app, &admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    assert_eq!(archived.status(), 202);
    let archive_job = archived.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let done = app.wait_job(&admin, &archive_job).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let record = app.dataset(&admin, &id).await;
    assert_eq!(record["storage"], "cold");
    assert!(!app.data_tables().await.contains(&table), "the table left PostGIS");
    let again = post(&app, &admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    assert_eq!(again.status(), 200, "already cold");

    // A caller who may not read it starts nothing.
    assert_eq!(features(&app, &outsider, &id).await.0, 404);
    assert_eq!(rehydrate_jobs(&app).await, 0);
    // Many readers at once: one job.
    let reads = (0..6).map(|_| {
        app.send(
            app.http()
                .get(app.url(&format!("/api/collections/{id}/items")))
                .bearer_auth(&admin),
        )
    });
    let mut jobs = Vec::new();
    for response in futures::future::join_all(reads).await {
        assert_eq!(response.status(), 202);
        assert!(response.headers().contains_key("retry-after"));
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "rehydrating");
        jobs.push(body["job_id"].as_str().unwrap().to_string());
    }
    jobs.sort();
    jobs.dedup();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(rehydrate_jobs(&app).await, 1);
    // Another reader (here by a grant) may follow the job; an outsider may not.
    let grant = app
        .send(
            app.http()
                .put(app.url(&format!("/api/datasets/{id}/grants/{editor_id}")))
                .bearer_auth(&admin)
                .json(&json!({"permission": "read"})),
        )
        .await;
    assert_eq!(grant.status(), 200);
    let (status, followed) = app.get_json(Some(&editor), &format!("/api/jobs/{}", jobs[0])).await;
    assert_eq!(status, 200, "{followed}");
    assert_eq!(followed["kind"], "rehydrate");
    assert_eq!(followed["dataset_id"], id.as_str());
    let (status, _) = app.get_json(Some(&outsider), &format!("/api/jobs/{}", jobs[0])).await;
    assert_eq!(status, 404);
    let cancel = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/jobs/{}", jobs[0])))
                .bearer_auth(&editor),
        )
        .await;
    assert_eq!(cancel.status(), 404, "following is not owning");
    let rehydrated = app.wait_job(&admin, &jobs[0]).await;
    assert_eq!(rehydrated["status"], "succeeded", "{rehydrated}");

    let (status, after) = features(&app, &admin, &id).await;
    assert_eq!(status, 200);
    assert_eq!(after, before, "the same rows with the same gids");
    assert_eq!(indexes(&app, &table).await, indexes_before);
    let analyzed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stats WHERE schemaname = 'data' AND tablename = $1")
            .bind(&table)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(analyzed > 0, "statistics were gathered");
    assert_eq!(app.dataset(&admin, &id).await["storage"], "hot");
    let newer = post(&app, &admin, &format!("/api/datasets/{id}/features"),
        json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [7, 8]}, "properties": {"n": 100, "label": "newer"}})).await;
    assert_eq!(newer.status(), 201);
    assert_eq!(newer.json::<Value>().await.unwrap()["id"], 42, "a fresh gid");
}

#[tokio::test]
async fn a_failed_rehydration_leaves_the_dataset_cold() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let job = app.upload_ok(&admin, "points.geojson", points(10), &[]).await;
    let id = app.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let archived = post(&app, &admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    let archive_job = archived.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app.wait_job(&admin, &archive_job).await["status"], "succeeded");
    // Damage the archive in the store.
    let object: String = sqlx::query_scalar("SELECT archive ->> 'object' FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    std::fs::write(app.storage_dir().join(&object), b"not gzip at all").unwrap();
    let (status, body) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/features"))
        .await;
    assert_eq!(status, 202);
    let failed = app.wait_job(&admin, body["job_id"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["detail"].as_str().unwrap().contains("archive"),
        "{failed}"
    );
    assert_eq!(app.dataset(&admin, &id).await["storage"], "cold");
    let leftovers: Vec<String> = app
        .data_tables()
        .await
        .into_iter()
        .filter(|t| t.starts_with("_staging_"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `ARCHIVE_AFTER_IDLE_DAYS`: a dataset whose data nobody read for that
/// long is archived by the workers' sweep; one read recently stays hot.
#[tokio::test]
async fn idle_datasets_are_archived_on_schedule() {
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("ARCHIVE_AFTER_IDLE_DAYS", "1")
            .env("CLEANUP_INTERVAL_SECONDS", "1"),
    )
    .await;
    let admin = stack.admin_token().await;
    let mut ids = Vec::new();
    for name in ["idle.geojson", "read.geojson"] {
        let job = stack.upload_ok(&admin, name, points(5), &[]).await;
        ids.push(
            stack.wait_job(&admin, &job).await["dataset_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    // Both last changed two days ago; one is read now.
    sqlx::query("UPDATE datasets SET updated_at = now() - interval '2 days'")
        .execute(&stack.pool)
        .await
        .unwrap();
    assert_eq!(features(&stack, &admin, &ids[1]).await.0, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while stack.dataset(&admin, &ids[0]).await["storage"] != "cold" {
        assert!(
            std::time::Instant::now() < deadline,
            "never archived:\n{}",
            stack.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(stack.dataset(&admin, &ids[1]).await["storage"], "hot", "read recently");
}

/// Eight readers at once of a public cold dataset (an admin, anonymous
/// callers, a viewer) are handed one rehydrate job; once it is done every
/// read is served, even by an API process whose copy of the record still
/// says cold (its change announcement is held back here, as a slow one
/// would be).
#[tokio::test]
async fn every_reader_of_a_cold_dataset_is_handed_one_job_then_served() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (_, viewer) = app.user_token("vera", "viewer").await;
    let id = archived_public_points(&app, &admin, 20).await;
    sqlx::query("ALTER TABLE datasets DISABLE TRIGGER datasets_announce_change")
        .execute(&app.pool)
        .await
        .unwrap();

    let readers: Vec<Option<&str>> = vec![
        Some(&admin),
        None,
        Some(&viewer),
        None,
        None,
        Some(&admin),
        None,
        Some(&viewer),
    ];
    let read_all = || {
        futures::future::join_all(readers.iter().map(|token| {
            let mut request = app
                .http()
                .get(app.url(&format!("/api/collections/{id}/items?limit=100")));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            app.send(request)
        }))
    };
    // A read that arrives once the (small) rehydration is done is served:
    // on a busy machine the worker may finish before the last reader asks.
    let mut jobs = Vec::new();
    for response in read_all().await {
        if response.status() == 200 {
            continue;
        }
        assert_eq!(response.status(), 202);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "rehydrating", "{body}");
        jobs.push(body["job_id"].as_str().unwrap().to_string());
    }
    assert!(!jobs.is_empty(), "the first reader is handed the job");
    jobs.sort();
    jobs.dedup();
    assert_eq!(jobs.len(), 1, "one job, whoever asks: {jobs:?}");
    assert_eq!(app.wait_job(&admin, &jobs[0]).await["status"], "succeeded");

    for response in read_all().await {
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "served once the job is done: {body}");
        assert_eq!(body["features"].as_array().unwrap().len(), 20);
    }
    assert_eq!(rehydrate_jobs(&app).await, 1);
}

/// The 202 of an archive request says `queued`, as every 202 with a job
/// does, also when the job is already claimed by a worker (its status now
/// is at `GET /api/jobs/{id}`).
#[tokio::test]
async fn archiving_answers_queued_whatever_its_job_is_doing() {
    let mut stack = Stack::start_with(StackOptions::workers(1)).await;
    let admin = stack.admin_token().await;
    let job = stack.upload_ok(&admin, "points.geojson", points(5), &[]).await;
    let id = stack.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    // No worker from here on: the archive job waits until claimed by hand.
    stack.kill_worker(0);
    let first = post(&stack, &admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["status"], "queued", "{first}");
    sqlx::query("UPDATE jobs SET status = 'running', started_at = now() WHERE id = $1::uuid")
        .bind(first["job_id"].as_str().unwrap())
        .execute(&stack.pool)
        .await
        .unwrap();
    let again = post(&stack, &admin, &format!("/api/datasets/{id}/archive"), json!({})).await;
    assert_eq!(again.status(), 202);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["job_id"], first["job_id"], "the archive job already under way");
    assert_eq!(again["status"], "queued", "{again}");
    let now = stack.job(&admin, first["job_id"].as_str().unwrap()).await;
    assert_eq!(now["status"], "running", "{now}");
}

/// Every read route of an archived dataset answers 202 (its rehydration)
/// or serves, never 500: a download with a download token planned its
/// query on the table before bringing it back.
#[tokio::test]
async fn every_read_of_an_archived_dataset_answers_202_or_serves() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = archived_public_points(&app, &admin, 10).await;
    let token = post(&app, &admin, &format!("/api/auth/download-token/{id}"), json!({})).await;
    assert_eq!(token.status(), 200);
    let download_token = token.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    for path in [
        format!("/api/datasets/{id}/download?token={download_token}"),
        format!("/api/datasets/{id}/download?token={download_token}&format=csv"),
        format!("/api/datasets/{id}/download?format=geojson"),
        format!("/api/collections/{id}/items"),
        format!("/api/collections/{id}/items/1"),
        format!("/api/datasets/{id}/features"),
        format!("/api/tiles/{id}/0/0/0"),
        format!("/api/tiles/{id}/cluster/0/0/0"),
        format!("/api/collections/{id}/tiles/WebMercatorQuad/0/0/0"),
        format!("/api/datasets/{id}/thumbnail.png"),
        format!("/api/datasets/{id}/styles"),
        format!("/api/stac/search?ids={id}"),
    ] {
        let response = app.send(app.http().get(app.url(&path)).bearer_auth(&admin)).await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        assert!(matches!(status, 200 | 202 | 204), "{path}: {status} {body}");
    }
}
