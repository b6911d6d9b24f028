//! The web UI: served by the API process (the app's HTML on every path
//! outside `/api/` and `/assets/`, hashed assets cached for a year, API
//! paths never HTML), and driven in headless Chromium through sign-in,
//! upload, the dataset page, editing, the catalog, jobs, API keys, maps and
//! shares, registration and approval, single sign-on against a local OIDC
//! provider, sign-out, the server-rendered OGC pages and 390 px screens,
//! and the admin screens (quotas, notification channels with a test sent to
//! a webhook receiver here, the configured banner), grants by an owner,
//! remote-service imports, basemaps and style imports,
//! with axe-core on every screen
//! (`tests/clients/ui_flows.mjs`; screenshots in `.data/ui-screenshots`).
use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use catalog_tests::{
    ADMIN_PASSWORD, ADMIN_USER, Api, App, Stack, StackOptions, data_dir,
    idp::{CLIENT_ID, CLIENT_SECRET, Idp, Person},
    shapefile_members, zip_owned,
};

fn repository() -> PathBuf {
    catalog_tests::package_dir().join("..")
}

#[tokio::test]
async fn the_api_serves_the_app_on_its_paths_and_problems_on_its_own() {
    let stack = Stack::start_with(StackOptions::workers(0)).await;
    let page = stack
        .http
        .get(stack.url("/datasets/some/deep/link"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-cache");
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    let html = page.text().await.unwrap();
    let script = html
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page names its script");
    assert!(script.starts_with("/assets/"), "{script}");

    let asset = stack.http.get(stack.url(script)).send().await.unwrap();
    assert_eq!(asset.status(), 200);
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(asset.headers()["content-type"], "text/javascript");
    let plain = asset.bytes().await.unwrap();
    let zipped = stack
        .http
        .get(stack.url(script))
        .header("accept-encoding", "gzip, br;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let zipped = zipped.bytes().await.unwrap();
    assert!(zipped.len() * 2 < plain.len(), "gzip shrinks the script");
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped[..]), &mut unzipped).unwrap();
    assert_eq!(unzipped, plain, "the gzipped script is the script");

    let policy = |response: &reqwest::Response| {
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_string()
    };
    let home = stack.http.get(stack.url("/")).send().await.unwrap();
    assert!(
        policy(&home).contains("frame-ancestors 'none'"),
        "no site may frame the app"
    );
    let embed = stack
        .http
        .get(stack.url("/maps/shared/some-token/embed"))
        .send()
        .await
        .unwrap();
    assert!(
        !policy(&embed).contains("frame-ancestors"),
        "any site may embed a shared map's view"
    );
    assert!(policy(&embed).contains("script-src 'self'"));

    let callback = stack
        .http
        .get(stack.url("/oauth/callback?error=x"))
        .send()
        .await
        .unwrap();
    assert_eq!(callback.status(), 200, "the SSO callback is the app's page");

    for path in ["/assets/missing.js", "/api/nothing"] {
        let response = stack
            .http
            .get(stack.url(path))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{path}");
    }
    let post = stack.http.post(stack.url("/datasets")).send().await.unwrap();
    assert_eq!(post.status(), 404, "only GET and HEAD get the app");
}

/// The text of every script a page loads before it runs: the ones it
/// names, and the modules they import statically, transitively (MapLibre,
/// imported on demand by the map, is a library and left out).
async fn scripts_of(app: &App, html: &str) -> String {
    let mut queue: Vec<String> = html
        .split("=\"/assets/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|name| name.ends_with(".js"))
        .map(str::to_string)
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut text = String::new();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let response = app.send(app.http.get(app.url(&format!("/assets/{name}")))).await;
        assert_eq!(response.status(), 200, "{name}");
        let script = response.text().await.unwrap();
        for marker in ["from\"./", "import\"./"] {
            queue.extend(
                script
                    .split(marker)
                    .skip(1)
                    .filter_map(|rest| rest.split('"').next())
                    .map(str::to_string),
            );
        }
        text.push_str(&script);
    }
    text
}

/// Clickjacking: only a shared map's embeddable view may be framed, by
/// any site; every other answer (the app's pages, the people's page of a
/// shared map, API documents, problems, assets) refuses framing in both
/// the old header and the CSP one. The embeddable view is a document of
/// its own whose scripts hold none of the app's screens: no sign-in form,
/// no navigation, nothing a framing page could trick a click into.
#[tokio::test]
async fn only_the_embeddable_map_view_may_be_framed() {
    let app = App::start().await;
    let home = app.send(app.http.get(app.url("/"))).await;
    let home = home.text().await.unwrap();
    let script = home
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page names its script")
        .to_string();
    for path in [
        "/",
        "/signin",
        "/maps/shared/some-token",
        "/maps/shared/some-token/embed/more",
        "/api/health",
        "/api/openapi.json",
        "/api/nothing",
        "/api/maps/shared/some-token",
        script.as_str(),
    ] {
        let response = app.send(app.http.get(app.url(path))).await;
        assert_eq!(response.headers()["x-frame-options"], "DENY", "{path}");
        let policy = response.headers()["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
    }
    let refused = app.send(app.http.post(app.url("/api/datasets/upload"))).await;
    assert_eq!(refused.headers()["x-frame-options"], "DENY");

    let embed = app.send(app.http.get(app.url("/maps/shared/some-token/embed"))).await;
    assert_eq!(embed.status(), 200);
    assert!(embed.headers().get("x-frame-options").is_none());
    let policy = embed.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(!policy.contains("frame-ancestors"), "any site may frame it: {policy}");
    assert!(policy.contains("script-src 'self'"), "{policy}");
    let embed = embed.text().await.unwrap();
    assert_ne!(embed, home, "the view is a document of its own");
    let app_scripts = scripts_of(&app, &home).await;
    let embed_scripts = scripts_of(&app, &embed).await;
    for shell in ["Sign in", "Password", "Skip to content", "Sign out"] {
        assert!(app_scripts.contains(shell), "the app's scripts hold {shell:?}");
        assert!(!embed_scripts.contains(shell), "the embeddable view holds {shell:?}");
    }
}

/// The budget: the app's JavaScript, MapLibre aside, is at most 200 KB
/// gzipped.
#[test]
fn the_app_script_stays_within_its_budget() {
    let assets = repository().join("ui/dist/assets");
    let mut gzipped = 0;
    for entry in std::fs::read_dir(&assets).expect("ui/dist is built (scripts/test.sh builds it)") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.ends_with(".js") || name.ends_with(".mjs")) || name.starts_with("maplibre") {
            continue;
        }
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut encoder, &std::fs::read(&path).unwrap()).unwrap();
        gzipped += encoder.finish().unwrap().len();
    }
    assert!(gzipped > 10_000, "the app's script was found ({gzipped} bytes)");
    assert!(
        gzipped <= 200 * 1024,
        "the app's script is {gzipped} bytes gzipped, over 200 KB"
    );
}

