//! Draining and the worker's own metrics: SIGTERM makes a worker take no
//! new job, lets a running job finish within `WORKER_DRAIN_SECONDS`, hands
//! back at once what cannot finish in time, and exits 0; meanwhile
//! `WORKER_METRICS_ADDR` shows it draining. The API process, too, stops on
//! SIGTERM with exit status 0.
use std::{
    net::{SocketAddr, TcpListener},
    time::{Duration, Instant},
};

use axum::{Router, body::Body, extract::Path, routing::get};
use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

/// A loopback host serving a valid GeoJSON of `n` points, one point every
/// 100 ms, so a download takes `n / 10` seconds.
async fn slow_host() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route(
        "/{n}/points.geojson",
        get(|Path(n): Path<u32>| async move {
            let parts = futures::stream::unfold(0u32, move |i| async move {
                let chunk = match i {
                    i if i > n => return None,
                    0 => r#"{"type": "FeatureCollection", "features": ["#.to_string(),
                    i => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let comma = if i < n { "," } else { "]}" };
                        format!(
                            r#"{{"type": "Feature", "geometry": {{"type": "Point", "coordinates": [{i}, 1]}}, "properties": {{"i": {i}}}}}{comma}"#
                        )
                    }
                };
                Some((Ok::<_, std::io::Error>(chunk), i + 1))
            });
            Body::from_stream(parts)
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn import(stack: &Stack, token: &str, url: String) -> String {
    let request = stack
        .http
        .post(stack.url("/api/datasets/import-url"))
        .bearer_auth(token)
        .json(&json!({"url": url}));
    let response = stack.send(request).await;
    assert_eq!(response.status(), 202);
    response.json::<Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn wait_for_status(stack: &Stack, token: &str, job_id: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while stack.job(token, job_id).await["status"] != status {
        assert!(
            Instant::now() < deadline,
            "job {job_id} never {status}:\n{}",
            stack.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn free_address() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_draining_worker_finishes_its_job_takes_no_new_one_and_exits_0() {
    let host = slow_host().await;
    let metrics_addr = free_address();
    let mut stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())
            .env("WORKER_DRAIN_SECONDS", "60")
            .env("WORKER_METRICS_ADDR", &metrics_addr),
    )
    .await;
    let token = stack.admin_token().await;
    let running = import(&stack, &token, format!("http://{host}/30/points.geojson")).await;
    wait_for_status(&stack, &token, &running, "running").await;

    let terminated = Instant::now();
    stack.terminate_worker(0);
    // While it drains the worker says so, and still runs its job.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let queued_meanwhile = import(&stack, &token, format!("http://{host}/1/points.geojson")).await;
    let status = stack.worker_exit(0, Duration::from_secs(60)).await;
    assert!(status.success(), "exit status {status}");
    assert!(text.contains("catalog_worker_draining 1"), "{text}");
    assert!(text.contains("catalog_worker_jobs_running 1"), "{text}");
    assert!(text.contains("process_resident_memory_bytes"), "{text}");
    assert!(
        terminated.elapsed() >= Duration::from_secs(2),
        "the worker waited for its job"
    );
    let job = stack.job(&token, &running).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["attempts"], 1);
    assert_eq!(
        stack.job(&token, &queued_meanwhile).await["status"],
        "queued",
        "a draining worker takes no new job"
    );
}

#[tokio::test]
async fn what_cannot_finish_in_time_is_handed_back_at_once() {
    let host = slow_host().await;
    let mut stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host.to_string())
            .env("WORKER_DRAIN_SECONDS", "1"),
    )
    .await;
    let token = stack.admin_token().await;
    let job_id = import(&stack, &token, format!("http://{host}/40/points.geojson")).await;
    wait_for_status(&stack, &token, &job_id, "running").await;
    stack.terminate_worker(0);
    let status = stack.worker_exit(0, Duration::from_secs(15)).await;
    assert!(status.success(), "exit status {status}");
    // Queued again now, not once the dead worker's heartbeats expire.
    let job = stack.job(&token, &job_id).await;
    assert_eq!(job["status"], "queued", "{job}");
    let task: (String, Option<String>) = sqlx::query_as(
        "SELECT t.status, t.lock_by FROM apalis.jobs t JOIN jobs j ON j.queue_task_id = t.id WHERE j.id = $1::uuid",
    )
    .bind(&job_id)
    .fetch_one(&stack.pool)
    .await
    .unwrap();
    assert_eq!(task, ("Pending".to_string(), None));
    stack.add_worker();
    let job = stack.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let dataset = stack.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], 40);
}

#[tokio::test]
async fn the_api_stops_on_sigterm_with_status_0() {
    let mut stack = Stack::start_with(StackOptions::workers(0)).await;
    stack.terminate_api();
    let status = stack.api_exit(Duration::from_secs(20)).await;
    assert!(status.success(), "exit status {status}:\n{}", stack.logs());
}
