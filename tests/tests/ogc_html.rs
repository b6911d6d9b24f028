//! The OGC routes' pages for people (`f=html`, or a browser's `Accept`):
//! what a person sees on each, that clients still get the JSON they
//! always had, that errors stay problem documents, that typed markup is
//! shown as text, that the links lead through the catalog and keep the
//! caller's query-string key, and that private collections stay private.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const MARKUP: &str = "<img src=x onerror=alert(1)>";
const ESCAPED: &str = "&lt;img src=x onerror=alert(1)&gt;";

/// A table of `rows` points in `data`, registered as a dataset; answers its id.
async fn register(
    app: &App,
    token: &str,
    table: &str,
    title: &str,
    visibility: &str,
    points: &[(f64, f64, &str)],
) -> String {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE data.{table} (gid bigint PRIMARY KEY, geom geometry(Point, 4326), name text, note text)"
    )))
    .execute(&app.pool)
    .await
    .unwrap();
    for (i, (x, y, note)) in points.iter().enumerate() {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO data.{table} VALUES ($1, ST_SetSRID(ST_MakePoint($2, $3), 4326), $4, $5)"
        )))
        .bind(i as i64 + 1)
        .bind(x)
        .bind(y)
        .bind(format!("place {}", i + 1))
        .bind(note)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    let request = app
        .http
        .post(app.url("/api/ingest/register/bulk"))
        .bearer_auth(token)
        .json(&json!({"tables": [{"table_name": format!("data.{table}"), "title": title, "summary": format!("About {title}"), "visibility": visibility}]}));
    let body: Value = app.send(request).await.json().await.unwrap();
    assert_eq!(body["results"][0]["status"], "success", "{body}");
    body["results"][0]["dataset_id"].as_str().unwrap().to_string()
}

/// A line of points across Europe, the last one's note holding markup.
fn grid(n: usize) -> Vec<(f64, f64, &'static str)> {
    (0..n)
        .map(|i| {
            (
                -10.0 + i as f64,
                40.0 + (i % 5) as f64,
                if i + 1 == n { MARKUP } else { "plain" },
            )
        })
        .collect()
}

struct Answer {
    status: u16,
    content_type: String,
    vary: String,
    policy: String,
    body: String,
}

