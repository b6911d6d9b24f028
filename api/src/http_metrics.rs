//! The HTTP figures each API process keeps between scrapes: requests and
//! latency, by route template.
use std::time::Duration;

use axum::http::{Method, StatusCode};
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

/// The figures this process keeps between scrapes.
#[derive(Clone)]
pub struct HttpMetrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "catalog_http_requests_total",
                "HTTP requests answered, by route template, method and status.",
            ),
            &["route", "method", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "catalog_http_request_duration_seconds",
                "Time to answer an HTTP request, by route template and method.",
            ),
            &["route", "method"],
        )
        .expect("valid metric");
        for metric in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
        ] {
            registry.register(metric).expect("each metric is registered once");
        }
        // A family exists from start-up: a fresh process's first scrape is
        // gathered before it is counted, and its series is the one every
        // deployment has.
        requests.with_label_values(&["/api/metrics", "GET", "200"]);
        latency.with_label_values(&["/api/metrics", "GET"]);
        Self {
            registry,
            requests,
            latency,
        }
    }
}

impl HttpMetrics {
    /// Counts one answered request. Labels carry the route template
    /// (`/api/datasets/{dataset_id}`), never the path, so ids never become
    /// label values; a path that matched no route is `unmatched`; a method
    /// outside HTTP's own is `other` (`method_label`).
    pub fn observe(&self, route: &str, method: &Method, status: StatusCode, elapsed: Duration) {
        let method = method_label(method);
        self.requests.with_label_values(&[route, method, status.as_str()]).inc();
        self.latency
            .with_label_values(&[route, method])
            .observe(elapsed.as_secs_f64());
    }

    pub fn gather(&self) -> Vec<prometheus::proto::MetricFamily> {
        self.registry.gather()
    }
}

/// The methods HTTP defines, each its own label value.
const KNOWN_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
];

/// The method as a label value: any client may send a method it made up,
/// and each would otherwise become a series kept for the life of the
/// process, so all of them count as one, `other`.
fn method_label(method: &Method) -> &'static str {
    KNOWN_METHODS
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
}
