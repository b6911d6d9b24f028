//! Cross-cutting behaviour: problem documents, trailing slashes, the
//! OpenAPI document, health and readiness, sign-in and start-up checks.
use std::process::Command;

use catalog_tests::{Api, App, JWT_SECRET, Stack, StackOptions, bin_dir};
use serde_json::{Value, json};

async fn problem(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status().as_u16(), status);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert!(
        body["title"].is_string() && body["detail"].is_string() && body["type"].is_string(),
        "{body}"
    );
    body
}

#[tokio::test]
async fn every_error_is_a_problem_document() {
    let stack = App::start().await;
    let token = stack.admin_token().await;
    problem(stack.send(stack.http.get(stack.url("/api/no-such-route"))).await, 404).await;
    problem(stack.send(stack.http.put(stack.url("/api/health"))).await, 405).await;
    let bad_json = stack
        .send(
            stack
                .http
                .post(stack.url("/api/datasets/import-url"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    problem(bad_json, 400).await;
    let wrong_shape = stack
        .send(
            stack
                .http
                .post(stack.url("/api/datasets/import-url"))
                .bearer_auth(&token)
                .json(&json!({"uri": 1})),
        )
        .await;
    problem(wrong_shape, 422).await;
    problem(
        stack
            .send(
                stack
                    .http
                    .get(stack.url("/api/datasets/not-a-uuid"))
                    .bearer_auth(&token),
            )
            .await,
        422,
    )
    .await;
    problem(
        stack
            .send(
                stack
                    .http
                    .get(stack.url("/api/jobs/01a20103-74d3-75ec-9c9f-4a909601acb9"))
                    .bearer_auth(&token),
            )
            .await,
        404,
    )
    .await;
    problem(
        stack
            .send(stack.http.get(stack.url("/api/datasets")).bearer_auth("garbage"))
            .await,
        401,
    )
    .await;
    let oversize = stack
        .send(
            stack
                .http
                .patch(stack.url("/api/datasets/01a20103-74d3-75ec-9c9f-4a909601acb9"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(vec![b' '; 3 << 20]),
        )
        .await;
    problem(oversize, 413).await;
}

#[tokio::test]
async fn routes_answer_with_and_without_a_trailing_slash() {
    let stack = App::start().await;
    let token = stack.admin_token().await;
    for path in [
        "/api/jobs",
        "/api/jobs/",
        "/api/datasets",
        "/api/datasets/",
        "/api/health/",
    ] {
        let (status, _) = stack.get_json(Some(&token), path).await;
        assert_eq!(status, 200, "{path}");
    }
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login/"))
                .form(&[("username", "admin"), ("password", catalog_tests::ADMIN_PASSWORD)]),
        )
        .await;
    assert_eq!(response.status(), 200, "POST with a trailing slash keeps its body");
}

#[tokio::test]
async fn openapi_document_is_3_1_and_lists_the_routes() {
    let stack = App::start().await;
    let (status, doc) = stack.get_json(None, "/api/openapi.json").await;
    assert_eq!(status, 200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["version"], "1.19.0");
    // Paths are relative to the server URL, the OGC API root.
    assert!(doc["servers"][0]["url"].as_str().unwrap().ends_with("/api"));
    for path in [
        "/datasets/upload",
        "/datasets/import-url",
        "/jobs/{job_id}",
        "/auth/login",
        "/ready",
        "/collections/{collectionId}/items",
    ] {
        assert!(doc["paths"][path].is_object(), "missing {path}");
    }
    // Every operation documents the answers any route can give.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for code in ["429", "500", "503"] {
                assert!(
                    operation["responses"][code].is_object(),
                    "{method} {path} does not document {code}"
                );
            }
        }
    }
    // Links lead from what an answer made to the operations that take it,
    // and every one names an operation the document has.
    let operations: Vec<&Value> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .collect();
    let ids: std::collections::HashSet<&str> = operations.iter().filter_map(|o| o["operationId"].as_str()).collect();
    let links: Vec<&Value> = operations
        .iter()
        .flat_map(|o| o["responses"].as_object().unwrap().values())
        .filter_map(|r| r["links"].as_object())
        .flat_map(|l| l.values())
        .collect();
    assert!(links.len() >= 12, "{} links", links.len());
    for link in links {
        assert!(ids.contains(link["operationId"].as_str().unwrap()), "{link}");
    }
    let upload = &doc["paths"]["/datasets/upload"]["post"]["responses"]["202"]["links"]["GetJob"];
    assert_eq!(upload["parameters"]["job_id"], "$response.body#/job_id");
    let throttled = &doc["paths"]["/collections/{collectionId}/items"]["get"]["responses"]["429"];
    assert_eq!(throttled["headers"]["Retry-After"]["schema"]["type"], "integer");
    // What client generators check first: a valid OpenAPI 3.1 document
    // (unique operation ids among others).
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), doc.to_string()).unwrap();
    let output = Command::new(python)
        .args([
            "-c",
            "import json, sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(open(sys.argv[1])))",
        ])
        .arg(file.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "openapi-spec-validator refused the document: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn health_ready_and_recovery_after_the_database_returns() {
    let stack = Stack::start_with(StackOptions::workers(0)).await;
    let (status, body) = stack.get_json(None, "/api/ready").await;
    assert_eq!(status, 200, "{body}");
    let token = stack.admin_token().await;

    stack.cut_database().await;
    let response = stack
        .send(stack.http.get(stack.url("/api/datasets")).bearer_auth(&token))
        .await;
    problem(response, 503).await;
    let (status, _) = stack.get_json(None, "/api/ready").await;
    assert_eq!(status, 503);
    let (status, _) = stack.get_json(None, "/api/health").await;
    assert_eq!(status, 200, "liveness does not depend on the database");

    stack.restore_database().await;
    let (status, _) = stack.get_json(Some(&token), "/api/datasets").await;
    assert_eq!(status, 200, "the service recovers by itself");
}