async fn get(app: &App, url: &str, accept: Option<&str>) -> Answer {
    let url = if url.starts_with("http") {
        url.to_string()
    } else {
        app.url(url)
    };
    let mut request = app.http.get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = app.send(request).await;
    let header = |name: &str| {
        response
            .headers()
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Answer {
        status: response.status().as_u16(),
        content_type: header("content-type"),
        vary: header("vary"),
        policy: header("content-security-policy"),
        body: response.text().await.unwrap(),
    }
}

/// A page a person can read: HTML in English, one `h1`, under a policy
/// that loads and runs nothing, varying with `Accept`.
fn assert_page(what: &str, answer: &Answer) {
    assert_eq!(answer.status, 200, "{what}: {}", answer.body);
    assert_eq!(answer.content_type, "text/html; charset=utf-8", "{what}");
    assert!(answer.body.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{what}");
    assert_eq!(answer.body.matches("<h1>").count(), 1, "{what}: one h1");
    for landmark in ["<header>", "<nav aria-label=\"Breadcrumb\">", "<main>", "<footer>"] {
        assert!(answer.body.contains(landmark), "{what}: {landmark}");
    }
    // No script runs: the one kind of script block a page holds is
    // schema.org's JSON-LD, data a browser never runs.
    assert_eq!(
        answer.body.matches("<script").count(),
        answer.body.matches(r#"<script type="application/ld+json">"#).count(),
        "{what}: no script but JSON-LD data"
    );
    assert!(
        answer.policy.contains("default-src 'none'"),
        "{what}: {}",
        answer.policy
    );
    assert!(answer.policy.contains("style-src 'sha256-"), "{what}");
    assert!(answer.vary.to_lowercase().contains("accept"), "{what}");
}

fn assert_json(what: &str, answer: &Answer) -> Value {
    assert_eq!(answer.status, 200, "{what}: {}", answer.body);
    assert!(
        ["application/json", "application/geo+json", "application/schema+json"].contains(&answer.content_type.as_str()),
        "{what}: {}",
        answer.content_type
    );
    assert!(answer.vary.to_lowercase().contains("accept"), "{what}");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn assert_problem(what: &str, answer: &Answer, status: u16) {
    assert_eq!(answer.status, status, "{what}: {}", answer.body);
    assert_eq!(answer.content_type, "application/problem+json", "{what}");
    let problem: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(problem["status"], status, "{what}");
}

/// The links of a page, as a browser reads them (`&amp;` is `&`).
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

/// The link whose text is `text`.
fn link_named(html: &str, text: &str) -> String {
    html.split("<a ")
        .skip(1)
        .find(|a| {
            a.split_once('>')
                .is_some_and(|(_, rest)| rest.starts_with(&format!("{text}</a>")))
        })
        .and_then(|a| hrefs(&format!(" {a}")).into_iter().next())
        .unwrap_or_else(|| panic!("a link named {text:?} in {html}"))
}

/// Every route with a page, for a public dataset and a metadata record.
fn routes(collection: &str, record: &str) -> Vec<String> {
    vec![
        "/api".into(),
        "/api/conformance".into(),
        "/api/collections".into(),
        format!("/api/collections/{collection}"),
        format!("/api/collections/{collection}/queryables"),
        format!("/api/collections/{collection}/items"),
        format!("/api/collections/{collection}/items/1"),
        "/api/collections/catalog".into(),
        "/api/collections/catalog/items".into(),
        format!("/api/collections/catalog/items/{record}"),
    ]
}

async fn metadata_record(app: &App, token: &str, body: Value) -> String {
    let request = app.http.post(app.url("/api/records")).bearer_auth(token).json(&body);
    let response = app.send(request).await;
    assert_eq!(response.status(), 201);
    response.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn browsers_get_pages_and_clients_keep_their_json() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "places", "Places", "public", &grid(3)).await;
    let record = metadata_record(&app, &token, json!({"title": "Survey", "extent_bbox": [0, 0, 10, 10]})).await;

    for route in routes(&collection, &record) {
        assert_page(
            &format!("{route}?f=html"),
            &get(&app, &format!("{route}?f=html"), None).await,
        );
        assert_page(
            &format!("{route} for a browser"),
            &get(&app, &route, Some(BROWSER)).await,
        );
        for accept in [
            None,
            Some("*/*"),
            Some("application/json"),
            Some("application/geo+json"),
        ] {
            assert_json(&format!("{route} for {accept:?}"), &get(&app, &route, accept).await);
        }
        let forced = format!("{route}?f=json");
        assert_json(
            &format!("{forced} for a browser"),
            &get(&app, &forced, Some(BROWSER)).await,
        );
    }
    // The items route keeps the names of its JSON it always took.
    let items = format!("/api/collections/{collection}/items?f=geojson");
    assert_eq!(
        get(&app, &items, Some(BROWSER)).await.content_type,
        "application/geo+json"
    );
}

#[tokio::test]
async fn errors_stay_problem_documents_for_browsers() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "places", "Places", "public", &grid(3)).await;
    let missing = uuid::Uuid::now_v7();
    for (route, status) in [
        (format!("/api/collections/{missing}"), 404),
        (format!("/api/collections/{missing}/items"), 404),
        (format!("/api/collections/{collection}/items/999"), 404),
        (format!("/api/collections/catalog/items/{missing}"), 404),
        (format!("/api/collections/{collection}/items?bbox=1,2,3"), 400),
        (
            format!("/api/collections/{collection}/items?filter=nonsense%20%3D"),
            400,
        ),
        ("/api/collections/catalog/items?sortby=colour".to_string(), 400),
        ("/api/collections?f=xml".to_string(), 400),
        ("/api?f=pdf".to_string(), 400),
        ("/api/no/such/route".to_string(), 404),
    ] {
        assert_problem(&route, &get(&app, &route, Some(BROWSER)).await, status);
        let asked = format!("{route}{}f=html", if route.contains('?') { '&' } else { '?' });
        if !route.contains("f=") {
            assert_problem(&asked, &get(&app, &asked, None).await, status);
        }
    }
}

#[tokio::test]
async fn typed_markup_is_shown_as_text() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "places", MARKUP, "public", &grid(3)).await;
    let record = metadata_record(
        &app,
        &token,
        json!({"title": MARKUP, "description": MARKUP, "keywords": [MARKUP], "properties": {"source": MARKUP}}),
    )
    .await;
    let request = app
        .http
        .post(app.url(&format!("/api/records/{record}/contacts")))
        .bearer_auth(&token)
        .json(&json!({"name": MARKUP, "organization": MARKUP}));
    assert_eq!(app.send(request).await.status(), 201);

    for route in routes(&collection, &record).into_iter().skip(2) {
        let page = get(&app, &format!("{route}?f=html"), None).await;
        assert_page(&route, &page);
        assert!(!page.body.contains("<img"), "{route} holds no markup of the user's");
        if route.ends_with("/collections/catalog") {
            continue;
        }
        assert!(
            page.body.contains(ESCAPED),
            "{route} shows the typed text: {}",
            page.body
        );
    }
    let item = get(&app, &format!("/api/collections/{collection}/items/3?f=html"), None).await;
    assert!(
        item.body.contains(&format!("<td>{ESCAPED}</td>")),
        "the property value, as text"
    );
}

