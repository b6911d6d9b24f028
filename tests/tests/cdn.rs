//! Tiles a CDN can keep: nginx (Debian) as a caching proxy in front of the
//! service, which names it as its public URL. Tile templates carry the
//! data version; after one pass over zooms 0 to 3 the origin sees nothing
//! of a second pass; after an edit the template names the new version,
//! whose tiles the origin serves at once, with the edit in them, while the
//! old version's URLs keep their old bytes (and the origin itself sends an
//! old version to the current one).
use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use catalog_tests::{Api, Stack, StackOptions, TestDatabase, free_port, metrics_text, ogrinfo_of_tile};
use serde_json::{Value, json};

struct Nginx {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn nginx(port: u16, origin: &str) -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let config = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
           fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           proxy_cache_path {d}/cache levels=1:2 keys_zone=tiles:10m max_size=200m inactive=1d use_temp_path=off;\n\
           server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass {origin};\n\
               proxy_http_version 1.1;\n      proxy_cache tiles;\n      proxy_cache_key $request_uri;\n\
               add_header X-Cache-Status $upstream_cache_status always;\n    }}\n  }}\n}}\n"
    );
    let file = dir.path().join("nginx.conf");
    std::fs::write(&file, config).unwrap();
    let child = Command::new("/usr/sbin/nginx")
        .args(["-e", &format!("{d}/error.log"), "-p"])
        .arg(dir.path())
        .arg("-c")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx (installed by scripts/test.sh)");
    let nginx = Nginx { child, _dir: dir };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return nginx;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nginx did not start: {}", error_log(nginx._dir.path()));
}

fn error_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
}

