//! What a job that loads rows says it did to each of them
//! (`docs/decisions.md`, Ingest report and quarantine): workers write the
//! report, the API serves it (`GET /api/jobs/{id}/report`). Every row read
//! is loaded or quarantined, never dropped without a reason.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::text_enum::text_enum;

text_enum! {
    /// Why a row was quarantined, repaired or flagged
    /// (`docs/ingest-report.md` says each in a sentence).
    #[derive(PartialOrd, Ord, utoipa::ToSchema)]
    pub enum Reason {
        /// The geometry is not valid and `ST_MakeValid` could not make a
        /// valid one of its kind; quarantined.
        InvalidGeometry = "invalid_geometry",
        /// `ST_MakeValid` changed the geometry (or a ring was closed);
        /// loaded as repaired.
        RepairedGeometry = "repaired_geometry",
        /// A coordinate is NaN or infinite; quarantined.
        NonFiniteCoordinate = "non_finite_coordinate",
        /// A coordinate lies outside WGS 84 or the source CRS's area of
        /// use, or cannot be reprojected; quarantined.
        CoordinateOutOfRange = "coordinate_out_of_range",
        /// The geometry has no position (`POINT EMPTY`); quarantined.
        EmptyGeometry = "empty_geometry",
        /// The geometry is of another family than the layer's; quarantined.
        WrongGeometryFamily = "wrong_geometry_family",
        /// A value does not fit its column's type (a date that is no
        /// calendar date); quarantined.
        ValueDoesNotFit = "value_does_not_fit",
        /// Bytes not valid in the chosen encoding, read as Latin-1; loaded.
        Encoding = "encoding",
        /// The row's key repeats an earlier row's; quarantined.
        DuplicateKey = "duplicate_key",
    }
}

impl Reason {
    /// Whether a row with this reason is kept aside rather than loaded.
    pub fn quarantines(self) -> bool {
        !matches!(self, Reason::RepairedGeometry | Reason::Encoding)
    }
}

text_enum! {
    /// What the service assumed about a source where it did not say.
    #[derive(PartialOrd, Ord, utoipa::ToSchema)]
    pub enum AssumptionCode {
        CrsAssumedWgs84 = "crs_assumed_wgs84",
        EncodingGuessed = "encoding_guessed",
        GeometryPromoted = "geometry_promoted",
        ColumnsRenamed = "columns_renamed",
        CsvTypesInferred = "csv_types_inferred",
        LayersChosen = "layers_chosen",
        NonSpatialTableSkipped = "non_spatial_table_skipped",
    }
}

/// The schema quarantined rows are kept in, a table per era.
pub const QUARANTINE_SCHEMA: &str = "quarantine";

/// How many rows of each reason a report shows.
pub const EXAMPLES_PER_REASON: usize = 100;

/// One row a reason applies to, as the person who sent the file can find it.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Example {
    pub reason: Reason,
    pub layer: String,
    /// The row's place in the layer, from 1 (a feature's order in the file).
    pub row: Option<u64>,
    /// The source's own feature id, where it has one.
    pub fid: Option<i64>,
    /// The column the reason is about, as the source names it.
    pub field: Option<String>,
    /// The offending value or coordinate, as text.
    pub value: Option<String>,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Assumption {
    pub code: AssumptionCode,
    /// The layer it was made for; null for the whole file.
    pub layer: Option<String>,
    /// What was assumed and what to do when it is wrong.
    pub message: String,
}

/// A layer or table of the source that was not loaded, and why.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Skipped {
    pub layer: String,
    pub why: String,
}

/// The report of one job (`GET /api/jobs/{id}/report`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IngestReport {
    pub rows_read: u64,
    /// Rows in the published data: read and not quarantined (repaired
    /// ones included).
    pub rows_loaded: u64,
    pub rows_repaired: u64,
    pub rows_quarantined: u64,
    /// Rows by reason; a row counts once, under its first reason.
    #[schema(value_type = BTreeMap<String, u64>)]
    pub by_reason: BTreeMap<Reason, u64>,
    /// The first rows of each reason (at most `EXAMPLES_PER_REASON`).
    pub examples: Vec<Example>,
    pub assumptions: Vec<Assumption>,
    pub skipped: Vec<Skipped>,
}