#[tokio::test]
async fn links_lead_from_the_landing_page_to_a_feature_and_back_to_json() {
    let app = App::start().await;
    let token = app.admin_token().await;
    register(&app, &token, "places", "Places", "public", &grid(3)).await;

    let landing = get(&app, "/api", Some(BROWSER)).await;
    assert_page("landing", &landing);
    assert!(landing.body.contains("<h1>Spatial Data Catalog</h1>"));
    let collections = get(&app, &link_named(&landing.body, "Collections"), None).await;
    assert_page("collections", &collections);
    assert!(
        collections.body.contains("<td>About Places</td>"),
        "each collection's description"
    );
    let page = get(&app, &link_named(&collections.body, "Places"), None).await;
    assert_page("collection", &page);
    assert!(page.body.contains("<h1>Places</h1>"));
    assert!(page.body.contains("<h2>Extent</h2>") && page.body.contains("class=\"map\""));
    assert!(page.body.contains("role=\"img\" aria-label=\"Map of the extent"));
    for queryable in ["<code>name</code>", "<code>note</code>", "<code>gid</code>"] {
        assert!(page.body.contains(queryable), "the queryables are listed: {queryable}");
    }
    let queryables = get(&app, &link_named(&page.body, "Queryables"), None).await;
    assert_page("queryables", &queryables);
    let items = get(&app, &link_named(&page.body, "Features"), None).await;
    assert_page("items", &items);
    assert!(items.body.contains("Showing 3 of 3 matching features."));
    assert!(items.body.contains("<th scope=\"col\">name</th>") && items.body.contains("<td>place 2</td>"));
    assert!(items.body.contains("aria-label=\"Map of the features"));
    let item = get(&app, &link_named(&items.body, "2"), None).await;
    assert_page("item", &item);
    assert!(item.body.contains("<h1>Feature 2</h1>"));
    assert!(item.body.contains("<th scope=\"row\">name</th><td>place 2</td>"));

    // Back up the breadcrumb, and over to the JSON.
    let back = get(&app, &link_named(&item.body, "Places"), None).await;
    assert!(back.body.contains("<h1>Places</h1>"));
    let json = get(&app, &link_named(&item.body, "JSON"), Some(BROWSER)).await;
    let feature = assert_json("the item's JSON", &json);
    assert_eq!(feature["properties"]["name"], "place 2");
    let home = get(&app, &link_named(&item.body, "Home"), None).await;
    assert!(home.body.contains("<h1>Spatial Data Catalog</h1>"));
    let conformance = get(&app, &link_named(&home.body, "Conformance"), None).await;
    assert!(
        conformance
            .body
            .contains("<code>http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html</code>")
    );
}

