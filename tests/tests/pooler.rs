//! The service behind PgBouncer (Debian's 1.18, which keeps no prepared
//! statements in transaction mode): in transaction mode with
//! `DATABASE_PREPARED_STATEMENTS=false`, and in session mode with
//! everything on. Migrations and LISTEN go straight to the server
//! (`DATABASE_DIRECT_URL`). Eight clients at once page items under a sort
//! and a filter, cut tiles, search, read STAC and features and edit, so
//! the pooler hands server connections from one client to another all the
//! time; every answer must be right.
use catalog_tests::{Api, Stack, StackOptions, TestDatabase, clusters::PgBouncer};
use serde_json::{Value, json};

/// The shared test cluster's port (scripts/test.sh).
fn server_port() -> u16 {
    std::env::var("TEST_ADMIN_DATABASE_URL")
        .ok()
        .and_then(|u| url::Url::parse(&u).ok())
        .and_then(|u| u.port())
        .unwrap_or(54330)
}

async fn behind(mode: &str, prepared_statements: bool) -> (Stack, PgBouncer, String) {
    let database = TestDatabase::create().await;
    let bouncer = PgBouncer::start(server_port(), mode).await;
    let options = StackOptions::workers(1)
        .env("DATABASE_URL", &bouncer.url(&database.name))
        .env("DATABASE_DIRECT_URL", &database.url)
        .env("DATABASE_PREPARED_STATEMENTS", &prepared_statements.to_string());
    let name = database.name.clone();
    let stack = Stack::start_on(database, tempfile::tempdir().unwrap(), options).await;
    (stack, bouncer, name)
}

async fn get(stack: &Stack, path: &str) -> (u16, Value) {
    let response = stack.http.get(stack.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What one client does, `rounds` times; the first failure, if any.
async fn client(stack: &Stack, id: &str, rounds: u32, seed: u32) -> Result<(), String> {
    for round in 0..rounds {
        let n = seed * 31 + round;
        let (status, page) = get(
            stack,
            &format!("/api/collections/{id}/items?limit=7&sortby=-pop_est&filter=continent%3D%27Africa%27"),
        )
        .await;
        if status != 200 || page["numberMatched"] != 51 || page["features"].as_array().map(Vec::len) != Some(7) {
            return Err(format!("items page: {status} {page}"));
        }
        let next = page["links"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["rel"] == "next"))
            .and_then(|l| l["href"].as_str())
            .ok_or("no next link")?;
        let second = stack.http.get(next).send().await.unwrap();
        if second.status() != 200 {
            return Err(format!("next page: {}", second.status()));
        }
        let z = 2 + n % 2;
        let tile = stack
            .http
            .get(stack.url(&format!(
                "/api/tiles/{id}/{z}/{}/{}.pbf",
                n % (1 << z),
                (n / 3) % (1 << z)
            )))
            .send()
            .await
            .unwrap();
        if !matches!(tile.status().as_u16(), 200 | 204) {
            return Err(format!("tile: {}", tile.status()));
        }
        for path in [
            "/api/search/datasets?q=countries".to_string(),
            "/api/stac/search?limit=3".to_string(),
            format!("/api/datasets/{id}/features?limit=3&offset={}", n % 100),
            format!("/api/collections/{id}/items/{}", 1 + n % 170),
        ] {
            let (status, body) = get(stack, &path).await;
            if status != 200 {
                return Err(format!("{path}: {status} {body}"));
            }
        }
    }
    Ok(())
}

/// Edits through the pooler, each with its ETag and read back at once: a
/// write's answer comes after its commit, not before.
async fn edits(stack: &Stack, id: &str, admin: &str) {
    let item = stack.url(&format!("/api/collections/{id}/items/5"));
    let mut tag = stack.send(stack.http.get(&item)).await.headers()["etag"].clone();
    for edit in 0..60 {
        let name = format!("Pooled {edit}");
        let patched = stack
            .send(
                stack
                    .http
                    .patch(&item)
                    .bearer_auth(admin)
                    .header("if-match", tag)
                    .json(&json!({"properties": {"name": name}})),
            )
            .await;
        assert_eq!(patched.status(), 200);
        let read = stack.send(stack.http.get(&item)).await;
        tag = read.headers()["etag"].clone();
        let feature: Value = read.json().await.unwrap();
        assert_eq!(feature["properties"]["name"], name.as_str(), "edit {edit}");
    }
}

async fn serves_everything(stack: &Stack) -> String {
    let admin = stack.admin_token().await;
    let id = stack.world_countries(&admin, &[("visibility", "public")]).await;
    let outcomes = futures::future::join_all((0..8).map(|seed| client(stack, &id, 6, seed))).await;
    for outcome in outcomes {
        outcome.unwrap_or_else(|e| panic!("{e}\n{}", stack.logs()));
    }
    // Edits among readers of pages, so the pooler and the machine are busy
    // (tiles cut while the data changes answer 503 by design: ask again).
    let pages = futures::future::join_all((0..4).map(|_| async {
        for _ in 0..40 {
            let (status, page) = get(stack, &format!("/api/collections/{id}/items?limit=20&sortby=-pop_est")).await;
            assert_eq!(status, 200, "{page}");
        }
    }));
    futures::future::join(pages, edits(stack, &id, &admin)).await;
    // Writes through the pooler: the sandbox.
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    let query = stack
        .send(
            stack
                .http
                .post(stack.url("/api/query"))
                .bearer_auth(&admin)
                .json(&json!({"sql": format!("SELECT count(*) AS n FROM \"{table}\"")})),
        )
        .await;
    let status = query.status();
    let answer: Value = query.json().await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["rows"][0]["n"], 177, "{answer}");
    id
}

#[tokio::test]
async fn the_service_runs_through_pgbouncer_in_transaction_mode_without_prepared_statements() {
    let (stack, bouncer, database) = behind("transaction", false).await;
    serves_everything(&stack).await;
    let stats = bouncer.show("STATS", &database);
    let transactions: u64 = stats["total_xact_count"].parse().unwrap();
    assert!(transactions > 400, "PgBouncer passed {transactions} transactions");
    let logs = stack.logs();
    assert!(!logs.contains("prepared statement"), "{logs}");
}

#[tokio::test]
async fn the_service_runs_through_pgbouncer_in_session_mode_with_everything_on() {
    let (stack, bouncer, database) = behind("session", true).await;
    serves_everything(&stack).await;
    let stats = bouncer.show("STATS", &database);
    let queries: u64 = stats["total_query_count"].parse().unwrap();
    assert!(queries > 400, "PgBouncer passed {queries} queries");
}
