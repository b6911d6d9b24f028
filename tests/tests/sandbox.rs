//! The SQL sandbox: reads of visible datasets only, nothing else. The
//! attack list below is the one `docs/sandbox.md` names; each attempt runs
//! as a viewer and as an editor and must answer 400 or 403 with no secret
//! in its body.
use std::time::{Duration, Instant};

use catalog_tests::{Api, App, Stack};
use serde_json::{Value, json};

async fn query(api: &impl Api, credential: (&str, &str), sql: &str) -> (u16, Value) {
    let response = api
        .send(
            api.http()
                .post(api.url("/api/query/"))
                .header(credential.0, credential.1)
                .json(&json!({"sql": sql})),
        )
        .await;
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn points(n: usize, secret: &str) -> Value {
    let features: Vec<Value> = (0..n)
        .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64 * 0.01, 1.0]}, "properties": {"n": i, "name": format!("f{i}"), "secret": secret}}))
        .collect();
    json!({"type": "FeatureCollection", "features": features})
}

async fn table_of(app: &App, token: &str, id: &str) -> String {
    app.dataset(token, id).await["table_name"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_sandbox_reads_visible_datasets_and_nothing_else() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("sandra", "editor").await;
    let (_, other) = app.user_token("oscar", "editor").await;
    let id = app.ingest_geojson(&owner, &points(1500, "mine"), &[]).await;
    let table = table_of(&app, &owner, &id).await;
    let public_id = app
        .ingest_geojson(&owner, &points(3, "open"), &[("visibility", "public")])
        .await;
    let public_table = table_of(&app, &owner, &public_id).await;
    let bearer = format!("Bearer {owner}");
    let me = ("authorization", bearer.as_str());

    let (status, result) = query(
        &app,
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
    let (_, capped) = query(&app, me, &format!("SELECT n FROM {table};")).await;
    assert_eq!(capped["row_count"], 1000);
    assert_eq!(capped["truncated"], true);

    // What an analyst writes: CTEs, joins, aggregates, window functions,
    // PostGIS, set operations, sub-selects, over visible tables.
    let (status, result) = query(
        &app,
        me,
        &format!(
            "WITH near AS (SELECT n, geom FROM {table} WHERE ST_DWithin(geom, ST_SetSRID(ST_MakePoint(0, 1), 4326), 0.055))
             SELECT count(*) AS c, max(n) AS top, round(avg(n)::numeric, 1) AS mean,
                    (SELECT count(*) FROM data.{public_table} p WHERE p.n IN (SELECT n FROM near)) AS shared,
                    string_agg(DISTINCT upper(left('abc', 1)), ',') AS s,
                    extract(year FROM date '2024-05-01') AS y
               FROM near"
        ),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["rows"][0]["c"], 6);
    assert_eq!(result["rows"][0]["top"], 5);
    assert_eq!(result["rows"][0]["shared"], 3);
    assert_eq!(result["rows"][0]["y"], 2024);

    let other_bearer = format!("Bearer {other}");
    let (status, body) = query(
        &app,
        ("authorization", &other_bearer),
        &format!("SELECT count(*) FROM data.{table}"),
    )
    .await;
    assert_eq!(status, 403, "another user's private table: {body}");
    let (status, body) = query(
        &app,
        ("authorization", &other_bearer),
        &format!("SELECT name FROM {public_table} ORDER BY n"),
    )
    .await;
    assert_eq!(status, 200, "a public dataset: {body}");
    assert_eq!(body["rows"][2]["name"], "f2");

    let started = Instant::now();
    let (status, body) = query(&app, me, "SELECT count(*) FROM generate_series(1, 100000000000)").await;
    assert_eq!(status, 400, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("longer"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(15));
    let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM data.{table}")))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1500, "nothing was written");

    // Read-only keys may use it; anonymous callers and query-string keys
    // (never a credential on a POST) may not.
    let read_only_key = app.api_key(&owner, "read_only").await;
    let (status, _) = query(&app, ("x-api-key", read_only_key.as_str()), "SELECT 1 AS one").await;
    assert_eq!(status, 200);
    for url in [
        app.url("/api/query"),
        app.url(&format!("/api/query/?api_key={read_only_key}")),
    ] {
        let response = app.send(app.http().post(url).json(&json!({"sql": "SELECT 1"}))).await;
        assert_eq!(response.status(), 401);
    }
}

/// Strings that must never appear in an answer to an attack.
struct Secrets {
    private_value: String,
    api_key: String,
    password_hash: String,
}

impl Secrets {
    fn assert_absent(&self, sql: &str, body: &Value) {
        let text = body.to_string();
        for secret in [
            &self.private_value,
            &self.api_key,
            &self.password_hash,
            &"root:x:0:0".to_string(),
        ] {
            assert!(!text.contains(secret.as_str()), "{sql} leaked {secret}: {text}");
        }
        assert!(!text.contains("$argon2"), "{sql} leaked a password hash: {text}");
    }
}

#[tokio::test]
async fn escape_attempts_are_refused_for_viewers_and_editors() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("olga", "editor").await;
    let (_, viewer) = app.user_token("vera", "viewer").await;
    let (_, editor) = app.user_token("edgar", "editor").await;
    let private_value = "PRIVATE-7f3a9c";
    let private_id = app.ingest_geojson(&owner, &points(5, private_value), &[]).await;
    let private = table_of(&app, &owner, &private_id).await;
    let public_id = app
        .ingest_geojson(&owner, &points(5, "open"), &[("visibility", "public")])
        .await;
    let public = table_of(&app, &owner, &public_id).await;
    let secrets = Secrets {
        private_value: private_value.into(),
        api_key: app.api_key(&owner, "full").await,
        password_hash: sqlx::query_scalar("SELECT password_hash FROM users WHERE username = 'olga'")
            .fetch_one(&app.pool)
            .await
            .unwrap(),
    };

    // 400: not one SELECT (or no statement at all); 403: one SELECT that
    // names something the sandbox does not allow.
    let attacks: Vec<(String, u16)> = [
        // Role and session switches.
        ("SELECT set_config('role', 'catalog', true) AS a, query_to_xml('select username, password_hash from users', true, false, '') AS b", 403),
        ("SELECT set_config('session_authorization', 'catalog', true)", 403),
        ("RESET ROLE", 400),
        ("SET ROLE catalog", 400),
        ("SET SESSION AUTHORIZATION catalog", 400),
        // SQL run at execution time.
        ("SELECT query_to_xml('select * from users', true, false, '')", 403),
        ("SELECT table_to_xml('users', true, false, '')", 403),
        ("SELECT cursor_to_xml('c', 10, true, false, '')", 403),
        ("SELECT database_to_xml(true, false, '')", 403),
        ("SELECT schema_to_xml('public', true, false, '')", 403),
        ("SELECT query_to_xml_and_xmlschema('select * from api_keys', true, false, '')", 403),
        ("SELECT pg_catalog.query_to_xml(format('select * from %I', 'refresh_tokens'), true, false, '')", 403),
        // The service's own tables.
        ("SELECT username, password_hash FROM users", 403),
        ("SELECT * FROM public.api_keys", 403),
        ("SELECT * FROM refresh_tokens", 403),
        ("SELECT * FROM oauth_providers", 403),
        ("SELECT * FROM notification_settings", 403),
        ("SELECT * FROM connector_credentials", 403),
        ("SELECT * FROM auth_settings", 403),
        ("SELECT * FROM apalis.jobs", 403),
        ("SELECT u.* FROM data.__TABLE__ t, LATERAL (SELECT * FROM users) u", 403),
        // Another user's private dataset: directly, through a CTE, a
        // sub-select, a view and dynamic SQL.
        ("SELECT * FROM data.__PRIVATE__", 403),
        ("SELECT * FROM __PRIVATE__", 403),
        ("WITH x AS (SELECT * FROM data.__PRIVATE__) SELECT * FROM x", 403),
        ("SELECT * FROM data.__TABLE__ WHERE secret IN (SELECT secret FROM __PRIVATE__)", 403),
        ("CREATE VIEW v AS SELECT * FROM data.__PRIVATE__", 400),
        ("SELECT * FROM (WITH __PRIVATE__ AS (SELECT 1) SELECT 1) a, __PRIVATE__", 403),
        ("SELECT * FROM (WITH pg_stat_activity AS (SELECT 1) SELECT 1) a, pg_stat_activity", 403),
        ("SELECT query_to_xml('select * from data.__PRIVATE__', true, false, '')", 403),
        ("SELECT * FROM geometry_columns", 403),
        ("SELECT * FROM information_schema.tables", 403),
        ("SELECT * FROM pg_catalog.pg_authid", 403),
        ("SELECT * FROM pg_roles", 403),
        // Server files.
        ("SELECT pg_read_file('/etc/passwd')", 403),
        ("SELECT pg_read_binary_file('/etc/passwd')", 403),
        ("SELECT pg_ls_dir('.')", 403),
        ("SELECT pg_stat_file('postgresql.conf')", 403),
        ("SELECT lo_import('/etc/passwd')", 403),
        ("COPY users TO STDOUT", 400),
        ("COPY (SELECT 1) TO '/tmp/x'", 400),
        // Other sessions and settings.
        ("SELECT query FROM pg_stat_activity", 403),
        ("SELECT current_setting('data_directory')", 403),
        ("SELECT current_setting('hba_file')", 403),
        ("SELECT setting FROM pg_settings", 403),
        // Statements that are not one SELECT (400), and SELECTs that
        // write, lock or take a sequence value (403).
        ("DO $$ BEGIN PERFORM 1; END $$", 400),
        ("PREPARE p AS SELECT 1", 400),
        ("EXPLAIN ANALYZE SELECT 1", 400),
        ("SELECT 1; SELECT 2", 400),
        ("SELECT 1) r; DROP TABLE data.__TABLE__; --", 400),
        ("SELECT 1\u{0}; DROP TABLE data.__TABLE__", 400),
        ("INSERT INTO data.__TABLE__ (n) VALUES (1)", 400),
        ("UPDATE data.__TABLE__ SET n = 0", 400),
        ("DELETE FROM data.__TABLE__", 400),
        ("WITH d AS (DELETE FROM data.__TABLE__ RETURNING *) SELECT * FROM d", 403),
        ("TRUNCATE data.__TABLE__", 400),
        ("DROP TABLE data.__TABLE__", 400),
        ("CREATE TABLE data.evil (x int)", 400),
        ("ALTER TABLE data.__TABLE__ ADD COLUMN x int", 400),
        ("SELECT * INTO data.copy FROM data.__TABLE__", 403),
        ("SELECT * FROM data.__TABLE__ FOR UPDATE", 403),
        ("SELECT nextval('datasets_id_seq')", 403),
        // Locks, sleeps and connections out.
        ("SELECT pg_advisory_lock(42)", 403),
        ("SELECT pg_try_advisory_lock(42)", 403),
        ("SELECT pg_sleep(30)", 403),
        ("SELECT dblink('host=127.0.0.1', 'select 1')", 403),
        ("SELECT st_estimatedextent('data', '__PRIVATE__', 'geom')", 403),
        ("SELECT xmlparse(document '<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')", 403),
    ]
    .iter()
    .map(|(a, status)| (a.replace("__PRIVATE__", &private).replace("__TABLE__", &public), *status))
    .collect();
    assert!(attacks.len() >= 25);
    let admin_key_before: i64 = sqlx::query_scalar("SELECT count(*) FROM api_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();

    let started = Instant::now();
    let mut wrong = Vec::new();
    for (who, token) in [("viewer", &viewer), ("editor", &editor)] {
        let bearer = format!("Bearer {token}");
        for (sql, expected) in &attacks {
            let (status, body) = query(&app, ("authorization", &bearer), sql).await;
            if status != *expected {
                wrong.push(format!("{who}: {sql} answered {status}, not {expected}: {body}"));
            }
            assert_eq!(body["status"], status, "{who}: {sql}: a problem document");
            secrets.assert_absent(sql, &body);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(started.elapsed() < Duration::from_secs(60), "refusals are quick");

    // Nothing changed, nothing is left held.
    let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM data.{public}")))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 5);
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM api_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(keys, admin_key_before);
    let locks: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND a.usename = 'catalog_sandbox'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(locks, 0, "no advisory lock outlives a request");
}

/// The second gate alone: connected as the sandbox role, with no parse
/// check in front, the service's tables and role switches stay closed.
#[tokio::test]
async fn the_sandbox_role_has_nothing_to_switch_to_and_nothing_to_read() {
    let app = App::start().await;
    let members: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_auth_members WHERE member = 'catalog_sandbox'::regrole")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(members, 0, "a member of no role");
    let options = (*app.pool.connect_options()).clone().username("catalog_sandbox");
    let sandbox = sqlx::PgPool::connect_with(options)
        .await
        .expect("the sandbox role logs in");
    for sql in [
        "SELECT password_hash FROM users",
        "SELECT * FROM api_keys",
        "SET ROLE catalog",
        "SELECT set_config('role', 'catalog', false)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT query_to_xml('select * from users', true, false, '')",
        "CREATE TEMP TABLE t AS SELECT 1",
    ] {
        let error = sqlx::raw_sql(sql).execute(&sandbox).await.expect_err(sql);
        let code = error.as_database_error().and_then(|d| d.code()).unwrap_or_default();
        assert!(["42501", "25006"].contains(&code.as_ref()), "{sql}: {error}");
    }
}

#[tokio::test]
async fn mistakes_in_the_callers_sql_are_400_and_huge_results_are_stopped() {
    let stack = Stack::start().await;
    let (_, token) = stack.user_token("mia", "viewer").await;
    let bearer = format!("Bearer {token}");
    let me = ("authorization", bearer.as_str());
    for sql in [
        "SELECT (SELECT n FROM generate_series(1, 2) n)",
        "SELECT ST_GeomFromText('POINT(1')",
        "SELECT repeat('x', 2000000000)",
        "SELECT 1 / 0",
        "SELECT 'abc'::int",
        "SELECT no_such_column FROM generate_series(1, 2)",
        "SELECT * FROM no_such_table",
        "SELEC 1",
        "SELECT ST_Transform(ST_SetSRID(ST_MakePoint(0, 0), 4326), 999999)",
    ] {
        let (status, body) = query(&stack, me, sql).await;
        assert_eq!(status, 400, "{sql}: {body}");
        assert!(body["detail"].as_str().unwrap().len() > 10, "{sql}: says why: {body}");
    }
    let rss_before = stack.api_rss_kib();
    let started = Instant::now();
    let (status, body) = query(
        &stack,
        me,
        "SELECT repeat('x', 1048576) AS big FROM generate_series(1, 100)",
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("larger"), "{body}");
    let (status, body) = query(&stack, me, "SELECT repeat('x', 200000000) AS one_huge_value").await;
    assert_eq!(status, 400, "{body}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let grown_mib = (stack.api_rss_kib() - rss_before) / 1024;
    assert!(grown_mib < 64, "the API grew by {grown_mib} MiB for refused results");
}

#[tokio::test]
async fn concurrent_queries_on_a_new_dataset_all_answer() {
    let app = App::start_with_worker().await;
    let (_, token) = app.user_token("cora", "editor").await;
    let id = app
        .ingest_geojson(&token, &points(50, "c"), &[("visibility", "internal")])
        .await;
    let table = table_of(&app, &token, &id).await;
    let (_, reader) = app.user_token("rita", "viewer").await;
    let requests = (0..24).map(|i| {
        let token = if i % 2 == 0 { token.clone() } else { reader.clone() };
        let sql = format!("SELECT count(*) AS c FROM data.{table} WHERE n >= {}", i % 5);
        let app = &app;
        async move {
            let bearer = format!("Bearer {token}");
            query(app, ("authorization", &bearer), &sql).await
        }
    });
    for (status, body) in futures::future::join_all(requests).await {
        assert_eq!(status, 200, "{body}");
        assert!(body["rows"][0]["c"].as_i64().unwrap() >= 46);
    }
}
