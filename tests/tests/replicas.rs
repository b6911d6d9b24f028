//! Read replicas (`DATABASE_READ_URLS`) on one machine: a primary of the
//! test's own and a streaming replica made by `pg_basebackup -R`, two API
//! processes sharing Redis, one worker. Reads reach the replica; a writer
//! reads its own write through the other process while the replica's
//! replay is paused; a read the replica cancels for a recovery conflict
//! answers from the primary; a replica lagging past `READ_MAX_LAG_SECONDS`, or
//! stopped, is skipped; with the primary stopped, public reads still
//! answer and writes answer 503 with `Retry-After`, and writes come back
//! once it does.
use std::{
    process::Child,
    time::{Duration, Instant},
};

use catalog_tests::{
    Api, Stack, StackOptions, TestDatabase, clusters::Cluster, metric_value, metrics_text, ogrinfo_of_tile,
    redis_server, wait_for_redis,
};
use serde_json::{Value, json};

const MAX_LAG_SECONDS: u64 = 8;

/// Where point `i` of `points` lies (longitude, latitude): on a line from
/// (-180, -85) to the north-east.
fn position(i: usize) -> (f64, f64) {
    (i as f64 % 360.0 - 180.0, (i as f64 * 0.37) % 170.0 - 85.0)
}

fn points(n: usize, name: &str) -> Vec<u8> {
    let features: Vec<Value> = (0..n)
        .map(|i| {
            let (lon, lat) = position(i);
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
                   "properties": {"name": format!("{name} {i}"), "rank": i}})
        })
        .collect();
    serde_json::to_vec(&json!({"type": "FeatureCollection", "features": features})).unwrap()
}

/// The XYZ tile (x, y) holding point `i` of `points` at zoom z.
fn tile_of_point(i: usize, z: u32) -> (u32, u32) {
    let (lon, lat) = position(i);
    catalog_tests::tile_at(lon, lat, z)
}

/// Tile z/x/y of a dataset of `points` fetched from `base`: asserts a 200
/// with a body, and answers the body.
async fn tile_with_data(stack: &Stack, base: &str, id: &str, (z, x, y): (u32, u32, u32)) -> Vec<u8> {
    let tile = stack
        .http
        .get(format!("{base}/api/tiles/{id}/{z}/{x}/{y}.pbf"))
        .send()
        .await
        .unwrap();
    let status = tile.status().as_u16();
    let body = tile.bytes().await.unwrap().to_vec();
    assert_eq!(status, 200, "{base} tile {z}/{x}/{y} of {id}\n{}", stack.logs());
    assert!(!body.is_empty(), "{base} tile {z}/{x}/{y} of {id} is empty");
    body
}

/// Fails unless `tile` (z/x/y) decodes as a vector tile whose layer is
/// `layer` and which holds the feature named `name`.
fn assert_tile_holds(tile: &[u8], (z, x, y): (u32, u32, u32), layer: &str, name: &str) {
    let info = ogrinfo_of_tile(tile, (z, u64::from(x), u64::from(y)));
    assert!(info.contains(&format!("Layer name: {layer}\n")), "{z}/{x}/{y}: {info}");
    assert!(
        info.contains(&format!("name (String) = {name}\n")),
        "{z}/{x}/{y} holds {name}: {info}"
    );
}

struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn redis() -> (Redis, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let redis = Redis(redis_server(port));
    wait_for_redis(port).await;
    (redis, port)
}

/// One figure of an API process's metrics, by its full series name.
async fn metric(stack: &Stack, base: &str, token: &str, series: &str) -> f64 {
    metric_value(&metrics_text(&stack.http, base, token).await, series)
}

async fn reads(stack: &Stack, base: &str, token: &str) -> (f64, f64) {
    (
        metric(stack, base, token, "catalog_db_reads_total{target=\"primary\"}").await,
        metric(stack, base, token, "catalog_db_reads_total{target=\"replica\"}").await,
    )
}

