//! The authorization matrix: every route of the OpenAPI document, called as
//! each kind of caller, answers the expected status. A route missing from
//! the table fails the test, so every new route joins it.
use std::{collections::BTreeSet, time::Duration};

use catalog_shared::auth::TokenKeys;
use catalog_tests::{Api, App, JWT_SECRET};

use uuid::Uuid;

const CALLERS: [&str; 8] = [
    "anonymous",
    "garbage key",
    "expired JWT",
    "read-only key",
    "viewer",
    "editor",
    "owner",
    "admin",
];

enum Body {
    None,
    Json(&'static str),
    Form(&'static [(&'static str, &'static str)]),
    Upload,
}

struct Row {
    method: &'static str,
    path: &'static str,
    body: Body,
    expected: [u16; 8],
}

const fn row(method: &'static str, path: &'static str, body: Body, expected: [u16; 8]) -> Row {
    Row {
        method,
        path,
        body,
        expected,
    }
}

#[rustfmt::skip]
fn table() -> Vec<Row> {
    use Body::*;
    vec![
        row("GET", "/api/health", None, [200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api", None, [200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api/conformance", None, [200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api/collections", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/collections/{collectionId}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/queryables", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/schema", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/items", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/items/{featureId}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/tiles", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/tiles/{tileMatrixSetId}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/collections/{collectionId}/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/tileMatrixSets", None, [200; 8]),
        row("GET", "/api/tileMatrixSets/{tileMatrixSetId}", None, [200; 8]),
        row("GET", "/api/ready", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/metrics", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("GET", "/api/openapi.json", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/auth/login", Form(&[("username", "admin"), ("password", "wrong")]), [401; 8]),
        row("POST", "/api/auth/refresh", Json(r#"{"refresh_token": "rt_unknown"}"#), [401; 8]),
        row("POST", "/api/auth/password-reset", Json(r#"{"token": "pr_unknown", "new_password": "Abcdefghij12!"}"#), [400; 8]),
        row("POST", "/api/auth/password-reset/request", Json(r#"{"account": "nobody"}"#), [409; 8]),
        row("POST", "/api/admin/users/{user_id}/password-reset", None, [401, 401, 401, 403, 403, 403, 403, 201]),
        row("POST", "/api/auth/logout/session", Json(r#"{"refresh_token": "rt_unknown"}"#), [401; 8]),
        row("GET", "/api/auth/config", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/auth/me", None, [401, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/auth/register",
            Json(r#"{"username": "u{unique}", "password": "Abcdefghij12!", "email": "{unique}@example.org"}"#),
            [201, 401, 401, 403, 201, 201, 201, 201]),
        row("POST", "/api/auth/change-password",
            Json(r#"{"current_password": "nope", "new_password": "Abcdefghij12!"}"#),
            [401, 401, 401, 403, 400, 400, 400, 400]),
        row("POST", "/api/auth/api-keys", Json("{}"), [401, 401, 401, 403, 201, 201, 201, 201]),
        row("GET", "/api/auth/api-keys", None, [401, 401, 401, 200, 200, 200, 200, 200]),
        row("DELETE", "/api/auth/api-keys/{key_id}", None, [401, 401, 401, 403, 404, 404, 404, 404]),
        row("POST", "/api/auth/download-token/{dataset_id}", None, [404, 401, 401, 403, 404, 404, 200, 200]),
        row("POST", "/api/admin/api-keys", Json(r#"{"user_id": "{viewer_id}"}"#), [401, 401, 401, 403, 403, 403, 403, 201]),
        row("GET", "/api/admin/users", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("POST", "/api/admin/users", Json(r#"{"username": "n{unique}", "password": "Abcdefghij12!", "role": "viewer"}"#),
            [401, 401, 401, 403, 403, 403, 403, 201]),
        row("PATCH", "/api/admin/users/{user_id}", Json(r#"{"email": "{unique}@example.org"}"#),
            [401, 401, 401, 403, 403, 403, 403, 200]),
        row("PUT", "/api/admin/users/{user_id}/quota", Json(r#"{"storage_bytes": null, "dataset_count": 50}"#),
            [401, 401, 401, 403, 403, 403, 403, 200]),
        row("GET", "/api/datasets", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/datasets/upload", Upload, [401, 401, 401, 403, 403, 202, 202, 202]),
        row("POST", "/api/datasets/{dataset_id}/archive", None, [401, 401, 401, 403, 403, 403, 403, 202]),
        row("POST", "/api/datasets/import-url", Json(r#"{"url": "http://10.0.0.1/a.geojson"}"#),
            [401, 401, 401, 403, 403, 422, 422, 422]),
        row("GET", "/api/datasets/{dataset_id}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("POST", "/api/datasets/import-service",
            Json(r#"{"url": "http://10.0.0.1/wfs", "service_type": "wfs", "layer_name": "a"}"#),
            [401, 401, 401, 403, 403, 422, 422, 422]),
        row("POST", "/api/datasets/{dataset_id}/reupload/service/preview",
            Json(r#"{"url": "http://10.0.0.1/wfs", "service_type": "wfs", "layer_name": "a"}"#),
            [401, 401, 401, 403, 404, 404, 422, 422]),
        row("POST", "/api/ai/metadata/quality-statement", Json(r#"{"dataset_id": "{dataset_id}"}"#),
            [404, 401, 401, 403, 404, 404, 200, 200]),
        row("POST", "/api/datasets/{dataset_id}/reupload/service",
            Json(r#"{"url": "http://10.0.0.1/wfs", "service_type": "wfs", "layer_name": "a"}"#),
            [401, 401, 401, 403, 404, 404, 422, 422]),
        row("POST", "/api/datasets/{dataset_id}/reupload", Upload, [401, 401, 401, 403, 404, 404, 202, 202]),
        row("PATCH", "/api/datasets/{dataset_id}", Json(r#"{"summary": "edited"}"#), [401, 401, 401, 403, 404, 404, 200, 200]),
        row("DELETE", "/api/datasets/{dataset_id}", None, [401, 401, 401, 403, 404, 404, 204, 204]),
        row("GET", "/api/datasets/{dataset_id}/grants", None, [401, 401, 401, 200, 404, 404, 200, 200]),
        row("PUT", "/api/datasets/{dataset_id}/grants/{user_id}", Json(r#"{"permission": "read"}"#),
            [401, 401, 401, 403, 404, 404, 200, 200]),
        row("POST", "/api/datasets/{dataset_id}/grants", Json(r#"{"username": "viewer", "permission": "read"}"#),
            [401, 401, 401, 403, 404, 404, 200, 200]),
        row("DELETE", "/api/datasets/{dataset_id}/grants/{user_id}", None, [401, 401, 401, 403, 404, 404, 204, 404]),
        row("GET", "/api/datasets/{dataset_id}/features", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("POST", "/api/datasets/{dataset_id}/features",
            Json(r#"{"geometry": {"type": "Point", "coordinates": [3, 4]}, "properties": {}}"#),
            [401, 401, 401, 403, 404, 404, 201, 201]),
        row("POST", "/api/collections/{collectionId}/items",
            Json(r#"{"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 4]}, "properties": {}}"#),
            [401, 401, 401, 403, 404, 404, 201, 201]),
        // Without If-Match, a writer's change is refused (428) before it looks.
        row("PUT", "/api/collections/{collectionId}/items/{featureId}",
            Json(r#"{"type": "Feature", "geometry": null, "properties": {}}"#), [401, 401, 401, 403, 404, 404, 428, 428]),
        row("PATCH", "/api/collections/{collectionId}/items/{featureId}", Json(r#"{"properties": {}}"#),
            [401, 401, 401, 403, 404, 404, 428, 428]),
        row("DELETE", "/api/collections/{collectionId}/items/{featureId}", None, [401, 401, 401, 403, 404, 404, 428, 428]),
        // The history is read by those who may change the dataset (a
        // read-only key of its owner included); to others it is not there.
        row("GET", "/api/datasets/{dataset_id}/versions", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/changes", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/versions/{a}/diff/{b}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("POST", "/api/datasets/{dataset_id}/versions/{version}/restore", None, [401, 401, 401, 403, 404, 404, 202, 202]),
        row("GET", "/api/datasets/{dataset_id}/columns/{column}/summary", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/thumbnail.png", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/styles", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/quarantine", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        // The fixture has no styles: a style of it is not there for anyone.
        row("GET", "/api/datasets/{dataset_id}/styles/{style_id}/{format}", None, [404, 401, 401, 404, 404, 404, 404, 404]),
        row("POST", "/api/layers/{dataset_id}/columns", Json(r#"{"column": {"name": "extra", "type": "text"}}"#),
            [401, 401, 401, 403, 404, 404, 200, 200]),
        row("POST", "/api/maps", Json(r#"{"name": "m"}"#), [401, 401, 401, 403, 403, 201, 201, 201]),
        row("GET", "/api/maps", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/maps/{map_id}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("PUT", "/api/maps/{map_id}", Json(r#"{"name": "renamed"}"#), [401, 401, 401, 403, 404, 404, 200, 200]),
        row("DELETE", "/api/maps/{map_id}", None, [401, 401, 401, 403, 404, 404, 204, 204]),
        row("POST", "/api/maps/{map_id}/fork", None, [401, 401, 401, 403, 404, 404, 201, 201]),
        row("POST", "/api/maps/{map_id}/shares", None, [401, 401, 401, 403, 404, 404, 201, 201]),
        row("GET", "/api/maps/{map_id}/shares", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("DELETE", "/api/maps/{map_id}/shares/{token}", None, [401, 401, 401, 403, 404, 404, 204, 204]),
        row("GET", "/api/maps/shared/{token}", None, [200, 200, 200, 200, 200, 200, 200, 200]),
        row("GET", "/api/maps/sprites/{file}", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/maps/{map_id}/style.json", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/maps/{map_id}/thumbnail.png", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("POST", "/api/maps/import", Json(r#"{"version": 8, "name": "i", "sources": {}, "layers": []}"#),
            [401, 401, 401, 403, 403, 201, 201, 201]),
        row("POST", "/api/maps/{map_id}/embed-tokens", Json("{}"), [401, 401, 401, 403, 404, 404, 201, 201]),
        row("GET", "/api/maps/{map_id}/embed-tokens", None, [401, 401, 401, 200, 404, 404, 200, 200]),
        row("DELETE", "/api/maps/{map_id}/embed-tokens/{token_id}", None, [401, 401, 401, 403, 404, 404, 404, 404]),
        row("GET", "/api/tiles/{dataset_id}/{z}/{x}/{y}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/tiles/{dataset_id}/cluster/{z}/{x}/{y}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        // The fixture is a vector dataset: terrain tiles are for rasters.
        row("GET", "/api/tiles/{dataset_id}/terrain/{z}/{x}/{y}", None, [404, 401, 401, 422, 404, 404, 422, 422]),
        // A download opens as any read does (here: the private fixture), or
        // with a download token; an anonymous caller is asked for a credential.
        row("GET", "/api/datasets/{dataset_id}/download", None, [401, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/tiles/{dataset_id}/tilejson.json", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/tiles/token/{dataset_id}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/tiles/{dataset_id}/style.json", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        // The built-in basemap reads no credential, as a public basemap's tiles read none.
        row("GET", "/api/basemap/style.json", None, [200; 8]),
        row("GET", "/api/basemap/tiles/{z}/{x}/{y}", None, [200; 8]),
        row("GET", "/api/basemap/fonts/{fontstack}/{range}", None, [200; 8]),
        row("GET", "/api/settings/oauth-providers", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("POST", "/api/settings/oauth-providers",
            Json(r#"{"slug": "p{unique}", "display_name": "P", "provider_type": "oidc", "client_id": "c", "client_secret": "s", "discovery_url": "https://example.org/d"}"#),
            [401, 401, 401, 403, 403, 403, 403, 201]),
        row("PUT", "/api/settings/oauth-providers/{provider_id}", Json(r#"{"display_name": "Q"}"#),
            [401, 401, 401, 403, 403, 403, 403, 404]),
        row("DELETE", "/api/settings/oauth-providers/{provider_id}", None, [401, 401, 401, 403, 403, 403, 403, 404]),
        row("POST", "/api/services/connectors/{connector_name}/ingest",
            Json(r#"{"config": {"url_template": "http://10.0.0.1/r/{resource_id}"}, "resource_id": "a"}"#),
            [401, 401, 401, 403, 403, 422, 422, 422]),
        row("GET", "/api/services/connectors/credentials", None, [401, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/services/connectors/credentials", Json(r#"{"name": "c", "method": "bearer", "token": "t"}"#),
            [401, 401, 401, 403, 403, 201, 201, 201]),
        row("DELETE", "/api/services/connectors/credentials/{credential_id}", None, [401, 401, 401, 403, 403, 404, 404, 404]),
        row("GET", "/api/settings/notifications", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("PUT", "/api/settings/notifications", Json(r#"{"smtp": null, "webhook": null, "events": []}"#),
            [401, 401, 401, 403, 403, 403, 403, 200]),
        row("POST", "/api/settings/notifications/test", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("GET", "/api/settings/auth", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("PUT", "/api/settings/auth", Json(r#"{"password_login_enabled": true, "allowed_email_domains": []}"#),
            [401, 401, 401, 403, 403, 403, 403, 200]),
        // Single sign-on redirects read no credential; unknown providers and
        // callbacks without a state are refused alike.
        row("GET", "/api/auth/oauth/{slug}/login", None, [404; 8]),
        row("GET", "/api/auth/oauth/{slug}/callback", None, [400; 8]),
        row("GET", "/api/ingest/discover", None, [401, 401, 401, 403, 403, 403, 403, 200]),
        row("POST", "/api/ingest/register/bulk", Json(r#"{"tables": []}"#), [401, 401, 401, 403, 403, 403, 403, 200]),
        row("POST", "/api/datasets/bulk-delete", Json(r#"{"datasets": [{"dataset_id": "{dataset_id}", "confirm_title": "Fixture"}]}"#),
            [401, 401, 401, 403, 403, 200, 200, 200]),
        row("GET", "/api/datasets/{dataset_id}/validate", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/search/datasets", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/search/facets", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/search/saved", Json(r#"{"name": "s", "query": {"q": "x"}}"#), [401, 401, 401, 403, 201, 201, 201, 201]),
        row("GET", "/api/search/saved", None, [401, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/search/saved/{search_id}/run", None, [401, 401, 401, 404, 404, 404, 404, 404]),
        row("DELETE", "/api/search/saved/{search_id}", None, [401, 401, 401, 403, 404, 404, 404, 404]),
        row("POST", "/api/query", Json(r#"{"sql": "SELECT 1 AS one"}"#), [401, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/search", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/conformance", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/collections", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/collections/{collection_id}", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/collections/{collection_id}/items", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/collections/{collection_id}/items/{item_id}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("GET", "/api/stac/queryables", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/stac/collections/{collection_id}/queryables", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("POST", "/api/stac/search", Json(r#"{"limit": 5}"#), [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/collections/catalog", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/collections/catalog/items", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/collections/catalog/items/{recordId}", None, [404, 401, 401, 200, 404, 404, 200, 200]),
        row("POST", "/api/records", Json(r#"{"title": "r"}"#), [401, 401, 401, 403, 403, 201, 201, 201]),
        row("GET", "/api/records/{record_id}", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("PUT", "/api/records/{record_id}", Json(r#"{"title": "renamed"}"#), [401, 401, 401, 403, 403, 403, 200, 200]),
        row("DELETE", "/api/records/{record_id}", None, [401, 401, 401, 403, 403, 403, 204, 204]),
        row("POST", "/api/records/{record_id}/contacts", Json(r#"{"name": "n"}"#), [401, 401, 401, 403, 403, 403, 201, 201]),
        row("GET", "/api/records/{record_id}/contacts", None, [200, 401, 401, 200, 200, 200, 200, 200]),
        row("DELETE", "/api/records/{record_id}/contacts/{contact_id}", None, [401, 401, 401, 403, 403, 403, 204, 204]),
        row("GET", "/api/jobs", None, [401, 401, 401, 200, 200, 200, 200, 200]),
        row("GET", "/api/jobs/{job_id}", None, [401, 401, 401, 200, 404, 404, 200, 200]),
        // The job the table uses loaded no rows: no report (its reader is the ingest report test).
        row("GET", "/api/jobs/{job_id}/report", None, [401, 401, 401, 404, 404, 404, 404, 404]),
        row("DELETE", "/api/jobs/{job_id}", None, [401, 401, 401, 403, 404, 404, 409, 409]),
        // The table's job is an upload, not a preview: nothing to load from.
        row("POST", "/api/datasets/upload/{job_id}/load", Json("{}"), [401, 401, 401, 403, 403, 404, 409, 409]),
        // Last: signing out ends the sessions the rows above use. It reads
        // no API key, and accepts a dead access token.
        row("POST", "/api/auth/logout", None, [401, 401, 204, 401, 204, 204, 204, 204]),
    ]
}

struct Fixtures {
    owner_id: Uuid,
    viewer_id: Uuid,
    credentials: Vec<Option<(&'static str, String)>>,
    job_id: Uuid,
}

/// A private dataset of the owner's, made directly so each destructive
/// call gets its own.
async fn fixture_dataset(stack: &App, owner: Uuid) -> Uuid {
    let id = Uuid::now_v7();
    let table = format!("fx_{}", id.simple());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE data.{table} (gid bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 2) PRIMARY KEY, geom geometry(Point, 4326), name text)"
    )))
    .execute(&stack.pool)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO data.{table} VALUES (1, ST_SetSRID(ST_MakePoint(1, 2), 4326), 'one')"
    )))
    .execute(&stack.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO datasets (id, title, schema_name, table_name, geometry_type, created_by, column_info)
                 VALUES ($1, 'Fixture', 'data', $2, 'Point', $3, '[{\"name\": \"name\", \"original_name\": \"name\", \"type\": \"text\", \"source_type\": \"String\"}]')")
        .bind(id)
        .bind(table)
        .bind(owner)
        .execute(&stack.pool)
        .await
        .unwrap();
    // Its first version, as a load makes it.
    let mut connection = stack.pool.acquire().await.unwrap();
    catalog_shared::history::record_load(&mut connection, id, Some(owner))
        .await
        .unwrap();
    id
}

/// A private map of the owner's with a live share link.
async fn fixture_map(stack: &App, owner: Uuid) -> (Uuid, String) {
    let id = Uuid::now_v7();
    let token = Uuid::new_v4().simple().to_string();
    sqlx::query("INSERT INTO maps (id, name, created_by) VALUES ($1, 'Fixture', $2)")
        .bind(id)
        .bind(owner)
        .execute(&stack.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO map_shares (token, map_id) VALUES ($1, $2)")
        .bind(&token)
        .bind(id)
        .execute(&stack.pool)
        .await
        .unwrap();
    (id, token)
}

/// A metadata record of the owner's with one contact.
async fn fixture_record(stack: &App, owner: Uuid) -> (Uuid, Uuid) {
    let (id, contact) = (Uuid::now_v7(), Uuid::now_v7());
    sqlx::query("INSERT INTO records (id, title, created_by) VALUES ($1, 'Fixture', $2)")
        .bind(id)
        .bind(owner)
        .execute(&stack.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO record_contacts (id, record_id, name) VALUES ($1, $2, 'c')")
        .bind(contact)
        .bind(id)
        .execute(&stack.pool)
        .await
        .unwrap();
    (id, contact)
}

async fn fixtures(stack: &App) -> Fixtures {
    let admin = stack.admin_token().await;
    let (owner_id, owner) = stack.user_token("owner", "editor").await;
    let (viewer_id, viewer) = stack.user_token("viewer", "viewer").await;
    let (_, editor) = stack.user_token("editor", "editor").await;
    let read_only = stack.api_key(&owner, "read_only").await;
    let expired = TokenKeys::new(JWT_SECRET)
        .issue_access(owner_id, 0, Duration::from_secs(0))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let job_id = Uuid::now_v7();
    sqlx::query("INSERT INTO jobs (id, kind, status, payload, queue_task_id, created_by, finished_at) VALUES ($1, 'ingest', 'succeeded', '{}', 'fixture', $2, now())")
        .bind(job_id)
        .bind(owner_id)
        .execute(&stack.pool)
        .await
        .unwrap();
    let bearer = |t: &str| Some(("authorization", format!("Bearer {t}")));
    Fixtures {
        owner_id,
        viewer_id,
        job_id,
        credentials: vec![
            None,
            Some(("x-api-key", "sdc_garbage".to_string())),
            bearer(&expired),
            Some(("x-api-key", read_only)),
            bearer(&viewer),
            bearer(&editor),
            bearer(&owner),
            bearer(&admin),
        ],
    }
}

#[tokio::test]
async fn authorization_matrix() {
    let stack = App::start().await;
    let fx = fixtures(&stack).await;
    let rows = table();

    let (_, doc) = stack.get_json(None, "/api/openapi.json").await;
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            // Paths are relative to the server URL, <base>/api.
            let route = if path == "/" {
                "/api".to_string()
            } else {
                format!("/api{path}")
            };
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), route.clone()))
        })
        .collect();
    let covered: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    let missing: Vec<_> = documented.difference(&covered).collect();
    assert!(missing.is_empty(), "routes missing from the matrix: {missing:?}");

    let mut failures = Vec::new();
    for row in &rows {
        for (i, caller) in CALLERS.iter().enumerate() {
            let dataset = fixture_dataset(&stack, fx.owner_id).await;
            let (map, share) = fixture_map(&stack, fx.owner_id).await;
            let (record, contact) = fixture_record(&stack, fx.owner_id).await;
            let path = row
                .path
                .replace("{dataset_id}", &dataset.to_string())
                .replace("{collectionId}", &dataset.to_string())
                .replace("{collection_id}", "vector")
                .replace("{item_id}", &dataset.to_string())
                .replace("{featureId}", "1")
                .replace("{a}/diff/{b}", "1/diff/1")
                .replace("{version}", "1")
                .replace("{column}", "name")
                .replace("{style_id}/{format}", &format!("{}/qml", Uuid::now_v7()))
                .replace("{map_id}", &map.to_string())
                .replace("{token}", &share)
                .replace("{file}", "default.json")
                .replace("{search_id}", &Uuid::now_v7().to_string())
                .replace("{recordId}", &dataset.to_string())
                .replace("{record_id}", &record.to_string())
                .replace("{contact_id}", &contact.to_string())
                .replace("{job_id}", &fx.job_id.to_string())
                .replace("{key_id}", &Uuid::now_v7().to_string())
                .replace("{token_id}", &Uuid::now_v7().to_string())
                .replace("{provider_id}", &Uuid::now_v7().to_string())
                .replace("{credential_id}", &Uuid::now_v7().to_string())
                .replace("{connector_name}", "http")
                .replace("{slug}", "nobody")
                .replace("{fontstack}/{range}", "DejaVu%20Sans%20Book/0-255.pbf")
                .replace("{z}/{x}/{y}", "0/0/0.pbf")
                .replace("{tileMatrixSetId}", "WebMercatorQuad")
                .replace("{tileMatrix}/{tileRow}/{tileCol}", "0/0/0")
                .replace("{user_id}", &fx.viewer_id.to_string());
            if row.method == "DELETE" && row.path.ends_with("/grants/{user_id}") {
                sqlx::query("INSERT INTO dataset_grants (dataset_id, user_id, permission) VALUES ($1, $2, 'read')")
                    .bind(dataset)
                    .bind(fx.viewer_id)
                    .execute(&stack.pool)
                    .await
                    .unwrap();
                if *caller == "admin" {
                    sqlx::query("DELETE FROM dataset_grants WHERE dataset_id = $1")
                        .bind(dataset)
                        .execute(&stack.pool)
                        .await
                        .unwrap();
                }
            }
            let mut request = stack.http.request(row.method.parse().unwrap(), stack.url(&path));
            if let Some((name, value)) = &fx.credentials[i] {
                request = request.header(*name, value);
            }
            let unique = Uuid::new_v4().simple().to_string()[..12].to_string();
            request = match &row.body {
                Body::None => request,
                Body::Json(text) => request.header("content-type", "application/json").body(
                    text.replace("{unique}", &unique)
                        .replace("{viewer_id}", &fx.viewer_id.to_string())
                        .replace("{dataset_id}", &dataset.to_string()),
                ),
                Body::Form(fields) => request.form(fields),
                Body::Upload => {
                    let points = r#"{"type": "FeatureCollection", "features": []}"#;
                    request.multipart(reqwest::multipart::Form::new().part(
                        "file",
                        reqwest::multipart::Part::bytes(points.as_bytes().to_vec()).file_name("p.geojson"),
                    ))
                }
            };
            let status = stack.send(request).await.status().as_u16();
            if status != row.expected[i] {
                failures.push(format!(
                    "{} {} as {caller}: expected {}, got {status}",
                    row.method, row.path, row.expected[i]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
