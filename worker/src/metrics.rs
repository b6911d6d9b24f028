//! The worker's own figures in the Prometheus text format, served at
//! `/metrics` on `WORKER_METRICS_ADDR` when it is set: jobs run by kind and
//! outcome, their run times, jobs running now, whether the worker is
//! draining, and the process's CPU, memory and file descriptors. The
//! address is the operator's to keep private: it takes no credential.
use std::net::SocketAddr;

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};
use catalog_jobs::JobRun;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
    process_collector::ProcessCollector,
};

#[derive(Clone)]
pub struct WorkerMetrics {
    registry: Registry,
    runs: IntCounterVec,
    durations: HistogramVec,
    running: IntGauge,
    draining: IntGauge,
}

impl Default for WorkerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerMetrics {
    pub fn new() -> Self {
        let runs = IntCounterVec::new(
            Opts::new(
                "catalog_worker_jobs_total",
                "Job runs of this worker, by kind and the status they ended in (queued: to run again later).",
            ),
            &["kind", "status"],
        )
        .expect("valid metric");
        let durations = HistogramVec::new(
            HistogramOpts::new(
                "catalog_worker_job_duration_seconds",
                "Run time of this worker's jobs, by kind.",
            )
            .buckets(vec![
                1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 10800.0,
            ]),
            &["kind"],
        )
        .expect("valid metric");
        let running =
            IntGauge::new("catalog_worker_jobs_running", "Jobs this worker is running now.").expect("valid metric");
        let draining = IntGauge::new(
            "catalog_worker_draining",
            "1 while the worker drains after SIGTERM: it takes no new job.",
        )
        .expect("valid metric");
        let registry = Registry::new();
        registry.register(Box::new(runs.clone())).expect("registered once");
        registry.register(Box::new(durations.clone())).expect("registered once");
        registry.register(Box::new(running.clone())).expect("registered once");
        registry.register(Box::new(draining.clone())).expect("registered once");
        registry
            .register(Box::new(ProcessCollector::for_self()))
            .expect("registered once");
        Self {
            registry,
            runs,
            durations,
            running,
            draining,
        }
    }

    pub fn job_started(&self) {
        self.running.inc();
    }

    /// A job handed back: `run` is what it came to, None when it was
    /// already finished or could not be run.
    pub fn job_ended(&self, run: Option<JobRun>, seconds: f64) {
        self.running.dec();
        if let Some(run) = run {
            self.runs
                .with_label_values(&[run.kind.as_str(), run.status.as_str()])
                .inc();
            self.durations.with_label_values(&[run.kind.as_str()]).observe(seconds);
        }
    }

    pub fn draining(&self) {
        self.draining.set(1);
    }
}

pub async fn serve(addr: SocketAddr, metrics: WorkerMetrics) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "worker metrics listening");
    let app = Router::new().route("/metrics", get(scrape)).with_state(metrics);
    axum::serve(listener, app).await?;
    Ok(())
}

async fn scrape(State(metrics): State<WorkerMetrics>) -> impl IntoResponse {
    let mut body = Vec::new();
    TextEncoder::new()
        .encode(&metrics.registry.gather(), &mut body)
        .expect("metrics encode");
    ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], body)
}
