use tracing_subscriber::{EnvFilter, fmt};

/// Human-readable logs by default; `LOG_FORMAT=json` for log shippers.
pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,apalis=warn,apalis_postgres=warn"));
    let builder = fmt().with_env_filter(filter).with_target(false);
    if std::env::var("LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().init();
    } else {
        builder.init();
    }
}
