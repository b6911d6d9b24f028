//! Job handlers, run only by worker processes.
mod columns;
mod context;
mod download;
mod extent;
mod harvest;
mod ingest;
mod load;
mod reader;
mod reupload;
mod runner;
mod source_text;
mod sources;

pub use context::JobDeps;
pub use extent::ExtentTracker;
pub use runner::{cleanup_abandoned_staging, run_job};
pub use sources::{ACCEPTED as ACCEPTED_UPLOADS, is_accepted_upload};