impl IngestReport {
    /// Counts a row under `reason`, and shows it unless the reason has
    /// shown enough.
    pub fn count(&mut self, example: Example) {
        if self.count_only(example.reason) as usize <= EXAMPLES_PER_REASON {
            self.examples.push(example);
        }
    }

    /// Counts a row under `reason` without showing it; answers how many
    /// rows the reason has now.
    pub fn count_only(&mut self, reason: Reason) -> u64 {
        let seen = self.by_reason.entry(reason).or_insert(0);
        *seen += 1;
        match reason {
            Reason::RepairedGeometry => self.rows_repaired += 1,
            reason if reason.quarantines() => self.rows_quarantined += 1,
            _ => {}
        }
        *seen
    }

    /// Takes back `n` rows counted as repaired that turned out quarantined
    /// after all, with the examples shown of `rows`.
    pub fn uncount_repaired(&mut self, n: u64, rows: impl Iterator<Item = u64>) {
        if n == 0 {
            return;
        }
        let rows: Vec<u64> = rows.collect();
        self.rows_repaired -= n.min(self.rows_repaired);
        if let Some(seen) = self.by_reason.get_mut(&Reason::RepairedGeometry) {
            *seen -= n.min(*seen);
            if *seen == 0 {
                self.by_reason.remove(&Reason::RepairedGeometry);
            }
        }
        self.examples
            .retain(|e| !(e.reason == Reason::RepairedGeometry && e.row.is_some_and(|r| rows.contains(&r))));
    }

    pub fn assume(&mut self, code: AssumptionCode, layer: Option<&str>, message: String) {
        self.assumptions.push(Assumption {
            code,
            layer: layer.map(str::to_string),
            message,
        });
    }

    pub fn skip(&mut self, layer: &str, why: impl Into<String>) {
        self.skipped.push(Skipped {
            layer: layer.to_string(),
            why: why.into(),
        });
    }

    /// Adds another layer's report to this one.
    pub fn merge(&mut self, other: IngestReport) {
        self.rows_read += other.rows_read;
        self.rows_loaded += other.rows_loaded;
        self.rows_repaired += other.rows_repaired;
        self.rows_quarantined += other.rows_quarantined;
        for (reason, n) in other.by_reason {
            *self.by_reason.entry(reason).or_insert(0) += n;
        }
        for example in other.examples {
            let shown = self.examples.iter().filter(|e| e.reason == example.reason).count();
            if shown < EXAMPLES_PER_REASON {
                self.examples.push(example);
            }
        }
        self.assumptions.extend(other.assumptions);
        self.skipped.extend(other.skipped);
    }

    /// The share of the rows read that were quarantined, in percent.
    pub fn quarantined_percent(&self) -> f64 {
        if self.rows_read == 0 {
            0.0
        } else {
            self.rows_quarantined as f64 * 100.0 / self.rows_read as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(reason: Reason, row: u64) -> Example {
        Example {
            reason,
            layer: "l".into(),
            row: Some(row),
            fid: None,
            field: None,
            value: None,
            message: String::new(),
        }
    }

    #[test]
    fn rows_count_once_and_examples_stop_at_the_cap() {
        let mut report = IngestReport::default();
        for row in 1..=150 {
            report.count(example(Reason::CoordinateOutOfRange, row));
        }
        report.count(example(Reason::RepairedGeometry, 151));
        report.count(example(Reason::Encoding, 152));
        assert_eq!(report.rows_quarantined, 150);
        assert_eq!(report.rows_repaired, 1);
        assert_eq!(report.by_reason[&Reason::CoordinateOutOfRange], 150);
        assert_eq!(report.examples.len(), EXAMPLES_PER_REASON + 2);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["by_reason"]["encoding"], 1);
    }
}
