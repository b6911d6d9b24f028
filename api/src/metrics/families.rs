//! Metric families built from figures counted elsewhere (the database,
//! the connection pool), in the form the text encoder writes.
use prometheus::proto;

pub type Labels = Vec<(&'static str, String)>;

fn labelled(labels: Labels) -> proto::Metric {
    let mut metric = proto::Metric::default();
    metric.set_label(
        labels
            .into_iter()
            .map(|(name, value)| {
                let mut pair = proto::LabelPair::default();
                pair.set_name(name.into());
                pair.set_value(value);
                pair
            })
            .collect(),
    );
    metric
}

pub fn gauge_family(name: &str, help: &str, samples: Vec<(Labels, f64)>) -> proto::MetricFamily {
    let mut family = proto::MetricFamily::default();
    family.set_name(name.into());
    family.set_help(help.into());
    family.set_field_type(proto::MetricType::GAUGE);
    family.set_metric(
        samples
            .into_iter()
            .map(|(labels, value)| {
                let mut metric = labelled(labels);
                let mut gauge = proto::Gauge::default();
                gauge.set_value(value);
                metric.set_gauge(gauge);
                metric
            })
            .collect(),
    );
    family
}

pub fn counter_family(name: &str, help: &str, samples: Vec<(Labels, u64)>) -> proto::MetricFamily {
    let mut family = proto::MetricFamily::default();
    family.set_name(name.into());
    family.set_help(help.into());
    family.set_field_type(proto::MetricType::COUNTER);
    family.set_metric(
        samples
            .into_iter()
            .map(|(labels, value)| {
                let mut metric = labelled(labels);
                let mut counter = proto::Counter::default();
                counter.set_value(value as f64);
                metric.set_counter(counter);
                metric
            })
            .collect(),
    );
    family
}

/// A histogram from counts already bucketed: `(upper bound, count at or
/// under it)` in rising order, with the sum and count of every sample.
pub struct Bucketed {
    pub labels: Labels,
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

pub fn histogram_family(name: &str, help: &str, series: Vec<Bucketed>) -> proto::MetricFamily {
    let mut family = proto::MetricFamily::default();
    family.set_name(name.into());
    family.set_help(help.into());
    family.set_field_type(proto::MetricType::HISTOGRAM);
    family.set_metric(
        series
            .into_iter()
            .map(|series| {
                let mut metric = labelled(series.labels);
                let mut histogram = proto::Histogram::default();
                histogram.set_sample_sum(series.sum);
                histogram.set_sample_count(series.count);
                histogram.set_bucket(
                    series
                        .buckets
                        .into_iter()
                        .map(|(upper, count)| {
                            let mut bucket = proto::Bucket::default();
                            bucket.set_upper_bound(upper);
                            bucket.set_cumulative_count(count);
                            bucket
                        })
                        .collect(),
                );
                metric.set_histogram(histogram);
                metric
            })
            .collect(),
    );
    family
}
