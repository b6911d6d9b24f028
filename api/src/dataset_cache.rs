//! Dataset records kept for a minute for the hot read routes (OGC items).
//! The specification allows it: metadata changes take effect within about
//! a minute. Writes through this process forget the entry at once.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use uuid::Uuid;

use crate::datasets::Dataset;

const TTL: Duration = Duration::from_secs(60);
const MAX_ENTRIES: usize = 10_000;

/// When each record was fetched, by dataset id.
type Entries = HashMap<Uuid, (Instant, Arc<Dataset>)>;

#[derive(Clone, Default)]
pub struct DatasetCache {
    entries: Arc<Mutex<Entries>>,
}

impl DatasetCache {
    pub fn get(&self, id: Uuid) -> Option<Arc<Dataset>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&id)
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, d)| d.clone())
    }

    pub fn put(&self, dataset: Dataset) -> Arc<Dataset> {
        let dataset = Arc::new(dataset);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (at, _)| at.elapsed() < TTL);
        }
        entries.insert(dataset.id, (Instant::now(), dataset.clone()));
        dataset
    }

    pub fn forget(&self, id: Uuid) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }
}
