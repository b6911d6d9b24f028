//! OGC API Features and CQL2 against the real stack, with the OGC's own
//! CQL2 test data, and real clients (GDAL's ogrinfo, OWSLib).
use std::{collections::BTreeSet, process::Command};

use catalog_tests::{Api, App, Stack, StackOptions, data_dir, data_file};
use serde_json::{Value, json};

/// Ingests a public GeoJSON and answers its collection id.
async fn public_collection(stack: &impl Api, token: &str, name: &str, geojson: Vec<u8>) -> String {
    let job = stack
        .upload_ok(token, name, geojson, &[("visibility", "public"), ("title", name)])
        .await;
    let job = stack.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

/// The OGC CQL2 test data (Annex A), registered in place as a public
/// collection; its id. The data is planar, not WGS 84 (its hexagons reach
/// latitude 101°), so ingest refuses it (`docs/decisions.md`, Values the
/// service refuses); served from a table already in PostGIS, as such a
/// table would be, every filter of the suite runs on it as written.
async fn cql2_collection(app: &App, token: &str) -> String {
    let text = std::fs::read_to_string(data_dir().join("cql2/ats/cql2testdata.ndjson")).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    sqlx::raw_sql(
        "CREATE TABLE public.cql2testdata (gid serial PRIMARY KEY, intfield integer, textfield text,
           floatfield double precision, boolfield boolean, datefield date, ts_start timestamptz,
           ts_end timestamptz, intarrayfield jsonb, nfield boolean, geom geometry(Geometry, 4326))",
    )
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO public.cql2testdata (intfield, textfield, floatfield, boolfield, datefield, ts_start, ts_end,
                                          intarrayfield, nfield, geom)
         SELECT (r->>'intfield')::int, r->>'textfield', (r->>'floatfield')::float8, (r->>'boolfield')::boolean,
                (r->>'datefield')::date, (r->>'ts_start')::timestamptz, (r->>'ts_end')::timestamptz,
                r->'intarrayfield', (r->>'nfield')::boolean, ST_SetSRID(ST_GeomFromGeoJSON(r->'geom'), 4326)
         FROM jsonb_array_elements($1) r",
    )
    .bind(Value::Array(rows))
    .execute(app.pool())
    .await
    .unwrap();
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(token)
                .json(&json!({"tables": [{"table_name": "cql2testdata", "title": "cql2testdata", "visibility": "public"}]})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["results"][0]["status"], "success", "{body}");
    body["results"][0]["dataset_id"].as_str().unwrap().to_string()
}

async fn items(stack: &impl Api, collection: &str, query: &[(&str, &str)]) -> (u16, Value) {
    let response = stack
        .send(
            stack
                .http()
                .get(stack.url(&format!("/api/collections/{collection}/items")))
                .query(query),
        )
        .await;
    let status = response.status().as_u16();
    if status == 200 {
        assert_eq!(response.headers()["content-type"], "application/geo+json");
    }
    (status, response.json().await.unwrap())
}

