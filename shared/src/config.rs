use std::{env, net::SocketAddr, time::Duration};

use anyhow::{Context, bail};

/// Settings read from the environment (names as in `decisions.md`), with
/// defaults that suit the project-local stack started by `scripts/run.sh`.
#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    /// The primary itself, never through a pooler: migrations and LISTEN
    /// (`DATABASE_DIRECT_URL`; `database_url` when unset).
    pub database_direct_url: String,
    /// Streaming replicas the read routes use (`DATABASE_READ_URLS`).
    pub database_read_urls: Vec<String>,
    /// A replica further behind than this is skipped (`READ_MAX_LAG_SECONDS`).
    pub read_max_lag: Duration,
    /// Whether statements may stay prepared on a connection between
    /// transactions: false behind a transaction-mode pooler that cannot
    /// keep them (PgBouncer before 1.21), `DATABASE_PREPARED_STATEMENTS`.
    pub database_prepared_statements: bool,
    /// The SQL sandbox's own login; derived from `database_url` when unset.
    pub sandbox_database_url: Option<String>,
    pub redis_url: Option<String>,
    pub jwt_secret: String,
    pub storage_url: String,
    pub cors_allowed_origins: Vec<String>,
    pub url_import_fetch_max: Duration,
    /// The share of a layer's rows (percent) an ingest may quarantine and
    /// still publish (`INGEST_MAX_QUARANTINE_PERCENT`).
    pub ingest_max_quarantine_percent: f64,
    pub ogc_items_max_page_size: i64,
    pub banner_enabled: bool,
    pub banner_text: Option<String>,
    pub banner_color: Option<String>,
    pub bind_addr: SocketAddr,
    pub public_url: String,
    pub bootstrap_admin_username: Option<String>,
    pub bootstrap_admin_password: Option<String>,
    pub outbound_allowed_hosts: Vec<String>,
    pub max_upload_bytes: u64,
    pub access_token_ttl: Duration,
    /// How long a signed asset link (a private COG's or export's URL in
    /// STAC and TileJSON) opens its download.
    pub signed_asset_ttl: Duration,
    pub rate_limits: RateLimits,
    /// How long a connector's provider may take to answer the resource check.
    pub connector_timeout: Duration,
    /// The bearer token a Prometheus server scrapes `/api/metrics` with.
    pub metrics_token: Option<String>,
    /// Datasets whose data nobody read for this long are archived.
    pub archive_after_idle: Option<Duration>,
    pub job_retries: JobRetries,
    /// Bytes of encoded tiles each API process keeps; 0 turns the cache off.
    pub tile_cache_bytes: u64,
    /// Where the fonts for map labels are (TrueType or OpenType files).
    pub fonts_dir: std::path::PathBuf,
    /// EPSG codes every collection offers beside CRS84, EPSG:4326,
    /// EPSG:3857 and its own source CRS (`EXTRA_CRS`).
    pub extra_crs: Vec<u32>,
}

/// How a job whose provider failed for a while is run again.
#[derive(Clone, Copy, Debug)]
pub struct JobRetries {
    /// Runs of one job at most, the first included.
    pub max_attempts: u32,
    /// The wait before the second run; it doubles before each one after.
    pub first_backoff: Duration,
}

