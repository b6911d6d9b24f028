use std::{env, net::SocketAddr, time::Duration};

use anyhow::{Context, bail};

/// Settings read from the environment (names as in `decisions.md`), with
/// defaults that suit the project-local stack started by `scripts/run.sh`.
#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    /// The SQL sandbox's own login; derived from `database_url` when unset.
    pub sandbox_database_url: Option<String>,
    pub redis_url: Option<String>,
    pub jwt_secret: String,
    pub storage_url: String,
    pub cors_allowed_origins: Vec<String>,
    pub url_import_fetch_max: Duration,
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
    pub rate_limits: RateLimits,
    /// How long a connector's provider may take to answer the resource check.
    pub connector_timeout: Duration,
}

/// Requests per client address and minute.
#[derive(Clone, Debug)]
pub struct RateLimits {
    pub per_minute: u64,
    pub tiles_per_minute: u64,
    /// Sign-in, registration and refresh: the routes that guess credentials.
    pub sign_in_per_minute: u64,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://catalog@127.0.0.1:54329/catalog";
pub const MIN_JWT_SECRET_CHARS: usize = 32;

fn var(name: &str) -> Option<String> {
    env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parsed<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match var(name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{name}={raw:?} is not valid: {e}")),
    }
}

/// A limit: rate limiting cannot be switched off, only raised.
fn positive(name: &str, default: u64) -> anyhow::Result<u64> {
    let value = parsed(name, default)?;
    if value == 0 {
        bail!("{name} must be at least 1 (rate limits cannot be switched off; raise them instead)");
    }
    Ok(value)
}

fn list(name: &str) -> Vec<String> {
    var(name)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        let jwt_secret =
            var("JWT_SECRET").context("JWT_SECRET is not set: set it to a random string of at least 32 characters")?;
        if jwt_secret.chars().count() < MIN_JWT_SECRET_CHARS {
            bail!(
                "JWT_SECRET has {} characters; at least {MIN_JWT_SECRET_CHARS} are required",
                jwt_secret.chars().count()
            );
        }
        let cors_allowed_origins = list("CORS_ALLOWED_ORIGINS");
        if cors_allowed_origins.iter().any(|o| o == "*") {
            bail!(
                "CORS_ALLOWED_ORIGINS must list exact origins; a literal * is not allowed (anonymous standards routes already answer with a wildcard)"
            );
        }
        let storage_url = match var("STORAGE_URL") {
            Some(url) => url,
            None => {
                let dir = env::current_dir()?.join(".data/storage");
                format!("file://{}", dir.display())
            }
        };
        let max_page: i64 = parsed("OGC_ITEMS_MAX_PAGE_SIZE", 1000)?;
        if max_page < 1 {
            bail!("OGC_ITEMS_MAX_PAGE_SIZE must be at least 1");
        }
        let bind_addr = parsed("BIND_ADDR", SocketAddr::from(([127, 0, 0, 1], 8080)))?;
        Ok(Self {
            database_url: var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.into()),
            sandbox_database_url: var("SANDBOX_DATABASE_URL"),
            redis_url: var("REDIS_URL"),
            jwt_secret,
            storage_url,
            cors_allowed_origins,
            url_import_fetch_max: Duration::from_secs(parsed("URL_IMPORT_FETCH_MAX_SECONDS", 1800)?),
            ogc_items_max_page_size: max_page,
            banner_enabled: parsed("BANNER_ENABLED", false)?,
            banner_text: var("BANNER_TEXT"),
            banner_color: var("BANNER_COLOR"),
            bind_addr,
            public_url: var("PUBLIC_URL")
                .unwrap_or_else(|| format!("http://{bind_addr}"))
                .trim_end_matches('/')
                .to_string(),
            bootstrap_admin_username: var("BOOTSTRAP_ADMIN_USERNAME"),
            bootstrap_admin_password: var("BOOTSTRAP_ADMIN_PASSWORD"),
            outbound_allowed_hosts: list("OUTBOUND_ALLOWED_HOSTS"),
            max_upload_bytes: parsed("MAX_UPLOAD_BYTES", 2u64 * 1024 * 1024 * 1024)?,
            access_token_ttl: Duration::from_secs(parsed("ACCESS_TOKEN_TTL_SECONDS", 900)?),
            connector_timeout: Duration::from_secs(parsed("CONNECTOR_TIMEOUT_SECONDS", 15)?),
            rate_limits: RateLimits {
                per_minute: positive("RATE_LIMIT_PER_MINUTE", 3000)?,
                tiles_per_minute: positive("RATE_LIMIT_TILES_PER_MINUTE", 12000)?,
                sign_in_per_minute: positive("RATE_LIMIT_SIGN_IN_PER_MINUTE", 60)?,
                trusted_proxies: list("TRUSTED_PROXIES")
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