/// The first page people open loads at most 120 KB of script (gzipped),
/// MapLibre not among it: the map library comes only with a page that
/// draws a map.
#[tokio::test]
async fn the_first_page_loads_little_script_and_no_map_library() {
    let app = App::start().await;
    let home = app.send(app.http.get(app.url("/"))).await.text().await.unwrap();
    let script = scripts_of(&app, &home).await;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, script.as_bytes()).unwrap();
    let gzipped = encoder.finish().unwrap().len();
    assert!(gzipped > 10_000, "the page's script was found ({gzipped} bytes)");
    assert!(
        gzipped <= 120 * 1024,
        "the first page loads {gzipped} bytes of script gzipped, over 120 KB"
    );
    assert!(
        !script.contains("createShader"),
        "MapLibre's own code is not in the first page's script"
    );
}

/// The UI's API types are generated from the document the API serves
/// (`npm run api-types` in `ui/`); a change to the API that the UI has not
/// taken up fails here.
#[tokio::test]
async fn the_ui_types_match_the_served_openapi_document() {
    let stack = Stack::start_with(StackOptions::workers(0)).await;
    let document = stack.http.get(stack.url("/api/openapi.json")).send().await.unwrap();
    assert_eq!(document.status(), 200);
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("openapi.json");
    std::fs::write(&served, document.bytes().await.unwrap()).unwrap();
    let generated = dir.path().join("api-types.ts");
    let status = std::process::Command::new("node")
        .arg(repository().join("ui/node_modules/openapi-typescript/bin/cli.js"))
        .arg(&served)
        .arg("-o")
        .arg(&generated)
        .status()
        .expect("node runs");
    assert!(status.success());
    let committed = std::fs::read_to_string(repository().join("ui/src/api-types.ts")).unwrap();
    assert!(
        std::fs::read_to_string(&generated).unwrap() == committed,
        "ui/src/api-types.ts is out of date: run `npm run api-types` in ui/ against the current /api/openapi.json"
    );
}

/// The banner the stack is configured with: typed markup, shown as text.
const BANNER_TEXT: &str = "<b>Maintenance</b> on Sunday";
const WEBHOOK_SECRET: &str = "Webhook-Secret-For-The-UI-1";