#[tokio::test]
async fn pages_of_items_and_records_go_both_ways_and_keep_the_query() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "places", "Places", "public", &grid(25)).await;

    let first = get(
        &app,
        &format!("/api/collections/{collection}/items?limit=10&note=plain&f=html"),
        None,
    )
    .await;
    assert!(
        first.body.contains("Showing 10 of 24 matching features."),
        "{}",
        first.body
    );
    assert!(
        !first.body.contains(">Previous page<"),
        "the first page has no previous"
    );
    let next = link_named(&first.body, "Next page");
    assert!(
        next.contains("note=plain") && next.contains("limit=10") && next.contains("f=html"),
        "{next}"
    );
    let second = get(&app, &next, None).await;
    assert!(second.body.contains("<td>place 11</td>") && !second.body.contains("<td>place 10</td>"));
    let third = get(&app, &link_named(&second.body, "Next page"), None).await;
    assert!(third.body.contains("<td>place 24</td>") && !third.body.contains(">Next page<"));
    assert!(
        !third.body.contains("<td>place 25</td>"),
        "the filter holds on every page"
    );
    let back = get(&app, &link_named(&third.body, "Previous page"), None).await;
    assert!(back.body.contains("<td>place 11</td>") && back.body.contains("<td>place 20</td>"));
    let start = get(&app, &link_named(&back.body, "Previous page"), None).await;
    assert!(start.body.contains("<td>place 1</td>") && start.body.contains("<td>place 10</td>"));
    // Offset paging (legacy) goes back too.
    let offset = get(
        &app,
        &format!("/api/collections/{collection}/items?limit=10&offset=10&f=html"),
        None,
    )
    .await;
    let before = get(&app, &link_named(&offset.body, "Previous page"), None).await;
    assert!(before.body.contains("<td>place 1</td>"));

    for i in 0..3 {
        metadata_record(&app, &token, json!({"title": format!("Survey {i}"), "type": "survey"})).await;
    }
    let records = get(
        &app,
        "/api/collections/catalog/items?type=survey&sortby=title&limit=2&f=html",
        None,
    )
    .await;
    assert_page("records", &records);
    assert!(records.body.contains("Showing 2 of 3 matching records."));
    let next = link_named(&records.body, "Next page");
    assert!(next.contains("type=survey") && next.contains("sortby=title"), "{next}");
    let rest = get(&app, &next, None).await;
    assert!(rest.body.contains(">Survey 2</a>") && !rest.body.contains(">Survey 0</a>"));
    let again = get(&app, &link_named(&rest.body, "Previous page"), None).await;
    assert!(again.body.contains(">Survey 0</a>"));
    let record = get(&app, &link_named(&again.body, "Survey 1"), None).await;
    assert_page("record", &record);
    assert!(record.body.contains("<h1>Survey 1</h1>") && record.body.contains("<dd>survey</dd>"));
}

#[tokio::test]
async fn private_collections_stay_private_and_a_query_key_rides_along() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "secret", "Secret places", "private", &grid(12)).await;
    for route in [
        format!("/api/collections/{collection}"),
        format!("/api/collections/{collection}/items"),
        format!("/api/collections/{collection}/items/1"),
        format!("/api/collections/{collection}/queryables"),
    ] {
        assert_problem(&route, &get(&app, &route, Some(BROWSER)).await, 404);
    }
    let collections = get(&app, "/api/collections?f=html", None).await;
    assert!(
        !collections.body.contains("Secret places"),
        "not listed for anonymous callers"
    );

    let key = app.api_key(&token, "read_only").await;
    let page = get(&app, &format!("/api/collections?f=html&api_key={key}"), None).await;
    assert!(page.body.contains("Secret places"));
    for href in hrefs(&page.body) {
        assert!(
            href.contains(&format!("api_key={key}")),
            "every link carries the key: {href}"
        );
    }
    let collection_page = get(&app, &link_named(&page.body, "Secret places"), None).await;
    assert_page("the private collection", &collection_page);
    let items = get(&app, &link_named(&collection_page.body, "Features"), None).await;
    assert_page("its items", &items);
    let next = get(&app, &link_named(&items.body, "Next page"), None).await;
    assert!(next.body.contains("<td>place 11</td>"));
    let json = assert_json("its JSON", &get(&app, &link_named(&next.body, "JSON"), None).await);
    assert_eq!(json["numberReturned"], 2);
    // Without the key, the same link is a 404.
    let bare = link_named(&next.body, "JSON").replace(&format!("&api_key={key}"), "");
    assert_problem("without the key", &get(&app, &bare, Some(BROWSER)).await, 404);
}

