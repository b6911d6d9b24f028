//! A real service per test, on its own database cloned from the migrated
//! template and its own object-store directory: either the API in process,
//! its router called directly (`App`), or the real `catalog-api` and
//! `catalog-worker` binaries as child processes (`Stack`), for what needs
//! processes: queues, workers, kills, restarts and outages.
use std::{
    io::Write,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

pub mod clusters;
pub mod idp;
mod in_process;

pub use in_process::App;

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

pub const ADMIN_USER: &str = "admin";
pub const ADMIN_PASSWORD: &str = "Admin-Password-123";
pub const JWT_SECRET: &str = "test-secret-test-secret-test-secret-0123";

/// How long a test client keeps an idle connection for another request:
/// well below the API's 30 s limit (it closes a connection on which no
/// request headers arrive within 30 s, idle keep-alive included), so a
/// client never sends on a connection the API is closing
/// (`docs/operations.md`, Slow or abusive clients).
pub const CLIENT_IDLE_LIMIT: Duration = Duration::from_secs(10);

/// A client for the API as every test makes it: idle connections dropped
/// after `CLIENT_IDLE_LIMIT`, TLS by the service's own crypto provider.
pub fn http_client() -> reqwest::ClientBuilder {
    catalog_shared::outbound::install_tls_provider();
    reqwest::Client::builder().pool_idle_timeout(CLIENT_IDLE_LIMIT)
}

/// Where the binaries the tests spawn are, checked (once) to be built from
/// the sources as they are: a test of a stale binary passes or fails for
/// code that is no longer there.
pub fn bin_dir() -> PathBuf {
    static CHECKED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let dir = match std::env::var("CATALOG_BIN_DIR") {
                Ok(dir) => PathBuf::from(dir),
                // target/debug/deps/<test binary> → target/debug
                Err(_) => {
                    let exe = std::env::current_exe().expect("test binary path");
                    exe.parent().and_then(|p| p.parent()).expect("target dir").to_path_buf()
                }
            };
            assert_fresh(&dir);
            dir
        })
        .clone()
}

/// Panics when a spawned binary is older than a source it is built from.
fn assert_fresh(dir: &Path) {
    fn newest(path: &Path, found: &mut Option<(std::time::SystemTime, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(path) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                newest(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "sql" || e == "toml")
                && let Ok(modified) = entry.metadata().and_then(|m| m.modified())
                && found.as_ref().is_none_or(|(t, _)| modified > *t)
            {
                *found = Some((modified, path));
            }
        }
    }
    let root = package_dir().join("..");
    // Each binary and the crates (and migrations) it is built from.
    let built_from = [
        ("catalog-api", &["api", "shared", "raster", "migrations"][..]),
        (
            "catalog-worker",
            &["worker", "jobs", "shared", "raster", "migrations"][..],
        ),
    ];
    for (binary, crates) in built_from {
        let mut source = None;
        for crate_dir in crates {
            newest(&root.join(crate_dir), &mut source);
        }
        let (Some((source_time, source)), Ok(built)) = (source, dir.join(binary).metadata().and_then(|m| m.modified()))
        else {
            continue;
        };
        assert!(
            built >= source_time,
            "{} is older than {}: build the binaries again (cargo build --workspace --bins; scripts/test-some.sh does)",
            dir.join(binary).display(),
            source.display()
        );
    }
}

/// The XYZ tile (x, y) holding the point (`lon`, `lat`) at zoom `z`.
pub fn tile_at(lon: f64, lat: f64, z: u32) -> (u32, u32) {
    let n = f64::from(1u32 << z);
    let x = ((lon + 180.0) / 360.0 * n).floor() as u32;
    let lat = lat.to_radians();
    let y = ((1.0 - (lat.tan() + 1.0 / lat.cos()).ln() / std::f64::consts::PI) / 2.0 * n).floor() as u32;
    (x, y)
}

/// This package's folder (`tests/`), found when the test runs: `cargo test`
/// names it in `CARGO_MANIFEST_DIR`. The path fixed at build time is only
/// the fallback, because another clone sharing the build cache may have
/// built this binary from a folder that is not here.
pub fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The repository's own test data (`tests/data`, see its README).
pub fn data_dir() -> PathBuf {
    package_dir().join("data")
}

