//! Connectors: a provider on loopback serves resources behind a bearer
//! token; pushed resource ids are checked with it at once (502 when it
//! fails, 504 when it is slow), then fetched and ingested by a worker with
//! the stored credential, whose secret is never shown.
use std::time::Duration;

use axum::{extract::Path, http::HeaderMap, http::StatusCode, response::IntoResponse};
use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

const TOKEN: &str = "Provider-Bearer-Token-55";

async fn provider() -> String {
    let app = axum::Router::new()
        .route(
            "/resources/{id}",
            axum::routing::get(|Path(id): Path<String>, headers: HeaderMap| async move {
                let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
                    == Some(format!("Bearer {TOKEN}").as_str());
                if !authorized {
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                match id.as_str() {
                    "broken.geojson" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    "slow.geojson" => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        StatusCode::OK.into_response()
                    }
                    _ => {
                        let body = json!({"type": "FeatureCollection", "features": [
                            {"type": "Feature", "properties": {"sheet": id}, "geometry": {"type": "Point", "coordinates": [7, 46]}},
                            {"type": "Feature", "properties": {"sheet": id}, "geometry": {"type": "Point", "coordinates": [8, 47]}}]});
                        ([("content-type", "application/geo+json")], body.to_string()).into_response()
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

async fn push(stack: &Stack, token: &str, body: &Value) -> (u16, Value) {
    let response = stack
        .http
        .post(stack.url("/api/services/connectors/http/ingest"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn pushed_resources_are_fetched_with_the_stored_credential() {
    let base = provider().await;
    let host = base.trim_start_matches("http://").to_string();
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", &host)
            .env("CONNECTOR_TIMEOUT_SECONDS", "1"),
    )
    .await;
    let (_, editor) = stack.user_token("connie", "editor").await;
    let (_, other) = stack.user_token("oscar", "editor").await;
    let response = stack
        .http
        .post(stack.url("/api/services/connectors/credentials"))
        .bearer_auth(&editor)
        .json(&json!({"name": "portal", "method": "bearer", "token": TOKEN}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let credential: Value = response.json().await.unwrap();
    let credential_id = credential["id"].as_str().unwrap().to_string();
    let (_, listed) = stack
        .get_json(Some(&editor), "/api/services/connectors/credentials")
        .await;
    assert_eq!(listed[0]["name"], "portal");
    assert!(!listed.to_string().contains(TOKEN));
    let (_, theirs) = stack
        .get_json(Some(&other), "/api/services/connectors/credentials")
        .await;
    assert_eq!(theirs, json!([]));

    let template = format!("{base}/resources/{{resource_id}}");
    let body = |resource: &str, credential: Option<&str>| {
        let mut body = json!({"config": {"url_template": template, "title": "Pushed sheet", "visibility": "internal"},
                              "resource_id": resource});
        if let Some(id) = credential {
            body["credential_id"] = json!(id);
        }
        body
    };
    let (status, queued) = push(&stack, &editor, &body("sheet-1.geojson", Some(&credential_id))).await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["status"], "queued");
    let job_id = queued["job_id"].as_str().unwrap().to_string();
    let job = stack.wait_job(&editor, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "connector");
    let dataset = stack.dataset(&editor, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(dataset["title"], "Pushed sheet");
    assert_eq!(dataset["visibility"], "internal");
    assert_eq!(dataset["feature_count"], 2);
    let (status, report) = stack.get_json(Some(&editor), job["report_url"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        (report["rows_read"].as_u64(), report["rows_loaded"].as_u64()),
        (Some(2), Some(2))
    );

    // The provider's failures reach the caller at once.
    for (body, status) in [
        (body("sheet-2.geojson", None), 502),
        (body("broken.geojson", Some(&credential_id)), 502),
        (body("slow.geojson", Some(&credential_id)), 504),
    ] {
        let (got, problem) = push(&stack, &editor, &body).await;
        assert_eq!(got, status, "{body} → {problem}");
        assert_eq!(problem["status"], status);
        assert!(!problem.to_string().contains(TOKEN));
    }
    // And what is wrong with the request itself is a 422 (or 404).
    for (body, status) in [
        (body("../etc/passwd", None), 422),
        (body("", None), 422),
        (
            json!({"config": {"url_template": format!("{base}/resources/fixed")}, "resource_id": "a"}),
            422,
        ),
        (
            json!({"config": {"url_template": "http://10.0.0.1/r/{resource_id}"}, "resource_id": "a"}),
            422,
        ),
        (
            json!({"config": {"url_template": template, "colour": "red"}, "resource_id": "a"}),
            422,
        ),
        (json!({"config": {}, "resource_id": "a"}), 422),
    ] {
        let (got, problem) = push(&stack, &editor, &body).await;
        assert_eq!(got, status, "{body} → {problem}");
    }
    let (status, _) = push(&stack, &other, &body("sheet-3.geojson", Some(&credential_id))).await;
    assert_eq!(status, 422, "another user's credential");
    let response = stack
        .http
        .post(stack.url("/api/services/connectors/ftp/ingest"))
        .bearer_auth(&editor)
        .json(&body("a", None))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert!(!stack.logs().contains(TOKEN));

    let response = stack
        .http
        .delete(stack.url(&format!("/api/services/connectors/credentials/{credential_id}")))
        .bearer_auth(&editor)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
}
