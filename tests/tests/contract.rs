//! The API against its own contract: schemathesis (PyPI) generates requests
//! from `/api/openapi.json` for every operation, signed in as an admin and
//! as a viewer, and checks every answer: no 5xx, a documented status code,
//! a documented media type, a body valid against the documented schema,
//! the documented headers. The run is bounded and repeatable: a fixed
//! number of examples per operation, a fixed seed.
use std::process::Command;

use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_schema_conformance,response_headers_conformance";

#[tokio::test]
async fn every_operation_answers_as_documented_for_an_admin_and_a_viewer() {
    let stack = Stack::start_with(
        StackOptions::workers(0)
            .env("RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("RATE_LIMIT_SIGN_IN_PER_MINUTE", "1000000000")
            .env("RATE_LIMIT_TILES_PER_MINUTE", "1000000000"),
    )
    .await;
    let admin = stack.admin_token().await;
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
    let viewer = stack.token("vic", "Viewer-Passw0rd-9").await;

    // API keys, not session tokens: the run signs out (which retires every
    // session token of the user) and takes longer than nothing.
    for (who, token) in [("admin", admin), ("viewer", viewer)] {
        let key = stack
            .send(
                stack
                    .http
                    .post(stack.url("/api/auth/api-keys"))
                    .bearer_auth(&token)
                    .json(&json!({})),
            )
            .await;
        assert_eq!(key.status(), 201);
        let key: Value = key.json().await.unwrap();
        let key = key["key"].as_str().unwrap();

        let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
        let schemathesis = std::path::Path::new(&python).with_file_name("schemathesis");
        let output = Command::new(&schemathesis)
            .args(["run", &stack.url("/api/openapi.json")])
            .args(["--checks", CHECKS])
            .args(["--max-examples", "15", "--seed", "20261125", "--workers", "1"])
            .args(["--request-timeout", "30", "--generation-database", "none", "--no-color"])
            .args(["--header", &format!("X-Api-Key: {key}")])
            .output()
            .unwrap_or_else(|e| panic!("{} could not start: {e}", schemathesis.display()));
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "schemathesis as {who} found answers the document does not describe:\n{report}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(report.contains("Tested: "), "as {who}: {report}");
    }
}
