//! Rate limits: fixed one-minute windows per client address and bucket
//! (sign-in routes, tiles, items pages that follow a `next` link,
//! everything else), counted in Redis when
//! `REDIS_URL` is set so every API process shares them, otherwise in this
//! process. Losing the store never disables limiting: counting falls back
//! to this process until the store answers again. Over the limit a request
//! gets 429 with `Retry-After` (whole seconds to the next window).
use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::http::{Uri, request::Parts};
use catalog_shared::{AppError, config::RateLimits};
use redis::aio::ConnectionManager;

/// The Redis connection, once reached (none without `REDIS_URL`).
pub type SharedStore = Arc<RwLock<Option<ConnectionManager>>>;

const WINDOW_SECS: u64 = 60;
/// How long a store call may take before the request is counted locally.
const STORE_TIMEOUT: Duration = Duration::from_millis(250);
/// How long the store is left alone after it failed.
const STORE_REST: Duration = Duration::from_secs(2);
const MAX_LOCAL_CLIENTS: usize = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Bucket {
    SignIn,
    Tiles,
    /// Items pages a bulk client follows (`after_gid` or `cursor`, which
    /// only `next` links carry): each is a bounded keyset read, and a copy
    /// of a whole layer at GDAL's 10 a page takes thousands of them.
    Pages,
    General,
}

impl Bucket {
    const ALL: [Bucket; 4] = [Bucket::SignIn, Bucket::Tiles, Bucket::Pages, Bucket::General];

    fn of(uri: &Uri) -> Option<Self> {
        let path = uri.path();
        match path {
            // Probes and the metrics scraper are the operator's own.
            "/api/health" | "/api/ready" | "/api/metrics" => None,
            "/api/auth/login"
            | "/api/auth/register"
            | "/api/auth/refresh"
            | "/api/auth/password-reset"
            | "/api/auth/password-reset/request" => Some(Bucket::SignIn),
            p if p.starts_with("/api/auth/oauth/") => Some(Bucket::SignIn),
            p if p.starts_with("/api/tiles/") || p.starts_with("/api/basemap/") => Some(Bucket::Tiles),
            p if p.starts_with("/api/collections/") && p.ends_with("/items") && follows_a_page(uri.query()) => {
                Some(Bucket::Pages)
            }
            _ => Some(Bucket::General),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Bucket::SignIn => "signin",
            Bucket::Tiles => "tiles",
            Bucket::Pages => "pages",
            Bucket::General => "general",
        }
    }
    fn limit(self, limits: &RateLimits) -> u64 {
        match self {
            Bucket::SignIn => limits.sign_in_per_minute,
            Bucket::Tiles => limits.tiles_per_minute,
            Bucket::Pages => limits.pages_per_minute,
            Bucket::General => limits.per_minute,
        }
    }
}

type Counts = HashMap<(Bucket, IpAddr), (u64, u64)>;

/// The counters: a shared store when configured, and this process's own,
/// used alone without a store and while the store is unreachable.
#[derive(Clone)]
pub struct RateLimiter {
    store: SharedStore,
    /// Until when the store is left alone after a failure, so requests do
    /// not each wait for a dead store.
    store_resting_until: Arc<Mutex<Option<Instant>>>,
    store_down: Arc<AtomicBool>,
    local: Arc<Mutex<Counts>>,
    limits: Arc<RateLimits>,
    /// Requests this process refused, by bucket (in `Bucket::ALL` order).
    refused: Arc<[AtomicU64; 4]>,
}

