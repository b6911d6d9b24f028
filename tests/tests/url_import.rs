//! URL import: the API answers at once, the worker downloads in the
//! background, and no request reaches an internal address unless allowed.
use std::{net::SocketAddr, time::Duration};

use axum::{Router, body::Body, response::Redirect, routing::get};
use catalog_tests::{Api, App, Stack, StackOptions, data_file};
use serde_json::{Value, json};

/// A file server on loopback standing in for a remote host.
async fn remote_host() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app =
        Router::new()
            .route(
                "/data/bikes.geojson",
                get(|| async { data_file("geojson/cycle_hire_osm.geojson") }),
            )
            .route(
                "/redirect",
                get(move || async move {
                    Redirect::temporary(&format!("http://127.0.0.2:{}/data/bikes.geojson", addr.port()))
                }),
            )
            .route("/slow.geojson", get(|| async { Body::from_stream(trickle()) }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A body that trickles out over five seconds.
fn trickle() -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    futures::stream::unfold(0u32, |n| async move {
        if n >= 50 {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some((Ok(vec![b' '; 16]), n + 1))
    })
}

async fn import(api: &impl Api, token: &str, body: Value) -> reqwest::Response {
    api.send(
        api.http()
            .post(api.url("/api/datasets/import-url"))
            .bearer_auth(token)
            .json(&body),
    )
    .await
}

#[tokio::test]
async fn a_url_is_downloaded_in_the_background_and_ingested() {
    let host = remote_host().await;
    let app = App::start_with_worker_and(&[("OUTBOUND_ALLOWED_HOSTS", &host.to_string())]).await;
    let token = app.admin_token().await;
    let response = import(
        &app,
        &token,
        json!({"url": format!("http://{host}/data/bikes.geojson"), "title": "Bikes", "visibility": "public"}),
    )
    .await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "queued");
    let job = app.wait_job(&token, body["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "url_download");
    let dataset = app.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["title"], "Bikes");
    assert_eq!(dataset["visibility"], "public");
    assert_eq!(dataset["feature_count"], 532);
    assert_eq!(dataset["source_filename"], "bikes.geojson");
    // The import says what it did to every row, as an upload does.
    assert_eq!(job["source"], format!("http://{host}/data/bikes.geojson"));
    let (status, report) = app.get_json(Some(&token), job["report_url"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        (report["rows_read"].as_u64(), report["rows_loaded"].as_u64()),
        (Some(532), Some(532))
    );
}

#[tokio::test]
async fn internal_addresses_are_refused_before_anything_is_queued() {
    let host = remote_host().await;
    let app = App::start_with(&[("OUTBOUND_ALLOWED_HOSTS", &host.to_string())]).await;
    let token = app.admin_token().await;
    for url in [
        format!("http://127.0.0.1:{}/x.geojson", host.port() + 1),
        format!("http://localhost:{}/data/bikes.geojson", host.port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/a.geojson".to_string(),
        "http://[::1]/a.geojson".to_string(),
        "file:///etc/passwd".to_string(),
        "not a url".to_string(),
    ] {
        let response = import(&app, &token, json!({"url": url})).await;
        assert_eq!(response.status(), 422, "{url}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
}

#[tokio::test]
async fn a_redirect_to_an_internal_address_fails_the_job() {
    let host = remote_host().await;
    let app = App::start_with_worker_and(&[("OUTBOUND_ALLOWED_HOSTS", &host.to_string())]).await;
    let token = app.admin_token().await;
    let response = import(&app, &token, json!({"url": format!("http://{host}/redirect")})).await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    let job = app.wait_job(&token, body["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("127.0.0.2") && detail.contains("not a public address"),
        "{detail}"
    );
    assert_eq!(app.dataset_count().await, 0);
}

#[tokio::test]
async fn a_download_is_bounded_in_time() {
    let host = remote_host().await;
    let app = App::start_with_worker_and(&[
        ("OUTBOUND_ALLOWED_HOSTS", &host.to_string()),
        ("URL_IMPORT_FETCH_MAX_SECONDS", "2"),
    ])
    .await;
    let token = app.admin_token().await;
    let response = import(&app, &token, json!({"url": format!("http://{host}/slow.geojson")})).await;
    let body: Value = response.json().await.unwrap();
    let job_id = body["job_id"].as_str().unwrap();
    let mut saw_downloading = false;
    for _ in 0..100 {
        let job = app.job(&token, job_id).await;
        if job["step"] == "downloading" {
            saw_downloading = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_downloading, "the job reports its download step");
    let job = app.wait_job(&token, job_id).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("URL_IMPORT_FETCH_MAX_SECONDS"),
        "{job}"
    );
}

/// A host that fails with 503 a number of times for each file, then serves
/// it; `/gone.geojson` is always 404 and `/down.geojson` always 503.
async fn flaky_host(failures: usize) -> SocketAddr {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/recovers.geojson",
            get(move || {
                let served = served.clone();
                async move {
                    if served.fetch_add(1, Ordering::SeqCst) < failures {
                        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, Vec::new());
                    }
                    (axum::http::StatusCode::OK, data_file("geojson/cycle_hire_osm.geojson"))
                }
            }),
        )
        .route(
            "/down.geojson",
            get(|| async { axum::http::StatusCode::SERVICE_UNAVAILABLE }),
        )
        .route("/gone.geojson", get(|| async { axum::http::StatusCode::NOT_FOUND }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

#[tokio::test]
async fn a_provider_that_fails_for_a_while_is_tried_again_with_backoff() {
    let host = flaky_host(2).await;
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())
            .env("JOB_MAX_ATTEMPTS", "3")
            .env("JOB_RETRY_BACKOFF_SECONDS", "2"),
    )
    .await;
    let token = stack.admin_token().await;
    let queue = |path: &str| json!({"url": format!("http://{host}/{path}"), "title": path});
    let mut jobs = Vec::new();
    for path in ["recovers.geojson", "down.geojson", "gone.geojson"] {
        let response = import(&stack, &token, queue(path)).await;
        assert_eq!(response.status(), 202);
        let body: Value = response.json().await.unwrap();
        jobs.push(body["job_id"].as_str().unwrap().to_string());
    }

    // Between runs the job waits in the queue and says when it runs next.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let waiting = loop {
        let job = stack.job(&token, &jobs[0]).await;
        if job["next_attempt_at"].is_string() {
            break job;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never waited for a retry: {job}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(waiting["status"], "queued", "{waiting}");
    assert!(waiting["attempts"].as_i64().unwrap() >= 1, "{waiting}");
    assert!(waiting["error"].is_null(), "{waiting}");
    assert_eq!(
        waiting["last_error"], "the server answered 503 Service Unavailable",
        "{waiting}"
    );
    let next: chrono::DateTime<chrono::Utc> = waiting["next_attempt_at"].as_str().unwrap().parse().unwrap();
    assert!(next > chrono::Utc::now() - chrono::Duration::seconds(1), "{waiting}");

    let recovered = stack.wait_job(&token, &jobs[0]).await;
    assert_eq!(recovered["status"], "succeeded", "{recovered}");
    assert_eq!(recovered["attempts"], 3, "{recovered}");
    assert!(
        recovered["next_attempt_at"].is_null() && recovered["last_error"].is_null(),
        "{recovered}"
    );
    let dataset = stack.dataset(&token, recovered["dataset_id"].as_str().unwrap()).await;
    assert!(dataset["feature_count"].as_i64().unwrap() > 0, "{dataset}");

    // After the last attempt the job fails with the provider's error.
    let down = stack.wait_job(&token, &jobs[1]).await;
    assert_eq!(down["status"], "failed", "{down}");
    assert_eq!(down["attempts"], 3, "{down}");
    assert_eq!(down["error"]["status"], 502, "{down}");
    let detail = down["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("3 attempts") && detail.contains("503 Service Unavailable"),
        "{detail}"
    );

    // An answer that waiting cannot change fails at once.
    let gone = stack.wait_job(&token, &jobs[2]).await;
    assert_eq!(gone["status"], "failed", "{gone}");
    assert_eq!(gone["attempts"], 1, "{gone}");
    assert_eq!(gone["error"]["status"], 422, "{gone}");
    assert!(gone["error"]["detail"].as_str().unwrap().contains("404"), "{gone}");
}
