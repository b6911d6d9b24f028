//! The exact counts of filtered items (`numberMatched`), kept per dataset
//! data version: a client paging through a filter, or many clients asking
//! the same one, count its matches once, and any write to the data (which
//! rolls the version) makes a new key. A count that ran out of time is kept
//! as such, so the same filter does not spend that time again. Tables
//! registered from outside have no data version the service rolls: their
//! counts are kept a minute, as their tiles are.
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;
use uuid::Uuid;

use crate::dataset_record::Dataset;

/// Filters whose counts are kept, across all datasets.
const KEPT_COUNTS: usize = 10_000;
const REGISTERED_TABLE_COUNT_LIFETIME: Duration = Duration::from_secs(60);

/// A filter of one version of one dataset's data: the digest of its SQL
/// and bound values.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CountKey {
    dataset: Uuid,
    data_version: i64,
    filter: [u8; 16],
}

impl CountKey {
    pub fn new(dataset: &Dataset, filter: [u8; 16]) -> Self {
        Self {
            dataset: dataset.id,
            data_version: dataset.data_version,
            filter,
        }
    }
}

/// A count (`None`: counting took too long) and until when it holds.
#[derive(Clone)]
struct Kept {
    count: Option<i64>,
    until: Option<Instant>,
}

pub struct MatchCounts(Cache<CountKey, Kept>);

impl Default for MatchCounts {
    fn default() -> Self {
        Self(Cache::new(KEPT_COUNTS))
    }
}

impl MatchCounts {
    /// The kept count of `key`: `Some(None)` when counting took too long.
    pub fn get(&self, key: &CountKey) -> Option<Option<i64>> {
        let kept = self.0.get(key)?;
        match kept.until {
            Some(until) if until <= Instant::now() => None,
            _ => Some(kept.count),
        }
    }

    pub fn keep(&self, key: CountKey, dataset: &Dataset, count: Option<i64>) {
        let until = dataset
            .is_registered
            .then(|| Instant::now() + REGISTERED_TABLE_COUNT_LIFETIME);
        self.0.insert(key, Kept { count, until });
    }
}
