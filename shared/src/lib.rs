//! What the API and the workers share: configuration, the database, the
//! error type, credentials and sealed secrets, connectors' credentials and stores, the object store, outbound
//! HTTP, notifications, and the contracts between the API and the workers:
//! job records and inputs ([`jobs`]), what workers record about datasets
//! ([`datasets`]), which files are accepted ([`uploads`]) and how extents
//! are counted ([`extent`]). Names kept in text columns are enums
//! ([`datasets`], [`maps`], [`connectors`]) that a test holds to the
//! columns' CHECK constraints.
// Only the jobs and raster crates, which call GDAL's C API, have unsafe code.
#![forbid(unsafe_code)]
pub mod auth;
pub mod config;
pub mod connectors;
pub mod datasets;
pub mod db;
pub mod error;
pub mod extent;
pub mod generalize;
pub mod history;
pub mod ingest_report;
pub mod jobs;
pub mod maps;
pub mod notify;
pub mod outbound;
pub mod paint;
pub mod quotas;
pub mod secrets;
pub mod storage;
pub mod telemetry;
mod text_enum;
pub mod tile_sql;
pub mod uploads;
pub mod wgs84;

pub use error::{AppError, DatabaseUnavailable, Problem, ServerErrorCause};

/// The product's release (semver, the workspace's version); the HTTP
/// interface's own version is the OpenAPI document's `info.version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Whether the command line asks for the version (`--version`, `-V` or
/// `version` as the first argument), as operators and packagers expect.
pub fn asks_for_version(first_argument: Option<&str>) -> bool {
    matches!(first_argument, Some("--version" | "-V" | "version"))
}
