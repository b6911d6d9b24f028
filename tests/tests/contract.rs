//! The API against its own contract: schemathesis (PyPI) generates requests
//! from `/api/openapi.json` for every operation, signed in as a viewer and
//! as an admin, over a catalog holding a public dataset (so that its own
//! items path, with a parameter per queryable, is in the document too), and
//! checks every answer: no 5xx, a documented status code, a documented
//! media type, a body valid against the documented schema, the documented
//! headers; every request the document calls valid is accepted and every
//! one it calls invalid refused. What a schema cannot say (a bbox's south
//! above its north, a password's mix of characters, a host that must
//! resolve to a public address...) is listed, rule by rule, in
//! `tests/schemathesis.toml`. The run is bounded and repeatable: a fixed
//! number of examples per operation, fixed seeds.
use std::process::Command;

use catalog_tests::{Api, Stack, StackOptions, package_dir};
use serde_json::{Value, json};

const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_schema_conformance,response_headers_conformance,positive_data_acceptance,negative_data_rejection";

/// The seeds each caller's run takes: the one the figures came
/// from (7) and the one this test always had.
const SEEDS: [&str; 2] = ["7", "20261125"];

/// 20 points with an integer, a text, a number, a boolean and a date.
fn public_points() -> Vec<u8> {
    let features: Vec<Value> = (0..20)
        .map(|i| {
            json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [-10 + i % 5, 40 + i / 5]},
                   "properties": {"n": i + 1, "name": format!("p{}", i + 1), "value": f64::from(i + 1) * 1.5,
                                  "flag": i % 2 == 0, "day": format!("2024-01-{:02}", i + 1)}})
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

/// Each operation has an id of its own: clients name their methods after
/// them, and link inference takes two operations with one id for one.
fn assert_operation_ids_are_unique(document: &Value) {
    let mut seen = std::collections::BTreeMap::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if let Some(id) = operation["operationId"].as_str()
                && let Some(other) = seen.insert(id.to_string(), format!("{method} {path}"))
            {
                panic!("operationId {id} names both {other} and {method} {path}");
            }
        }
    }
}

/// Lists in query strings are one comma-separated parameter, as every
/// route reads them (`bbox=-10,40,-6,41`), never the parameter repeated.
fn assert_lists_are_comma_separated(document: &Value) {
    let mut lists = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let types = &parameter["schema"]["type"];
                let array = types == "array" || types.as_array().is_some_and(|t| t.iter().any(|t| t == "array"));
                if parameter["in"] == "query" && array {
                    lists += 1;
                    assert_eq!(
                        (&parameter["style"], &parameter["explode"]),
                        (&json!("form"), &json!(false)),
                        "{method} {path}: {parameter}"
                    );
                }
            }
        }
    }
    assert!(lists >= 6, "bbox, ids, sortby, collections... ({lists} lists)");
}

/// Every `$ref` names a schema the document holds: schemathesis only warns
/// of one that does not (and skips that part), client generators refuse
/// the document.
fn assert_references_resolve(document: &Value) {
    fn walk<'a>(value: &'a Value, refs: &mut Vec<&'a str>) {
        match value {
            Value::Object(fields) => {
                refs.extend(fields.get("$ref").and_then(Value::as_str));
                fields.values().for_each(|v| walk(v, refs));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, refs)),
            _ => {}
        }
    }
    let mut refs = Vec::new();
    walk(document, &mut refs);
    for reference in refs {
        let name = reference.strip_prefix("#/components/schemas/").unwrap_or(reference);
        assert!(
            document["components"]["schemas"][name].is_object(),
            "{reference} names no schema"
        );
    }
}

#[tokio::test]
async fn every_operation_answers_as_documented_for_an_admin_and_a_viewer() {
    let stack = Stack::start_with(
        StackOptions::workers(1)
            .env("RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("RATE_LIMIT_SIGN_IN_PER_MINUTE", "1000000000")
            .env("RATE_LIMIT_TILES_PER_MINUTE", "1000000000"),
    )
    .await;
    let admin = stack.admin_token().await;
    let job = stack
        .upload_ok(
            &admin,
            "points.geojson",
            public_points(),
            &[("visibility", "public"), ("title", "Points")],
        )
        .await;
    let job = stack.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let created = stack
        .send(
            stack
                .http
                .post(stack.url("/api/admin/users"))
                .bearer_auth(&admin)
                .json(&json!({
                    "username": "vic", "password": "Viewer-Passw0rd-9", "role": "viewer"
                })),
        )
        .await;
    assert_eq!(created.status(), 201);

    let (status, document) = stack.get_json(None, "/api/openapi.json").await;
    assert_eq!(status, 200);
    let dataset = job["dataset_id"].as_str().unwrap();
    assert!(
        document["paths"][format!("/collections/{dataset}/items")].is_object(),
        "the public dataset's own items path is in the document"
    );
    assert_lists_are_comma_separated(&document);
    assert_operation_ids_are_unique(&document);
    assert_references_resolve(&document);

    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let schemathesis = std::path::Path::new(&python).with_file_name("schemathesis");
    let config = package_dir().join("schemathesis.toml");
    // API keys, not session tokens: the run signs out (which retires every
    // session token of the user) and takes longer than nothing. A key of
    // its own for each run, made from a fresh sign-in: a run may revoke the
    // key it was given (it lists the caller's keys and deletes them) or
    // change its holder's role. The viewer goes first: the admin's run may
    // suspend the viewer.
    for who in ["viewer", "admin"] {
        for seed in SEEDS {
            let token = if who == "viewer" {
                stack.token("vic", "Viewer-Passw0rd-9").await
            } else {
                stack.admin_token().await
            };
            let key = stack.api_key(&token, "full").await;
            // `Connection: close`: a connection per request, so that none
            // sits idle past the API's 30 s limit (docs/operations.md).
            let output = Command::new(&schemathesis)
                .arg("--config-file")
                .arg(&config)
                .args(["run", &stack.url("/api/openapi.json")])
                .args(["--checks", CHECKS])
                .args(["--max-examples", "15", "--seed", seed, "--workers", "1"])
                .args(["--request-timeout", "30", "--generation-database", "none", "--no-color"])
                .args([
                    "--header",
                    &format!("X-Api-Key: {key}"),
                    "--header",
                    "Connection: close",
                ])
                .output()
                .unwrap_or_else(|e| panic!("{} could not start: {e}", schemathesis.display()));
            let report = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "schemathesis as {who} (seed {seed}) found answers the document does not describe:\n{report}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(report.contains("Tested: "), "as {who}, seed {seed}: {report}");
        }
    }
}
