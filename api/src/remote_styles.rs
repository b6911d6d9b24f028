//! Basemap styles fetched from their URLs, through the outbound guard, and
//! kept ten minutes (failures too, so a dead basemap is not asked again on
//! every export): a leaf the state holds and map exports read.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use catalog_shared::outbound::OutboundPolicy;
use serde_json::Value;

const TTL: Duration = Duration::from_secs(600);
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_STYLE_BYTES: usize = 4 << 20;

/// A fetched basemap style (or its failure) and when it was fetched.
type Fetched = (Instant, Option<Arc<Value>>);

/// Basemap styles by URL.
#[derive(Clone, Default)]
pub struct BasemapCache {
    entries: Arc<Mutex<HashMap<String, Fetched>>>,
}

impl BasemapCache {
    /// The style at `url`, fetched through the outbound policy at most
    /// every ten minutes.
    pub async fn fetch(&self, outbound: &OutboundPolicy, url: &str) -> Option<Arc<Value>> {
        if let Some((at, style)) = self.entries.lock().unwrap_or_else(|e| e.into_inner()).get(url)
            && at.elapsed() < TTL
        {
            return style.clone();
        }
        let style = download(outbound, url).await.map(Arc::new);
        if style.is_none() {
            tracing::warn!(%url, "the basemap style could not be loaded; maps export without it");
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (at, _)| at.elapsed() < TTL);
        entries.insert(url.to_string(), (Instant::now(), style.clone()));
        style
    }
}

async fn download(outbound: &OutboundPolicy, url: &str) -> Option<Value> {
    // The guarded resolver sees host names only: a literal address is checked here.
    outbound.check_url(&url::Url::parse(url).ok()?).ok()?;
    let client = outbound.client(FETCH_TIMEOUT).ok()?;
    let response = client.get(url).send().await.ok()?.error_for_status().ok()?;
    if response.content_length().is_some_and(|n| n as usize > MAX_STYLE_BYTES) {
        return None;
    }
    let body = response.bytes().await.ok()?;
    if body.len() > MAX_STYLE_BYTES {
        return None;
    }
    let style: Value = serde_json::from_slice(&body).ok()?;
    (style["version"] == 8 && style["layers"].is_array()).then_some(style)
}
