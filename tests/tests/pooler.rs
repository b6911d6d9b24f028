//! The service behind PgBouncer (Debian's 1.18, which keeps no prepared
//! statements in transaction mode): in transaction mode with
//! `DATABASE_PREPARED_STATEMENTS=false`, and in session mode with
//! everything on. Migrations and LISTEN go straight to the server
//! (`DATABASE_DIRECT_URL`). Eight clients at once page items under a sort
//! and a filter, cut tiles, search, read STAC and features and edit, so
//! the pooler hands server connections from one client to another all the
//! time; every answer must be right.
use std::collections::BTreeMap;

use catalog_tests::{Api, Stack, StackOptions, TestDatabase, clusters::PgBouncer, ogrinfo_of_tile, tile_at};
use serde_json::{Value, json};

/// A point inside each of these countries (Natural Earth's names): the
/// tiles the clients cut are the ones holding them, so every tile has data.
const PLACES: [(&str, f64, f64); 16] = [
    ("France", 2.35, 46.5),
    ("Kenya", 36.8, -1.3),
    ("Brazil", -47.9, -15.8),
    ("China", 105.0, 35.0),
    ("Australia", 134.0, -25.0),
    ("United States of America", -98.0, 38.0),
    ("Russia", 95.0, 62.0),
    ("Canada", -106.0, 56.0),
    ("India", 78.0, 22.0),
    ("Chad", 18.0, 15.0),
    ("Argentina", -64.0, -34.0),
    ("South Africa", 25.0, -29.0),
    ("Greenland", -42.0, 72.0),
    ("Saudi Arabia", 46.0, 24.0),
    ("Mexico", -102.0, 24.0),
    ("Antarctica", 10.0, -80.0),
];

/// A tile's address (z, x, y).
type Address = (u32, u32, u32);
/// A tile a client cut: its address, the country it was cut over, its body.
type CutTile = (Address, &'static str, Vec<u8>);

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

/// What one client does, `rounds` times; the tiles it cut, or the first
/// failure.
async fn client(stack: &Stack, id: &str, rounds: u32, seed: u32) -> Result<Vec<CutTile>, String> {
    let mut tiles = Vec::new();
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
        let (country, lon, lat) = PLACES[(n / 2) as usize % PLACES.len()];
        let (x, y) = tile_at(lon, lat, z);
        let tile = stack
            .http
            .get(stack.url(&format!("/api/tiles/{id}/{z}/{x}/{y}.pbf")))
            .send()
            .await
            .unwrap();
        let status = tile.status().as_u16();
        let body = tile.bytes().await.map_err(|e| format!("tile {z}/{x}/{y}: {e}"))?;
        if status != 200 || body.is_empty() {
            return Err(format!(
                "tile {z}/{x}/{y} over {country}: {status}, {} bytes",
                body.len()
            ));
        }
        tiles.push(((z, x, y), country, body.to_vec()));
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
    Ok(tiles)
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
    let mut tiles: BTreeMap<(Address, &str), Vec<u8>> = BTreeMap::new();
    for outcome in outcomes {
        let cut = outcome.unwrap_or_else(|e| panic!("{e}\n{}", stack.logs()));
        tiles.extend(
            cut.into_iter()
                .map(|(address, country, body)| ((address, country), body)),
        );
    }
    let table: String = sqlx::query_scalar("SELECT table_name FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    // Each tile cut through the pooler (the same address cuts the same
    // bytes: each is read once) is a vector tile of the countries' layer
    // holding the country it was cut over.
    for (((z, x, y), country), body) in &tiles {
        let info = ogrinfo_of_tile(body, (*z, u64::from(*x), u64::from(*y)));
        assert!(info.contains(&format!("Layer name: {table}\n")), "{z}/{x}/{y}: {info}");
        assert!(
            info.contains(&format!("name (String) = {country}\n")),
            "{z}/{x}/{y} holds {country}: {info}"
        );
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
