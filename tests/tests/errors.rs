//! Every error the service answers is a problem document, whatever the
//! framework's extractors reject: walk every route of the OpenAPI document
//! with a malformed JSON body, a body of the wrong media type, a body over
//! the size limit, malformed path segments and malformed query values.
use catalog_tests::{Api, App, Stack, StackOptions};
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

/// Every (method, path) of the OpenAPI document, paths under /api.
async fn routes(stack: &impl Api) -> Vec<(Method, String)> {
    let (status, doc) = stack.get_json(None, "/api/openapi.json").await;
    assert_eq!(status, 200);
    let mut routes = Vec::new();
    for (path, operations) in doc["paths"].as_object().unwrap() {
        let route = if path == "/" {
            "/api".to_string()
        } else {
            format!("/api{path}")
        };
        for method in operations.as_object().unwrap().keys() {
            routes.push((method.to_uppercase().parse().unwrap(), route.clone()));
        }
    }
    routes
}

/// The route with every path parameter filled by `value`.
fn fill(route: &str, value: &str) -> String {
    route
        .split('/')
        .map(|segment| if segment.starts_with('{') { value } else { segment })
        .collect::<Vec<_>>()
        .join("/")
}

/// Asserts an error answer is a problem document that agrees with the
/// status; answers whether the answer was an error (and so was checked).
async fn check(what: &str, response: reqwest::Response, failures: &mut Vec<String>) -> bool {
    let status = response.status().as_u16();
    if status < 400 {
        return false;
    }
    let media = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response.text().await.unwrap_or_default();
    let problem: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if !media.starts_with("application/problem+json")
        || problem["status"] != status
        || !problem["title"].is_string()
        || !problem["detail"].is_string()
    {
        failures.push(format!("{what}: {status} {media}: {body}"));
    }
    true
}

