//! Outbound HTTP that cannot be turned against the service's own network:
//! every address a request connects to (after DNS resolution, and again on
//! each redirect) must be public unless its host is explicitly allowed.
use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

/// Why a URL may not be fetched; callers name the field or job it came from.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("only http and https URLs can be fetched, not {0}")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("{0} is allowed only on the ports OUTBOUND_ALLOWED_HOSTS lists")]
    PortNotListed(String),
    #[error("{0} is not a public address")]
    NotPublic(IpAddr),
    #[error("{host} could not be resolved: {why}")]
    Unresolvable { host: String, why: String },
    #[error("{0} resolves to no address")]
    NoAddress(String),
    #[error("{host} resolves to {ip}, which is not a public address")]
    ResolvesToPrivate { host: String, ip: IpAddr },
}

#[derive(Clone, Debug, Default)]
pub struct OutboundPolicy {
    /// Entries of `OUTBOUND_ALLOWED_HOSTS`: `host` or `host:port`.
    allowed: Vec<String>,
}

impl OutboundPolicy {
    pub fn new(allowed: &[String]) -> Self {
        Self {
            allowed: allowed.iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        self.allowed.iter().any(|entry| {
            let entry_host = match entry.rsplit_once(':') {
                Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
                _ => entry.as_str(),
            };
            entry_host.trim_start_matches('[').trim_end_matches(']') == host
        })
    }

    fn host_port_allowed(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        self.allowed
            .iter()
            .any(|entry| entry == &host || *entry == format!("{host}:{port}") || *entry == format!("[{host}]:{port}"))
    }

    /// Checks what can be checked without resolving: scheme, host presence,
    /// port allowance and literal addresses.
    pub fn check_url(&self, url: &Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused::Scheme(url.scheme().to_string()));
        }
        let host = url.host_str().ok_or(Refused::NoHost)?;
        let port = url.port_or_known_default().unwrap_or(80);
        if self.host_port_allowed(host, port) {
            return Ok(());
        }
        if self.host_allowed(host) {
            return Err(Refused::PortNotListed(host.to_string()));
        }
        if let Some(ip) = literal_ip(url)
            && !is_public(ip)
        {
            return Err(Refused::NotPublic(ip));
        }
        Ok(())
    }

    /// Resolves the URL's host and refuses it when any address is not public.
    pub async fn check_resolved(&self, url: &Url) -> Result<(), Refused> {
        self.check_url(url)?;
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        if self.host_allowed(host) || literal_ip(url).is_some() {
            return Ok(());
        }
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| Refused::Unresolvable {
                host: host.to_string(),
                why: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(Refused::NoAddress(host.to_string()));
        }
        if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
            return Err(Refused::ResolvesToPrivate {
                host: host.to_string(),
                ip: bad.ip(),
            });
        }
        Ok(())
    }

    /// A client whose resolver and redirect policy enforce this policy on
    /// every connection it makes.
    pub fn client(&self, timeout: Duration) -> reqwest::Result<reqwest::Client> {
        self.build_client(timeout, false)
    }

    /// The same, refusing redirects that leave the first URL's origin: for
    /// requests carrying credentials (reqwest drops only the standard
    /// authorization headers on such redirects, not custom ones).
    pub fn client_for_credentials(&self, timeout: Duration) -> reqwest::Result<reqwest::Client> {
        self.build_client(timeout, true)
    }

    fn build_client(&self, timeout: Duration, keep_origin: bool) -> reqwest::Result<reqwest::Client> {
        install_tls_provider();
        let policy = Arc::new(self.clone());
        let redirect_policy = policy.clone();
        reqwest::Client::builder()
            // A proxy would resolve and connect for us, out of the guard's sight.
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { policy }))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= 10 {
                    return attempt.error("too many redirects");
                }
                if keep_origin
                    && attempt
                        .previous()
                        .first()
                        .is_some_and(|first| first.origin() != attempt.url().origin())
                {
                    return attempt.error("a redirect to another site is refused for a request with credentials");
                }
                match redirect_policy.check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(why) => attempt.error(format!("redirect refused: {why}")),
                }
            }))
            .connect_timeout(Duration::from_secs(15))
            .timeout(timeout)
            .user_agent(concat!("spatial-catalog/", env!("CARGO_PKG_VERSION")))
            .build()
    }
}

fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

struct GuardedResolver {
    policy: Arc<OutboundPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !policy.host_allowed(&host)
                && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
            {
                let msg = format!("{host} resolves to {}, which is not a public address", bad.ip());
                return Err(msg.into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Whether an address is on the public internet: not loopback, private,
/// link-local (cloud metadata lives there), shared, documentation,
/// multicast or otherwise reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            is_public_v6(v6)
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // 6to4 carries an IPv4 address, which decides.
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // IPv4-compatible (::a.b.c.d, deprecated): never a public route.
        || s[..6] == [0; 6]
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        // Site-local (deprecated, still routed inside some networks).
        || (s[0] & 0xffc0) == 0xfec0
        // Discard-only.
        || s[..4] == [0x0100, 0, 0, 0]
        || s[0] == 0x2001 && s[1] == 0x0db8
        || s[0] == 0x64 && s[1] == 0xff9b)
}

/// Makes ring the process's TLS crypto provider, if none is yet: reqwest is
/// built without one (its default, aws-lc, was the costliest C build of a
/// first run), and panics when it makes a client with none installed.
/// Every place that makes a reqwest client, ours or object_store's, calls
/// this first.
pub fn install_tls_provider() {
    // An error only says a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_metadata_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::7f00:1",
            "fec0::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "100::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2002:808:808::1"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn literal_private_urls_are_refused_unless_allowed() {
        let policy = OutboundPolicy::new(&[]);
        assert!(policy.check_url(&Url::parse("http://127.0.0.1:9/x").unwrap()).is_err());
        assert!(policy.check_url(&Url::parse("http://[::1]/x").unwrap()).is_err());
        assert!(policy.check_url(&Url::parse("ftp://example.com/x").unwrap()).is_err());
        let allowed = OutboundPolicy::new(&["127.0.0.1:9".into()]);
        assert!(allowed.check_url(&Url::parse("http://127.0.0.1:9/x").unwrap()).is_ok());
        assert!(
            allowed
                .check_url(&Url::parse("http://127.0.0.1:10/x").unwrap())
                .is_err()
        );
    }
}

/// Hands object-store clients (connectors pulling from S3, GCS or Azure) an
/// HTTP client under this policy: every request's URL is checked, literal
/// addresses included (the guarded resolver sees only host names), and
/// host names are resolved by the guarded resolver.
#[derive(Debug)]
pub struct GuardedStoreConnector {
    policy: OutboundPolicy,
    timeout: Duration,
}

impl GuardedStoreConnector {
    pub fn new(policy: &OutboundPolicy, timeout: Duration) -> Self {
        Self {
            policy: policy.clone(),
            timeout,
        }
    }
}

impl HttpConnector for GuardedStoreConnector {
    fn connect(&self, _: &object_store::ClientOptions) -> object_store::Result<HttpClient> {
        let client = self
            .policy
            .client_for_credentials(self.timeout)
            .map_err(|e| object_store::Error::Generic {
                store: "connector",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(GuardedStoreService {
            policy: self.policy.clone(),
            client,
        }))
    }
}

#[derive(Debug)]
struct GuardedStoreService {
    policy: OutboundPolicy,
    client: reqwest::Client,
}

#[async_trait::async_trait]
impl HttpService for GuardedStoreService {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let url = Url::parse(&request.uri().to_string()).map_err(|e| HttpError::new(HttpErrorKind::Request, e))?;
        self.policy
            .check_url(&url)
            .map_err(|why| HttpError::new(HttpErrorKind::Request, why))?;
        self.client.call(request).await
    }
}