/// Tile requests the origin has answered (cache hits, misses and 304s).
async fn origin_tile_requests(stack: &Stack, admin: &str) -> u64 {
    let text = metrics_text(&stack.http, &stack.base, admin).await;
    text.lines()
        .filter(|l| l.starts_with("catalog_tile_cache_lookups_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

struct Fetched {
    status: u16,
    cache: String,
    cache_control: String,
    body: Vec<u8>,
}

async fn fetch(stack: &Stack, url: &str) -> Fetched {
    let response = stack.http.get(url).send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (status, cache, cache_control) = (
        response.status().as_u16(),
        header("x-cache-status"),
        header("cache-control"),
    );
    Fetched {
        status,
        cache,
        cache_control,
        body: response.bytes().await.unwrap().to_vec(),
    }
}

fn tiles_up_to(zoom: u32) -> Vec<(u32, u32, u32)> {
    (0..=zoom)
        .flat_map(|z| (0..1u32 << z).flat_map(move |x| (0..1u32 << z).map(move |y| (z, x, y))))
        .collect()
}

async fn template_of(stack: &Stack, cdn: &str, id: &str) -> String {
    let tilejson: Value = stack
        .http
        .get(format!("{cdn}/api/tiles/{id}/tilejson.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    tilejson["tiles"][0].as_str().unwrap().to_string()
}

fn at(template: &str, (z, x, y): (u32, u32, u32)) -> String {
    template
        .replace("{z}", &z.to_string())
        .replace("{x}", &x.to_string())
        .replace("{y}", &y.to_string())
}

#[tokio::test]
async fn a_caching_proxy_keeps_tiles_until_the_data_changes() {
    let port = free_port();
    let cdn = format!("http://127.0.0.1:{port}");
    let options = StackOptions::workers(1).env("PUBLIC_URL", &cdn);
    let stack = Stack::start_on(TestDatabase::create().await, tempfile::tempdir().unwrap(), options).await;
    let _nginx = nginx(port, &stack.base).await;
    let admin = stack.admin_token().await;
    let points: Vec<Value> = (0..400)
        .map(|i| {
            json!({"type": "Feature", "properties": {"name": format!("p{i}")},
                   "geometry": {"type": "Point", "coordinates": [(i * 37 % 360) as f64 - 179.5, (i * 13 % 170) as f64 - 84.5]}})
        })
        .collect();
    let job = stack
        .upload_ok(
            &admin,
            "world.geojson",
            serde_json::to_vec(&json!({"type": "FeatureCollection", "features": points})).unwrap(),
            &[("visibility", "public")],
        )
        .await;
    let id = stack.wait_job(&admin, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();

    let template = template_of(&stack, &cdn, &id).await;
    assert!(template.starts_with(&format!("{cdn}/api/tiles/{id}/")), "{template}");
    assert!(template.ends_with(".pbf?v=1"), "{template}");
    let tiles = tiles_up_to(3);
    let mut first = Vec::new();
    for &tile in &tiles {
        let fetched = fetch(&stack, &at(&template, tile)).await;
        assert!(matches!(fetched.status, 200 | 204), "{tile:?}: {}", fetched.status);
        assert_eq!(fetched.cache, "MISS", "{tile:?}");
        assert_eq!(fetched.cache_control, "public, max-age=31536000, immutable", "{tile:?}");
        first.push(fetched);
    }
    // Without the version a tile may change under its URL: kept briefly.
    let unversioned = fetch(&stack, &format!("{cdn}/api/tiles/{id}/0/0/0.pbf")).await;
    assert_eq!(unversioned.cache_control, "public, max-age=300");

    // Warm: the origin sees nothing of a second pass.
    let before = origin_tile_requests(&stack, &admin).await;
    for (tile, earlier) in tiles.iter().zip(&first) {
        let fetched = fetch(&stack, &at(&template, *tile)).await;
        assert_eq!(fetched.cache, "HIT", "{tile:?}");
        assert_eq!(fetched.body, earlier.body, "{tile:?}");
    }
    assert_eq!(
        origin_tile_requests(&stack, &admin).await,
        before,
        "the origin served repeated tiles"
    );

    // An edit: the template names the next version, whose tiles come from
    // the origin at once with the new feature in them.
    let created = stack
        .send(
            stack
                .http
                .post(format!("{}/api/collections/{id}/items", stack.base))
                .bearer_auth(&admin)
                .json(&json!({"type": "Feature", "properties": {"name": "newcomer"},
                              "geometry": {"type": "Point", "coordinates": [10.5, 10.5]}})),
        )
        .await;
    assert_eq!(created.status(), 201);
    let current = template_of(&stack, &cdn, &id).await;
    assert!(current.ends_with(".pbf?v=2"), "{current}");
    let tile = (3, 4, 3);
    let before = origin_tile_requests(&stack, &admin).await;
    let fresh = fetch(&stack, &at(&current, tile)).await;
    assert_eq!((fresh.status, fresh.cache.as_str()), (200, "MISS"));
    assert_eq!(origin_tile_requests(&stack, &admin).await, before + 1);
    assert!(ogrinfo_of_tile(&fresh.body, (3, 4, 3)).contains("newcomer"));

    // The old version's URL never gets the new data: the proxy keeps its
    // bytes, and the origin sends it to the current version.
    let index = tiles.iter().position(|t| *t == tile).unwrap();
    let stale = fetch(&stack, &at(&template, tile)).await;
    assert_eq!((stale.cache.as_str(), &stale.body), ("HIT", &first[index].body));
    let path = at(&template, tile).replacen(&cdn, "", 1);
    let followed = stack.send(stack.http.get(format!("{}{path}", stack.base))).await;
    assert_eq!(followed.status(), 200);
    assert!(followed.url().as_str().ends_with("?v=2"), "{}", followed.url());
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = no_follow.get(format!("{}{path}", stack.base)).send().await.unwrap();
    assert_eq!(answer.status(), 307);
    assert_eq!(answer.headers()["location"].to_str().unwrap(), at(&current, tile));
    assert_eq!(answer.headers()["cache-control"], "no-cache");
}