fn ids(body: &Value) -> Vec<i64> {
    body["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_i64().unwrap())
        .collect()
}

fn intfields(body: &Value) -> BTreeSet<i64> {
    body["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["properties"]["intfield"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn landing_conformance_and_collections() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = public_collection(&app, &token, "grid.geojson", grid()).await;

    for path in ["/api", "/api/", "/api/conformance"] {
        let response = app
            .send(app.http().get(app.url(path)).header("X-Api-Key", "garbage"))
            .await;
        assert_eq!(response.status(), 200, "{path} reads no credential");
    }
    let (_, landing) = app.get_json(None, "/api/").await;
    let rels: Vec<&str> = landing["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap())
        .collect();
    for rel in ["self", "service-desc", "conformance", "data"] {
        assert!(rels.contains(&rel), "{rel} in {rels:?}");
    }
    let (_, conformance) = app.get_json(None, "/api/conformance").await;
    let declared: Vec<&str> = conformance["conformsTo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let classes: BTreeSet<&str> = declared.iter().copied().collect();
    assert_eq!(classes.len(), declared.len(), "no class twice: {declared:?}");
    // Exactly these: a class dropped or claimed by mistake fails here (no
    // OAS 3.0 class is claimed).
    let expected: BTreeSet<&str> = [
        "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
        "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
        "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/html",
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
        "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
        "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables",
        "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete",
        "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/update",
        "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
        "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
        "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
        "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
        "http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2",
        "http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators",
        "http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core-query-parameters",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/sorting",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/json",
        "http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/html",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tileset",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tilesets-list",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/geodata-tilesets",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/mvt",
        "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/png",
    ]
    .into_iter()
    .collect();
    assert_eq!(
        classes.difference(&expected).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "claimed but not expected"
    );
    assert_eq!(
        expected.difference(&classes).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "expected but not claimed"
    );

    let (status, collections) = app.get_json(None, "/api/collections").await;
    assert_eq!(status, 200);
    let all = collections["collections"].as_array().unwrap();
    assert!(
        all.iter().any(|c| c["id"] == "catalog" && c["itemType"] == "record"),
        "the Records catalog is a collection too"
    );
    let listed: Vec<&Value> = all.iter().filter(|c| c["itemType"] == "feature").collect();
    assert_eq!(listed.len(), 1);
    let c = listed[0];
    assert_eq!(c["id"], id);
    assert_eq!(c["itemType"], "feature");
    assert_eq!(
        c["extent"]["spatial"]["crs"],
        "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
    );
    assert_eq!(c["extent"]["spatial"]["bbox"][0].as_array().unwrap().len(), 4);
    assert!(
        c["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["rel"] == "items" && l["type"] == "application/geo+json")
    );
    assert_eq!(app.get_json(None, &format!("/api/collections/{id}")).await.0, 200);
    assert_eq!(app.get_json(None, "/api/collections/not-a-collection").await.0, 404);
    assert_eq!(
        app.get_json(None, &format!("/api/collections/{}", uuid::Uuid::now_v7()))
            .await
            .0,
        404
    );

    let response = app
        .send(app.http().get(app.url(&format!("/api/collections/{id}/queryables"))))
        .await;
    assert_eq!(response.headers()["content-type"], "application/schema+json");
    let queryables: Value = response.json().await.unwrap();
    assert_eq!(queryables["properties"]["geom"]["format"], "geometry-point");
    assert_eq!(queryables["properties"]["n"]["type"], "integer");
    assert_eq!(queryables["properties"]["value"]["type"], "number");
    assert_eq!(queryables["properties"]["even"]["type"], "boolean");
    assert_eq!(queryables["properties"]["name"]["type"], "string");
}

/// 400 points on a 20 x 20 grid (x -10..9, y 40..59) with numeric,
/// text and boolean properties.
fn grid() -> Vec<u8> {
    let features: Vec<Value> = (0..400)
        .map(|i| {
            let (x, y) = (-10 + i % 20, 40 + i / 20);
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]},
                   "properties": {"n": i + 1, "name": format!("p{}", i + 1), "value": (i + 1) as f64 * 1.5, "even": i % 2 == 1}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn items_parameters_paging_and_errors() {
    let app = App::start_with_worker_and(&[("OGC_ITEMS_MAX_PAGE_SIZE", "100")]).await;
    let token = app.admin_token().await;
    let id = public_collection(&app, &token, "grid.geojson", grid()).await;

    let (status, page) = items(&app, &id, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(page["type"], "FeatureCollection");
    assert_eq!(page["numberReturned"], 10, "default limit");
    assert_eq!(page["numberMatched"], 400);
    assert!(page["timeStamp"].as_str().unwrap().ends_with('Z'));
    let rels: Vec<&str> = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap())
        .collect();
    assert!(
        rels.contains(&"self") && rels.contains(&"next") && rels.contains(&"collection"),
        "{rels:?}"
    );
    assert_eq!(ids(&page), (1..=10).collect::<Vec<_>>(), "ordered by gid");
    // Gzipped for a client that asks, the same document within; a
    // download that answers ranges goes as it is.
    let page_url = app.url(&format!("/api/collections/{id}/items?limit=100"));
    let plain = app.send(app.http().get(&page_url)).await;
    assert!(plain.headers().get("content-encoding").is_none());
    let plain: Value = plain.json().await.unwrap();
    let zipped = app
        .send(app.http().get(&page_url).header("accept-encoding", "gzip"))
        .await;
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let vary: Vec<String> = zipped
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
        .collect();
    assert!(vary.iter().any(|v| v.contains("accept-encoding")), "{vary:?}");
    let bytes = zipped.bytes().await.unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    assert!(
        bytes.len() * 3 < text.len(),
        "{} bytes gzipped of {}",
        bytes.len(),
        text.len()
    );
    let unzipped: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(unzipped["features"], plain["features"]);
    let download = app
        .send(
            app.http()
                .get(app.url(&format!("/api/datasets/{id}/download?format=geojson")))
                .header("accept-encoding", "gzip"),
        )
        .await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.headers()["accept-ranges"], "bytes");
    assert!(download.headers().get("content-encoding").is_none());
    assert_eq!(
        page["features"][0]["properties"],
        json!({"n": 1, "name": "p1", "value": 1.5, "even": false})
    );

    let (_, clamped) = items(&app, &id, &[("limit", "100000")]).await;
    assert_eq!(clamped["numberReturned"], 100, "clamped, never rejected");
    assert_eq!(items(&app, &id, &[("limit", "0")]).await.0, 400);
    assert_eq!(items(&app, &id, &[("limit", "ten")]).await.0, 400);

    // Following next links visits every feature once.
    let mut seen = Vec::new();
    let mut url = app.url(&format!("/api/collections/{id}/items?limit=70"));
    loop {
        let page: Value = app.send(app.http().get(&url)).await.json().await.unwrap();
        seen.extend(ids(&page));
        match page["links"].as_array().unwrap().iter().find(|l| l["rel"] == "next") {
            Some(next) => url = next["href"].as_str().unwrap().to_string(),
            None => break,
        }
    }
    assert_eq!(seen, (1..=400).collect::<Vec<_>>());

    let (_, keyset) = items(&app, &id, &[("after_gid", "395"), ("limit", "10")]).await;
    assert_eq!(ids(&keyset), vec![396, 397, 398, 399, 400]);
    assert!(
        !keyset["links"].as_array().unwrap().iter().any(|l| l["rel"] == "next"),
        "the last page has no next"
    );
    let (_, offset) = items(&app, &id, &[("offset", "20"), ("limit", "5")]).await;
    assert_eq!(ids(&offset), vec![21, 22, 23, 24, 25]);
    assert!(offset["links"].as_array().unwrap().iter().any(|l| l["rel"] == "prev"));
    assert_eq!(items(&app, &id, &[("offset", "-1")]).await.0, 400);

    // bbox (edges included), property filters and CQL2 combine by AND.
    let (_, bbox) = items(&app, &id, &[("bbox", "-10,40,-6,41"), ("limit", "100")]).await;
    assert_eq!(bbox["numberMatched"], 10, "5 columns x 2 rows");
    let (_, across) = items(&app, &id, &[("bbox", "179,40,-9,41")]).await;
    assert_eq!(
        across["numberMatched"], 4,
        "a bbox across the antimeridian: x -10 and -9, two rows"
    );
    let (_, both) = items(&app, &id, &[("bbox", "-10,40,-6,41"), ("filter", "value > 10")]).await;
    assert_eq!(
        both["numberMatched"], 5,
        "n 7..10 and 21..25 minus those with value <= 10"
    );
    let (_, by_name) = items(&app, &id, &[("name", "p42")]).await;
    assert_eq!(ids(&by_name), vec![42]);
    let (_, by_number) = items(&app, &id, &[("n", "42"), ("even", "false")]).await;
    assert_eq!(by_number["numberMatched"], 0, "n 42 is even");
    assert_eq!(
        items(&app, &id, &[("n", "many")]).await.0,
        400,
        "a value that does not fit the column"
    );
    assert_eq!(items(&app, &id, &[("colour", "red")]).await.0, 400, "unknown parameter");

    let (_, no_geometry) = items(&app, &id, &[("include_geometry", "false")]).await;
    assert_eq!(no_geometry["features"].as_array().unwrap().len(), 10);
    assert!(
        no_geometry["features"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["geometry"].is_null())
    );
    assert_eq!(
        items(&app, &id, &[("datetime", "2020-01-01T00:00:00Z/..")]).await.0,
        200,
        "datetime is accepted"
    );
    assert_eq!(items(&app, &id, &[("datetime", "yesterday")]).await.0, 400);
    assert_eq!(items(&app, &id, &[("f", "json")]).await.0, 200);
    // `html` is the page (tests/tests/ogc_html.rs); other names are refused.
    assert_eq!(items(&app, &id, &[("f", "xml")]).await.0, 400);

    for (text, json_filter, expected) in [
        ("n >= 391", r#"{"op": ">=", "args": [{"property": "n"}, 391]}"#, 10),
        (
            "name LIKE 'p1%'",
            r#"{"op": "like", "args": [{"property": "name"}, "p1%"]}"#,
            111,
        ),
        (
            "n BETWEEN 10 AND 19",
            r#"{"op": "between", "args": [{"property": "n"}, 10, 19]}"#,
            10,
        ),
        (
            "n IN (1, 2, 500)",
            r#"{"op": "in", "args": [{"property": "n"}, [1, 2, 500]]}"#,
            2,
        ),
        (
            "NOT (n > 2) AND even = true",
            r#"{"op": "and", "args": [{"op": "not", "args": [{"op": ">", "args": [{"property": "n"}, 2]}]}, {"op": "=", "args": [{"property": "even"}, true]}]}"#,
            1,
        ),
        (
            "S_INTERSECTS(geom, POINT(-10 40)) OR n = 400",
            r#"{"op": "or", "args": [{"op": "s_intersects", "args": [{"property": "geom"}, {"type": "Point", "coordinates": [-10, 40]}]}, {"op": "=", "args": [{"property": "n"}, 400]}]}"#,
            2,
        ),
        (
            "S_INTERSECTS(geom, BBOX(-10, 40, -6, 41))",
            r#"{"op": "s_intersects", "args": [{"property": "geom"}, {"bbox": [-10, 40, -6, 41]}]}"#,
            10,
        ),
        ("name IS NULL", r#"{"op": "isNull", "args": [{"property": "name"}]}"#, 0),
    ] {
        let (status, by_text) = items(&app, &id, &[("filter", text)]).await;
        assert_eq!(status, 200, "{text}: {by_text}");
        assert_eq!(by_text["numberMatched"], expected, "{text}");
        let (status, by_json) = items(&app, &id, &[("filter", json_filter), ("filter-lang", "cql2-json")]).await;
        assert_eq!(status, 200, "{json_filter}: {by_json}");
        assert_eq!(by_json["numberMatched"], expected, "{json_filter}");
    }
    assert_eq!(
        items(&app, &id, &[("filter", "n > 1"), ("filter-lang", "sql")]).await.0,
        400
    );
    assert_eq!(
        items(
            &app,
            &id,
            &[
                ("filter", "n > 1"),
                ("filter-crs", "http://www.opengis.net/def/crs/OGC/1.3/CRS84")
            ]
        )
        .await
        .0,
        200
    );
    // Filters are in CRS84 only (EPSG:4326, latitude first, is another
    // CRS); a bbox may be in any CRS the collection offers, and no other.
    for (parameter, crs) in [
        ("filter-crs", "http://www.opengis.net/def/crs/EPSG/0/3857"),
        ("filter-crs", "http://www.opengis.net/def/crs/EPSG/0/4326"),
        ("filter-crs", "EPSG:4326"),
        ("bbox-crs", "http://www.opengis.net/def/crs/EPSG/0/2157"),
        ("bbox-crs", "EPSG:4326"),
    ] {
        let (status, body) = items(&app, &id, &[("filter", "n > 1"), (parameter, crs)]).await;
        assert_eq!(status, 400, "{parameter}={crs}: {body}");
        assert_eq!(body["status"], 400);
    }

    // Refusals named by the specification, before the database is touched.
    let refusals = [
        ("secret_column = 1".to_string(), "queryable"),
        ("T_BEFORE(n, DATE('2020-01-01'))".to_string(), "not supported"),
        ("pg_sleep(5) = 1".to_string(), "not supported"),
        (format!("name = '{}'", "x".repeat(10_001)), "10000"),
        (format!("{}n = 1{}", "(".repeat(200), ")".repeat(200)), "nests"),
        (
            format!(
                "n IN ({})",
                (0..1001).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
            "1000",
        ),
        ("n >".to_string(), "not valid"),
    ];
    for (filter, expected) in &refusals {
        let (status, problem) = items(&app, &id, &[("filter", filter)]).await;
        assert_eq!(status, 400, "{filter:.80}");
        assert!(
            problem["detail"].as_str().unwrap().contains(expected),
            "{filter:.80}: {problem}"
        );
    }

    let response = app
        .send(app.http().get(app.url(&format!("/api/collections/{id}/items/5"))))
        .await;
    assert_eq!(response.headers()["content-type"], "application/geo+json");
    let feature: Value = response.json().await.unwrap();
    assert_eq!(feature["type"], "Feature");
    assert_eq!(feature["id"], 5);
    assert_eq!(feature["geometry"], json!({"type": "Point", "coordinates": [-6, 40]}));
    assert_eq!(
        app.get_json(None, &format!("/api/collections/{id}/items/99999"))
            .await
            .0,
        404
    );
    assert_eq!(
        app.get_json(None, &format!("/api/collections/{id}/items/abc")).await.0,
        404
    );
}

/// With filters, `numberMatched` is the exact number of matches however
/// many there are (past 2,000 it was the planner's estimate): 5,000 points
/// on a 100 x 50 grid (x 0..9.9, y 0..4.9 by 0.1) whose `value` is 1.5 n,
/// so a filter on both is one condition twice, which the planner cannot
/// know.
#[tokio::test]
async fn number_matched_is_the_exact_count_past_two_thousand() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let features: Vec<Value> = (0..5000)
        .map(|i| {
            let (x, y) = (f64::from(i % 100) / 10.0, f64::from(i / 100) / 10.0);
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]},
                   "properties": {"n": i + 1, "value": f64::from(i + 1) * 1.5}})
        })
        .collect();
    let geojson = json!({"type": "FeatureCollection", "features": features}).to_string();
    let id = public_collection(&app, &token, "many.geojson", geojson.into_bytes()).await;

    let (_, all) = items(&app, &id, &[]).await;
    assert_eq!(all["numberMatched"], 5000);
    for (query, expected) in [
        (vec![("filter", "n > 1000 AND value > 1500")], 4000),
        (vec![("filter", "n > 1000"), ("value", "6000")], 1),
        (vec![("bbox", "0,0,4.95,4.95")], 2500),
        (
            vec![("bbox", "0,0,9.95,2.95"), ("filter", "n > 500 AND value > 750")],
            2500,
        ),
        (
            vec![
                ("filter", r#"{"op": ">=", "args": [{"property": "n"}, 2]}"#),
                ("filter-lang", "cql2-json"),
            ],
            4999,
        ),
    ] {
        let (status, page) = items(&app, &id, &query).await;
        assert_eq!(status, 200, "{query:?}: {page}");
        assert_eq!(page["numberMatched"], expected, "{query:?}");
        // The count is the same on every page, and as many as paging finds.
        let next = page["links"].as_array().unwrap().iter().find(|l| l["rel"] == "next");
        if expected > 10 {
            let href = next.unwrap()["href"].as_str().unwrap();
            let page: Value = app.send(app.http().get(href)).await.json().await.unwrap();
            assert_eq!(page["numberMatched"], expected, "{href}");
        }
        let mut limited = query.clone();
        limited.push(("limit", "1000"));
        let mut seen = 0;
        let mut url = {
            let (_, first) = items(&app, &id, &limited).await;
            seen += first["numberReturned"].as_i64().unwrap();
            first["links"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["rel"] == "next")
                .map(|l| l["href"].as_str().unwrap().to_string())
        };
        while let Some(href) = url {
            let page: Value = app.send(app.http().get(&href)).await.json().await.unwrap();
            seen += page["numberReturned"].as_i64().unwrap();
            url = page["links"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["rel"] == "next")
                .map(|l| l["href"].as_str().unwrap().to_string());
        }
        assert_eq!(seen, expected, "{query:?}: features found by paging");
    }
}

#[tokio::test]
async fn private_collections_stay_private() {
    let stack = App::start_with_worker().await;
    let token = stack.admin_token().await;
    let job = stack
        .upload_ok(
            &token,
            "bikes.geojson",
            data_file("geojson/cycle_hire_osm.geojson"),
            &[],
        )
        .await;
    let id = stack.wait_job(&token, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        stack.get_json(None, &format!("/api/collections/{id}/items")).await.0,
        404
    );
    let (_, collections) = stack.get_json(None, "/api/collections").await;
    assert!(
        collections["collections"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["itemType"] != "feature")
    );
    assert_eq!(
        stack
            .get_json(Some(&token), &format!("/api/collections/{id}/items"))
            .await
            .0,
        200
    );
    assert_eq!(
        stack
            .get_json(Some("expired-or-garbage"), &format!("/api/collections/{id}/items"))
            .await
            .0,
        401
    );
}

/// The expressions and expected results of the CQL2 Abstract Test Suite.
#[tokio::test]
async fn cql2_abstract_test_suite() {
    let stack = App::start_with_worker().await;
    let token = stack.admin_token().await;
    let id = cql2_collection(&stack, &token).await;
    let declared = ["basic-cql2", "advanced-comparison-operators", "basic-spatial-functions"];

    let expressions = std::fs::read_to_string(data_dir().join("cql2/ats/expressions.txt")).unwrap();
    let mut checked = 0;
    for line in expressions
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (class, expression) = line.split_once('|').unwrap();
        let (status, body) = items(&stack, &id, &[("filter", expression), ("limit", "1000")]).await;
        let detail = body["detail"].to_string();
        if declared.contains(&class) {
            assert!(!uses_undeclared_operator(expression), "{expression}");
        }
        if uses_undeclared_operator(expression) {
            assert_eq!(status, 400, "{class} is not declared: {expression}");
        } else {
            assert_eq!(status, 200, "{class}: {expression}: {detail}");
        }
        checked += 1;
    }
    assert!(checked > 100);

    // Queries with expected feature ids.
    let expected = std::fs::read_to_string(data_dir().join("cql2/ats/operators_expected.txt")).unwrap();
    let lines: Vec<&str> = expected.lines().collect();
    let mut compared = 0;
    for pair in lines.chunks(2) {
        let [query, want] = pair else { continue };
        let want: BTreeSet<i64> = want.split_whitespace().map(|n| n.parse().unwrap()).collect();
        let (status, body) = items(&stack, &id, &[("filter", query), ("limit", "1000")]).await;
        if uses_undeclared_operator(query) {
            assert_eq!(status, 400, "{query}");
            continue;
        }
        assert_eq!(status, 200, "{query}: {}", body["detail"]);
        assert_eq!(intfields(&body), want, "{query}");
        compared += 1;
    }
    assert!(compared >= 50, "only {compared} queries compared");
}

/// Whether a query calls a function outside the declared classes, or
/// uses arithmetic.
fn uses_undeclared_operator(query: &str) -> bool {
    #[rustfmt::skip]
    const ALLOWED: [&str; 17] = [
        "s_intersects", "date", "timestamp", "bbox", "point", "linestring", "polygon", "multipoint",
        "multilinestring", "multipolygon", "geometrycollection", "not", "and", "or", "in", "like", "between",
    ];
    let q = query.to_ascii_lowercase();
    let calls_other = q.match_indices('(').any(|(at, _)| {
        let name: String = q[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let name: String = name.chars().rev().collect();
        !name.is_empty() && !ALLOWED.contains(&name.as_str())
    });
    let arithmetic = [" + ", " - ", " * ", " / ", " % ", "^"].iter().any(|op| q.contains(op));
    calls_other || arithmetic
}

/// What a filter uses that decides the answer: the functions and operators
/// outside the declared conformance classes, and the properties it names.
#[derive(Debug, Default, PartialEq)]
struct Uses {
    undeclared: BTreeSet<String>,
    properties: BTreeSet<String>,
}

/// Geometry literals of CQL2 text; their coordinates are not arithmetic.
const GEOMETRY_TYPES: [&str; 7] = [
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
];

/// What a CQL2 text filter uses: every call of a function other than
/// S_INTERSECTS, DATE, TIMESTAMP and BBOX, every arithmetic operator, and
/// every property name (a bare word that is not a keyword, or a double
/// quoted name).
fn text_uses(text: &str) -> Uses {
    #[derive(Debug, PartialEq)]
    enum Token {
        Word(String),
        Quoted(String),
        Number,
        Str,
        Punct(char),
    }
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        i += 1;
        if c.is_whitespace() {
            continue;
        }
        if c == '\'' {
            // A string; '' is an escaped quote.
            while i < chars.len() {
                if chars[i] == '\'' && chars.get(i + 1) == Some(&'\'') {
                    i += 2;
                } else if chars[i] == '\'' {
                    i += 1;
                    break;
                } else {
                    i += 1;
                }
            }
            tokens.push(Token::Str);
        } else if c == '"' {
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            tokens.push(Token::Quoted(chars[start + 1..i].iter().collect()));
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | ':' | '.')) {
                i += 1;
            }
            tokens.push(Token::Word(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            tokens.push(Token::Number);
        } else {
            tokens.push(Token::Punct(c));
        }
    }
    const CALLS: [&str; 8] = ["s_intersects", "date", "timestamp", "bbox", "and", "or", "not", "in"];
    const KEYWORDS: [&str; 13] = [
        "and", "or", "not", "like", "between", "in", "is", "null", "true", "false", "z", "m", "zm",
    ];
    let ends_operand = |token: &Token| match token {
        Token::Quoted(_) | Token::Number | Token::Punct(')') => true,
        Token::Word(word) => !KEYWORDS.contains(&word.to_ascii_lowercase().as_str()),
        _ => false,
    };
    let mut uses = Uses::default();
    let mut i = 0;
    while i < tokens.len() {
        let next = tokens.get(i + 1);
        match &tokens[i] {
            Token::Word(word) => {
                let lower = word.to_ascii_lowercase();
                if GEOMETRY_TYPES.contains(&lower.as_str()) {
                    // Skip the literal up to its closing parenthesis.
                    let mut depth = 0;
                    i += 1;
                    while i < tokens.len() {
                        match tokens[i] {
                            Token::Punct('(') => depth += 1,
                            Token::Punct(')') => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                } else if next == Some(&Token::Punct('(')) && !KEYWORDS.contains(&lower.as_str()) {
                    if !CALLS.contains(&lower.as_str()) {
                        uses.undeclared.insert(lower);
                    }
                } else if lower == "div" {
                    uses.undeclared.insert(lower);
                } else if !KEYWORDS.contains(&lower.as_str()) {
                    uses.properties.insert(word.clone());
                }
            }
            Token::Quoted(name) => {
                uses.properties.insert(name.clone());
            }
            Token::Punct(op @ ('+' | '*' | '/' | '%' | '^')) => {
                uses.undeclared.insert(op.to_string());
            }
            // A minus after an operand subtracts; elsewhere it is a sign.
            Token::Punct('-') if i > 0 && ends_operand(&tokens[i - 1]) => {
                uses.undeclared.insert("-".into());
            }
            _ => {}
        }
        i += 1;
    }
    uses
}

/// What a CQL2 JSON filter uses: every operation other than those of Basic
/// CQL2, the advanced comparison operators and S_INTERSECTS, every
/// interval (temporal functions), and every `{"property": ...}`.
fn json_uses(filter: &Value, uses: &mut Uses) {
    const DECLARED: [&str; 14] = [
        "and",
        "or",
        "not",
        "=",
        "<>",
        "<",
        "<=",
        ">",
        ">=",
        "isNull",
        "like",
        "between",
        "in",
        "s_intersects",
    ];
    match filter {
        Value::Object(object) => {
            if let Some(op) = object.get("op").and_then(Value::as_str)
                && !DECLARED.contains(&op)
            {
                uses.undeclared.insert(op.to_ascii_lowercase());
            }
            if let Some(property) = object.get("property").and_then(Value::as_str) {
                uses.properties.insert(property.to_string());
            }
            if object.contains_key("interval") {
                uses.undeclared.insert("interval".into());
            }
            object.values().for_each(|v| json_uses(v, uses));
        }
        Value::Array(values) => values.iter().for_each(|v| json_uses(v, uses)),
        _ => {}
    }
}

/// Examples whose only name outside the queryables is `geometry`, used as
/// the first operand of S_INTERSECTS. The service takes `geometry` there
/// as an alias of the collection's geometry queryable although
/// /queryables does not list it (and `geometry IS NOT NULL`, clause6_03,
/// is refused as naming no queryable). Whether Part 3 allows a name the
/// queryables do not publish is not settled here: the current answer is
/// asserted, and checked to be the answer to the same filter with the
/// published name.
const GEOMETRY_ALIAS: [&str; 4] = ["clause6_03", "clause7_07", "example24", "example45"];

/// Every example of the CQL2 standard, in both encodings, against the
/// collection of the CQL2 test data, gets one answer with one reason: a 400
/// naming an operator or function of a conformance class the service does
/// not declare, or else a 400 naming a property that is not one of the
/// collection's queryables; 200 only for the `geometry` alias above. Text
/// and JSON encodings of one example use the same operators and names.
#[tokio::test]
async fn cql2_standard_examples_get_the_answer_their_content_calls_for() {
    let stack = App::start_with_worker().await;
    let token = stack.admin_token().await;
    let id = cql2_collection(&stack, &token).await;
    let (status, queryables) = stack.get_json(None, &format!("/api/collections/{id}/queryables")).await;
    assert_eq!(status, 200);
    let queryables = queryables["properties"].as_object().unwrap();
    let geometry = queryables
        .iter()
        .find(|(_, schema)| schema["x-ogc-role"] == "primary-geometry")
        .map(|(name, _)| name.clone())
        .unwrap();
    assert_ne!(geometry, "geometry");
    let queryables: BTreeSet<&str> = queryables.keys().map(String::as_str).collect();
    assert!(queryables.contains("intfield"), "{queryables:?}");

    let mut examples: Vec<(String, &str, String, Uses)> = Vec::new();
    for encoding in ["text", "json"] {
        for entry in std::fs::read_dir(data_dir().join("cql2").join(encoding)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            let filter = std::fs::read_to_string(&path).unwrap().trim().to_string();
            let uses = if encoding == "text" {
                text_uses(&filter)
            } else {
                let mut uses = Uses::default();
                json_uses(&serde_json::from_str(&filter).unwrap(), &mut uses);
                uses
            };
            examples.push((name, encoding, filter, uses));
        }
    }
    examples.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    assert_eq!(examples.len(), 120 + 109, "every example of both encodings");
    // The text reading agrees with the JSON of the same example.
    let mut pairs = 0;
    for pair in examples.windows(2) {
        if pair[0].0 == pair[1].0 {
            assert_eq!(pair[0].3, pair[1].3, "{}: text and JSON read differently", pair[0].0);
            pairs += 1;
        }
    }
    assert_eq!(pairs, 109);

    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut failures = Vec::new();
    for (name, encoding, filter, uses) in &examples {
        let unknown: Vec<&String> = uses
            .properties
            .iter()
            .filter(|p| !queryables.contains(p.as_str()))
            .collect();
        let lang = if *encoding == "text" { "cql2-text" } else { "cql2-json" };
        let (status, body) = items(
            &stack,
            &id,
            &[("filter", filter), ("filter-lang", lang), ("limit", "1000")],
        )
        .await;
        let detail = body["detail"].as_str().unwrap_or_default();
        println!("{name} {encoding}: {status} {detail}");
        // The details that state each reason; the service may state any
        // reason that applies.
        let undeclared = uses.undeclared.iter().any(|op| {
            detail
                .to_ascii_lowercase()
                .contains(&format!("{op:?} is not supported"))
        });
        let unknown_named = unknown
            .iter()
            .any(|p| detail.contains(&format!("{p:?} is not a queryable")));
        let (reason, right) = if GEOMETRY_ALIAS.contains(&name.as_str()) {
            assert!(
                uses.undeclared.is_empty() && unknown == ["geometry"],
                "{name}: {uses:?}"
            );
            let published = filter.replace("geometry", &geometry);
            let (_, by_name) = items(
                &stack,
                &id,
                &[("filter", &published), ("filter-lang", lang), ("limit", "1000")],
            )
            .await;
            let right = status == 200
                && body["type"] == "FeatureCollection"
                && body["numberMatched"] == body["numberReturned"]
                && by_name["type"] == "FeatureCollection"
                && ids(&body) == ids(&by_name);
            ("geometry alias: 200, as with the published name", right)
        } else if !uses.undeclared.is_empty() {
            (
                "400: an undeclared operator or function",
                status == 400 && (undeclared || unknown_named),
            )
        } else if !unknown.is_empty() {
            (
                "400: a property that is not a queryable",
                status == 400 && unknown_named,
            )
        } else {
            (
                "200: a FeatureCollection",
                status == 200 && body["type"] == "FeatureCollection",
            )
        };
        *counts.entry(reason).or_default() += 1;
        if !right {
            failures.push(format!(
                "{name} {encoding}: expected {reason}; uses {uses:?}; got {status}: {body}"
            ));
        }
    }
    println!("{counts:#?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        counts,
        [
            ("400: an undeclared operator or function", 129),
            ("400: a property that is not a queryable", 92),
            ("geometry alias: 200, as with the published name", 8),
        ]
        .into(),
    );
}

#[tokio::test]
async fn gdal_and_owslib_read_the_service() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let id = public_collection(
        &stack,
        &token,
        "bikes.geojson",
        data_file("geojson/cycle_hire_osm.geojson"),
    )
    .await;

    let listing = Command::new("ogrinfo")
        .args(["-ro", "-q", &format!("OAPIF:{}/api", stack.base)])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&listing.stdout);
    assert!(listing.status.success(), "{}", String::from_utf8_lossy(&listing.stderr));
    assert!(out.contains(&id), "ogrinfo lists the collection: {out}");

    let read = Command::new("ogrinfo")
        .args([
            "-ro",
            "-al",
            "-so",
            "--config",
            "CPL_DEBUG",
            "ON",
            "-where",
            "name = 'Windsor Terrace'",
        ])
        .arg(format!("OAPIF:{}/api", stack.base))
        .arg(&id)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&read.stdout);
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert!(read.status.success(), "{stderr}");
    assert!(stdout.contains("Feature Count: 1"), "{stdout}");
    // As CQL text (GDAL 3.6 sends `filter-lang=cql-text`, CQL2 text's
    // older name), not filtered in the client.
    assert!(
        stderr.contains("filter=name%20%3D%20'Windsor%20Terrace'&filter-lang=cql-text"),
        "the -where clause went to the server:\n{stderr}"
    );

    let python = std::env::var("CATALOG_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = catalog_tests::package_dir().join("clients/owslib_pages.py");
    let script = script.to_str().expect("a UTF-8 path");
    let output = Command::new(python)
        .args([script, &format!("{}/api", stack.base), &id, "50"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        result["collections"].as_array().unwrap().iter().any(|c| c == &id),
        "OWSLib lists the collection"
    );
    let got: Vec<i64> = result["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(got, (1..=532).collect::<Vec<_>>(), "every feature exactly once");
    assert_eq!(result["pages"], 11);
}
