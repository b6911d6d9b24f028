//! `/api/metrics`, read by the Prometheus project's own text-format parser
//! as a scraper would: who may scrape, HTTP figures by route template (no
//! ids in labels), jobs by kind and status, the queue's age, job
//! durations, live workers, rate-limit refusals and database pool use.
use std::process::{Command, Stdio};

use catalog_tests::{Api, App, Stack, StackOptions};
use serde_json::{Value, json};
use uuid::Uuid;

const METRICS_TOKEN: &str = "scrape-token-0123456789abcdef";

/// Every sample of a scrape, as the Prometheus parser reads it.
fn parse(text: &str) -> Vec<Value> {
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let script = catalog_tests::package_dir().join("clients/prometheus_parse.py");
    let script = script.to_str().expect("a UTF-8 path");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap()
}

/// The value of the sample with this name and (at least) these labels.
fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap())
}

async fn scrape(api: &impl Api, authorization: Option<&str>) -> reqwest::Response {
    let mut request = api.http().get(api.url("/api/metrics"));
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    api.send(request).await
}

#[tokio::test]
async fn operators_scrape_requests_jobs_and_workers() {
    let stack = Stack::start_with(StackOptions::workers(1).env("METRICS_TOKEN", METRICS_TOKEN)).await;
    let admin = stack.admin_token().await;
    let (_, viewer) = stack.user_token("vic", "viewer").await;
    assert_eq!(scrape(&stack, None).await.status(), 401);
    assert_eq!(scrape(&stack, Some(&format!("Bearer {viewer}"))).await.status(), 403);
    assert_eq!(scrape(&stack, Some("Bearer not-the-token")).await.status(), 401);
    assert_eq!(scrape(&stack, Some(&format!("Bearer {admin}"))).await.status(), 200);

    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"n": 1}}]});
    let id = stack.ingest_geojson(&admin, &points, &[]).await;
    let unknown = Uuid::now_v7().to_string();
    assert_eq!(
        stack.get_json(Some(&admin), &format!("/api/datasets/{id}")).await.0,
        200
    );
    assert_eq!(
        stack
            .get_json(Some(&admin), &format!("/api/datasets/{unknown}"))
            .await
            .0,
        404
    );

    let response = scrape(&stack, Some(&format!("Bearer {METRICS_TOKEN}"))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/plain; version=0.0.4");
    let text = response.text().await.unwrap();
    assert!(
        !text.contains(&id) && !text.contains(&unknown),
        "ids never become label values:\n{text}"
    );
    let samples = parse(&text);
    let route = ("route", "/api/datasets/{dataset_id}");
    let requests = |status| {
        value(
            &samples,
            "catalog_http_requests_total",
            &[route, ("method", "GET"), ("status", status)],
        )
    };
    assert_eq!(requests("200"), Some(1.0), "{text}");
    assert_eq!(requests("404"), Some(1.0), "{text}");
    assert_eq!(
        value(
            &samples,
            "catalog_http_request_duration_seconds_count",
            &[route, ("method", "GET")]
        ),
        Some(2.0)
    );
    assert_eq!(
        value(&samples, "catalog_jobs", &[("kind", "ingest"), ("status", "succeeded")]),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "catalog_jobs", &[("kind", "reupload"), ("status", "queued")]),
        Some(0.0),
        "every kind and status has a series"
    );
    assert_eq!(value(&samples, "catalog_oldest_queued_job_age_seconds", &[]), Some(0.0));
    assert_eq!(
        value(&samples, "catalog_job_duration_seconds_count", &[("kind", "ingest")]),
        Some(1.0)
    );
    assert_eq!(
        value(
            &samples,
            "catalog_job_duration_seconds_bucket",
            &[("kind", "ingest"), ("le", "+Inf")]
        ),
        Some(1.0)
    );
    assert_eq!(value(&samples, "catalog_workers_live", &[]), Some(1.0));
    for pool in ["requests", "tiles"] {
        assert!(
            value(
                &samples,
                "catalog_db_pool_connections",
                &[("pool", pool), ("state", "in_use")]
            )
            .is_some()
        );
        assert!(value(&samples, "catalog_db_pool_max_connections", &[("pool", pool)]).unwrap() >= 1.0);
    }
}

#[tokio::test]
async fn a_queued_job_ages_and_refusals_are_counted() {
    let app = App::start_with(&[("RATE_LIMIT_PER_MINUTE", "3"), ("METRICS_TOKEN", METRICS_TOKEN)]).await;
    let admin = app.admin_token().await;
    // No worker here: the upload's job waits in the queue.
    let job = app
        .upload(
            &admin,
            "p.geojson",
            br#"{"type":"FeatureCollection","features":[]}"#.to_vec(),
            &[],
        )
        .await;
    assert_eq!(job.status(), 202);
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(app.get_json(None, "/api/collections").await.0);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    let refused = statuses.iter().filter(|s| **s == 429).count() as f64;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    // The scraper is never limited itself.
    let response = scrape(&app, Some(&format!("Bearer {METRICS_TOKEN}"))).await;
    assert_eq!(response.status(), 200);
    let samples = parse(&response.text().await.unwrap());
    assert_eq!(
        value(&samples, "catalog_rate_limit_refusals_total", &[("bucket", "general")]),
        Some(refused)
    );
    assert_eq!(
        value(&samples, "catalog_rate_limit_refusals_total", &[("bucket", "tiles")]),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "catalog_jobs", &[("kind", "ingest"), ("status", "queued")]),
        Some(1.0)
    );
    assert!(value(&samples, "catalog_oldest_queued_job_age_seconds", &[]).unwrap() >= 1.0);
    assert_eq!(value(&samples, "catalog_workers_live", &[]), Some(0.0));
}