#[tokio::test]
async fn every_rejection_is_a_problem_document() {
    let stack = App::start().await;
    let admin = stack.admin_token().await;
    // An API key, so that walking the sign-out route does not end the session.
    let key = stack.api_key(&admin, "full").await;
    let routes = routes(&stack).await;
    assert!(routes.len() > 50, "the whole API is walked");
    let oversized = vec![b'a'; 3 * 1024 * 1024];
    let mut failures = Vec::new();
    // Requests answered with an error, each checked; a success is not.
    let mut checked = 0;
    for (method, route) in &routes {
        let unknown = fill(route, &Uuid::now_v7().to_string());
        let send = |path: &str, content_type: Option<&str>, body: Option<Vec<u8>>| {
            let mut request = stack
                .http
                .request(method.clone(), stack.url(path))
                .header("X-Api-Key", &key);
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            if let Some(body) = body {
                request = request.body(body);
            }
            stack.send(request)
        };
        if route.contains('{') {
            let what = format!("{method} {route} with malformed path segments");
            checked += usize::from(
                check(
                    &what,
                    send(&fill(route, "not%20an%20id"), None, None).await,
                    &mut failures,
                )
                .await,
            );
        }
        let what = format!("{method} {route} with malformed query values");
        let query = format!("{unknown}?limit=many&offset=-x&bbox=NaN,0,1,1&refresh=perhaps");
        checked += usize::from(check(&what, send(&query, None, None).await, &mut failures).await);
        if *method == Method::GET {
            continue;
        }
        let cases: [(&str, &str, Vec<u8>); 3] = [
            ("a malformed JSON body", "application/json", b"{\"oops\": ".to_vec()),
            ("a body of the wrong media type", "text/plain", b"hello".to_vec()),
            ("a non-multipart body", "multipart/form-data", b"hello".to_vec()),
        ];
        for (name, content_type, body) in cases {
            let what = format!("{method} {route} with {name}");
            checked += usize::from(
                check(
                    &what,
                    send(&unknown, Some(content_type), Some(body)).await,
                    &mut failures,
                )
                .await,
            );
        }
        let what = format!("{method} {route} with a body over the size limit");
        let response = send(&unknown, Some("application/json"), Some(oversized.clone())).await;
        checked += usize::from(check(&what, response, &mut failures).await);
    }
    // The upload routes' own rejections, with the route's real path.
    let request = stack
        .http
        .post(stack.url("/api/datasets/upload"))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body("{}");
    let response = stack.send(request).await;
    assert_eq!(response.status(), 400, "a non-multipart upload");
    check("a JSON upload", response, &mut failures).await;
    println!("{checked} error answers checked on {} routes", routes.len());
    assert!(checked >= 3 * routes.len(), "only {checked} error answers checked");
    assert!(
        failures.is_empty(),
        "{} answers that are not problem documents:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// One bounding box rule on every route that takes one: NaN, infinities,
/// numbers past a double's range or past the globe's are a 400 problem
/// everywhere, and a sound box is served everywhere.
#[tokio::test]
async fn every_bbox_is_checked_alike() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let points = serde_json::json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"n": 1}}]});
    let id = app.ingest_geojson(&admin, &points, &[("visibility", "public")]).await;
    let routes = [
        format!("/api/collections/{id}/items?bbox="),
        format!("/api/datasets/{id}/features?bbox="),
        "/api/collections/catalog/items?bbox=".to_string(),
        "/api/stac/search?bbox=".to_string(),
        "/api/stac/collections/vector/items?bbox=".to_string(),
        format!("/api/collections/{id}/items?filter=S_INTERSECTS(geom,BBOX("),
    ];
    let close = |route: &str| if route.contains("BBOX(") { "))" } else { "" };
    let mut failures = Vec::new();
    for route in &routes {
        let (status, _) = app.get_json(None, &format!("{route}0,0,5,5{}", close(route))).await;
        if status != 200 {
            failures.push(format!("{route}0,0,5,5: {status}, a sound box"));
        }
        for bad in [
            "NaN,0,5,5",
            "0,0,Infinity,5",
            "-inf,0,5,5",
            "0,0,1e400,5",
            "0,0,99999999999999999999999,5",
            "0,-95,5,5",
            "0,5,5,0",
            "0,0,5",
        ] {
            let what = format!("{route}{bad}{}", close(route));
            let response = app.send(app.http().get(app.url(&what))).await;
            if response.status() != 400 {
                failures.push(format!("{what}: {}", response.status()));
            }
            check(&what, response, &mut failures).await;
        }
    }
    for body in [
        r#"{"bbox": ["NaN", 0, 5, 5]}"#,
        r#"{"bbox": [0, 0, 500, 5]}"#,
        r#"{"bbox": [0, 0, 1e400, 5]}"#,
        r#"{"bbox": [0, 0, 5]}"#,
    ] {
        let response = app
            .send(
                app.http()
                    .post(app.url("/api/stac/search"))
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await;
        if !response.status().is_client_error() {
            failures.push(format!("POST /api/stac/search {body}: {}", response.status()));
        }
        check(&format!("POST /api/stac/search {body}"), response, &mut failures).await;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A server error is logged once, at error level, in the request's span
/// (so with its request id) and with its cause; the caller sees neither
/// the cause nor the credentials in it.
#[tokio::test]
async fn a_server_error_is_logged_once_with_its_request_id_and_cause() {
    // A sandbox login that the database refuses: the query route answers 503.
    let stack = Stack::start_with(StackOptions::workers(0).env(
        "SANDBOX_DATABASE_URL",
        "postgres://catalog_sandbox:not-the-password@127.0.0.1:1/nowhere",
    ))
    .await;
    let token = stack.admin_token().await;
    let response = stack
        .http
        .post(format!("{}/api/query", stack.base))
        .bearer_auth(&token)
        .json(&serde_json::json!({"sql": "SELECT 1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let request_id = response.headers()["x-request-id"].to_str().unwrap().to_string();
    let body = response.text().await.unwrap();
    assert!(
        !body.contains("not-the-password") && !body.contains("nowhere"),
        "{body}"
    );
    // The log line is written as the response leaves; give it a moment.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let logs = stack.logs();
    let lines: Vec<&str> = logs.lines().filter(|l| l.contains(&request_id)).collect();
    let errors: Vec<&&str> = lines.iter().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(
        errors.len(),
        1,
        "one error line for {request_id}:\n{}",
        lines.join("\n")
    );
    assert!(errors[0].contains("status=503"), "{}", errors[0]);
    assert!(errors[0].contains("cannot connect as catalog_sandbox"), "{}", errors[0]);
    assert!(
        !lines.iter().any(|l| l.contains("WARN")),
        "nothing else logged about it:\n{}",
        lines.join("\n")
    );
}

/// Values PostgreSQL cannot hold (a NUL character) are the caller's to fix,
/// and paging arithmetic stays in range whatever the offset.
#[tokio::test]
async fn values_postgres_cannot_hold_and_huge_offsets_are_no_server_errors() {
    let app = App::start().await;
    let token = app.admin_token().await;
    for path in [
        "/api/search/datasets?q=%00",
        "/api/search/facets?q=a%00b",
        "/api/collections/catalog/items?q=%00",
    ] {
        let response = app.send(app.http().get(app.url(path)).bearer_auth(&token)).await;
        assert_eq!(response.status(), 422, "{path}");
        let problem: Value = response.json().await.unwrap();
        assert!(
            problem["detail"].as_str().unwrap().contains("cannot be stored"),
            "{path}: {problem}"
        );
    }
    let saved = app
        .send(
            app.http()
                .post(app.url("/api/search/saved"))
                .bearer_auth(&token)
                .json(&serde_json::json!({"name": "x\u{0}", "query": {"q": "roads"}})),
        )
        .await;
    assert_eq!(saved.status(), 422);

    let (status, page) = app
        .get_json(
            Some(&token),
            "/api/collections/catalog/items?offset=9223372036854775807",
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(page["links"].as_array().unwrap().iter().all(|l| l["rel"] != "next"));
}

/// A query parameter given twice is a 400 problem on every route, whoever
/// asks and however the route reads its query (or whether it reads one at
/// all): no parameter is repeatable. Names count as decoded, so a name
/// written two ways is still one name; each refusal comes before the
/// route runs, so no write happens.
#[tokio::test]
async fn a_parameter_given_twice_is_refused_on_every_route() {
    // Every route ten times over, sign-in routes included, within the rate limits.
    let app = App::start_with(&[
        ("RATE_LIMIT_PER_MINUTE", "100000"),
        ("RATE_LIMIT_SIGN_IN_PER_MINUTE", "100000"),
    ])
    .await;
    let admin = app.admin_token().await;
    let key = app.api_key(&admin, "full").await;
    let routes = routes(&app).await;
    assert!(routes.len() > 50, "the whole API is walked");
    let queries = [
        "limit=1&limit=2",
        "limit=1&%6Cimit=2",
        "format=json&format=json",
        "bbox=0,0,1,1&f=json&bbox=0,0,2,2",
        "filter=a&filter=b",
    ];
    let mut failures = Vec::new();
    for (method, route) in &routes {
        let path = fill(route, &Uuid::now_v7().to_string());
        for query in queries {
            for credential in [Some(&key), None] {
                let mut request = app.http.request(method.clone(), app.url(&format!("{path}?{query}")));
                if let Some(key) = credential {
                    request = request.header("X-Api-Key", key.as_str());
                }
                let response = app.send(request).await;
                let status = response.status().as_u16();
                let what = format!("{method} {path}?{query} (credential: {})", credential.is_some());
                if status != 400 {
                    failures.push(format!("{what}: {status}"));
                }
                check(&what, response, &mut failures).await;
            }
        }
    }
    // Pages outside the API (the web UI), and the credential in the query.
    for path in [
        "/?limit=1&limit=2".to_string(),
        "/datasets?tab=a&tab=b".to_string(),
        format!("/api/datasets?api_key={key}&api_key={key}"),
        format!("/api/datasets?api_key={key}&api%5Fkey=other"),
    ] {
        let response = app.send(app.http.get(app.url(&path))).await;
        let status = response.status().as_u16();
        if status != 400 {
            failures.push(format!("GET {path}: {status}"));
        }
        check(&path, response, &mut failures).await;
    }
    // Once each, the same parameters are answered.
    let (status, _) = app.get_json(Some(&admin), "/api/datasets?limit=1&offset=0").await;
    assert_eq!(status, 200);
    assert!(
        failures.is_empty(),
        "{} answers that are not 400 problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