async fn replica_state(stack: &Stack, base: &str, token: &str, replica: &str, state: &str) -> f64 {
    metric(
        stack,
        base,
        token,
        &format!("catalog_db_replica_state{{replica=\"{replica}\",state=\"{state}\"}}"),
    )
    .await
}

/// Waits until the process sees the replica in `state` (1 or 0).
async fn until_replica(stack: &Stack, base: &str, token: &str, replica: &str, state: &str, value: f64) -> Duration {
    let started = Instant::now();
    while replica_state(stack, base, token, replica, state).await != value {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{base}: replica never {state}={value}\n{}",
            stack.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

async fn status_of(stack: &Stack, request: reqwest::RequestBuilder) -> (u16, Option<String>, Value) {
    let response = stack.send(request).await;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry_after, response.json().await.unwrap_or(Value::Null))
}

async fn anonymous_items(stack: &Stack, base: &str, id: &str) -> (u16, Value) {
    let response = stack
        .http
        .get(format!("{base}/api/collections/{id}/items?limit=5"))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn replica_transactions(replica: &Cluster) -> i64 {
    replica
        .psql(
            "postgres",
            "SELECT xact_commit FROM pg_stat_database WHERE datname = 'catalog'",
        )
        .parse()
        .unwrap()
}

#[tokio::test]
async fn reads_go_to_the_replica_writers_read_their_writes_and_outages_are_survived() {
    let primary = Cluster::primary();
    let replica = Cluster::replica_of(&primary);
    let replica_name = format!("127.0.0.1:{}", replica.port);
    let (_redis, redis_port) = redis().await;
    let database = TestDatabase {
        url: primary.url("catalog"),
        name: format!("unused_{}", uuid::Uuid::new_v4().simple()),
    };
    let options = StackOptions::workers(1)
        .env("DATABASE_READ_URLS", &replica.url("catalog"))
        .env("READ_MAX_LAG_SECONDS", &MAX_LAG_SECONDS.to_string())
        .env("REDIS_URL", &format!("redis://127.0.0.1:{redis_port}"))
        .env("RUST_LOG", "info,catalog_api::replicas=debug");
    let mut stack = Stack::start_on(database, tempfile::tempdir().unwrap(), options).await;
    let first = stack.base.clone();
    let second = stack.add_api().await;
    let admin = stack.admin_token().await;
    let mut ids = Vec::new();
    for name in ["alpha", "beta"] {
        let job = stack
            .upload_ok(
                &admin,
                &format!("{name}.geojson"),
                points(200, name),
                &[("visibility", "public")],
            )
            .await;
        let job = stack.wait_job(&admin, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        ids.push(job["dataset_id"].as_str().unwrap().to_string());
    }
    let (alpha, beta) = (ids[0].clone(), ids[1].clone());
    for base in [&first, &second] {
        until_replica(&stack, base, &admin, &replica_name, "up", 1.0).await;
        until_replica(&stack, base, &admin, &replica_name, "lagging", 0.0).await;
    }

    // Both processes know both records (read once), and the replica has
    // what they were read at.
    for base in [&first, &second] {
        for id in [&alpha, &beta] {
            assert_eq!(anonymous_items(&stack, base, id).await.0, 200);
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Public reads (items, tiles, search, STAC) reach the replica. Each
    // tile is one that holds a point (30 different tiles, none cached yet):
    // an empty answer is a failure, not a pass.
    let layer_of = |id: &str| primary.psql("catalog", &format!("SELECT table_name FROM datasets WHERE id = '{id}'"));
    let (alpha_layer, beta_layer) = (layer_of(&alpha), layer_of(&beta));
    let before = reads(&stack, &first, &admin).await;
    let transactions_before = replica_transactions(&replica);
    let mut tiles = Vec::new();
    for i in 0..30usize {
        let (id, layer, name) = if i % 2 == 0 {
            (&alpha, &alpha_layer, "alpha")
        } else {
            (&beta, &beta_layer, "beta")
        };
        assert_eq!(anonymous_items(&stack, &first, id).await.0, 200);
        // Points 12 degrees apart in longitude per dataset: a tile each at
        // zoom 5 (11.25 degrees wide).
        let point = 5 + 6 * i;
        let (x, y) = tile_of_point(point, 5);
        let address = (5, x, y);
        let body = tile_with_data(&stack, &first, id, address).await;
        tiles.push((address, layer, format!("{name} {point}"), body));
    }
    for path in ["/api/search/datasets?q=alpha", "/api/stac/search?limit=5"] {
        let answer = stack.http.get(format!("{first}{path}")).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
    }
    let after = reads(&stack, &first, &admin).await;
    assert!(
        after.1 - before.1 >= 60.0,
        "replica reads {before:?} -> {after:?}\n{}",
        stack.logs()
    );
    assert!(after.0 - before.0 <= 3.0, "primary reads {before:?} -> {after:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica_transactions(&replica) < transactions_before + 60 {
        assert!(
            Instant::now() < deadline,
            "the replica's own statistics never counted the reads"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (address, layer, name, body) in &tiles {
        assert_tile_holds(body, *address, layer, name);
    }

    // Read-your-writes: with the replica's replay paused, a writer reads
    // its own write through the other API process.
    // (Records are kept a minute: read again so the check below meets a
    // record read before the pause.)
    assert_eq!(anonymous_items(&stack, &second, &beta).await.0, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    replica.psql("postgres", "SELECT pg_wal_replay_pause()");
    let item_url = |base: &str| format!("{base}/api/collections/{alpha}/items/1");
    let tagged = stack.send(stack.http.get(item_url(&first)).bearer_auth(&admin)).await;
    let tag = tagged.headers()["etag"].to_str().unwrap().to_string();
    let (status, _, body) = status_of(
        &stack,
        stack
            .http
            .patch(item_url(&first))
            .bearer_auth(&admin)
            .header("if-match", &tag)
            .header("content-type", "application/merge-patch+json")
            .body(json!({"properties": {"name": "renamed while the replica waits"}}).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let before = reads(&stack, &second, &admin).await;
    let (status, _, own) = status_of(&stack, stack.http.get(item_url(&second)).bearer_auth(&admin)).await;
    assert_eq!(status, 200);
    assert_eq!(own["properties"]["name"], "renamed while the replica waits");
    let after = reads(&stack, &second, &admin).await;
    assert_eq!(after.0 - before.0, 1.0, "the writer's read went to the primary");
    assert_eq!(
        replica_state(&stack, &second, &admin, &replica_name, "lagging").await,
        0.0
    );
    let table = primary.psql(
        "catalog",
        &format!("SELECT table_name FROM datasets WHERE id = '{alpha}'"),
    );
    assert_eq!(
        replica.psql("catalog", &format!("SELECT name FROM data.\"{table}\" WHERE gid = 1")),
        "alpha 0",
        "the replica has not replayed the write"
    );
    // Another reader of data that did not change still reads the replica.
    let before = reads(&stack, &second, &admin).await;
    assert_eq!(anonymous_items(&stack, &second, &beta).await.0, 200);
    let after = reads(&stack, &second, &admin).await;
    assert_eq!(
        after.1 - before.1,
        1.0,
        "an untouched dataset's reader stays on the replica"
    );

    // Lagging past READ_MAX_LAG_SECONDS: skipped; caught up: used again.
    let waited = until_replica(&stack, &first, &admin, &replica_name, "lagging", 1.0).await;
    assert!(waited < Duration::from_secs(MAX_LAG_SECONDS + 5), "{waited:?}");
    let before = reads(&stack, &first, &admin).await;
    assert_eq!(anonymous_items(&stack, &first, &beta).await.0, 200);
    let after = reads(&stack, &first, &admin).await;
    assert_eq!(after.0 - before.0, 1.0, "a lagging replica is skipped");
    replica.psql("postgres", "SELECT pg_wal_replay_resume()");
    let caught_up = until_replica(&stack, &first, &admin, &replica_name, "lagging", 0.0).await;
    eprintln!("replica in use again {caught_up:?} after its replay resumed");
    let (_, page) = anonymous_items(&stack, &first, &alpha).await;
    assert!(
        page["features"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["properties"]["name"] == "renamed while the replica waits")
    );

    // A replica cancels a read that conflicts with what it replays (here
    // the ACCESS EXCLUSIVE lock a reupload's table swap takes): the read
    // runs again on the primary and answers, instead of a 503.
    let geometry = primary.psql(
        "catalog",
        &format!("SELECT geometry_column FROM datasets WHERE id = '{alpha}'"),
    );
    // Rows enough that counting a filter's matches takes a while.
    primary.psql(
        "catalog",
        &format!(
            "INSERT INTO data.\"{table}\" (name, rank, \"{geometry}\") \
             SELECT 'bulk ' || g, g, ST_SetSRID(ST_MakePoint(0, 0), 4326) FROM generate_series(1, 1500000) g"
        ),
    );
    let written = primary.psql("postgres", "SELECT pg_current_wal_lsn()");
    let replayed = format!("SELECT pg_last_wal_replay_lsn() >= '{written}'::pg_lsn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while replica.psql("postgres", &replayed) != "t" {
        assert!(Instant::now() < deadline, "the replica never replayed the rows");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    replica.psql("postgres", "ALTER SYSTEM SET max_standby_streaming_delay = 0");
    replica.psql("postgres", "SELECT pg_reload_conf()");
    let conflicts = "SELECT confl_lock FROM pg_stat_database_conflicts WHERE datname = 'catalog'";
    let conflicts_before: i64 = replica.psql("postgres", conflicts).parse().unwrap();
    replica.psql("postgres", "SELECT pg_wal_replay_pause()");
    primary.psql(
        "catalog",
        &format!("BEGIN; LOCK TABLE data.\"{table}\" IN ACCESS EXCLUSIVE MODE; COMMIT;"),
    );
    let filtered = format!("{first}/api/collections/{alpha}/items?limit=5&filter=name%20LIKE%20%27%25nowhere%25%27");
    let read = tokio::spawn({
        let http = stack.http.clone();
        async move {
            let response = http.get(filtered).send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    });
    let on_replica = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%{table}%' AND pid <> pg_backend_pid()"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while replica.psql("catalog", &on_replica) == "0" {
        assert!(
            Instant::now() < deadline,
            "the filtered read never ran on the replica\n{}",
            stack.logs()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    replica.psql("postgres", "SELECT pg_wal_replay_resume()");
    let (status, page) = read.await.unwrap();
    assert_eq!(status, 200, "{page}\n{}", stack.logs());
    assert_eq!(page["numberMatched"], 0, "{page}");
    let conflicts_after: i64 = replica.psql("postgres", conflicts).parse().unwrap();
    assert!(
        conflicts_after > conflicts_before,
        "the replica cancelled no read: {conflicts_before} -> {conflicts_after}"
    );
    assert!(stack.logs().contains("runs again on the primary"), "{}", stack.logs());
    replica.psql("postgres", "ALTER SYSTEM RESET max_standby_streaming_delay");
    replica.psql("postgres", "SELECT pg_reload_conf()");

    // The replica stops: skipped within a second, no read fails after it.
    replica.stop();
    let skipped = until_replica(&stack, &first, &admin, &replica_name, "up", 0.0).await;
    assert!(
        skipped < Duration::from_secs(2),
        "down replica skipped after {skipped:?}"
    );
    eprintln!("a stopped replica was skipped after {skipped:?}");
    for id in [&alpha, &beta, &alpha, &beta] {
        assert_eq!(anonymous_items(&stack, &first, id).await.0, 200);
    }
    replica.start();
    for base in [&first, &second] {
        until_replica(&stack, base, &admin, &replica_name, "up", 1.0).await;
    }

    // The primary stops: public reads answer from the replica, writes 503.
    primary.stop();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for base in [&first, &second] {
        for id in [&alpha, &beta] {
            let (status, page) = anonymous_items(&stack, base, id).await;
            assert_eq!(status, 200, "{page}\n{}", stack.logs());
            assert_eq!(page["features"].as_array().unwrap().len(), 5);
        }
        // A tile no process has cut before, holding beta's point 100.
        let (x, y) = tile_of_point(100, 4);
        let tile = tile_with_data(&stack, base, &beta, (4, x, y)).await;
        assert_tile_holds(&tile, (4, x, y), &beta_layer, "beta 100");
    }
    let write = || {
        stack.http.post(format!("{first}/api/collections/{beta}/items")).bearer_auth(&admin).json(
            &json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"name": "new", "rank": 1}}),
        )
    };
    let (status, retry_after, problem) = status_of(&stack, write()).await;
    assert_eq!(status, 503, "{problem}");
    assert!(retry_after.is_some(), "503 without Retry-After");
    assert_eq!(problem["status"], 503);

    // The primary returns: writes succeed again within seconds.
    primary.start();
    let returned = Instant::now();
    loop {
        let (status, _, _) = status_of(&stack, write()).await;
        if status == 201 {
            break;
        }
        assert!(
            returned.elapsed() < Duration::from_secs(20),
            "writes never came back: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("writes came back {:?} after the primary did", returned.elapsed());
}

/// Without Redis, API processes announce write positions to each other by
/// NOTIFY on the primary: a writer still reads its own write (a new title,
/// found by search, which reads the catalog on replicas) through another
/// process while the replica's replay is paused.
#[tokio::test]
async fn without_redis_writers_read_their_writes_through_any_process() {
    let primary = Cluster::primary();
    let replica = Cluster::replica_of(&primary);
    let replica_name = format!("127.0.0.1:{}", replica.port);
    let database = TestDatabase {
        url: primary.url("catalog"),
        name: format!("unused_{}", uuid::Uuid::new_v4().simple()),
    };
    let options = StackOptions::workers(1)
        .env("DATABASE_READ_URLS", &replica.url("catalog"))
        .env("READ_MAX_LAG_SECONDS", &MAX_LAG_SECONDS.to_string());
    let mut stack = Stack::start_on(database, tempfile::tempdir().unwrap(), options).await;
    let first = stack.base.clone();
    let second = stack.add_api().await;
    let admin = stack.admin_token().await;
    let job = stack
        .upload_ok(
            &admin,
            "gamma.geojson",
            points(50, "gamma"),
            &[("visibility", "public")],
        )
        .await;
    let job = stack.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let gamma = job["dataset_id"].as_str().unwrap().to_string();
    for base in [&first, &second] {
        until_replica(&stack, base, &admin, &replica_name, "up", 1.0).await;
        until_replica(&stack, base, &admin, &replica_name, "lagging", 0.0).await;
        assert_eq!(anonymous_items(&stack, base, &gamma).await.0, 200);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A new title, through the first process, while the replica waits:
    // search reads the catalog on a replica unless the caller just wrote.
    replica.psql("postgres", "SELECT pg_wal_replay_pause()");
    let (status, _, body) = status_of(
        &stack,
        stack
            .http
            .patch(format!("{first}/api/datasets/{gamma}"))
            .bearer_auth(&admin)
            .json(&json!({"title": "Quokka sightings"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let search = |base: &str| format!("{base}/api/search/datasets?q=quokka");
    let before = reads(&stack, &second, &admin).await;
    let (status, _, found) = status_of(&stack, stack.http.get(search(&second)).bearer_auth(&admin)).await;
    assert_eq!(status, 200);
    assert_eq!(
        found["total"], 1,
        "the writer finds its new title through the other process: {found}"
    );
    let after = reads(&stack, &second, &admin).await;
    assert_eq!(after.0 - before.0, 1.0, "the writer's search went to the primary");
    // Anyone else searches the replica, which has not replayed the write.
    let (status, _, others) = status_of(&stack, stack.http.get(search(&second))).await;
    assert_eq!(status, 200);
    assert_eq!(others["total"], 0, "{others}");
    replica.psql("postgres", "SELECT pg_wal_replay_resume()");
}
