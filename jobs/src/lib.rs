//! Job handlers, run only by worker processes.
mod cleanup;
mod cold;
mod columns;
mod context;
mod download;
mod harvest;
mod ingest;
mod load;
mod plan;
mod pull;
mod quota;
mod raster;
mod reader;
mod restore;
mod reupload;
mod runner;
mod source_text;
mod sources;
mod styles;

pub use cleanup::{Retention, Swept, sweep};
pub use context::JobDeps;
pub use runner::{JobRun, run_job};
