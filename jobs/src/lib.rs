//! Job handlers, run only by worker processes.
mod cleanup;
mod cold;
mod columns;
mod context;
mod download;
mod gdal_messages;
mod harvest;
mod ingest;
mod load;
mod plan;
mod pull;
mod quarantine;
mod quota;
mod raster;
mod reader;
mod report;
mod restore;
mod reupload;
mod runner;
mod source_text;
mod sources;
mod styles;
mod tile_archive;

pub use cleanup::{Retention, Swept, sweep};
pub use context::JobDeps;
pub use runner::{JobRun, run_job};
