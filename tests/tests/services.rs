//! Remote services as sources: an OGC API Features server (this service
//! itself, a real one), an ArcGIS feature service and a WFS 2.0 server
//! (both on loopback, paging as theirs do) pulled into datasets and pulled
//! again into an existing one; tokens never stored in clear.
use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use axum::extract::Query;
use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

const TOKEN: &str = "Arcgis-Token-Secret-99";

fn point(i: usize) -> Value {
    json!({"type": "Feature", "properties": {"name": format!("f{i}"), "n": i},
           "geometry": {"type": "Point", "coordinates": [-(i as f64) * 0.001, 40.0]}})
}

/// An ArcGIS feature service and a WFS server over `total` features.
async fn services(total: Arc<AtomicUsize>) -> String {
    let arcgis_total = total.clone();
    let app = axum::Router::new()
        .route(
            "/arcgis/rest/services/Parcels/FeatureServer/{layer}/query",
            axum::routing::get(move |Query(q): Query<HashMap<String, String>>| {
                let total = arcgis_total.load(Ordering::SeqCst);
                async move {
                    if q.get("token").map(String::as_str) != Some(TOKEN) {
                        return axum::Json(json!({"error": {"code": 498, "message": "Invalid token."}}));
                    }
                    // Servers cap pages below what is asked.
                    let offset: usize = q["resultOffset"].parse().unwrap();
                    let end = (offset + 700).min(total);
                    let features: Vec<Value> = (offset..end).map(point).collect();
                    axum::Json(json!({"type": "FeatureCollection", "features": features,
                                      "exceededTransferLimit": end < total}))
                }
            }),
        )
        .route(
            "/arcgis/rest/services/Broken/FeatureServer/{layer}/query",
            axum::routing::get(|| async { ([("content-type", "text/html")], "<html>Sign in</html>") }),
        )
        .route(
            "/geoserver/wfs",
            axum::routing::get(move |Query(q): Query<HashMap<String, String>>| async move {
                assert_eq!(q["request"], "GetFeature");
                assert_eq!(q["typeNames"], "topp:sites");
                let start: usize = q["startIndex"].parse().unwrap();
                let count: usize = q["count"].parse().unwrap();
                // The server caps pages below what is asked.
                let end = (start + count.min(500)).min(1200);
                let features: Vec<Value> = (start..end).map(point).collect();
                axum::Json(json!({"type": "FeatureCollection", "features": features, "numberMatched": 1200}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

async fn post(stack: &Stack, token: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = stack
        .http
        .post(stack.url(path))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn finished(stack: &Stack, token: &str, accepted: &Value) -> Value {
    stack.wait_job(token, accepted["job_id"].as_str().unwrap()).await
}

#[tokio::test]
async fn remote_layers_become_datasets_and_are_pulled_again() {
    let total = Arc::new(AtomicUsize::new(2500));
    let remote = services(total.clone()).await;
    // Loopback on any port: the fakes above, and this service itself.
    let stack = Stack::start_with(StackOptions::workers(1).env("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1")).await;
    let admin = stack.admin_token().await;

    // OGC API Features: this service's own items route, followed by its next links.
    let features: Vec<Value> = (0..2300).map(point).collect();
    let source = stack
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": features}),
            &[("visibility", "public")],
        )
        .await;
    let (status, accepted) = post(
        &stack,
        &admin,
        "/api/datasets/import-service",
        &json!({
        "url": stack.url("/api"), "service_type": "ogcapi_features", "layer_name": source,
        "layer_title": "Mirrored stops", "visibility": "public"}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "service_import");
    let mirror = stack.dataset(&admin, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(mirror["title"], "Mirrored stops");
    assert_eq!(mirror["feature_count"], 2300);

    // ArcGIS: a token, pages smaller than asked, exceededTransferLimit.
    let arcgis = format!("{remote}/arcgis/rest/services/Parcels/FeatureServer");
    let (status, accepted) = post(
        &stack,
        &admin,
        "/api/datasets/import-service",
        &json!({
        "url": arcgis, "service_type": "arcgis_featureserver", "layer_name": "Parcels", "layer_id": 0,
        "token": TOKEN, "object_id_field": "OBJECTID"}),
    )
    .await;
    assert_eq!(status, 202);
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let parcels_id = job["dataset_id"].as_str().unwrap().to_string();
    let parcels = stack.dataset(&admin, &parcels_id).await;
    assert_eq!(parcels["feature_count"], 2500);
    assert_eq!(parcels["title"], "Parcels");
    let payloads: Vec<String> = sqlx::query_scalar("SELECT payload::text FROM jobs")
        .fetch_all(&stack.pool)
        .await
        .unwrap();
    assert!(!payloads.is_empty(), "the import's job is kept");
    assert!(
        payloads.iter().all(|p| !p.contains(TOKEN)),
        "tokens are sealed in job payloads"
    );
    // A wrong token: the job fails and says what the service said.
    let (_, accepted) = post(
        &stack,
        &admin,
        "/api/datasets/import-service",
        &json!({
        "url": arcgis, "service_type": "arcgis_featureserver", "layer_name": "Parcels", "layer_id": 0,
        "token": "wrong"}),
    )
    .await;
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "failed");
    assert!(
        job["error"]["detail"].as_str().unwrap().contains("Invalid token"),
        "{job}"
    );

    // A service answering a sign-in page: a clear failure that does not
    // repeat the token (it travels in the URL).
    let (_, accepted) = post(
        &stack,
        &admin,
        "/api/datasets/import-service",
        &json!({
        "url": format!("{remote}/arcgis/rest/services/Broken/FeatureServer"), "service_type": "arcgis_featureserver",
        "layer_name": "Broken", "layer_id": 0, "token": TOKEN}),
    )
    .await;
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "failed");
    assert!(
        job["error"]["detail"].as_str().unwrap().contains("not GeoJSON"),
        "{job}"
    );
    assert!(!job.to_string().contains(TOKEN), "{job}");

    // WFS 2.0: startIndex paging, pages capped by the server.
    let (_, accepted) = post(
        &stack,
        &admin,
        "/api/datasets/import-service",
        &json!({
        "url": format!("{remote}/geoserver/wfs"), "service_type": "wfs", "layer_name": "topp:sites"}),
    )
    .await;
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(
        stack.dataset(&admin, job["dataset_id"].as_str().unwrap()).await["feature_count"],
        1200
    );
    let (status, report) = stack.get_json(Some(&admin), job["report_url"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["rows_loaded"], 1200, "{report}");

    // Pulled again: previewed (synchronously, as the specification's
    // preview route answers, and as a job), then in place.
    total.store(2600, Ordering::SeqCst);
    let request_preview = json!({"url": arcgis, "service_type": "arcgis_featureserver", "layer_name": "Parcels",
                                 "layer_id": 0, "token": TOKEN});
    let path = format!("/api/datasets/{parcels_id}/reupload/service/preview");
    let (status, preview) = post(&stack, &admin, &path, &request_preview).await;
    assert_eq!(status, 200, "{preview}");
    assert!(preview["job_id"].is_string());
    assert_eq!(preview["feature_count"], 2600);
    assert_eq!(preview["schema_diff"]["row_count_old"], 2500);
    assert_eq!(preview["schema_diff"]["columns_added"], json!([]));
    assert_eq!(preview["sample_rows"][0]["name"], "f0");
    let mut wrong = request_preview.clone();
    wrong["token"] = json!("wrong");
    let (status, problem) = post(&stack, &admin, &path, &wrong).await;
    assert_eq!(status, 502, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("Invalid token"));
    let request = json!({"url": arcgis, "service_type": "arcgis_featureserver", "layer_name": "Parcels",
                         "layer_id": 0, "token": TOKEN});
    let mut preview = request.clone();
    preview["preview"] = json!(true);
    let (status, accepted) = post(
        &stack,
        &admin,
        &format!("/api/datasets/{parcels_id}/reupload/service"),
        &preview,
    )
    .await;
    assert_eq!(status, 202);
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["result"]["schema_diff"]["row_count_delta"], 100);
    assert_eq!(stack.dataset(&admin, &parcels_id).await["feature_count"], 2500);
    let (_, accepted) = post(
        &stack,
        &admin,
        &format!("/api/datasets/{parcels_id}/reupload/service"),
        &request,
    )
    .await;
    let job = finished(&stack, &admin, &accepted).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let parcels = stack.dataset(&admin, &parcels_id).await;
    assert_eq!(parcels["feature_count"], 2600);
    assert_eq!(parcels["title"], "Parcels", "metadata kept");

    // Requests outside the bounds of the specification.
    let base = json!({"url": arcgis, "service_type": "arcgis_featureserver", "layer_name": "Parcels"});
    for (change, field) in [
        (json!({"service_type": "shapefile"}), "service_type"),
        (json!({"service_type": "x".repeat(51)}), "service_type"),
        (json!({"layer_name": ""}), "layer_name"),
        (json!({"layer_name": "x".repeat(501)}), "layer_name"),
        (json!({"url": format!("{arcgis}/{}", "x".repeat(2048))}), "url"),
        (json!({"url": "http://10.0.0.1/arcgis"}), "url"),
        (json!({"token": "t".repeat(1001)}), "token"),
        (json!({"object_id_field": "o".repeat(201)}), "object_id_field"),
        (json!({"auth": {"method": "kerberos"}}), "auth.method"),
        (
            json!({"auth": {"method": "basic", "username": "u".repeat(256)}}),
            "auth.username",
        ),
        (
            json!({"auth": {"method": "header", "header_name": "bad header"}}),
            "auth.header_name",
        ),
    ] {
        let mut body = base.clone();
        body.as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        let (status, problem) = post(&stack, &admin, "/api/datasets/import-service", &body).await;
        assert_eq!(status, 422, "{change}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains(&format!("{field}: ")),
            "{problem}"
        );
    }
    assert!(!stack.logs().contains(TOKEN));
}
