//! `GET /api/metrics`, in the Prometheus text format, for an admin or a
//! bearer of `METRICS_TOKEN`. HTTP figures (requests, latency, rate-limit
//! refusals, pool use) are this process's own: scrape every API process.
//! Job, queue and worker figures are read from the database at scrape
//! time, so every process reports the same ones. Every family has its
//! series from start-up (zeros for each label set it knows), so a query
//! or an alert on one never meets an absent family.
use axum::{
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, db};
use prometheus::{Encoder, TextEncoder, proto};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{access::Caller, state::AppState};

mod database;
mod families;

use families::{counter_family, gauge_family};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Operational figures in the Prometheus text format (version 0.0.4).
#[utoipa::path(get, path = "/api/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain; version=0.0.4"),
              (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn metrics(State(state): State<AppState>, caller: Caller) -> Result<Response, AppError> {
    caller.may_read_metrics()?;
    let mut families = state.metrics.gather();
    families.extend(pool_families(&[
        ("requests", db::PoolFigures::of(&state.pool)),
        ("tiles", state.db.catalog_reader().tiles.figures()),
    ]));
    families.extend(replica_families(&state.db));
    families.extend(tile_cache_families(&state.tiles));
    families.push(refusal_family(&state.rate_limiter));
    families.extend(database::families(&state.pool).await?);
    let mut body = Vec::new();
    TextEncoder::new()
        .encode(&families, &mut body)
        .map_err(AppError::internal)?;
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(prometheus::TEXT_FORMAT));
    Ok(response)
}

/// This process's database connections by pool (`requests`, and `tiles`
/// for vector tiles): in use and idle.
fn pool_families(pools: &[(&str, db::PoolFigures)]) -> Vec<proto::MetricFamily> {
    let mut connections = Vec::new();
    let mut most = Vec::new();
    for (name, figures) in pools {
        let label = || ("pool", name.to_string());
        connections.push((vec![label(), ("state", "in_use".into())], figures.in_use as f64));
        connections.push((
            vec![label(), ("state", "idle".into())],
            (figures.open - figures.in_use) as f64,
        ));
        most.push((vec![label()], figures.most as f64));
    }
    vec![
        gauge_family(
            "catalog_db_pool_connections",
            "Database connections of this API process, by pool and state.",
            connections,
        ),
        gauge_family(
            "catalog_db_pool_max_connections",
            "The most database connections this API process opens, by pool.",
            most,
        ),
    ]
}

/// Where this process's reads went, and each replica's state.
fn replica_families(db: &crate::replicas::Database) -> Vec<proto::MetricFamily> {
    let reads = db
        .reads()
        .into_iter()
        .map(|(target, count)| (vec![("target", target.to_string())], count))
        .collect();
    let replicas = db
        .replicas()
        .iter()
        .flat_map(|r| {
            let (up, lagging) = r.state();
            [
                (
                    vec![("replica", r.name.clone()), ("state", "up".into())],
                    f64::from(u8::from(up)),
                ),
                (
                    vec![("replica", r.name.clone()), ("state", "lagging".into())],
                    f64::from(u8::from(lagging)),
                ),
            ]
        })
        .collect();
    let mut families = vec![counter_family(
        "catalog_db_reads_total",
        "Reads of the read routes this API process sent to the primary and to replicas (DATABASE_READ_URLS).",
        reads,
    )];
    // A family needs a series: without replicas there is none to state.
    if db.has_replicas() {
        families.push(gauge_family(
            "catalog_db_replica_state",
            "Each read replica: up (answers) and lagging (behind by more than READ_MAX_LAG_SECONDS), 1 or 0.",
            replicas,
        ));
    }
    families
}

/// Requests this process refused with 429, by rate-limit bucket.
fn refusal_family(limiter: &crate::rate_limit::RateLimiter) -> proto::MetricFamily {
    counter_family(
        "catalog_rate_limit_refusals_total",
        "Requests this API process refused with 429, by rate-limit bucket: signin, tiles, general.",
        limiter
            .refusals()
            .into_iter()
            .map(|(bucket, refused)| (vec![("bucket", bucket.to_string())], refused))
            .collect(),
    )
}

/// This process's tile cache: what it holds and how lookups went.
fn tile_cache_families(tiles: &crate::tile_cache::TileCache) -> Vec<proto::MetricFamily> {
    let figures = tiles.figures();
    vec![
        counter_family(
            "catalog_tile_cache_lookups_total",
            "Tile requests of this API process by result: hit (served from the cache), miss (rendered), not_modified (304).",
            vec![
                (vec![("result", "hit".into())], figures.hits),
                (vec![("result", "miss".into())], figures.misses),
                (vec![("result", "not_modified".into())], figures.not_modified),
            ],
        ),
        gauge_family(
            "catalog_tile_cache_bytes",
            "Bytes of encoded tiles this API process keeps, and the most it may keep.",
            vec![
                (vec![("state", "used".into())], figures.used_bytes as f64),
                (vec![("state", "capacity".into())], figures.capacity_bytes as f64),
            ],
        ),
    ]
}