impl RateLimiter {
    /// Connects to the store named by `REDIS_URL`, logging the operational
    /// records of the specification when there is none, its scheme is not
    /// redis:// or rediss://, or it cannot be reached (then it keeps trying
    /// in the background).
    pub async fn start(redis_url: Option<&str>, limits: RateLimits) -> Self {
        let limiter = Self {
            limits: Arc::new(limits),
            store: Arc::default(),
            store_resting_until: Arc::default(),
            store_down: Arc::new(AtomicBool::new(false)),
            local: Arc::default(),
            refused: Arc::default(),
        };
        let client = match redis_url {
            None => {
                tracing::warn!(
                    event = "rate_limit_storage_not_configured",
                    "rate_limit_storage_not_configured: REDIS_URL is not set; rate limits are counted by each API process alone"
                );
                return limiter;
            }
            Some(url) if !(url.starts_with("redis://") || url.starts_with("rediss://")) => {
                tracing::error!(
                    event = "rate_limit_storage_scheme_unsupported",
                    "rate_limit_storage_scheme_unsupported: REDIS_URL must start with redis:// or rediss://; rate limits are counted by each API process alone"
                );
                return limiter;
            }
            Some(url) => match redis::Client::open(url) {
                Ok(client) => client,
                Err(e) => {
                    tracing::error!(event = "rate_limit_storage_unreachable", error = %e,
                        "rate_limit_storage_unreachable: REDIS_URL cannot be used; rate limits are counted by each API process alone");
                    return limiter;
                }
            },
        };
        match connect(&client).await {
            Ok(manager) => *limiter.store.write().unwrap_or_else(|e| e.into_inner()) = Some(manager),
            Err(e) => {
                limiter.store_down.store(true, Ordering::Relaxed);
                tracing::error!(event = "rate_limit_storage_unreachable", error = %e,
                    "rate_limit_storage_unreachable: the rate-limit store cannot be reached; counting in this process until it can");
                let store = limiter.store.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(STORE_REST).await;
                        if let Ok(manager) = connect(&client).await {
                            *store.write().unwrap_or_else(|e| e.into_inner()) = Some(manager);
                            return;
                        }
                    }
                });
            }
        }
        limiter
    }

    /// The shared store (Redis), when it is configured and was reached;
    /// other per-caller state every API process must see lives there too.
    pub fn store(&self) -> SharedStore {
        self.store.clone()
    }

    /// Counts a request from `peer` against its bucket; 429 with
    /// `Retry-After` when over the limit.
    pub async fn check(&self, peer: IpAddr, request: &Parts) -> Result<(), AppError> {
        let Some(bucket) = Bucket::of(&request.uri) else {
            return Ok(());
        };
        let limit = bucket.limit(&self.limits);
        let client = client_address(peer, &request.headers, &self.limits.trusted_proxies);
        match self.count(bucket, client, limit).await {
            Some(retry_after) => {
                self.refused[bucket as usize].fetch_add(1, Ordering::Relaxed);
                Err(AppError::too_many_requests(retry_after))
            }
            None => Ok(()),
        }
    }

    /// Requests this process refused so far, by bucket name, every bucket
    /// included.
    pub fn refusals(&self) -> [(&'static str, u64); 4] {
        Bucket::ALL.map(|bucket| (bucket.name(), self.refused[bucket as usize].load(Ordering::Relaxed)))
    }

    /// Counts a request; the seconds until the window ends when over `limit`.
    async fn count(&self, bucket: Bucket, client: IpAddr, limit: u64) -> Option<u64> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let window = now / WINDOW_SECS;
        let retry_after = (window + 1) * WINDOW_SECS - now;
        let client = counted_as(client);
        let count = match self.count_in_store(bucket, client, window).await {
            Some(count) => count,
            None => self.count_here(bucket, client, window),
        };
        (count > limit).then_some(retry_after.max(1))
    }

    async fn count_in_store(&self, bucket: Bucket, client: IpAddr, window: u64) -> Option<u64> {
        let mut store = self.store.read().unwrap_or_else(|e| e.into_inner()).clone()?;
        let resting = *self.store_resting_until.lock().unwrap_or_else(|e| e.into_inner());
        if resting.is_some_and(|until| Instant::now() < until) {
            return None;
        }
        let key = format!("ratelimit:{}:{client}:{window}", bucket.name());
        let mut pipeline = redis::pipe();
        pipeline
            .atomic()
            .incr(&key, 1u64)
            .expire(&key, (WINDOW_SECS * 2) as i64)
            .ignore();
        let call = pipeline.query_async::<(u64,)>(&mut store);
        match tokio::time::timeout(STORE_TIMEOUT, call).await {
            Ok(Ok((count,))) => {
                if self.store_down.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        event = "rate_limit_storage_recovered",
                        "rate_limit_storage_recovered: the rate-limit store answers again; limits are shared again"
                    );
                }
                Some(count)
            }
            failed => {
                *self.store_resting_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + STORE_REST);
                if !self.store_down.swap(true, Ordering::Relaxed) {
                    let why = match failed {
                        Ok(Err(e)) => e.to_string(),
                        _ => "timed out".to_string(),
                    };
                    tracing::error!(
                        event = "rate_limit_storage_unreachable",
                        error = %why,
                        "rate_limit_storage_unreachable: rate limits are counted by this API process alone until the store answers"
                    );
                }
                None
            }
        }
    }

    fn count_here(&self, bucket: Bucket, client: IpAddr, window: u64) -> u64 {
        let mut counts = self.local.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() >= MAX_LOCAL_CLIENTS {
            counts.retain(|_, (w, _)| *w == window);
            // Still full within one window: start over rather than grow.
            if counts.len() >= MAX_LOCAL_CLIENTS {
                counts.clear();
            }
        }
        let entry = counts.entry((bucket, client)).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        entry.1 += 1;
        entry.1
    }
}

