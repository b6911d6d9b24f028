//! Requests that queue a job are idempotent: the same `Idempotency-Key`
//! from the same user answers the job its first request queued (also when
//! both arrive at once), and a connector push of a resource at a version
//! the provider already served answers the job that pulled it.
use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use axum::{Router, extract::State, http::header, routing::get};
use catalog_tests::{Api, App};
use serde_json::{Value, json};

async fn job_count(app: &App) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn job_of(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 202);
    response.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn upload(app: &App, token: &str, key: Option<&str>) -> reqwest::Response {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(br#"{"type":"FeatureCollection","features":[]}"#.to_vec())
            .file_name("p.geojson"),
    );
    let mut request = app
        .http
        .post(app.url("/api/datasets/upload"))
        .bearer_auth(token)
        .multipart(form);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    app.send(request).await
}

async fn import(app: &App, token: &str, key: &str) -> reqwest::Response {
    let request = app
        .http
        .post(app.url("/api/datasets/import-url"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(&json!({"url": "http://127.0.0.1:9/a.geojson"}));
    app.send(request).await
}

#[tokio::test]
async fn the_same_key_answers_the_same_job() {
    let app = App::start_with(&[("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1:9")]).await;
    let admin = app.admin_token().await;
    let (_, other) = app.user_token("otto", "editor").await;

    let first = job_of(upload(&app, &admin, Some("upload-1")).await).await;
    let again = job_of(upload(&app, &admin, Some("upload-1")).await).await;
    assert_eq!(first, again);
    assert_eq!(job_count(&app).await, 1);
    let unkeyed = job_of(upload(&app, &admin, None).await).await;
    assert_ne!(unkeyed, first, "no key: a new job each time");
    let others = job_of(upload(&app, &other, Some("upload-1")).await).await;
    assert_ne!(others, first, "keys are each user's own");
    assert_eq!(job_count(&app).await, 3);

    // At once: one job for every request with the key.
    let answers = futures::future::join_all((0..5).map(|_| import(&app, &admin, "import-1"))).await;
    let mut jobs = Vec::new();
    for answer in answers {
        jobs.push(job_of(answer).await);
    }
    jobs.sort();
    jobs.dedup();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(job_count(&app).await, 4);

    let too_long = "k".repeat(300);
    assert_eq!(upload(&app, &admin, Some(&too_long)).await.status(), 400);
}

/// Keys are visible ASCII (0x21-0x7E), 1 to 255 of them: a tab, a space
/// or a control character inside a key is a 400 problem, and nothing is
/// queued.
#[tokio::test]
async fn keys_outside_visible_ascii_are_refused() {
    let app = App::start().await;
    let admin = app.admin_token().await;
    for key in ["with\ttab", "with space", "caf\u{e9}"] {
        let request = app
            .http
            .post(app.url("/api/datasets/import-url"))
            .bearer_auth(&admin)
            .header(
                "idempotency-key",
                header::HeaderValue::from_bytes(key.as_bytes()).unwrap(),
            )
            .json(&json!({"url": "http://127.0.0.1:9/a.geojson"}));
        let response = app.send(request).await;
        assert_eq!(response.status(), 400, "{key:?}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
        let problem: Value = response.json().await.unwrap();
        assert!(
            problem["detail"].as_str().unwrap().contains("visible ASCII"),
            "{problem}"
        );
    }
    assert_eq!(job_count(&app).await, 0, "nothing queued");
    let widest = "!~".repeat(127) + "k";
    job_of(upload(&app, &admin, Some(&widest)).await).await;
}

/// A repeated request answers as its first did: 202 with the job and
/// `queued`, also once a worker has claimed the job (its status now is at
/// the job's `Location`).
#[tokio::test]
async fn a_repeated_request_answers_queued_as_its_first_did() {
    let app = App::start().await;
    let admin = app.admin_token().await;
    let first: Value = upload(&app, &admin, Some("claimed-1")).await.json().await.unwrap();
    assert_eq!(first["status"], "queued", "{first}");
    // There is no worker here: claim the job as one would.
    sqlx::query("UPDATE jobs SET status = 'running', started_at = now() WHERE id = $1::uuid")
        .bind(first["job_id"].as_str().unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    let again = upload(&app, &admin, Some("claimed-1")).await;
    assert_eq!(again.status(), 202);
    let location = again.headers()["location"].to_str().unwrap().to_string();
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["job_id"], first["job_id"]);
    assert_eq!(again["status"], "queued", "{again}");
    assert!(location.ends_with(&format!("/api/jobs/{}", first["job_id"].as_str().unwrap())));
    let path = location.split_once("/api/").map(|(_, p)| format!("/api/{p}")).unwrap();
    let (_, now) = app.get_json(Some(&admin), &path).await;
    assert_eq!(now["status"], "running", "{now}");
}

#[tokio::test]
async fn a_connector_push_of_a_version_already_pulled_answers_its_job() {
    let version = Arc::new(AtomicU32::new(1));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap();
    let provider = Router::new()
        .route(
            "/r/{id}",
            get(|State(version): State<Arc<AtomicU32>>| async move {
                let etag = format!("\"v{}\"", version.load(Ordering::SeqCst));
                ([(header::ETAG, etag)], r#"{"type":"FeatureCollection","features":[]}"#)
            }),
        )
        .with_state(version.clone());
    tokio::spawn(async move { axum::serve(listener, provider).await.unwrap() });
    let app = App::start_with(&[("OUTBOUND_ALLOWED_HOSTS", &host.to_string())]).await;
    let admin = app.admin_token().await;
    let push_from = |template: String, resource: &'static str| {
        let request = app
            .http
            .post(app.url("/api/services/connectors/http/ingest"))
            .bearer_auth(&admin)
            .json(&json!({"config": {"url_template": template}, "resource_id": resource}));
        app.send(request)
    };
    let push = |resource: &'static str| push_from(format!("http://{host}/r/{{resource_id}}"), resource);
    let first = job_of(push("a").await).await;
    assert_eq!(job_of(push("a").await).await, first, "same resource, same version");
    let other = job_of(push("b").await).await;
    assert_ne!(other, first, "another resource");
    let elsewhere = job_of(push_from(format!("http://{host}/r/{{resource_id}}?copy=2"), "a").await).await;
    assert_ne!(
        elsewhere, first,
        "the same id and version at another URL is another source"
    );
    version.store(2, Ordering::SeqCst);
    let newer = job_of(push("a").await).await;
    assert_ne!(newer, first, "a new version is pulled again");
    assert_eq!(job_count(&app).await, 4);
}
