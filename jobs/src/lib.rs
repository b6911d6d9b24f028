//! Job handlers, run only by worker processes.
mod columns;
mod download;
mod extent;
mod harvest;
mod ingest;
mod load;
mod reader;
mod reupload;
pub mod runner;
mod source_text;
mod sources;

pub use extent::ExtentTracker;
pub use runner::{JobContext, JobError, cleanup_abandoned_staging, run_job};
pub use sources::{ACCEPTED as ACCEPTED_UPLOADS, is_accepted_upload};
