//! The API in the test's own process: its router called directly with
//! `tower::ServiceExt::oneshot`, on a real database, with no binary to build
//! or go stale and no socket in between.
use std::net::SocketAddr;

use axum::{Router, extract::connect_info::MockConnectInfo};
use catalog_shared::config::Config;
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
    _storage: tempfile::TempDir,
    _database: TestDatabase,
}

impl App {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// An API whose settings are the tests' defaults with `overrides`.
    pub async fn start_with(overrides: &[(&str, &str)]) -> Self {
        let database = TestDatabase::create().await;
        let storage = tempfile::tempdir().unwrap();
        let mut env = service_env(&database.url, storage.path(), PUBLIC_URL);
        env.extend(overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let lookup = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let config = Config::from_settings(&lookup).expect("test settings are valid");
        let state = catalog_api::start(config).await.expect("the API starts");
        let client_address = SocketAddr::from(([127, 0, 0, 1], 40000));
        let service = catalog_api::app::service(catalog_api::app::router(state).layer(MockConnectInfo(client_address)));
        Self {
            pool: PgPool::connect(&database.url).await.unwrap(),
            // Should a request be sent past `send`, it goes nowhere but loopback.
            http: reqwest::Client::builder()
                .resolve("catalog.test", SocketAddr::from(([127, 0, 0, 1], 9)))
                .build()
                .unwrap(),
            service,
            _storage: storage,
            _database: database,
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