/// Prometheus sends its credential as `Authorization: Bearer`: an admin's
/// API key scrapes that way, as `METRICS_TOKEN` does; anyone else's key is
/// refused.
#[tokio::test]
async fn an_admin_api_key_scrapes_as_a_bearer_token() {
    let app = App::start_with(&[("METRICS_TOKEN", METRICS_TOKEN)]).await;
    let admin = app.admin_token().await;
    let (_, viewer) = app.user_token("vic", "viewer").await;
    let admin_key = app.api_key(&admin, "read_only").await;
    let viewer_key = app.api_key(&viewer, "full").await;
    let response = scrape(&app, Some(&format!("Bearer {admin_key}"))).await;
    assert_eq!(response.status(), 200);
    assert!(!parse(&response.text().await.unwrap()).is_empty());
    assert_eq!(
        scrape(&app, Some(&format!("Bearer {METRICS_TOKEN}"))).await.status(),
        200
    );
    assert_eq!(scrape(&app, Some(&format!("Bearer {viewer_key}"))).await.status(), 403);
    let unknown = format!("Bearer sdc_{}", "0".repeat(64));
    assert_eq!(scrape(&app, Some(&unknown)).await.status(), 401);
}

/// A fresh service's first scrape holds every family, with a zero series
/// for each label set it knows: rate-limit refusals of each bucket, the
/// durations of each job kind, this process's requests.
#[tokio::test]
async fn every_family_is_there_from_the_first_scrape() {
    let app = App::start_with(&[("METRICS_TOKEN", METRICS_TOKEN)]).await;
    let response = scrape(&app, Some(&format!("Bearer {METRICS_TOKEN}"))).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let samples = parse(&text);
    for bucket in ["signin", "tiles", "general"] {
        assert_eq!(
            value(&samples, "catalog_rate_limit_refusals_total", &[("bucket", bucket)]),
            Some(0.0),
            "{bucket}:\n{text}"
        );
    }
    let kinds: std::collections::BTreeSet<&str> = samples
        .iter()
        .filter(|s| s["name"] == "catalog_jobs")
        .filter_map(|s| s["labels"]["kind"].as_str())
        .collect();
    assert!(kinds.contains("ingest") && kinds.contains("rehydrate"), "{kinds:?}");
    for kind in kinds {
        assert_eq!(
            value(&samples, "catalog_job_duration_seconds_count", &[("kind", kind)]),
            Some(0.0),
            "{kind}:\n{text}"
        );
        assert_eq!(
            value(
                &samples,
                "catalog_job_duration_seconds_bucket",
                &[("kind", kind), ("le", "+Inf")]
            ),
            Some(0.0)
        );
    }
    for family in [
        "catalog_http_requests_total",
        "catalog_http_request_duration_seconds_count",
        "catalog_db_pool_connections",
        "catalog_db_pool_max_connections",
        "catalog_tile_cache_lookups_total",
        "catalog_tile_cache_bytes",
        "catalog_jobs",
        "catalog_oldest_queued_job_age_seconds",
        "catalog_workers_live",
    ] {
        assert!(samples.iter().any(|s| s["name"] == family), "{family} missing:\n{text}");
    }
}

/// A client inventing methods adds no series: each is counted under the
/// one label value `other`.
#[tokio::test]
async fn made_up_methods_add_no_series() {
    let app = App::start().await;
    let admin = app.admin_token().await;
    for made_up in ["BREW", "WHEN1", "X-PROBE-0"] {
        let method = reqwest::Method::from_bytes(made_up.as_bytes()).unwrap();
        let response = app.send(app.http.request(method, app.url("/api/health"))).await;
        assert!(response.status().is_client_error(), "{made_up}: {}", response.status());
    }
    let response = scrape(&app, Some(&format!("Bearer {admin}"))).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let samples = parse(&text);
    for made_up in ["BREW", "WHEN1", "X-PROBE-0"] {
        assert!(!text.contains(made_up), "{made_up} became a label value:\n{text}");
    }
    let methods: std::collections::BTreeSet<&str> = samples
        .iter()
        .filter(|s| s["name"] == "catalog_http_requests_total")
        .filter_map(|s| s["labels"]["method"].as_str())
        .collect();
    assert!(
        methods.iter().all(|m| [
            "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other"
        ]
        .contains(m)),
        "{methods:?}"
    );
    let others: f64 = samples
        .iter()
        .filter(|s| s["name"] == "catalog_http_requests_total" && s["labels"]["method"] == "other")
        .map(|s| s["value"].as_f64().unwrap())
        .sum();
    assert_eq!(others, 3.0, "{text}");
}