/// Whether a query carries what only a `next` link of an items page does.
fn follows_a_page(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        url::form_urlencoded::parse(q.as_bytes()).any(|(key, _)| key == "after_gid" || key == "cursor")
    })
}

/// The address a client is counted as: itself, or for IPv6 its /64 (one
/// host usually holds a whole /64).
fn counted_as(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

async fn connect(client: &redis::Client) -> Result<ConnectionManager, redis::RedisError> {
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(STORE_TIMEOUT));
    client.get_connection_manager_with_config(config).await
}

/// The address a request is counted against: the peer, or, when the peer
/// is a trusted proxy, the nearest address in `X-Forwarded-For` that is
/// not one (addresses further left could be made up by the client).
fn client_address(peer: IpAddr, headers: &axum::http::HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|a| !trusted.contains(a))
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counting_here_resets_each_window() {
        let limiter = RateLimiter {
            store: Arc::default(),
            store_resting_until: Arc::default(),
            store_down: Arc::default(),
            local: Arc::default(),
            refused: Arc::default(),
            limits: Arc::new(RateLimits {
                per_minute: 7,
                tiles_per_minute: 7,
                pages_per_minute: 7,
                sign_in_per_minute: 7,
                trusted_proxies: Vec::new(),
            }),
        };
        let client: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(limiter.count_here(Bucket::General, client, 7), 1);
        assert_eq!(limiter.count_here(Bucket::General, client, 7), 2);
        assert_eq!(limiter.count_here(Bucket::Tiles, client, 7), 1);
        assert_eq!(limiter.count_here(Bucket::General, client, 8), 1);
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(counted_as(a), counted_as(b));
        assert_eq!(
            counted_as("::ffff:192.0.2.7".parse().unwrap()),
            "192.0.2.7".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn forwarded_addresses_count_only_behind_trusted_proxies() {
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("x-forwarded-for", "1.2.3.4, 198.51.100.7".parse().unwrap());
        assert_eq!(
            client_address(proxy, &headers, &[]),
            proxy,
            "untrusted peers are counted as themselves"
        );
        assert_eq!(
            client_address(proxy, &headers, &[proxy]),
            "198.51.100.7".parse::<IpAddr>().unwrap(),
            "the address the trusted proxy saw, not what the client claimed"
        );
        let inner: IpAddr = "10.0.0.6".parse().unwrap();
        headers.insert("x-forwarded-for", "198.51.100.7, 10.0.0.6".parse().unwrap());
        assert_eq!(
            client_address(proxy, &headers, &[proxy, inner]),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_address(proxy, &axum::http::HeaderMap::new(), &[proxy]), proxy);
    }

    #[test]
    fn buckets_by_route() {
        let of = |uri: &str| Bucket::of(&uri.parse().unwrap());
        assert_eq!(of("/api/health"), None);
        assert_eq!(of("/api/auth/login"), Some(Bucket::SignIn));
        assert_eq!(of("/api/tiles/x/1/2/3"), Some(Bucket::Tiles));
        assert_eq!(of("/api/collections"), Some(Bucket::General));
        assert_eq!(of("/api/collections/a/items?limit=10"), Some(Bucket::General));
        assert_eq!(
            of("/api/collections/a/items?limit=10&after_gid=20"),
            Some(Bucket::Pages)
        );
        assert_eq!(of("/api/collections/a/items?cursor=xyz"), Some(Bucket::Pages));
        assert_eq!(of("/api/collections/a/items/7?after_gid=20"), Some(Bucket::General));
        assert_eq!(of("/api/datasets?after_gid=20"), Some(Bucket::General));
    }
}