#[tokio::test]
async fn sign_in_and_roles() {
    let stack = App::start().await;
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "admin"), ("password", "wrong")]),
        )
        .await;
    problem(response, 401).await;
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "admin"), ("password", catalog_tests::ADMIN_PASSWORD)]),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "bearer");
    assert!(body["access_token"].is_string() && body["refresh_token"].is_string());
    assert!(body["expires_in"].as_u64().unwrap() > 0);

    let anonymous = stack.upload("", "a.geojson", b"{}".to_vec(), &[]).await;
    assert_eq!(anonymous.status(), 401);
    let (_, viewer) = stack.user_token("vera", "viewer").await;
    let refused = stack.upload(&viewer, "a.geojson", b"{}".to_vec(), &[]).await;
    problem(refused, 403).await;
    let (_, editor) = stack.user_token("ed", "editor").await;
    let accepted = stack.upload(&editor, "a.geojson", b"{}".to_vec(), &[]).await;
    assert_eq!(accepted.status(), 202);
    assert!(accepted.headers()["location"].to_str().unwrap().contains("/api/jobs/"));
}

/// The release (the workspace's semver) is what `--version`, `/api/health`
/// and the landing page report; the OpenAPI `info.version` stays the
/// interface's.
#[tokio::test]
async fn every_surface_reports_the_release() {
    let release = env!("CARGO_PKG_VERSION");
    assert_eq!(release.split('.').count(), 3, "semver: {release}");
    for (binary, flag) in [
        ("catalog-api", "--version"),
        ("catalog-worker", "--version"),
        ("catalog-api", "-V"),
    ] {
        let output = Command::new(bin_dir().join(binary))
            .arg(flag)
            .env_clear()
            .output()
            .unwrap();
        assert!(output.status.success(), "{binary} {flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.starts_with(&format!("{binary} {release}")),
            "{binary} {flag}: {stdout}"
        );
    }
    let stack = App::start().await;
    let (status, health) = stack.get_json(None, "/api/health").await;
    assert_eq!(status, 200);
    assert_eq!(health, serde_json::json!({"status": "ok", "version": release}));
    let (_, landing) = stack.get_json(None, "/api").await;
    assert_eq!(landing["version"], release);
    let page = stack
        .send(stack.http.get(stack.url("/api?f=html")))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains(&format!("Release {release}")), "{page}");
    let (_, doc) = stack.get_json(None, "/api/openapi.json").await;
    assert_eq!(
        doc["info"]["version"], "1.19.0",
        "the interface version, not the release"
    );
}

#[test]
fn a_short_jwt_secret_stops_start_up() {
    let output = Command::new(bin_dir().join("catalog-api"))
        .env("JWT_SECRET", "too-short")
        .env("BIND_ADDR", "127.0.0.1:1")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("JWT_SECRET") && stderr.contains("32"), "{stderr}");
    assert!(JWT_SECRET.len() >= 32);
}

