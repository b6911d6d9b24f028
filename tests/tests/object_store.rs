//! Object stores for real, against a local S3-compatible server (moto,
//! started on loopback by these tests). `STORAGE_URL=s3://bucket/prefix`:
//! uploads stream into the bucket in parts, workers ingest from it,
//! datasets are archived into it and come back, and the cleanup schedule
//! empties it of finished jobs' sources. The `s3` connector: a provider's
//! bucket that demands signed requests is read with the stored key.
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
        Self::start_with(&[]).await
    }

    async fn start_with(env: &[(&str, &str)]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let moto = std::path::Path::new(&python()).with_file_name("moto_server");
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server (installed by scripts/test.sh)");
        let endpoint = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        // A connection, not a request: moto counts requests against
        // INITIAL_NO_AUTH_ACTION_COUNT.
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(Instant::now() < deadline, "moto did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self { child, endpoint }
    }

    async fn create_bucket(&self, bucket: &str) {
        let response = catalog_tests::http_client()
            .build()
            .unwrap()
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

fn python() -> String {
    std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)")
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
    let first_page = |items: &serde_json::Value| items["features"].clone();

    // Archived into the bucket, and back on the first read.
    let id = dataset["id"].as_str().unwrap().to_string();
    let archived = stack
        .send(
            stack
                .http
                .post(stack.url(&format!("/api/datasets/{id}/archive")))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(archived.status(), 202);
    let archive_job = archived.json::<serde_json::Value>().await.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(stack.wait_job(&token, &archive_job).await["status"], "succeeded");
    let archive_keys = s3.keys("catalog", &format!("site-a/archives/{id}/")).await;
    assert_eq!(archive_keys.len(), 1, "{archive_keys:?}");
    assert_eq!(stack.dataset(&token, &id).await["storage"], "cold");
    let items_path = format!("/api/collections/{id}/items?limit=1");
    let (status, answer) = stack.get_json(Some(&token), &items_path).await;
    assert_eq!(status, 202, "{answer}");
    let rehydrated = stack.wait_job(&token, answer["job_id"].as_str().unwrap()).await;
    assert_eq!(rehydrated["status"], "succeeded", "{rehydrated}");
    let (status, again) = stack.get_json(Some(&token), &items_path).await;
    assert_eq!(status, 200);
    assert_eq!(first_page(&again), first_page(&items));
    assert_eq!(stack.dataset(&token, &id).await["feature_count"], 300_000);

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

/// The keys under `prefix`, listed with an access key (the bucket refuses
/// unsigned requests).
fn signed_keys(endpoint: &str, key: &serde_json::Value, bucket: &str, prefix: &str) -> Vec<String> {
    let script = "import boto3, sys\n\
        e, i, s, b, p = sys.argv[1:]\n\
        c = boto3.client('s3', endpoint_url=e, region_name='us-east-1', aws_access_key_id=i, aws_secret_access_key=s)\n\
        print('\\n'.join(o['Key'] for o in c.list_objects_v2(Bucket=b, Prefix=p).get('Contents', [])))";
    let output = Command::new(python())
        .args(["-c", script, endpoint])
        .args([
            key["access_key_id"].as_str().unwrap(),
            key["secret_access_key"].as_str().unwrap(),
        ])
        .args([bucket, prefix])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn push(stack: &Stack, token: &str, kind: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let response = stack
        .send(
            stack
                .http
                .post(stack.url(&format!("/api/services/connectors/{kind}/ingest")))
                .bearer_auth(token)
                .json(&body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn credential(stack: &Stack, token: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/services/connectors/credentials"))
                .bearer_auth(token)
                .json(&body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn the_s3_connector_pulls_objects_with_the_stored_key() {
    use serde_json::json;
    let bikes = catalog_tests::data_dir().join("geojson/cycle_hire_osm.geojson");
    // Signatures are enforced once the provider's bucket is set up.
    let s3 = S3Server::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "10")]).await;
    let output = Command::new(python())
        .arg(catalog_tests::package_dir().join("clients/s3_provider.py"))
        .args([s3.endpoint.as_str(), "provider", "exports"])
        .arg(&bikes)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let keys: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let key = &keys["connector"];
    let host = s3.endpoint.trim_start_matches("http://").to_string();
    // The service keeps what it pulls in its own bucket, with its own key.
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host)
            .env("CONNECTOR_TIMEOUT_SECONDS", "10")
            .env("STORAGE_URL", "s3://catalog/site-b")
            .env("AWS_ENDPOINT", &s3.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", keys["service"]["access_key_id"].as_str().unwrap())
            .env(
                "AWS_SECRET_ACCESS_KEY",
                keys["service"]["secret_access_key"].as_str().unwrap(),
            )
            .env("AWS_REGION", "us-east-1"),
    )
    .await;
    let (_, editor) = stack.user_token("sally", "editor").await;
    let (status, stored) = credential(
        &stack,
        &editor,
        json!({"name": "provider bucket", "method": "aws_access_key",
               "access_key_id": key["access_key_id"], "secret_access_key": key["secret_access_key"]}),
    )
    .await;
    assert_eq!(status, 201, "{stored}");
    assert_eq!(stored["username"], key["access_key_id"]);
    assert!(!stored.to_string().contains(key["secret_access_key"].as_str().unwrap()));
    let credential_id = stored["id"].as_str().unwrap().to_string();
    let (_, bearer) = credential(
        &stack,
        &editor,
        json!({"name": "web", "method": "bearer", "token": "t"}),
    )
    .await;

    let config = json!({"bucket": "provider", "prefix": "exports", "region": "us-east-1",
                        "endpoint": s3.endpoint, "title": "Hire points", "visibility": "public"});
    let request = |resource: &str, credential: &serde_json::Value| json!({"resource_id": resource, "credential_id": credential, "config": config});
    let (status, queued) = push(
        &stack,
        &editor,
        "s3",
        request("cycle_hire_osm.geojson", &json!(credential_id)),
    )
    .await;
    assert_eq!(status, 202, "{queued}");
    let job = stack.wait_job(&editor, queued["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "connector");
    let dataset = stack.dataset(&editor, job["dataset_id"].as_str().unwrap()).await;
    let source: serde_json::Value = serde_json::from_slice(&std::fs::read(&bikes).unwrap()).unwrap();
    assert_eq!(dataset["feature_count"], source["features"].as_array().unwrap().len());
    assert_eq!(dataset["title"], "Hire points");
    let pulled = signed_keys(&s3.endpoint, &keys["service"], "catalog", "site-b/uploads/");
    assert!(
        pulled.iter().any(|k| k.ends_with("/cycle_hire_osm.geojson")),
        "the pull went through the service's bucket: {pulled:?}"
    );

    // The same object at the same version is the same job.
    let (status, again) = push(
        &stack,
        &editor,
        "s3",
        request("cycle_hire_osm.geojson", &json!(credential_id)),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(again["job_id"], queued["job_id"]);

    // The provider's refusals are 502s, before anything is queued.
    let (status, missing) = push(&stack, &editor, "s3", request("absent.geojson", &json!(credential_id))).await;
    assert_eq!(status, 502, "{missing}");
    assert!(
        missing["detail"]
            .as_str()
            .unwrap()
            .contains("no object exports/absent.geojson"),
        "{missing}"
    );
    let (status, unsigned) = push(&stack, &editor, "s3", request("cycle_hire_osm.geojson", &json!(null))).await;
    assert_eq!(status, 502, "without the key the bucket refuses: {unsigned}");

    // Mistakes are 422s naming the field.
    let refusals = [
        ("s3", request("cycle_hire_osm.geojson", &bearer["id"]), "credential_id"),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"prefix": "x"}}),
            "config.bucket",
        ),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"bucket": "bkt", "url_template": "x"}}),
            "config.url_template",
        ),
        (
            "s3",
            json!({"resource_id": "a.exe", "config": {"bucket": "provider", "endpoint": s3.endpoint}}),
            "resource_id",
        ),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"bucket": "bkt", "endpoint": "http://127.0.0.1:1"}}),
            "config.endpoint",
        ),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"bucket": "bkt", "endpoint": format!("{}/path?x", s3.endpoint)}}),
            "config.endpoint",
        ),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"bucket": "evil.example/x?"}}),
            "config.bucket",
        ),
        (
            "s3",
            json!({"resource_id": "a.geojson", "config": {"bucket": "169.254.169.254"}}),
            "config.bucket",
        ),
        (
            "gcs",
            json!({"resource_id": "a.geojson", "config": {"bucket": "a%2F..%2Fb"}}),
            "config.bucket",
        ),
        (
            "azure",
            json!({"resource_id": "a.geojson", "config": {"account": "acct", "container": "c/../d"}}),
            "config.container",
        ),
        (
            "azure",
            json!({"resource_id": "a.geojson", "config": {"account": "Not An Account", "container": "ctr"}}),
            "config.account",
        ),
        (
            "azure",
            json!({"resource_id": "a.geojson", "config": {"account": "acct"}}),
            "config.container",
        ),
        (
            "gcs",
            json!({"resource_id": "a.geojson", "config": {"bucket": "bkt", "region": "x"}}),
            "config.region",
        ),
    ];
    for (kind, body, field) in refusals {
        let (status, problem) = push(&stack, &editor, kind, body.clone()).await;
        assert_eq!(status, 422, "{kind} {body}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().starts_with(field),
            "{field}: {problem}"
        );
    }
    // Keys for the other stores are checked as they are stored.
    let (status, problem) = credential(
        &stack,
        &editor,
        json!({"name": "g", "method": "gcs_service_account", "service_account_key": "{\"client_email\": \"a@b\"}"}),
    )
    .await;
    assert_eq!(status, 422, "{problem}");
    let (status, _) = credential(
        &stack,
        &editor,
        json!({"name": "z", "method": "azure_access_key", "account_key": "a2V5"}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        stack.logs().matches("AKIA").count(),
        0,
        "no access key id or secret in the logs"
    );
}

