//! URL import: the API answers at once, the worker downloads in the
//! background, and no request reaches an internal address unless allowed.
use std::{net::SocketAddr, time::Duration};

use axum::{Router, body::Body, response::Redirect, routing::get};
use catalog_tests::{Api, Stack, StackOptions, data_file};
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

async fn import(stack: &Stack, token: &str, body: Value) -> reqwest::Response {
    stack
        .http
        .post(stack.url("/api/datasets/import-url"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_url_is_downloaded_in_the_background_and_ingested() {
    let host = remote_host().await;
    let stack = Stack::start_with(StackOptions::workers(1).env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())).await;
    let token = stack.admin_token().await;
    let response = import(
        &stack,
        &token,
        json!({"url": format!("http://{host}/data/bikes.geojson"), "title": "Bikes", "visibility": "public"}),
    )
    .await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "queued");
    let job = stack.wait_job(&token, body["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "url_download");
    let dataset = stack.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["title"], "Bikes");
    assert_eq!(dataset["visibility"], "public");
    assert_eq!(dataset["feature_count"], 532);
    assert_eq!(dataset["source_filename"], "bikes.geojson");
}

#[tokio::test]
async fn internal_addresses_are_refused_before_anything_is_queued() {
    let host = remote_host().await;
    let stack = Stack::start_with(StackOptions::workers(0).env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())).await;
    let token = stack.admin_token().await;
    for url in [
        format!("http://127.0.0.1:{}/x.geojson", host.port() + 1),
        format!("http://localhost:{}/data/bikes.geojson", host.port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/a.geojson".to_string(),
        "http://[::1]/a.geojson".to_string(),
        "file:///etc/passwd".to_string(),
        "not a url".to_string(),
    ] {
        let response = import(&stack, &token, json!({"url": url})).await;
        assert_eq!(response.status(), 422, "{url}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
}

#[tokio::test]
async fn a_redirect_to_an_internal_address_fails_the_job() {
    let host = remote_host().await;
    let stack = Stack::start_with(StackOptions::workers(1).env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())).await;
    let token = stack.admin_token().await;
    let response = import(&stack, &token, json!({"url": format!("http://{host}/redirect")})).await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    let job = stack.wait_job(&token, body["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("127.0.0.2") && detail.contains("not a public address"),
        "{detail}"
    );
    assert_eq!(stack.dataset_count().await, 0);
}

#[tokio::test]
async fn a_download_is_bounded_in_time() {
    let host = remote_host().await;
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())
            .env("URL_IMPORT_FETCH_MAX_SECONDS", "2"),
    )
    .await;
    let token = stack.admin_token().await;
    let response = import(&stack, &token, json!({"url": format!("http://{host}/slow.geojson")})).await;
    let body: Value = response.json().await.unwrap();
    let job_id = body["job_id"].as_str().unwrap();
    let mut saw_downloading = false;
    for _ in 0..100 {
        let job = stack.job(&token, job_id).await;
        if job["step"] == "downloading" {
            saw_downloading = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_downloading, "the job reports its download step");
    let job = stack.wait_job(&token, job_id).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("URL_IMPORT_FETCH_MAX_SECONDS"),
        "{job}"
    );
}