#[tokio::test]
async fn json_documents_link_their_pages() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let collection = register(&app, &token, "places", "Places", "public", &grid(3)).await;
    let record = metadata_record(&app, &token, json!({"title": "Survey"})).await;
    // The queryables are a JSON Schema: no links there.
    for route in routes(&collection, &record)
        .into_iter()
        .filter(|r| !r.ends_with("/queryables"))
    {
        let document = assert_json(&route, &get(&app, &route, None).await);
        let alternate = document["links"]
            .as_array()
            .unwrap_or_else(|| panic!("{route}: links"))
            .iter()
            .find(|l| l["rel"] == "alternate" && l["type"] == "text/html")
            .unwrap_or_else(|| panic!("{route}: an HTML alternate in {document}"));
        let href = alternate["href"].as_str().unwrap();
        assert!(href.ends_with("f=html"), "{href}");
        assert_page(&format!("the page of {route}"), &get(&app, href, None).await);
    }
    let (_, collections) = app.get_json(None, "/api/collections").await;
    for c in collections["collections"].as_array().unwrap() {
        assert!(
            c["links"].as_array().unwrap().iter().any(|l| l["type"] == "text/html"),
            "{c}"
        );
    }
}

#[tokio::test]
async fn conformance_claims_html_and_the_api_document_says_how_to_ask() {
    let app = App::start().await;
    let (_, conformance) = app.get_json(None, "/api/conformance").await;
    let classes: Vec<&str> = conformance["conformsTo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for class in [
        "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/html",
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/html",
    ] {
        assert!(classes.contains(&class), "{class}");
    }
    let (_, document) = app.get_json(None, "/api/openapi.json").await;
    for path in [
        "/",
        "/conformance",
        "/collections",
        "/collections/{collectionId}",
        "/collections/{collectionId}/items",
        "/collections/{collectionId}/items/{featureId}",
        "/collections/catalog/items",
    ] {
        let operation = &document["paths"][path]["get"];
        let f = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "f")
            .unwrap_or_else(|| panic!("{path}: f"));
        assert_eq!(f["in"], "query");
        let schema = f["schema"].to_string();
        assert!(
            schema.contains("\"json\"") && schema.contains("\"html\""),
            "{path}: {schema}"
        );
        assert!(
            operation["responses"]["200"]["content"]["text/html"].is_object(),
            "{path}"
        );
    }
}

#[tokio::test]
async fn maps_draw_data_across_the_antimeridian_together() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let points = [(175.0, -17.0, "a"), (-178.0, -18.0, "b"), (179.5, -16.0, "c")];
    let collection = register(&app, &token, "fiji", "Fiji", "public", &points).await;
    let page = get(&app, &format!("/api/collections/{collection}?f=html"), None).await;
    assert!(page.body.contains("The extent crosses the antimeridian (180°)."));
    assert!(page.body.contains("<dt>West</dt><dd>175</dd>"));
    let items = get(&app, &format!("/api/collections/{collection}/items?f=html"), None).await;
    // Drawn together east of 175°E, the graticule reading 180° and 178°W.
    assert!(
        items.body.contains(">180°</text>") && items.body.contains(">178°W</text>"),
        "{}",
        items.body
    );
    assert!(!items.body.contains(">0°</text>"), "not stretched across the world");
}
