//! Rate limits: 429 with Retry-After past the limit, counted per process
//! without a store, shared through a real Redis between API processes,
//! never switched off when the store goes away, and the operational log
//! records the specification names.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use catalog_tests::{Api, Stack, StackOptions, free_port, redis_server, wait_for_redis};

/// Waits out the end of the current minute when little of it is left, so
/// a burst of requests falls into one counting window.
async fn start_of_a_window() {
    let second = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() % 60;
    if second > 45 {
        tokio::time::sleep(Duration::from_secs(61 - second)).await;
    }
}

async fn statuses(stack: &Stack, path: &str, n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(stack.http.get(stack.url(path)).send().await.unwrap().status().as_u16());
    }
    out
}

async fn wait_for_log(stack: &Stack, record: &str) {
    for _ in 0..100 {
        if stack.logs().contains(record) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {record} in the logs:\n{}", stack.logs());
}

#[tokio::test]
async fn past_the_limit_requests_get_429_with_retry_after() {
    let stack = Stack::start_with(
        StackOptions::workers(0)
            .env("RATE_LIMIT_PER_MINUTE", "20")
            .env("RATE_LIMIT_SIGN_IN_PER_MINUTE", "3"),
    )
    .await;
    wait_for_log(&stack, "rate_limit_storage_not_configured").await;
    start_of_a_window().await;
    let got = statuses(&stack, "/api/collections", 25).await;
    assert_eq!(got[..20], [200; 20]);
    assert_eq!(got[20..], [429; 5]);
    let response = stack.http.get(stack.url("/api/conformance")).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let retry: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    // Liveness is never limited; tiles and sign-in count on their own.
    assert_eq!(statuses(&stack, "/api/health", 3).await, [200; 3]);
    let mut sign_ins = Vec::new();
    for _ in 0..4 {
        let response = stack
            .http
            .post(stack.url("/api/auth/login"))
            .form(&[("username", "admin"), ("password", "wrong")])
            .send()
            .await
            .unwrap();
        sign_ins.push(response.status().as_u16());
    }
    assert_eq!(sign_ins, [401, 401, 401, 429]);
}

#[tokio::test]
async fn a_shared_store_counts_for_every_api_process_and_losing_it_keeps_limits() {
    let port = free_port();
    let mut redis = redis_server(port);
    wait_for_redis(port).await;
    let options = StackOptions::workers(0)
        .env("REDIS_URL", &format!("redis://127.0.0.1:{port}"))
        .env("RATE_LIMIT_PER_MINUTE", "10");
    let first = Stack::start_with(options.clone()).await;
    let second = Stack::start_with(options).await;
    assert!(!first.logs().contains("rate_limit_storage_not_configured"));
    start_of_a_window().await;
    assert_eq!(statuses(&first, "/api/conformance", 6).await, [200; 6]);
    assert_eq!(
        statuses(&second, "/api/conformance", 6).await,
        [200, 200, 200, 200, 429, 429],
        "the second process sees the first one's requests"
    );

    // The store goes away: each process counts alone, and says so.
    redis.kill().unwrap();
    redis.wait().unwrap();
    let alone = statuses(&first, "/api/conformance", 12).await;
    assert!(alone.contains(&429), "still limited without the store: {alone:?}");
    wait_for_log(&first, "rate_limit_storage_unreachable").await;

    // And comes back.
    let mut redis = redis_server(port);
    wait_for_redis(port).await;
    let mut recovered = false;
    for _ in 0..40 {
        statuses(&first, "/api/conformance", 1).await;
        if first.logs().contains("rate_limit_storage_recovered") {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(recovered, "no rate_limit_storage_recovered:\n{}", first.logs());
    redis.kill().unwrap();
    redis.wait().unwrap();
}

#[tokio::test]
async fn a_store_url_of_another_scheme_is_reported_and_limits_stay() {
    let stack = Stack::start_with(
        StackOptions::workers(0)
            .env("REDIS_URL", "memcached://127.0.0.1:11211")
            .env("RATE_LIMIT_PER_MINUTE", "5"),
    )
    .await;
    wait_for_log(&stack, "rate_limit_storage_scheme_unsupported").await;
    start_of_a_window().await;
    assert_eq!(
        statuses(&stack, "/api/conformance", 7).await,
        [200, 200, 200, 200, 200, 429, 429]
    );
}

#[tokio::test]
async fn a_store_that_appears_after_start_up_is_used() {
    let port = free_port();
    let stack = Stack::start_with(
        StackOptions::workers(0)
            .env("REDIS_URL", &format!("redis://127.0.0.1:{port}"))
            .env("RATE_LIMIT_PER_MINUTE", "1000"),
    )
    .await;
    wait_for_log(&stack, "rate_limit_storage_unreachable").await;
    // Counted here meanwhile, without waiting on the missing store.
    let started = std::time::Instant::now();
    assert_eq!(statuses(&stack, "/api/conformance", 20).await, [200; 20]);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let mut redis = redis_server(port);
    wait_for_redis(port).await;
    let mut recovered = false;
    for _ in 0..60 {
        statuses(&stack, "/api/conformance", 1).await;
        if stack.logs().contains("rate_limit_storage_recovered") {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(recovered, "no rate_limit_storage_recovered:\n{}", stack.logs());
    let mut store = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    store.write_all(b"KEYS ratelimit:*\r\n").await.unwrap();
    let mut reply = vec![0u8; 256];
    let n = store.read(&mut reply).await.unwrap();
    assert!(
        String::from_utf8_lossy(&reply[..n]).contains("ratelimit:general:127.0.0.1"),
        "counted in the store"
    );
    redis.kill().unwrap();
    redis.wait().unwrap();
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_count() {
    let stack = Stack::start_with(
        StackOptions::workers(0)
            .env("RATE_LIMIT_PER_MINUTE", "3")
            .env("TRUSTED_PROXIES", "127.0.0.1"),
    )
    .await;
    start_of_a_window().await;
    let from = |client: &'static str| {
        let stack = &stack;
        async move {
            stack
                .http
                .get(stack.url("/api/conformance"))
                .header("x-forwarded-for", format!("6.6.6.6, {client}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let mut first = Vec::new();
    for _ in 0..4 {
        first.push(from("203.0.113.1").await);
    }
    assert_eq!(first, [200, 200, 200, 429]);
    assert_eq!(from("203.0.113.2").await, 200, "another client behind the same proxy");
}
