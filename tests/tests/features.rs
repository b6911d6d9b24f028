//! Feature-level routes: the offset-paged list, creating features, adding columns.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

fn points(n: usize) -> Vec<u8> {
    let features: Vec<Value> = (0..n)
        .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64, 0.0]}, "properties": {"n": i + 1, "label": format!("f{}", i + 1)}}))
        .collect();
    json!({"type": "FeatureCollection", "features": features})
        .to_string()
        .into_bytes()
}

async fn dataset(app: &App, token: &str, name: &str, body: Vec<u8>) -> String {
    let job = app.upload_ok(token, name, body, &[]).await;
    let job = app.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_feature_list_pages_by_offset() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = dataset(&app, &token, "points.geojson", points(25)).await;
    let path = format!("/api/datasets/{id}/features/");
    let (status, page) = app.get_json(Some(&token), &path).await;
    assert_eq!(status, 200);
    assert_eq!(page["type"], "FeatureCollection");
    assert_eq!(page["numberMatched"], 25);
    assert_eq!(page["numberReturned"], 10);
    assert_eq!(page["features"][0]["id"], 1);
    assert!(
        page["links"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["rel"].is_string() && l["href"].is_string() && l["type"].is_string())
    );
    let (_, last) = app.get_json(Some(&token), &format!("{path}?limit=10&offset=20")).await;
    let ids: Vec<i64> = last["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![21, 22, 23, 24, 25]);
    assert!(!last["links"].as_array().unwrap().iter().any(|l| l["rel"] == "next"));
    let (_, past) = app.get_json(Some(&token), &format!("{path}?offset=100")).await;
    assert_eq!(past["numberReturned"], 0);
    assert_eq!(past["numberMatched"], 25);
    let (_, boxed) = app
        .get_json(
            Some(&token),
            &format!("{path}?bbox=-0.5,-1,2.5,1&include_geometry=false"),
        )
        .await;
    assert_eq!(boxed["numberMatched"], 3);
    assert!(boxed["features"][0]["geometry"].is_null());
    for (bad, detail) in [
        ("limit=0", "limit must be from 1 to 200"),
        ("limit=201", "limit must be from 1 to 200"),
        ("offset=-1", "offset must not be negative"),
    ] {
        let (status, problem) = app.get_json(Some(&token), &format!("{path}?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().ends_with(detail),
            "{bad}: {problem}"
        );
    }
    assert_eq!(app.get_json(Some(&token), &format!("{path}?bbox=1,2")).await.0, 400);
    assert_eq!(app.get_json(Some(&token), &format!("{path}?limit=200")).await.0, 200);
    assert_eq!(app.get_json(None, &path).await.0, 404, "private");
}

#[tokio::test]
async fn features_are_created_when_they_fit_the_dataset() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = dataset(&app, &token, "points.geojson", points(3)).await;
    let post = |body: Value| {
        app.send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/features")))
                .bearer_auth(&token)
                .json(&body),
        )
    };
    let response = post(json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [5, 6]}, "properties": {"n": 42, "label": "new"}})).await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["id"], 4);
    assert_eq!(created["properties"], json!({"n": 42, "label": "new"}));
    assert_eq!(created["geometry"], json!({"type": "Point", "coordinates": [5, 6]}));
    let record = app.dataset(&token, &id).await;
    assert_eq!(record["feature_count"], 4);
    assert_eq!(record["publication_version"], 1, "writes retire no tile links");
    let (_, item) = app
        .get_json(Some(&token), &format!("/api/collections/{id}/items/4"))
        .await;
    assert_eq!(item["properties"]["label"], "new");

    for (body, why) in [
        (
            json!({"geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}, "properties": {}}),
            "a line in a point dataset",
        ),
        (
            json!({"geometry": {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [0, 0]}]}}),
            "a collection in a typed dataset",
        ),
        (
            json!({"geometry": {"type": "Point", "coordinates": [0, 0]}, "properties": {"colour": "red"}}),
            "an unknown property",
        ),
        (
            json!({"geometry": {"type": "Point", "coordinates": [0, 0]}, "properties": {"n": "many"}}),
            "a value of the wrong type",
        ),
        (json!({"geometry": {"type": "Point"}}), "no coordinates"),
        (
            json!({"type": "Polygon", "geometry": {"type": "Point", "coordinates": [0, 0]}}),
            "not a feature",
        ),
    ] {
        let response = post(body).await;
        assert_eq!(response.status(), 422, "{why}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
    assert_eq!(
        app.dataset(&token, &id).await["feature_count"],
        4,
        "refused writes change nothing"
    );

    // A dataset of mixed geometry takes a collection, never a nested one.
    let mixed = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [0, 0]}, "properties": {"k": 1}},
        {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}, "properties": {"k": 2}}]});
    let generic = dataset(&app, &token, "mixed.geojson", mixed.to_string().into_bytes()).await;
    assert_eq!(app.dataset(&token, &generic).await["geometry_type"], "Geometry");
    let post_generic = |body: Value| {
        app.send(
            app.http()
                .post(app.url(&format!("/api/datasets/{generic}/features/")))
                .bearer_auth(&token)
                .json(&body),
        )
    };
    let collection = json!({"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [0, 0]}, {"type": "LineString", "coordinates": [[0, 0], [2, 2]]}]});
    assert_eq!(
        post_generic(json!({"geometry": collection, "properties": {"k": 3}}))
            .await
            .status(),
        201
    );
    let nested = json!({"type": "GeometryCollection", "geometries": [collection]});
    assert_eq!(post_generic(json!({"geometry": nested})).await.status(), 422);

    // A polygon goes into a multipolygon dataset as a multipolygon.
    let polygons = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 0]]]]}, "properties": {}}]});
    let multi = dataset(&app, &token, "polygons.geojson", polygons.to_string().into_bytes()).await;
    let response = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{multi}/features")))
                .bearer_auth(&token)
                .json(&json!({"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [2, 0], [2, 2], [0, 0]]]}})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["geometry"]["type"], "MultiPolygon");

    let (_, viewer) = app.user_token("vi", "viewer").await;
    let refused = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/features")))
                .bearer_auth(&viewer)
                .json(&json!({"geometry": {"type": "Point", "coordinates": [0, 0]}})),
        )
        .await;
    assert_eq!(refused.status(), 404, "a viewer cannot see the private dataset");
}

#[tokio::test]
async fn columns_are_added_with_a_type() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = dataset(&app, &token, "points.geojson", points(2)).await;
    let add = |body: Value| {
        app.send(
            app.http()
                .post(app.url(&format!("/api/layers/{id}/columns/")))
                .bearer_auth(&token)
                .json(&body),
        )
    };
    let response = add(json!({"column": {"name": "note", "type": "text"}})).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let names: Vec<&str> = body["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["n", "label", "note"]);
    assert_eq!(
        add(json!({"column": {"name": "note", "type": "text"}})).await.status(),
        409
    );
    assert_eq!(
        add(json!({"column": {"name": "gid", "type": "integer"}}))
            .await
            .status(),
        409
    );
    assert_eq!(
        add(json!({"column": {"name": "Bad Name", "type": "text"}}))
            .await
            .status(),
        422
    );
    assert_eq!(
        add(json!({"column": {"name": "x", "type": "blob"}})).await.status(),
        422
    );
    assert_eq!(
        add(json!({"column": {"name": "score", "type": "double precision"}}))
            .await
            .status(),
        200
    );
    let created = app
        .send(
            app.http()
                .post(app.url(&format!("/api/datasets/{id}/features")))
                .bearer_auth(&token)
                .json(&json!({"geometry": {"type": "Point", "coordinates": [1, 1]}, "properties": {"note": "hello", "score": 2.5}})),
        )
        .await;
    assert_eq!(created.status(), 201);
    let (_, queryables) = app
        .get_json(Some(&token), &format!("/api/collections/{id}/queryables"))
        .await;
    assert_eq!(queryables["properties"]["score"]["type"], "number");
    let (_, found) = app
        .get_json(
            Some(&token),
            &format!("/api/collections/{id}/items?filter=score%20%3E%202"),
        )
        .await;
    assert_eq!(found["numberMatched"], 1);
}
