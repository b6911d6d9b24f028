//! The SQL sandbox: reads of visible datasets only, nothing else.
use std::time::{Duration, Instant};

use catalog_tests::{Stack, StackOptions};
use serde_json::{Value, json};

async fn query(stack: &Stack, credential: (&str, &str), sql: &str) -> (u16, Value) {
    let response = stack
        .http
        .post(stack.url("/api/query/"))
        .header(credential.0, credential.1)
        .json(&json!({"sql": sql}))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_sandbox_reads_visible_datasets_and_nothing_else() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let (_, owner) = stack.user_token("sandra", "editor").await;
    let (_, other) = stack.user_token("oscar", "editor").await;
    let features: Vec<Value> = (0..1500)
        .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64 * 0.01, 1.0]}, "properties": {"n": i, "name": format!("f{i}")}}))
        .collect();
    let body = json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes();
    let job = stack.upload_ok(&owner, "pts.geojson", body, &[]).await;
    let id = stack.wait_job(&owner, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let table = stack.dataset(&owner, &id).await["table_name"]
        .as_str()
        .unwrap()
        .to_string();
    let bearer = format!("Bearer {owner}");
    let me = ("authorization", bearer.as_str());

    let (status, result) = query(
        &stack,
        me,
        &format!("SELECT n, name, geom FROM data.{table} WHERE n < 3 ORDER BY n"),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["columns"], json!(["n", "name", "geom"]));
    assert_eq!(result["row_count"], 3);
    assert_eq!(result["rows"][1]["name"], "f1");
    assert_eq!(
        result["rows"][0]["geom"]["type"], "Point",
        "geometry comes back as GeoJSON"
    );
    let (_, capped) = query(&stack, me, &format!("SELECT n FROM {table};")).await;
    assert_eq!(capped["row_count"], 1000);
    assert_eq!(capped["truncated"], true);

    let other_bearer = format!("Bearer {other}");
    let (status, _) = query(
        &stack,
        ("authorization", &other_bearer),
        &format!("SELECT count(*) FROM data.{table}"),
    )
    .await;
    assert_eq!(status, 403, "another user's private table");

    for (sql, expected) in [
        (format!("DELETE FROM data.{table}"), 400),
        (format!("UPDATE data.{table} SET n = 0"), 400),
        (
            format!("WITH d AS (DELETE FROM data.{table} RETURNING *) SELECT * FROM d"),
            400,
        ),
        ("CREATE TABLE data.evil (x int)".to_string(), 400),
        (format!("SELECT 1; DROP TABLE data.{table}"), 400),
        (format!("SELECT 1) r; DROP TABLE data.{table}; --"), 400),
        ("SELECT * FROM users".to_string(), 403),
        ("SELECT * FROM public.api_keys".to_string(), 403),
        ("SELECT * FROM apalis.jobs".to_string(), 403),
        ("SELECT nextval('data.x')".to_string(), 400),
    ] {
        let (status, body) = query(&stack, me, &sql).await;
        assert_eq!(status, expected, "{sql}: {body}");
    }
    let started = Instant::now();
    let (status, body) = query(&stack, me, "SELECT pg_sleep(30)").await;
    assert_eq!(status, 400, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("longer"));
    assert!(started.elapsed() < Duration::from_secs(15));
    let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM data.{table}")))
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1500, "nothing was written");
    let grants: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'catalog_sandbox'",
    )
    .fetch_one(&stack.pool)
    .await
    .unwrap();
    assert_eq!(grants, 0, "grants live only inside each request");

    // Read-only keys may use it; anonymous callers may not.
    let read_only_key = stack.api_key(&owner, "read_only").await;
    let (status, _) = query(&stack, ("x-api-key", read_only_key.as_str()), "SELECT 1 AS one").await;
    assert_eq!(status, 200);
    let response = stack
        .http
        .post(stack.url("/api/query"))
        .json(&json!({"sql": "SELECT 1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}
