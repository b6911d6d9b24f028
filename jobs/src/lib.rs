//! Job handlers, run only by worker processes.
mod columns;
mod context;
mod download;
mod harvest;
mod ingest;
mod load;
mod plan;
mod reader;
mod reupload;
mod runner;
mod source_text;
mod sources;

pub use context::JobDeps;
pub use runner::{JobRun, cleanup_abandoned_staging, run_job};
