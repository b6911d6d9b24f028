//! Metadata other catalogs read: records answer `f=jsonld` (and an
//! `Accept: application/ld+json`) as DCAT-AP 3, and dataset pages embed a
//! schema.org `Dataset`; a JSON-LD processor (PyLD, as harvesters use)
//! expands them, and the expansions hold the types and the properties
//! DCAT-AP and Google Dataset Search require.
use std::io::Write;
use std::process::{Command, Stdio};

use catalog_tests::{Api, App};
use serde_json::{Value, json};

const DCAT: &str = "http://www.w3.org/ns/dcat#";
const DCT: &str = "http://purl.org/dc/terms/";
const SCHEMA: &str = "https://schema.org/";

/// The documents as PyLD expands them.
fn expanded(documents: &[Value]) -> Vec<Value> {
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let script = catalog_tests::package_dir().join("clients/jsonld_expand.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(documents.to_vec()).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap()
}

/// The node of an expansion with this `@type`.
fn node_of_type<'a>(expansion: &'a Value, kind: &str) -> &'a Value {
    expansion
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["@type"].as_array().is_some_and(|t| t.iter().any(|t| t == kind)))
        .unwrap_or_else(|| panic!("no {kind} in {expansion}"))
}

fn value<'a>(node: &'a Value, property: &str) -> &'a Value {
    &node[property][0]["@value"]
}

/// The JSON-LD script blocks of a page.
fn scripts(page: &str) -> Vec<Value> {
    page.split(r#"<script type="application/ld+json">"#)
        .skip(1)
        .map(|rest| serde_json::from_str(rest.split("</script>").next().unwrap()).unwrap())
        .collect()
}

#[tokio::test]
async fn records_answer_dcat_and_dataset_pages_embed_schema_org() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app
        .world_countries(&admin, &[("visibility", "public"), ("title", "World countries")])
        .await;
    let status = app
        .send(
            app.http()
                .patch(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&admin)
                .json(&json!({"summary": "Natural Earth's countries </script> at 1:110m", "keywords": ["boundaries", "world"]})),
        )
        .await
        .status();
    assert_eq!(status, 200);

    // One record, by f=jsonld and by Accept.
    let record_path = format!("/api/collections/catalog/items/{id}");
    let response = app
        .send(app.http().get(app.url(&format!("{record_path}?f=jsonld"))))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/ld+json");
    let record: Value = response.json().await.unwrap();
    let by_accept: Value = app
        .send(
            app.http()
                .get(app.url(&record_path))
                .header("accept", "application/ld+json"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(by_accept, record);
    // The catalog's page of records.
    let (status, catalog) = app
        .get_json(None, "/api/collections/catalog/items?f=jsonld&limit=5")
        .await;
    assert_eq!(status, 200);
    // The dataset's pages: its collection and its record.
    let mut pages = Vec::new();
    for path in [format!("/api/collections/{id}?f=html"), format!("{record_path}?f=html")] {
        let page = app.send(app.http().get(app.url(&path))).await.text().await.unwrap();
        let found = scripts(&page);
        assert_eq!(found.len(), 1, "{path}: one schema.org block");
        pages.extend(found);
    }

    let expansions = expanded(&[record, catalog, pages[0].clone(), pages[1].clone()]);
    // DCAT-AP: a Dataset with its title, description, keywords, extent and
    // distributions that each have an access URL.
    let dataset = node_of_type(&expansions[0], &format!("{DCAT}Dataset"));
    assert_eq!(value(dataset, &format!("{DCT}title")), "World countries");
    assert!(
        value(dataset, &format!("{DCT}description"))
            .as_str()
            .unwrap()
            .starts_with("Natural Earth")
    );
    let keywords: Vec<&str> = dataset[format!("{DCAT}keyword")]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["@value"].as_str().unwrap())
        .collect();
    assert_eq!(keywords, ["boundaries", "world"]);
    assert!(dataset[format!("{DCT}spatial")].is_array(), "{dataset}");
    let distributions = dataset[format!("{DCAT}distribution")].as_array().unwrap();
    assert_eq!(distributions.len(), 2);
    for distribution in distributions {
        assert!(
            distribution[format!("{DCAT}accessURL")][0]["@id"]
                .as_str()
                .is_some_and(|u| u.starts_with("http")),
            "{distribution}"
        );
    }
    // The catalog holds its datasets, with a title, a description and a
    // publisher.
    let catalog = node_of_type(&expansions[1], &format!("{DCAT}Catalog"));
    for property in ["title", "description", "publisher"] {
        assert!(catalog[format!("{DCT}{property}")].is_array(), "{property}: {catalog}");
    }
    assert!(!catalog[format!("{DCAT}dataset")].as_array().unwrap().is_empty());
    // schema.org: a Dataset with the name and description Google requires,
    // the same on both pages.
    for expansion in &expansions[2..] {
        let dataset = node_of_type(expansion, &format!("{SCHEMA}Dataset"));
        assert_eq!(value(dataset, &format!("{SCHEMA}name")), "World countries");
        assert!(value(dataset, &format!("{SCHEMA}description")).is_string());
        assert!(dataset[format!("{SCHEMA}spatialCoverage")].is_array(), "{dataset}");
    }
    // The summary's `</script>` did not end the block early.
    assert!(pages[0]["description"].as_str().unwrap().contains("</script>"));
}

/// A dataset's licence and attribution, set on the dataset, reach what
/// other tools read: DCAT's `dct:license`, TileJSON's and the exported
/// map style's `attribution`. Empty clears them; too long is refused.
#[tokio::test]
async fn licence_and_attribution_reach_dcat_tilejson_and_styles() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app.world_countries(&admin, &[("visibility", "public")]).await;
    let patch = |body: Value| {
        app.send(
            app.http()
                .patch(app.url(&format!("/api/datasets/{id}")))
                .bearer_auth(&admin)
                .json(&body),
        )
    };
    let response = patch(json!({"license": "https://creativecommons.org/publicdomain/zero/1.0/", "attribution": "Made with Natural Earth"})).await;
    assert_eq!(response.status(), 200);
    let dataset: Value = response.json().await.unwrap();
    assert_eq!(dataset["attribution"], "Made with Natural Earth");
    let record: Value = app
        .send(
            app.http()
                .get(app.url(&format!("/api/collections/catalog/items/{id}?f=jsonld"))),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(
        record
            .to_string()
            .contains("https://creativecommons.org/publicdomain/zero/1.0/"),
        "DCAT names the licence: {record}"
    );
    let (_, tilejson) = app.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    assert_eq!(tilejson["attribution"], "Made with Natural Earth");
    let map: Value = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&admin)
                .json(&json!({"name": "Credits", "layers": [{"dataset_id": id}]})),
        )
        .await
        .json()
        .await
        .unwrap();
    let (_, style) = app
        .get_json(
            Some(&admin),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(
        style["sources"][format!("dataset-{id}")]["attribution"],
        "Made with Natural Earth",
        "{style}"
    );
    assert_eq!(patch(json!({"attribution": "x".repeat(1001)})).await.status(), 422);
    let cleared: Value = patch(json!({"license": "", "attribution": " "}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (cleared["license"].clone(), cleared["attribution"].clone()),
        (Value::Null, Value::Null)
    );
}