#[tokio::test]
async fn dataset_visibility_edit_and_delete() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("olga", "editor").await;
    let (_, other_editor) = app.user_token("otto", "editor").await;
    let (_, viewer) = app.user_token("vic", "viewer").await;
    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"n": 1}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]});
    let job_id = app
        .upload_ok(
            &owner,
            "p.geojson",
            points.to_string().into_bytes(),
            &[("title", "Mine")],
        )
        .await;
    let job = app.wait_job(&owner, &job_id).await;
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let path = format!("/api/datasets/{id}");

    assert_eq!(app.get_json(Some(&viewer), &path).await.0, 404, "private to its owner");
    assert_eq!(app.get_json(None, &path).await.0, 404);
    let admin = app.admin_token().await;
    assert_eq!(app.get_json(Some(&admin), &path).await.0, 200, "admins see everything");

    let patch = |token: &str, body: Value| app.send(app.http().patch(app.url(&path)).bearer_auth(token).json(&body));
    assert_eq!(patch(&viewer, json!({"title": "x"})).await.status(), 404);
    let response = patch(&owner, json!({"visibility": "internal", "title": "Renamed"})).await;
    assert_eq!(response.status(), 200);
    let updated: Value = response.json().await.unwrap();
    assert_eq!(updated["title"], "Renamed");
    assert_eq!(
        updated["publication_version"], 2,
        "a visibility change rolls the publication version"
    );
    assert_eq!(
        app.get_json(Some(&viewer), &path).await.0,
        200,
        "internal: any signed-in user"
    );
    assert_eq!(app.get_json(None, &path).await.0, 404);
    assert_eq!(patch(&owner, json!({"visibility": "everyone"})).await.status(), 422);
    assert_eq!(patch(&owner, json!({"colour": "red"})).await.status(), 422);
    assert_eq!(patch(&other_editor, json!({"title": "Theirs"})).await.status(), 403);
    patch(&owner, json!({"visibility": "public"})).await;
    let (status, list) = app.get_json(None, "/api/datasets").await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], 1);

    let table = updated["table_name"].as_str().unwrap().to_string();
    let denied = app
        .send(app.http().delete(app.url(&path)).bearer_auth(&other_editor))
        .await;
    assert_eq!(denied.status(), 403);
    let deleted = app.send(app.http().delete(app.url(&path)).bearer_auth(&owner)).await;
    assert_eq!(deleted.status(), 204);
    assert_eq!(app.get_json(Some(&owner), &path).await.0, 404);
    assert!(
        !app.data_tables().await.contains(&table),
        "the ingested table is dropped"
    );
}

#[tokio::test]
async fn the_sign_in_screen_gets_its_options_and_banner() {
    let stack = App::start_with(&[
        ("BANNER_ENABLED", "true"),
        ("BANNER_TEXT", "Staging"),
        ("BANNER_COLOR", "#ff8800"),
    ])
    .await;
    let (status, config) = stack.get_json(None, "/api/auth/config").await;
    assert_eq!(status, 200);
    assert_eq!(
        config["banner"],
        json!({"enabled": true, "text": "Staging", "color": "#ff8800"})
    );
    assert_eq!(config["password_login_enabled"], true);
    assert!(config.get("demo_mode").is_none(), "demo mode is gone since 1.7.0");
}

/// A client that sends its request headers a byte at a time (slowloris)
/// is disconnected once 30 s have gone by, instead of holding its
/// connection for as long as it likes.
#[tokio::test]
async fn slow_request_headers_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stack = Stack::start_with(StackOptions::workers(0)).await;
    let address = stack.base.trim_start_matches("http://").to_string();
    let mut connection = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request =
        b"GET /api/health HTTP/1.1\r\nHost: catalog\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let started = std::time::Instant::now();
    let mut closed_after = None;
    for byte in request {
        if connection.write_all(&[*byte]).await.is_err() {
            closed_after = Some(started.elapsed());
            break;
        }
        let mut answer = [0u8; 512];
        // Waiting for an answer doubles as the pause between bytes.
        match tokio::time::timeout(std::time::Duration::from_secs(2), connection.read(&mut answer)).await {
            Ok(Ok(0) | Err(_)) => {
                closed_after = Some(started.elapsed());
                break;
            }
            Ok(Ok(n)) => {
                // A 408 before closing is fine too; anything else is not.
                let text = String::from_utf8_lossy(&answer[..n]);
                assert!(text.starts_with("HTTP/1.1 408"), "{text}");
            }
            Err(_) => {}
        }
    }
    let closed_after = closed_after.expect("the server kept the connection to the last byte");
    assert!(
        closed_after.as_secs() >= 29,
        "cut off after {closed_after:?}, before the limit"
    );
    assert!(closed_after.as_secs() <= 40, "cut off after {closed_after:?}");
}
