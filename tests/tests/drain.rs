//! Draining and the worker's own metrics: SIGTERM makes a worker take no
//! new job, lets a running job finish within `WORKER_DRAIN_SECONDS`, hands
//! back at once what cannot finish in time, and exits 0; meanwhile
//! `WORKER_METRICS_ADDR` shows it draining. The API process, too, stops on
//! SIGTERM with exit status 0. A worker that is only busy, however long,
//! keeps beating and keeps its job.
use std::{
    net::{SocketAddr, TcpListener},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use axum::{Router, body::Body, extract::Path, routing::get};
use catalog_shared::jobs::WORKER_DEAD_AFTER;
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

/// Threads spinning on the CPU until dropped, or until `within` has passed
/// (a test that dies leaves none behind): a loaded machine.
struct CpuBurners {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

fn burn_cpu(threads: usize, within: Duration) -> CpuBurners {
    let stop = Arc::new(AtomicBool::new(false));
    let until = Instant::now() + within;
    let threads = (0..threads)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    for _ in 0..100_000 {
                        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                    }
                }
            })
        })
        .collect();
    CpuBurners { stop, threads }
}

impl Drop for CpuBurners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A CSV big enough that loading it takes a few seconds.
fn big_csv(rows: usize) -> Vec<u8> {
    let mut out = String::with_capacity(rows * 48);
    out.push_str("id,lon,lat,label,value\n");
    for i in 0..rows {
        let lon = -170.0 + (i % 34_000) as f64 * 0.01;
        let lat = -80.0 + (i / 34_000) as f64 * 0.01;
        out.push_str(&format!("{i},{lon:.5},{lat:.5},point number {i},{}\n", i as f64 * 0.5));
    }
    out.into_bytes()
}

/// A worker that is alive but busy keeps its job, however long the job is
/// held up: its one slot's job stalls in the middle of its COPY (the
/// progress report between two chunks waits on a row lock this test holds)
/// for three times `WORKER_DEAD_AFTER`, on a machine loaded by four
/// spinning threads, beside a second worker that takes the jobs of workers
/// that stop beating. The worker beats throughout, nobody takes its job,
/// and the job runs once.
#[tokio::test]
async fn a_busy_worker_stalled_in_a_copy_keeps_its_job() {
    let _load = burn_cpu(4, Duration::from_secs(300));
    let stack = Stack::start_with(StackOptions::workers(2).env("WORKER_CONCURRENCY", "1")).await;
    let token = stack.admin_token().await;
    let rows = 500_000;
    let job_id = stack.upload_ok(&token, "big.csv", big_csv(rows), &[]).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = stack.job(&token, &job_id).await;
        if job["step"] == "loading" {
            break;
        }
        assert_ne!(
            job["status"], "succeeded",
            "the load finished before it could be held up"
        );
        assert!(Instant::now() < deadline, "the job never started loading: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut hold = stack.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM jobs WHERE id = $1::uuid FOR UPDATE")
        .bind(&job_id)
        .execute(&mut *hold)
        .await
        .unwrap();
    let held = Instant::now();

    // Its COPY stays open while its next progress report waits on the lock.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (copying, waiting): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE query LIKE 'COPY data.%'),
                    count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE jobs SET step%')
             FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'",
        )
        .fetch_one(&stack.pool)
        .await
        .unwrap();
        if copying == 1 && waiting == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the job is not stalled in its COPY: {copying} COPY, {waiting} waiting on the lock"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let task = "SELECT t.status, t.lock_by, coalesce(extract(epoch FROM now() - w.last_seen)::float8, 1e9)
                FROM apalis.jobs t JOIN jobs j ON j.queue_task_id = t.id LEFT JOIN apalis.workers w ON w.id = t.lock_by
                WHERE j.id = $1::uuid";
    let (_, owner, _): (String, Option<String>, f64) =
        sqlx::query_as(task).bind(&job_id).fetch_one(&stack.pool).await.unwrap();
    let owner = owner.expect("the running job's task is locked by its worker");
    let mut longest_silence = 0f64;
    while held.elapsed() < WORKER_DEAD_AFTER * 3 {
        let (status, lock_by, silence): (String, Option<String>, f64) =
            sqlx::query_as(task).bind(&job_id).fetch_one(&stack.pool).await.unwrap();
        longest_silence = longest_silence.max(silence);
        assert!(
            matches!(status.as_str(), "Running" | "Queued") && lock_by.as_deref() == Some(owner.as_str()),
            "after {:?} held up the job's task is {status}, locked by {lock_by:?}, not by {owner}:\n{}",
            held.elapsed(),
            stack.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "held up {:?}; the longest the busy worker went without a beat: {longest_silence:.2} s",
        held.elapsed()
    );
    assert!(
        longest_silence < WORKER_DEAD_AFTER.as_secs_f64(),
        "the busy worker went {longest_silence:.1} s without a beat"
    );
    hold.rollback().await.unwrap();

    let job = stack.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["attempts"], 1, "{job}");
    assert_eq!(stack.dataset_count().await, 1);
    let dataset = stack.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], rows as i64);
    let logs = stack.logs();
    assert_eq!(logs.matches("job started").count(), 1, "{logs}");
    assert!(!logs.contains("stopped beating"), "{logs}");
}