/// Puts `body` into `bucket` under `key`, the key exactly as given (boto3
/// encodes it for the URL).
fn put_object(endpoint: &str, bucket: &str, key: &str, body: &[u8]) {
    let script = "import boto3, sys\n\
        e, b, k = sys.argv[1:]\n\
        c = boto3.client('s3', endpoint_url=e, region_name='us-east-1', aws_access_key_id='setup', aws_secret_access_key='setup')\n\
        c.create_bucket(Bucket=b) if b not in [x['Name'] for x in c.list_buckets()['Buckets']] else None\n\
        c.put_object(Bucket=b, Key=k, Body=sys.stdin.buffer.read())";
    let mut child = Command::new(python())
        .args(["-c", script, endpoint, bucket, key])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), body).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

fn points(n: usize) -> Vec<u8> {
    let features: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i, 1]}, "properties": {"n": i}}))
        .collect();
    serde_json::json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

/// The key a user names is the key the worker fetches, `%` and all; a
/// push is one source by its server, bucket and key (the same key in
/// another bucket is pulled again); a region that is not a region name is
/// a 422.
#[tokio::test]
async fn the_s3_connector_fetches_the_key_named_from_the_bucket_named() {
    use serde_json::json;
    let s3 = S3Server::start().await;
    put_object(&s3.endpoint, "left", "a%20b/points.geojson", &points(3));
    // What a second round of percent-encoding would name instead.
    put_object(&s3.endpoint, "left", "a%2520b/points.geojson", &points(1));
    put_object(&s3.endpoint, "right", "a%20b/points.geojson", &points(3));
    let host = s3.endpoint.trim_start_matches("http://").to_string();
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host)
            .env("CONNECTOR_TIMEOUT_SECONDS", "10"),
    )
    .await;
    let (_, editor) = stack.user_token("sally", "editor").await;
    let (status, stored) = credential(
        &stack,
        &editor,
        json!({"name": "moto", "method": "aws_access_key", "access_key_id": "AKIAMOTO", "secret_access_key": "moto"}),
    )
    .await;
    assert_eq!(status, 201, "{stored}");
    let from = |bucket: &str, endpoint: &str, region: &str| {
        json!({"resource_id": "points.geojson", "credential_id": stored["id"],
               "config": {"bucket": bucket, "prefix": "a%20b", "region": region, "endpoint": endpoint}})
    };

    let (status, left) = push(&stack, &editor, "s3", from("left", &s3.endpoint, "us-east-1")).await;
    assert_eq!(status, 202, "{left}");
    let job = stack.wait_job(&editor, left["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let dataset = stack.dataset(&editor, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["feature_count"], 3, "the object under a%20b/, not a%2520b/");

    let (status, right) = push(&stack, &editor, "s3", from("right", &s3.endpoint, "us-east-1")).await;
    assert_eq!(status, 202, "{right}");
    assert_ne!(
        right["job_id"], left["job_id"],
        "the same key in another bucket is another source"
    );
    let job = stack.wait_job(&editor, right["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (status, again) = push(
        &stack,
        &editor,
        "s3",
        from("left", &format!("{}/", s3.endpoint.to_uppercase()), "us-east-1"),
    )
    .await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(
        again["job_id"], left["job_id"],
        "the same server spelled otherwise is the same source"
    );

    for region in ["s3.evil.example#", "US-EAST-1", "us east", &"a".repeat(33)] {
        let (status, problem) = push(&stack, &editor, "s3", from("left", &s3.endpoint, region)).await;
        assert_eq!(status, 422, "{region}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().starts_with("config.region"),
            "{problem}"
        );
    }
}
