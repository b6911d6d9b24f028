//! `STORAGE_URL=s3://bucket/prefix` for real, against a local
//! S3-compatible server (moto, started on loopback by this test): uploads
//! stream into the bucket in parts, workers ingest from it, and the
//! cleanup schedule empties it of finished jobs' sources.
use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use catalog_tests::{Api, Stack, StackOptions};

/// A moto S3 server on a free loopback port, stopped on drop.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    async fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
        let moto = std::path::Path::new(&python).with_file_name("moto_server");
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server (installed by scripts/test.sh)");
        let endpoint = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while reqwest::get(&endpoint).await.is_err() {
            assert!(Instant::now() < deadline, "moto did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self { child, endpoint }
    }

    async fn create_bucket(&self, bucket: &str) {
        let response = reqwest::Client::new()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }

    /// The keys in the bucket under `prefix`.
    async fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let body = reqwest::get(format!("{}/{bucket}?list-type=2&prefix={prefix}", self.endpoint))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        body.split("<Key>")
            .skip(1)
            .filter_map(|part| part.split_once("</Key>").map(|(key, _)| key.to_string()))
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn big_csv(rows: usize) -> Vec<u8> {
    let mut out = String::from("id,lon,lat,label\n");
    for i in 0..rows {
        out.push_str(&format!(
            "{i},{:.5},{:.5},point number {i}\n",
            (i % 3600) as f64 * 0.1 - 180.0,
            (i / 3600) as f64 * 0.01
        ));
    }
    out.into_bytes()
}

#[tokio::test]
async fn uploads_and_ingest_go_through_an_s3_bucket() {
    let s3 = S3Server::start().await;
    s3.create_bucket("catalog").await;
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("STORAGE_URL", "s3://catalog/site-a")
            .env("AWS_ENDPOINT", &s3.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("CLEANUP_INTERVAL_SECONDS", "1")
            .env("UPLOAD_RETENTION_HOURS", "0"),
    )
    .await;
    let token = stack.admin_token().await;
    // Over 12 MB: the API writes it to the bucket in several parts.
    let csv = big_csv(300_000);
    assert!(csv.len() > 12 << 20, "{}", csv.len());
    let response = stack.upload(&token, "points.csv", csv, &[]).await;
    assert_eq!(response.status(), 202);
    let job_id = response.json::<serde_json::Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = stack.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let dataset = stack.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], 300_000);
    let (status, items) = stack
        .get_json(
            Some(&token),
            &format!("/api/collections/{}/items?limit=1", dataset["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(items["features"][0]["properties"]["label"], "point number 0");

    // Finished: its source leaves the bucket on the cleanup schedule.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let keys = s3.keys("catalog", "site-a/uploads/").await;
        if keys.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left in the bucket: {keys:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
