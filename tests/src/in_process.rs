//! The API in the test's own process: its router called directly with
//! `tower::ServiceExt::oneshot`, on a real database, with no binary to build
//! or go stale and no socket in between; with a worker (`start_with_worker`)
//! running jobs in the same process, on a runtime of its own.
use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use axum::{Router, extract::connect_info::MockConnectInfo};
use catalog_jobs::JobDeps;
use catalog_shared::{config::Config, db, outbound::OutboundPolicy, storage::Storage};
use sqlx::PgPool;
use tower::ServiceExt;
use tower_http::normalize_path::NormalizePath;

use crate::{Api, TestDatabase, service_env};

/// Requests are never sent over the network, so this host is never
/// contacted; it is where the API's links point.
const PUBLIC_URL: &str = "http://catalog.test";

pub struct App {
    pub pool: PgPool,
    pub http: reqwest::Client,
    service: NormalizePath<Router>,
    // Stopped before the database and the store it uses go.
    _worker: Option<Worker>,
    storage: tempfile::TempDir,
    _database: TestDatabase,
}

impl App {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// An API whose settings are the tests' defaults with `overrides`.
    pub async fn start_with(overrides: &[(&str, &str)]) -> Self {
        Self::start_on(overrides, false).await
    }

    /// The API and one worker, both in this process, with the tests'
    /// default settings: for tests that need jobs run but no process to
    /// kill, drain or cut off (those take `Stack`).
    pub async fn start_with_worker() -> Self {
        Self::start_on(&[], true).await
    }

    /// The API and one worker in this process, both with `overrides`.
    pub async fn start_with_worker_and(overrides: &[(&str, &str)]) -> Self {
        Self::start_on(overrides, true).await
    }

    /// The object store's folder (`file://`), which both read and write.
    pub fn storage_dir(&self) -> &Path {
        self.storage.path()
    }

    async fn start_on(overrides: &[(&str, &str)], with_worker: bool) -> Self {
        let database = TestDatabase::create().await;
        let storage = tempfile::tempdir().unwrap();
        let mut env = service_env(&database.url, storage.path(), PUBLIC_URL);
        env.extend(overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let lookup = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let config = Config::from_settings(&lookup).expect("test settings are valid");
        let worker = with_worker.then(|| Worker::start(config.clone()));
        let state = catalog_api::start(config).await.expect("the API starts");
        let client_address = SocketAddr::from(([127, 0, 0, 1], 40000));
        let service = catalog_api::app::service(catalog_api::app::router(state).layer(MockConnectInfo(client_address)));
        Self {
            pool: PgPool::connect(&database.url).await.unwrap(),
            // Should a request be sent past `send`, it goes nowhere but loopback.
            http: crate::http_client()
                .resolve("catalog.test", SocketAddr::from(([127, 0, 0, 1], 9)))
                .build()
                .unwrap(),
            service,
            _worker: worker,
            storage,
            _database: database,
        }
    }
}

/// One worker (`catalog_worker::run`, as the binary runs it) on a thread
/// and multi-thread runtime of its own, so that it runs jobs while the
/// test's single-thread runtime waits on them; stopped when dropped. The
/// binary's heartbeat thread (which also wakes retries that are due) and
/// its cleanup sweep are not here: tests of those take `Stack`.
struct Worker {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long a dropped worker waits for a job still running.
const WORKER_STOP: Duration = Duration::from_secs(5);

impl Worker {
    fn start(config: Config) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let thread = std::thread::Builder::new()
            .name("in-process worker".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let concurrency = 2;
                    let pool = db::connect(&config.database_url, concurrency as u32 * 2 + 4)
                        .await
                        .expect("the worker's pool");
                    let deps = JobDeps {
                        pool,
                        storage: Storage::open(&config.storage_url).expect("the object store opens"),
                        outbound: OutboundPolicy::new(&config.outbound_allowed_hosts),
                        config: Arc::new(config),
                    };
                    let (quit, quitting) = tokio::sync::oneshot::channel::<()>();
                    let name = format!("worker-test-{}", uuid::Uuid::new_v4().simple());
                    let run = catalog_worker::run(
                        &name,
                        deps,
                        catalog_worker::metrics::WorkerMetrics::new(),
                        concurrency,
                        async move {
                            let _ = quitting.await;
                        },
                    );
                    let mut run = std::pin::pin!(run);
                    tokio::select! {
                        result = &mut run => result.expect("the worker keeps its queue"),
                        _ = stopped => {
                            let _ = quit.send(());
                            let _ = tokio::time::timeout(WORKER_STOP, run).await;
                        }
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .unwrap();
        Self {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
            && !std::thread::panicking()
        {
            panic!("the in-process worker panicked");
        }
    }
}

impl Api for App {
    fn http(&self) -> &reqwest::Client {
        &self.http
    }
    fn base(&self) -> &str {
        PUBLIC_URL
    }
    fn pool(&self) -> &PgPool {
        &self.pool
    }
    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        let request: axum::http::Request<reqwest::Body> = request.build().unwrap().try_into().unwrap();
        let response = self
            .service
            .clone()
            .oneshot(request.map(axum::body::Body::new))
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        axum::http::Response::from_parts(parts, body).into()
    }
}