pub fn data_file(relative: &str) -> Vec<u8> {
    let path = data_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn admin_database_url() -> String {
    std::env::var("TEST_ADMIN_DATABASE_URL").unwrap_or_else(|_| "postgres://catalog@127.0.0.1:54330/postgres".into())
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The Prometheus text an API process at `base` serves, read with `token`.
pub async fn metrics_text(http: &reqwest::Client, base: &str, token: &str) -> String {
    http.get(format!("{base}/api/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of one series of a Prometheus text (its name and labels as
/// printed, `catalog_x{a="b"}`); a series that is not there fails the test.
pub fn metric_value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

/// A database of its own, cloned from the migrated template; dropped with
/// the value.
pub struct TestDatabase {
    pub url: String,
    pub name: String,
}

impl TestDatabase {
    pub async fn create() -> Self {
        let admin_url = admin_database_url();
        let admin = PgPool::connect(&admin_url)
            .await
            .expect("test cluster reachable (run scripts/test.sh)");
        let name = format!("t_{}", Uuid::new_v4().simple());
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE {name} TEMPLATE catalog_template"
        )))
        .execute(&admin)
        .await
        .expect("create test database");
        admin.close().await;
        let url = admin_url.rsplit_once('/').unwrap().0.to_string() + "/" + &name;
        Self { url, name }
    }
}

impl TestDatabase {
    /// A database restored from a `pg_dump --format=custom` archive, as an
    /// operator restores a backup (docs/upgrade.md).
    pub async fn restore(dump: &Path) -> Self {
        let admin_url = admin_database_url();
        let name = format!("t_{}", Uuid::new_v4().simple());
        let admin = PgPool::connect(&admin_url)
            .await
            .expect("test cluster reachable (run scripts/test.sh)");
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE {name} TEMPLATE template0"
        )))
        .execute(&admin)
        .await
        .expect("create test database");
        admin.close().await;
        let url = admin_url.rsplit_once('/').unwrap().0.to_string() + "/" + &name;
        let database = Self { url, name };
        let output = Command::new("pg_restore")
            .args(["--no-owner", "--no-acl", "--exit-on-error", "--dbname", &database.url])
            .arg(dump)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "pg_restore {}: {}",
            dump.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        database
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .arg(admin_database_url())
            .args(["-qc", &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The settings every test service starts with.
fn service_env(database_url: &str, storage: &Path, public_url: &str) -> Vec<(String, String)> {
    [
        ("DATABASE_URL", database_url.to_string()),
        ("JWT_SECRET", JWT_SECRET.into()),
        ("STORAGE_URL", format!("file://{}", storage.display())),
        ("PUBLIC_URL", public_url.into()),
        ("BOOTSTRAP_ADMIN_USERNAME", ADMIN_USER.into()),
        ("BOOTSTRAP_ADMIN_PASSWORD", ADMIN_PASSWORD.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// What a test calls the API with, in process or over the network alike.
// Tests run on one thread each, so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Api {
    /// Builds requests; `send` sends them.
    fn http(&self) -> &reqwest::Client;
    fn base(&self) -> &str;
    fn pool(&self) -> &PgPool;
    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response;

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    async fn token(&self, username: &str, password: &str) -> String {
        let request = self
            .http()
            .post(self.url("/api/auth/login"))
            .form(&[("username", username), ("password", password)]);
        let response = self.send(request).await;
        assert_eq!(response.status(), 200, "login of {username}");
        let body: Value = response.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_string()
    }

    async fn admin_token(&self) -> String {
        self.token(ADMIN_USER, ADMIN_PASSWORD).await
    }

    /// A user with the given role, made directly in the database (the
    /// account routes have their own tests); answers its access token.
    async fn user_token(&self, username: &str, role: &str) -> (Uuid, String) {
        let password = "User-Password-123";
        let id = Uuid::now_v7();
        sqlx::query("INSERT INTO users (id, username, password_hash, role) VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(username)
            .bind(catalog_shared::auth::hash_password(password).unwrap())
            .bind(role)
            .execute(self.pool())
            .await
            .unwrap();
        (id, self.token(username, password).await)
    }

    async fn api_key(&self, token: &str, scope: &str) -> String {
        let request = self
            .http()
            .post(self.url("/api/auth/api-keys"))
            .bearer_auth(token)
            .json(&serde_json::json!({"scope": scope}));
        let response = self.send(request).await;
        assert_eq!(response.status(), 201);
        response.json::<Value>().await.unwrap()["key"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn get_json(&self, token: Option<&str>, path: &str) -> (u16, Value) {
        let mut request = self.http().get(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = self.send(request).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn upload(&self, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> reqwest::Response {
        self.post_file("/api/datasets/upload", token, filename, bytes, fields)
            .await
    }

    /// A multipart form with one `file` part and text fields.
    async fn post_file(
        &self,
        path: &str,
        token: &str,
        filename: &str,
        bytes: Vec<u8>,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut form = reqwest::multipart::Form::new();
        for (k, v) in fields {
            form = form.text(k.to_string(), v.to_string());
        }
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(filename.to_string()),
        );
        self.send(self.http().post(self.url(path)).bearer_auth(token).multipart(form))
            .await
    }

    /// What the service's processes logged, for a failure's message (none
    /// in process: the test's own output holds it).
    fn process_logs(&self) -> String {
        String::new()
    }

    /// Uploads and answers the queued job's id, asserting the 202.
    async fn upload_ok(&self, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> String {
        let response = self.upload(token, filename, bytes, fields).await;
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 202, "upload of {filename}: {body}");
        assert_eq!(body["status"], "queued");
        body["job_id"].as_str().unwrap().to_string()
    }

    /// Uploads a GeoJSON document, waits for its ingest and answers the
    /// dataset id, asserting the job succeeded.
    async fn ingest_geojson(&self, token: &str, geojson: &Value, fields: &[(&str, &str)]) -> String {
        let job_id = self
            .upload_ok(token, "data.geojson", geojson.to_string().into_bytes(), fields)
            .await;
        let job = self.wait_job(token, &job_id).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        job["dataset_id"].as_str().unwrap().to_string()
    }

    /// The job as the token's user sees it.
    async fn job(&self, token: &str, job_id: &str) -> Value {
        let response = self
            .send(
                self.http()
                    .get(self.url(&format!("/api/jobs/{job_id}")))
                    .bearer_auth(token),
            )
            .await;
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// Polls the job until it has finished.
    async fn wait_job(&self, token: &str, job_id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let job = self.job(token, job_id).await;
            if matches!(job["status"].as_str(), Some("succeeded" | "failed" | "cancelled")) {
                return job;
            }
            assert!(
                Instant::now() < deadline,
                "job {job_id} did not finish: {job}\n{}",
                self.process_logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Natural Earth's 177 countries (a zipped shapefile) uploaded with
    /// `fields` and loaded; the new dataset's id.
    async fn world_countries(&self, token: &str, fields: &[(&str, &str)]) -> String {
        let members = zip_owned(&shapefile_members("shp/naturalearth_lowres"));
        let job = self.upload_ok(token, "countries.zip", members, fields).await;
        let job = self.wait_job(token, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        job["dataset_id"].as_str().unwrap().to_string()
    }

    async fn dataset(&self, token: &str, id: &str) -> Value {
        let (status, body) = self.get_json(Some(token), &format!("/api/datasets/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Tables in the data schema, staging ones included.
    async fn data_tables(&self) -> Vec<String> {
        sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'data' ORDER BY 1")
            .fetch_all(self.pool())
            .await
            .unwrap()
    }

    async fn dataset_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM datasets")
            .fetch_one(self.pool())
            .await
            .unwrap()
    }
}

impl Api for Stack {
    fn http(&self) -> &reqwest::Client {
        &self.http
    }
    fn base(&self) -> &str {
        &self.base
    }
    fn pool(&self) -> &PgPool {
        &self.pool
    }
    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        request.send().await.unwrap()
    }
    fn process_logs(&self) -> String {
        self.logs()
    }
}

#[derive(Default, Clone)]
pub struct StackOptions {
    pub workers: usize,
    pub env: Vec<(String, String)>,
}

impl StackOptions {
    pub fn workers(n: usize) -> Self {
        Self {
            workers: n,
            env: Vec::new(),
        }
    }
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

pub struct Stack {
    pub base: String,
    pub database_url: String,
    pub db_name: String,
    pub pool: PgPool,
    pub http: reqwest::Client,
    env: Vec<(String, String)>,
    api: Option<Child>,
    /// API processes beside the first one, for what must hold across them.
    more_apis: Vec<Child>,
    workers: Vec<Child>,
    _storage: tempfile::TempDir,
    logs: tempfile::TempDir,
    // Dropped after the processes using it are killed.
    _database: TestDatabase,
}

fn terminate(child: &Child) {
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "SIGTERM sent");
}

impl Stack {
    pub async fn start() -> Self {
        Self::start_with(StackOptions::workers(1)).await
    }

    pub async fn start_with(options: StackOptions) -> Self {
        Self::start_on(TestDatabase::create().await, tempfile::tempdir().unwrap(), options).await
    }

    /// The stack over a database and an object store (a `file://` folder)
    /// that already hold data.
    pub async fn start_on(database: TestDatabase, storage: tempfile::TempDir, options: StackOptions) -> Self {
        let logs = tempfile::tempdir().unwrap();
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut env = service_env(&database.url, storage.path(), &base);
        env.push(("BIND_ADDR".into(), format!("127.0.0.1:{port}")));
        env.push(("RUST_LOG".into(), "info".into()));
        for (k, v) in &options.env {
            env.retain(|(key, _)| key != k);
            env.push((k.clone(), v.clone()));
        }
        let pool = PgPool::connect(&database.url).await.unwrap();
        let mut stack = Stack {
            base,
            database_url: database.url.clone(),
            db_name: database.name.clone(),
            pool,
            http: http_client().timeout(Duration::from_secs(120)).build().unwrap(),
            env,
            api: None,
            more_apis: Vec::new(),
            workers: Vec::new(),
            _storage: storage,
            logs,
            _database: database,
        };
        stack.api = Some(stack.spawn("catalog-api", "api"));
        stack.wait_healthy().await;
        for _ in 0..options.workers {
            stack.add_worker();
        }
        stack
    }

    fn spawn(&self, binary: &str, log_name: &str) -> Child {
        self.spawn_with(binary, log_name, &[])
    }

    fn spawn_with(&self, binary: &str, log_name: &str, overrides: &[(&str, String)]) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.path().join(format!("{log_name}.log")))
            .unwrap();
        Command::new(bin_dir().join(binary))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(overrides.iter().map(|(k, v)| (*k, v.as_str())))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{binary} could not start (build it first): {e}"))
    }

    /// Starts one more worker process; returns its index.
    pub fn add_worker(&mut self) -> usize {
        let n = self.workers.len();
        let child = self.spawn("catalog-worker", &format!("worker{n}"));
        self.workers.push(child);
        n
    }

    /// Starts one more API process on the same database; answers its base URL
    /// once it is healthy.
    pub async fn add_api(&mut self) -> String {
        self.add_api_with(&[]).await
    }

    /// One more API process whose clock runs `ahead` of this one's
    /// (libfaketime, Debian's `faketime`; timers keep the real clock): what
    /// a reader meets that long after a link was made, without waiting.
    pub async fn add_api_ahead(&mut self, ahead: Duration) -> String {
        self.add_api_with(&[
            (
                "LD_PRELOAD",
                "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1".into(),
            ),
            ("FAKETIME", format!("+{}", ahead.as_secs())),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".into()),
        ])
        .await
    }

    async fn add_api_with(&mut self, extra: &[(&str, String)]) -> String {
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let n = self.more_apis.len() + 1;
        let mut overrides = vec![("BIND_ADDR", format!("127.0.0.1:{port}")), ("PUBLIC_URL", base.clone())];
        overrides.extend(extra.iter().cloned());
        let child = self.spawn_with("catalog-api", &format!("api{n}"), &overrides);
        self.more_apis.push(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(self.http.get(format!("{base}/api/health")).send().await, Ok(r) if r.status().is_success()) {
            assert!(
                Instant::now() < deadline,
                "API {n} did not become healthy:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        base
    }

    /// The object store's directory (`STORAGE_URL` is `file://` here).
    pub fn storage_dir(&self) -> &Path {
        self._storage.path()
    }

    /// SIGTERM, as an orchestrator scaling down sends.
    pub fn terminate_worker(&self, index: usize) {
        terminate(&self.workers[index]);
    }

    /// SIGTERM to the API process.
    pub fn terminate_api(&self) {
        terminate(self.api.as_ref().expect("the API runs"));
    }

    /// The API process's exit status once it is gone, at most `within` from now.
    pub async fn api_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.api.as_mut().expect("the API ran").try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the API still runs:\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The worker's exit status once it is gone, at most `within` from now.
    pub async fn worker_exit(&mut self, index: usize, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.workers[index].try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "worker {index} still running:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, as when a host dies: no chance to clean up.
    pub fn kill_worker(&mut self, index: usize) {
        let child = &mut self.workers[index];
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The API process's resident memory, in KiB.
    pub fn api_rss_kib(&self) -> i64 {
        self.api_memory_kib("VmRSS:")
    }

    /// The most resident memory the API process has held so far, in KiB.
    pub fn api_peak_rss_kib(&self) -> i64 {
        self.api_memory_kib("VmHWM:")
    }

    fn api_memory_kib(&self, field: &str) -> i64 {
        let pid = self.api.as_ref().expect("the API runs").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc status"))
    }

    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(self.logs.path()) {
            for entry in entries.flatten() {
                out += &format!(
                    "--- {}\n{}\n",
                    entry.file_name().to_string_lossy(),
                    std::fs::read_to_string(entry.path()).unwrap_or_default()
                );
            }
        }
        out
    }

    async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = self.http.get(self.url("/api/health")).send().await
                && r.status().is_success()
            {
                return;
            }
            if let Some(status) = self.api.as_mut().unwrap().try_wait().unwrap() {
                panic!("API exited with {status}:\n{}", self.logs());
            }
            assert!(
                Instant::now() < deadline,
                "API did not become healthy:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Takes the database away from the service (new connections refused,
    /// open ones ended), as an outage would; `restore_database` brings it back.
    pub async fn cut_database(&self) {
        let admin = PgPool::connect(&admin_database_url()).await.unwrap();
        let db = &self.db_name;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER DATABASE {db} ALLOW_CONNECTIONS false"
        )))
        .execute(&admin)
        .await
        .unwrap();
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(db)
        .execute(&admin)
        .await
        .unwrap();
        admin.close().await;
    }

    pub async fn restore_database(&self) {
        let admin = PgPool::connect(&admin_database_url()).await.unwrap();
        let db = &self.db_name;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER DATABASE {db} ALLOW_CONNECTIONS true"
        )))
        .execute(&admin)
        .await
        .unwrap();
        admin.close().await;
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        for child in self
            .workers
            .iter_mut()
            .chain(self.api.iter_mut())
            .chain(self.more_apis.iter_mut())
        {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        self.keep_logs();
    }
}

impl Stack {
    /// Copies the processes' logs to `CATALOG_TEST_LOG_DIR` (when set), where
    /// the test command reads them all once the tests are done: no secret
    /// any test used may appear in them (`scripts/secrets_in_logs.py`).
    fn keep_logs(&self) {
        let Some(kept) = std::env::var_os("CATALOG_TEST_LOG_DIR") else {
            return;
        };
        let kept = Path::new(&kept);
        let _ = std::fs::create_dir_all(kept);
        for entry in std::fs::read_dir(self.logs.path()).into_iter().flatten().flatten() {
            let name = format!("{}-{}", self.db_name, entry.file_name().to_string_lossy());
            let _ = std::fs::copy(entry.path(), kept.join(name));
        }
    }
}

/// A zip archive made of (name, bytes) members.
pub fn zip_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut cursor = std::io::Cursor::new(Vec::new());
    {
        let mut writer = zip::ZipWriter::new(&mut cursor);
        for (name, bytes) in members {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(bytes).unwrap();
        }
        writer.finish().unwrap();
    }
    cursor.into_inner()
}

/// The members of a shapefile set in the shared data, by layer directory.
pub fn shapefile_members(dir: &str) -> Vec<(String, Vec<u8>)> {
    members_of(&data_dir().join(dir))
}

/// The files of a directory the test command took from a Debian package
/// (`scripts/test.sh`, under `.data/fixtures`), by name.
pub fn fixture_members(dir: &str) -> Vec<(String, Vec<u8>)> {
    let fixtures = std::env::var("CATALOG_FIXTURES_DIR").expect("CATALOG_FIXTURES_DIR (set by scripts/test.sh)");
    members_of(&Path::new(&fixtures).join(dir))
}

/// A file the test command made under `.data/fixtures` (`scripts/test.sh`).
pub fn fixture_file(name: &str) -> Vec<u8> {
    let fixtures = std::env::var("CATALOG_FIXTURES_DIR").expect("CATALOG_FIXTURES_DIR (set by scripts/test.sh)");
    let path = Path::new(&fixtures).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn members_of(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut members: Vec<(String, Vec<u8>)> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    members.sort();
    members
}

pub fn zip_owned(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let borrowed: Vec<(&str, Vec<u8>)> = members.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    zip_of(&borrowed)
}

/// A PNG's width, height and RGBA pixels (row by row), as GDAL reads it;
/// an image without alpha is opaque.
pub fn decode_png(png: &[u8]) -> (usize, usize, Vec<[u8; 4]>) {
    let path = format!("/vsimem/decoded-{}.png", Uuid::new_v4());
    gdal::vsi::create_mem_file(&path, png.to_vec()).unwrap();
    let dataset = gdal::Dataset::open(&path).unwrap();
    let (width, height) = dataset.raster_size();
    let bands: Vec<Vec<u8>> = (1..=dataset.raster_count())
        .map(|b| {
            dataset
                .rasterband(b)
                .unwrap()
                .read_as::<u8>((0, 0), (width, height), (width, height), None)
                .unwrap()
                .into_shape_and_vec()
                .1
        })
        .collect();
    drop(dataset);
    gdal::vsi::unlink_mem_file(&path).unwrap();
    let pixels = (0..width * height)
        .map(|i| {
            [
                bands[0][i],
                bands[1][i],
                bands[2][i],
                bands.get(3).map_or(255, |a| a[i]),
            ]
        })
        .collect();
    (width, height, pixels)
}

/// `gdalinfo /vsicurl/<href>`'s report: GDAL reading a remote raster in
/// place with HTTP ranges, as QGIS does (panics when it cannot).
pub fn gdalinfo_vsicurl(href: &str) -> String {
    let output = Command::new("gdalinfo")
        .arg(format!("/vsicurl/{href}"))
        .env("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR")
        .output()
        .expect("gdalinfo (Debian's gdal-bin) runs");
    assert!(
        output.status.success(),
        "gdalinfo /vsicurl/{href}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What GDAL's MVT driver reads from tile z/x/y: `ogrinfo`'s listing of
/// every layer and feature (geometries left out).
pub fn ogrinfo_of_tile(tile: &[u8], (z, x, y): (u32, u64, u64)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tile.pbf");
    std::fs::write(&path, tile).unwrap();
    let output = Command::new("ogrinfo")
        .args(["-ro", "-al", "-geom=NO"])
        .args([
            "-oo",
            &format!("Z={z}"),
            "-oo",
            &format!("X={x}"),
            "-oo",
            &format!("Y={y}"),
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ogrinfo of tile {z}/{x}/{y}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Fails unless MapLibre's style-spec validator (npm) accepts `style`
/// without a word.
pub fn validate_style(style: &Value) {
    let validator = std::env::var("CATALOG_STYLE_VALIDATOR").expect("CATALOG_STYLE_VALIDATOR (set by scripts/test.sh)");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec_pretty(style).unwrap()).unwrap();
    let output = Command::new(validator).arg(file.path()).output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && report.trim().is_empty(),
        "the style-spec validator refused the style:\n{report}\n{style:#}"
    );
}

/// The ids of a MapLibre style's layers, in drawing order.
pub fn layer_ids(style: &Value) -> Vec<&str> {
    style["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect()
}

/// A Redis server of the test's own on loopback (nothing saved), for the
/// shared stores several API processes use.
pub fn redis_server(port: u16) -> Child {
    Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server (installed by scripts/test.sh)")
}

pub async fn wait_for_redis(port: u16) {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server did not start");
}