/// A webhook receiver on loopback: the bodies it was sent and whether
/// each carried the signature of `WEBHOOK_SECRET`.
async fn webhook_receiver() -> (String, Arc<Mutex<Vec<(bool, serde_json::Value)>>>) {
    use hmac::{Hmac, KeyInit, Mac};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let deliveries = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let deliveries = deliveries.clone();
            async move {
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
                mac.update(body.as_bytes());
                let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
                let signed = headers
                    .get("x-catalog-signature")
                    .is_some_and(|v| v.to_str().unwrap() == format!("sha256={expected}"));
                deliveries
                    .lock()
                    .unwrap()
                    .push((signed, serde_json::from_str(&body).unwrap()));
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn people_sign_in_upload_explore_share_and_administer_in_the_browser() {
    let idp = Idp::start().await;
    idp.sign_in_next(Person {
        subject: "ui-person".into(),
        email: Some("ui.person@example.org".into()),
        email_verified: Some(true),
        name: Some("UI Person".into()),
        addresses: Vec::new(),
    });
    let (webhook, deliveries) = webhook_receiver().await;
    // Loopback on any port: the OIDC provider, the webhook receiver, and
    // this service itself as a remote OGC API Features server.
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1")
            .env("BANNER_ENABLED", "true")
            .env("BANNER_TEXT", BANNER_TEXT)
            .env("BANNER_COLOR", "#fde68a"),
    )
    .await;
    let modules = repository().join("ui/node_modules");
    // Natural Earth's countries, a zipped shapefile, for the map maker's flows.
    let files = tempfile::tempdir().unwrap();
    let world = files.path().join("countries.zip");
    std::fs::write(&world, zip_owned(&shapefile_members("shp/naturalearth_lowres"))).unwrap();
    // And a point inside each, with its population, for symbols sized by a number.
    let populations = files.path().join("populations.geojson");
    let made = std::process::Command::new("ogr2ogr")
        .args(["-f", "GeoJSON", "-nln", "populations", "-dialect", "sqlite", "-sql"])
        .arg("SELECT name, pop_est, ST_PointOnSurface(geometry) AS geometry FROM naturalearth_lowres")
        .arg(&populations)
        .arg(data_dir().join("shp/naturalearth_lowres/naturalearth_lowres.shp"))
        .status()
        .unwrap();
    assert!(made.success());
    // A GeoPackage of two layers: the countries and the capitals.
    let two_layers = files.path().join("world.gpkg");
    for (layer, source, mode) in [
        (
            "countries",
            "shp/naturalearth_lowres/naturalearth_lowres.shp",
            "-overwrite",
        ),
        ("capitals", "shp/naturalearth_cities/naturalearth_cities.shp", "-update"),
    ] {
        let made = std::process::Command::new("ogr2ogr")
            .args(["-f", "GPKG", mode, "-nln", layer])
            .arg(&two_layers)
            .arg(data_dir().join(source))
            .status()
            .unwrap();
        assert!(made.success());
    }
    let shots = std::env::var("CATALOG_UI_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repository().join(".data/ui-screenshots"));
    // Async, so that the OIDC provider in this process answers meanwhile.
    let output = tokio::process::Command::new("node")
        .arg(repository().join("tests/clients/ui_flows.mjs"))
        .env("CATALOG_BASE", &stack.base)
        .env("CATALOG_ADMIN_USER", ADMIN_USER)
        .env("CATALOG_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("CATALOG_UI_MODULES", &modules)
        .env("CATALOG_UPLOAD", data_dir().join("gpkg/nc.gpkg"))
        .env("CATALOG_RASTER", data_dir().join("raster/elev_luxembourg.tif"))
        .env("CATALOG_WORLD", &world)
        .env("CATALOG_POINTS", &populations)
        .env("CATALOG_TWO_LAYERS", &two_layers)
        .env("CATALOG_WEBHOOK", &webhook)
        .env("CATALOG_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("CATALOG_BANNER_TEXT", BANNER_TEXT)
        .env(
            "CATALOG_IDP_DISCOVERY",
            format!("{}/.well-known/openid-configuration", idp.base),
        )
        .env("CATALOG_IDP_CLIENT_ID", CLIENT_ID)
        .env("CATALOG_IDP_CLIENT_SECRET", CLIENT_SECRET)
        .env("CATALOG_SCREENSHOTS", &shots)
        .env(
            "CHROMIUM",
            std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
        )
        .output()
        .await
        .expect("node runs (scripts/test.sh installs it)");
    assert!(
        output.status.success(),
        "the browser flows failed:\n{}\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        stack.logs()
    );
    // The test notification sent from the admin screen reached the webhook, signed.
    let tests: Vec<_> = deliveries
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, body)| body["event"] == "test")
        .cloned()
        .collect();
    assert_eq!(tests.len(), 1, "one test notification: {tests:?}");
    assert!(tests[0].0, "signed with the secret typed in the browser");
    for screen in [
        "signin",
        "upload",
        "dataset",
        "catalog",
        "jobs",
        "job-report",
        "account",
        "maps",
        "map-editor",
        "shared-map",
        "shared-map-embed",
        "register",
        "admin-users",
        "admin-providers",
        "upload-service",
        "dataset-service-preview",
        "maps-import",
        "map-imported",
        "map-basemap",
        "dataset-grants",
        "catalog-reader",
        "admin-quotas",
        "upload-refused",
        "admin-notifications",
        "admin-banner",
        "phone-admin-quotas",
        "phone-admin-notifications",
        "phone-admin-banner",
        "phone-upload",
        "phone-map-editor",
        "not-found",
        "ogc-landing",
        "ogc-collection",
        "ogc-items",
        "ogc-item",
        "phone-ogc-items",
        "map-share",
        "map-share-phone",
        "map-editor-phone",
        "dataset-phone",
        "dataset-table",
        "dataset-raster",
        "api-view",
        "forgot-password",
        "reset-password",
        "account-sign-out",
        "phone-menu",
    ] {
        assert!(
            shots.join(format!("{screen}.jpg")).is_file(),
            "a screenshot of {screen}"
        );
    }
}
