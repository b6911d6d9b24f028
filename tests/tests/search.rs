//! Catalog search: ranking, filters, facets, saved searches, open CORS.
use catalog_tests::{Api, App};
use reqwest::header;
use serde_json::{Value, json};

async fn ingest(app: &App, token: &str, title: &str, summary: &str, visibility: &str, geometry: Value) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": geometry, "properties": {"Species": "oak"}}]});
    app.ingest_geojson(
        token,
        &body,
        &[("title", title), ("summary", summary), ("visibility", visibility)],
    )
    .await
}

#[tokio::test]
async fn search_ranks_filters_counts_and_saves() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let point = json!({"type": "Point", "coordinates": [1, 2]});
    let line = json!({"type": "LineString", "coordinates": [[0, 0], [1, 1]]});
    let trees = ingest(
        &app,
        &admin,
        "Street trees",
        "Every tree in the city",
        "public",
        point.clone(),
    )
    .await;
    let parks = ingest(
        &app,
        &admin,
        "Parks",
        "Green spaces with trees",
        "public",
        point.clone(),
    )
    .await;
    let roads = ingest(&app, &admin, "Roads", "The road network", "public", line).await;
    let secret = ingest(&app, &admin, "Secret trees", "Private", "private", point).await;
    let patch = app
        .send(
            app.http()
                .patch(app.url(&format!("/api/datasets/{roads}")))
                .bearer_auth(&admin)
                .json(&json!({"keywords": ["transport", "network"]})),
        )
        .await;
    assert_eq!(patch.status(), 200);

    let (status, found) = app.get_json(None, "/api/search/datasets/?q=trees").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![trees.as_str(), parks.as_str()],
        "title matches rank above summary matches; private ones stay hidden"
    );
    assert_eq!(found["total"], 2);
    assert!(found["results"][0]["rank"].as_f64().unwrap() > found["results"][1]["rank"].as_f64().unwrap());
    assert_eq!(
        found["results"][0]["created_by_username"], "admin",
        "a hit names its owner"
    );
    let (_, mine) = app.get_json(Some(&admin), "/api/search/datasets?q=trees").await;
    assert!(
        mine["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == secret.as_str())
    );
    let (_, by_column) = app.get_json(None, "/api/search/datasets?q=species").await;
    assert_eq!(by_column["total"], 3, "original column names are searched");
    // Words are found by their stem and, as they are typed, by their beginning.
    let ids_of = |found: &Value| -> Vec<String> {
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, stem) = app.get_json(None, "/api/search/datasets?q=tree").await;
    assert_eq!(
        ids_of(&stem),
        [trees.as_str(), parks.as_str()],
        "\"tree\" finds \"trees\""
    );
    let (_, typed) = app.get_json(None, "/api/search/datasets?q=Stre").await;
    assert_eq!(ids_of(&typed), [trees.as_str()], "a word's beginning finds it");
    let (_, negated) = app.get_json(None, "/api/search/datasets?q=trees%20-street").await;
    assert_eq!(
        ids_of(&negated),
        [parks.as_str()],
        "the web syntax still means what it says"
    );
    // A value of an attribute (in the sample each load keeps of a column) finds its datasets.
    let (_, by_value) = app.get_json(None, "/api/search/datasets?q=oak").await;
    let mut found = ids_of(&by_value);
    found.sort();
    let mut public = vec![trees.clone(), parks.clone(), roads.clone()];
    public.sort();
    assert_eq!(found, public, "every public dataset has an oak");
    // Orders: by title, newest first (the roads were edited last).
    let (_, by_title) = app.get_json(None, "/api/search/datasets?sort=title").await;
    assert_eq!(ids_of(&by_title), [parks.as_str(), roads.as_str(), trees.as_str()]);
    let (_, newest) = app.get_json(None, "/api/search/datasets?sort=newest").await;
    assert_eq!(ids_of(&newest)[0], roads);
    assert_eq!(app.get_json(None, "/api/search/datasets?sort=size").await.0, 200);
    assert_eq!(app.get_json(None, "/api/search/datasets?sort=biggest").await.0, 400);
    // A map's area: the points at (1, 2) are in it, the line to (1, 1) is not; a box across the antimeridian finds none.
    let (_, area) = app
        .get_json(None, "/api/search/datasets?bbox=0.5,1.5,1.5,2.5&sort=title")
        .await;
    assert_eq!(ids_of(&area), [parks.as_str(), trees.as_str()]);
    let (_, facets_in_area) = app.get_json(None, "/api/search/facets?bbox=0.5,1.5,1.5,2.5").await;
    assert_eq!(facets_in_area["geometry_type"], json!({"Point": 2}));
    let (_, pacific) = app.get_json(None, "/api/search/datasets?bbox=170,-10,-170,10").await;
    assert_eq!(pacific["total"], 0);
    let (status, wrong) = app.get_json(None, "/api/search/datasets?bbox=1,2,3").await;
    assert_eq!(status, 400, "{wrong}");
    let (_, by_keyword) = app.get_json(None, "/api/search/datasets?keyword=transport").await;
    assert_eq!(by_keyword["results"][0]["id"], roads.as_str());
    let (_, lines) = app
        .get_json(None, "/api/search/datasets?geometry_type=MultiLineString")
        .await;
    assert_eq!(lines["total"], 1);
    assert_eq!(app.get_json(None, "/api/search/datasets?limit=0").await.0, 400);

    let (_, facets) = app.get_json(None, "/api/search/facets/").await;
    assert_eq!(facets["geometry_type"], json!({"Point": 2, "MultiLineString": 1}));
    assert_eq!(facets["visibility"], json!({"public": 3}));
    assert_eq!(facets["keyword"], json!({"network": 1, "transport": 1}));
    assert_eq!(facets["owner"], json!({"admin": 3}));
    assert_eq!(facets["format"], json!({"geojson": 3}));
    let (_, admin_facets) = app.get_json(Some(&admin), "/api/search/facets?q=trees").await;
    assert_eq!(admin_facets["visibility"], json!({"public": 2, "private": 1}));

    let anonymous = app
        .send(
            app.http()
                .get(app.url("/api/search/facets"))
                .header(header::ORIGIN, "https://anywhere.example"),
        )
        .await;
    assert_eq!(anonymous.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");

    let response = app
        .send(
            app.http()
                .post(app.url("/api/search/saved/"))
                .bearer_auth(&admin)
                .json(&json!({"name": "Trees", "query": {"q": "trees"}})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let saved: Value = response.json().await.unwrap();
    let id = saved["id"].as_str().unwrap();
    let (_, list) = app.get_json(Some(&admin), "/api/search/saved").await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    let (status, run) = app.get_json(Some(&admin), &format!("/api/search/saved/{id}/run")).await;
    assert_eq!(status, 200);
    assert_eq!(run["total"], 3);
    let (_, other) = app.user_token("olive", "viewer").await;
    assert_eq!(
        app.get_json(Some(&other), &format!("/api/search/saved/{id}/run"))
            .await
            .0,
        404,
        "saved searches are private"
    );
    let delete = |path: String| app.send(app.http().delete(app.url(&path)).bearer_auth(&admin));
    assert_eq!(delete(format!("/api/search/saved/{id}")).await.status(), 204);
    assert_eq!(delete(format!("/api/search/saved/{id}")).await.status(), 404);
    let mistyped = delete("/api/search/saved/not-a-uuid".into()).await;
    assert_eq!(mistyped.status(), 422);
    let problem: Value = mistyped.json().await.unwrap();
    assert_eq!(
        problem["detail"],
        "the address holds \"not-a-uuid\", which is not an id: ids are 36 characters of hex digits and dashes, \
         like 0f8fad5b-d9cb-469f-a165-70867728950e; check the link or what was typed",
        "a mistyped id is named in words, not the parser's"
    );
    let (status, tile) = app
        .get_json(None, "/api/datasets/7b2e9c1a-0000-4000-8000-00000000000")
        .await;
    assert_eq!(status, 422);
    assert!(tile["detail"].as_str().unwrap().contains("is not an id"), "{tile}");
}
