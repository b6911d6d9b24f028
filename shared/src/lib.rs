//! What the API and the workers share: configuration, the database, the
//! error type, credentials, the object store, outbound HTTP and job records.
pub mod auth;
pub mod config;
pub mod db;
pub mod error;
pub mod jobs;
pub mod outbound;
pub mod storage;
pub mod telemetry;

pub use error::{AppError, Problem};
