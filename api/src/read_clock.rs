//! When this process last recorded a read of each dataset's data, so reads
//! are written to the database at most once an hour per dataset and
//! process: enough for archiving after idle days, light on hot routes.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use uuid::Uuid;

const EVERY: Duration = Duration::from_secs(3600);
const MAX_ENTRIES: usize = 100_000;

#[derive(Clone, Default)]
pub struct ReadClock {
    recorded: Arc<Mutex<HashMap<Uuid, Instant>>>,
}

impl ReadClock {
    /// Whether a read of the dataset should be recorded now; if so, it
    /// counts as recorded.
    pub fn due(&self, dataset: Uuid) -> bool {
        let mut recorded = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if recorded.get(&dataset).is_some_and(|at| now.duration_since(*at) < EVERY) {
            return false;
        }
        if recorded.len() >= MAX_ENTRIES {
            recorded.retain(|_, at| now.duration_since(*at) < EVERY);
        }
        recorded.insert(dataset, now);
        true
    }
}