/// Requests per client address and minute.
#[derive(Clone, Debug)]
pub struct RateLimits {
    pub per_minute: u64,
    pub tiles_per_minute: u64,
    /// Items pages that follow a `next` link: a bulk copy's budget.
    pub pages_per_minute: u64,
    /// Sign-in, registration and refresh: the routes that guess credentials.
    pub sign_in_per_minute: u64,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://catalog@127.0.0.1:54329/catalog";
/// Debian's fonts-dejavu-core.
pub const DEFAULT_FONTS_DIR: &str = "/usr/share/fonts/truetype/dejavu";
pub const MIN_JWT_SECRET_CHARS: usize = 32;
pub const MIN_METRICS_TOKEN_CHARS: usize = 24;
/// A signed asset link lives at most a week: it cannot be revoked alone,
/// only with every link of its dataset (a change of publication).
pub const MAX_SIGNED_ASSET_TTL_SECONDS: u64 = 7 * 86_400;

/// Where settings are read from: the process environment, or the pairs a
/// test passes in.
struct Settings<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Settings<'_> {
    fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    fn parsed<T: std::str::FromStr>(&self, name: &str, default: T) -> anyhow::Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.var(name) {
            None => Ok(default),
            Some(raw) => raw
                .trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("{name}={raw:?} is not valid: {e}")),
        }
    }

    /// A share in percent, 0 to 100.
    fn percent(&self, name: &str, default: f64) -> anyhow::Result<f64> {
        let value: f64 = self.parsed(name, default)?;
        if !(0.0..=100.0).contains(&value) {
            bail!("{name} must be a percentage from 0 to 100");
        }
        Ok(value)
    }

    /// A count that must not be 0 (rate limits, for one, cannot be switched off, only raised).
    fn at_least_one(&self, name: &str, default: u64) -> anyhow::Result<u64> {
        let value = self.parsed(name, default)?;
        if value == 0 {
            bail!("{name} must be at least 1");
        }
        Ok(value)
    }

    fn list(&self, name: &str) -> Vec<String> {
        self.var(name)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// An EPSG code written as the number, `EPSG:<code>` or the OGC URI
/// `http://www.opengis.net/def/crs/EPSG/0/<code>`.
fn epsg_code(text: &str) -> Option<u32> {
    let code = text
        .strip_prefix("EPSG:")
        .or_else(|| text.strip_prefix("http://www.opengis.net/def/crs/EPSG/0/"))
        .unwrap_or(text);
    code.parse().ok().filter(|c| *c > 0)
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        Self::from_settings(&|name| env::var(name).ok())
    }

    /// The configuration the given settings describe, unset names taking
    /// their defaults as in `from_env`.
    pub fn from_settings(lookup: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let settings = Settings(lookup);
        let jwt_secret = settings
            .var("JWT_SECRET")
            .context("JWT_SECRET is not set: set it to a random string of at least 32 characters")?;
        if jwt_secret.chars().count() < MIN_JWT_SECRET_CHARS {
            bail!(
                "JWT_SECRET has {} characters; at least {MIN_JWT_SECRET_CHARS} are required",
                jwt_secret.chars().count()
            );
        }
        let cors_allowed_origins = settings.list("CORS_ALLOWED_ORIGINS");
        if cors_allowed_origins.iter().any(|o| o == "*") {
            bail!(
                "CORS_ALLOWED_ORIGINS must list exact origins; a literal * is not allowed (anonymous standards routes already answer with a wildcard)"
            );
        }
        let storage_url = match settings.var("STORAGE_URL") {
            Some(url) => url,
            None => {
                let dir = env::current_dir()?.join(".data/storage");
                format!("file://{}", dir.display())
            }
        };
        let max_page: i64 = settings.parsed("OGC_ITEMS_MAX_PAGE_SIZE", 1000)?;
        if max_page < 1 {
            bail!("OGC_ITEMS_MAX_PAGE_SIZE must be at least 1");
        }
        let bind_addr = settings.parsed("BIND_ADDR", SocketAddr::from(([127, 0, 0, 1], 8080)))?;
        let metrics_token = settings.var("METRICS_TOKEN");
        if metrics_token
            .as_ref()
            .is_some_and(|t| t.chars().count() < MIN_METRICS_TOKEN_CHARS)
        {
            bail!("METRICS_TOKEN must have at least {MIN_METRICS_TOKEN_CHARS} characters");
        }
        let signed_asset_ttl: u64 = settings.parsed("SIGNED_ASSET_TTL_SECONDS", 3600)?;
        if !(1..=MAX_SIGNED_ASSET_TTL_SECONDS).contains(&signed_asset_ttl) {
            bail!("SIGNED_ASSET_TTL_SECONDS must be 1 to {MAX_SIGNED_ASSET_TTL_SECONDS} (7 days)");
        }
        let extra_crs = settings
            .list("EXTRA_CRS")
            .iter()
            .map(|code| {
                epsg_code(code).with_context(|| {
                    format!("EXTRA_CRS: {code:?} is not an EPSG code (27700, EPSG:27700 or its OGC URI)")
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let database_url = settings
            .var("DATABASE_URL")
            .unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        let read_max_lag = settings.at_least_one("READ_MAX_LAG_SECONDS", 5)?;
        Ok(Self {
            extra_crs,
            database_direct_url: settings
                .var("DATABASE_DIRECT_URL")
                .unwrap_or_else(|| database_url.clone()),
            database_url,
            database_read_urls: settings.list("DATABASE_READ_URLS"),
            read_max_lag: Duration::from_secs(read_max_lag),
            database_prepared_statements: settings.parsed("DATABASE_PREPARED_STATEMENTS", true)?,
            sandbox_database_url: settings.var("SANDBOX_DATABASE_URL"),
            redis_url: settings.var("REDIS_URL"),
            jwt_secret,
            storage_url,
            cors_allowed_origins,
            url_import_fetch_max: Duration::from_secs(settings.parsed("URL_IMPORT_FETCH_MAX_SECONDS", 1800)?),
            ingest_max_quarantine_percent: settings.percent("INGEST_MAX_QUARANTINE_PERCENT", 50.0)?,
            ogc_items_max_page_size: max_page,
            banner_enabled: settings.parsed("BANNER_ENABLED", false)?,
            banner_text: settings.var("BANNER_TEXT"),
            banner_color: settings.var("BANNER_COLOR"),
            bind_addr,
            public_url: settings
                .var("PUBLIC_URL")
                .unwrap_or_else(|| format!("http://{bind_addr}"))
                .trim_end_matches('/')
                .to_string(),
            bootstrap_admin_username: settings.var("BOOTSTRAP_ADMIN_USERNAME"),
            bootstrap_admin_password: settings.var("BOOTSTRAP_ADMIN_PASSWORD"),
            outbound_allowed_hosts: settings.list("OUTBOUND_ALLOWED_HOSTS"),
            max_upload_bytes: settings.parsed("MAX_UPLOAD_BYTES", 2u64 * 1024 * 1024 * 1024)?,
            access_token_ttl: Duration::from_secs(settings.parsed("ACCESS_TOKEN_TTL_SECONDS", 900)?),
            signed_asset_ttl: Duration::from_secs(signed_asset_ttl),
            connector_timeout: Duration::from_secs(settings.parsed("CONNECTOR_TIMEOUT_SECONDS", 15)?),
            metrics_token,
            // 0 (the default) never archives.
            archive_after_idle: Some(settings.parsed::<u64>("ARCHIVE_AFTER_IDLE_DAYS", 0)?)
                .filter(|days| *days > 0)
                .map(|days| Duration::from_secs(days * 86_400)),
            job_retries: JobRetries {
                max_attempts: u32::try_from(settings.at_least_one("JOB_MAX_ATTEMPTS", 5)?)
                    .context("JOB_MAX_ATTEMPTS is too large")?,
                first_backoff: Duration::from_secs(settings.parsed("JOB_RETRY_BACKOFF_SECONDS", 30)?),
            },
            tile_cache_bytes: settings
                .parsed::<u64>("TILE_CACHE_MB", 256)?
                .saturating_mul(1024 * 1024),
            fonts_dir: settings
                .var("FONTS_DIR")
                .unwrap_or_else(|| DEFAULT_FONTS_DIR.into())
                .into(),
            rate_limits: RateLimits {
                per_minute: settings.at_least_one("RATE_LIMIT_PER_MINUTE", 3000)?,
                tiles_per_minute: settings.at_least_one("RATE_LIMIT_TILES_PER_MINUTE", 12000)?,
                pages_per_minute: settings.at_least_one("RATE_LIMIT_PAGES_PER_MINUTE", 60000)?,
                sign_in_per_minute: settings.at_least_one("RATE_LIMIT_SIGN_IN_PER_MINUTE", 60)?,
                trusted_proxies: settings
                    .list("TRUSTED_PROXIES")
                    .iter()
                    .map(|a| {
                        a.parse()
                            .map_err(|_| anyhow::anyhow!("TRUSTED_PROXIES: {a:?} is not an IP address"))
                    })
                    .collect::<anyhow::Result<_>>()?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: &'static str, value: &'static str) -> anyhow::Result<Config> {
        Config::from_settings(&|key| match key {
            "JWT_SECRET" => Some("x".repeat(MIN_JWT_SECRET_CHARS)),
            "STORAGE_URL" => Some("file:///tmp/unused".into()),
            _ if key == name => Some(value.into()),
            _ => None,
        })
    }

    #[test]
    fn extra_crs_are_epsg_codes_in_any_usual_spelling() {
        assert_eq!(with("UNSET", "").unwrap().extra_crs, Vec::<u32>::new());
        assert_eq!(
            with(
                "EXTRA_CRS",
                "27700, EPSG:2157,http://www.opengis.net/def/crs/EPSG/0/3035"
            )
            .unwrap()
            .extra_crs,
            vec![27700, 2157, 3035]
        );
        for refused in ["OSGB", "EPSG:", "0", "EPSG:27700x"] {
            assert!(with("EXTRA_CRS", refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn signed_asset_links_live_an_hour_unless_told_and_at_most_a_week() {
        assert_eq!(with("UNSET", "").unwrap().signed_asset_ttl, Duration::from_secs(3600));
        assert_eq!(
            with("SIGNED_ASSET_TTL_SECONDS", "604800").unwrap().signed_asset_ttl,
            Duration::from_secs(604_800)
        );
        for refused in ["0", "604801", "-5", "an hour"] {
            assert!(with("SIGNED_ASSET_TTL_SECONDS", refused).is_err(), "{refused}");
        }
    }
}
