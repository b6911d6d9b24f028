//! OGC API Records: dataset records in step with their datasets, metadata
//! records and contacts, query parameters and sorting.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

async fn ingest(app: &App, token: &str, title: &str, x: f64) -> String {
    let body = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, 5.0]}, "properties": {}}]});
    app.ingest_geojson(token, &body, &[("title", title), ("visibility", "public")])
        .await
}

fn titles(page: &Value) -> Vec<String> {
    page["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["properties"]["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn records_follow_datasets_and_take_contacts() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let rivers = ingest(&app, &token, "Rivers", 10.0).await;
    ingest(&app, &token, "Lakes", 50.0).await;
    let response = app
        .send(
            app.http()
                .post(app.url("/api/records/"))
                .bearer_auth(&token)
                .json(&json!({"title": "Hydrology programme", "description": "About rivers and lakes", "keywords": ["water"], "extent_bbox": [0, 0, 20, 10]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let record: Value = response.json().await.unwrap();
    let record_id = record["id"].as_str().unwrap().to_string();
    assert_eq!(record["properties"]["type"], "metadata");

    let (status, collection) = app.get_json(None, "/api/collections/catalog").await;
    assert_eq!(status, 200);
    assert_eq!(collection["itemType"], "record");
    let (status, page) = app.get_json(None, "/api/collections/catalog/items?sortby=title").await;
    assert_eq!(status, 200);
    assert_eq!(titles(&page), vec!["Hydrology programme", "Lakes", "Rivers"]);
    let (_, page) = app.get_json(None, "/api/collections/catalog/items?sortby=-title").await;
    assert_eq!(titles(&page), vec!["Rivers", "Lakes", "Hydrology programme"]);
    let (_, page) = app
        .get_json(None, "/api/collections/catalog/items?type=dataset&sortby=title")
        .await;
    assert_eq!(titles(&page), vec!["Lakes", "Rivers"]);
    let (_, page) = app
        .get_json(None, "/api/collections/catalog/items?bbox=5,0,15,10&sortby=title")
        .await;
    assert_eq!(titles(&page), vec!["Hydrology programme", "Rivers"]);
    let (_, page) = app
        .get_json(None, "/api/collections/catalog/items?q=rivers&sortby=title")
        .await;
    assert_eq!(titles(&page), vec!["Hydrology programme", "Rivers"]);
    let (_, page) = app
        .get_json(
            None,
            &format!("/api/collections/catalog/items?ids={rivers},{record_id}&sortby=-created"),
        )
        .await;
    assert_eq!(titles(&page), vec!["Hydrology programme", "Rivers"]);
    let (_, page) = app
        .get_json(None, "/api/collections/catalog/items?limit=2&sortby=title")
        .await;
    assert_eq!(page["numberMatched"], 3);
    let next = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "next")
        .unwrap()["href"]
        .as_str()
        .unwrap()
        .to_string();
    let rest: Value = app.send(app.http().get(&next)).await.json().await.unwrap();
    assert_eq!(titles(&rest), vec!["Rivers"]);
    assert_eq!(
        app.get_json(None, "/api/collections/catalog/items?sortby=colour")
            .await
            .0,
        400
    );
    assert_eq!(
        app.get_json(None, "/api/collections/catalog/items?datetime=2000-01-01T00:00:00Z/..")
            .await
            .1["numberMatched"],
        3
    );

    // A dataset's record changes with the dataset.
    app.send(
        app.http()
            .patch(app.url(&format!("/api/datasets/{rivers}")))
            .bearer_auth(&token)
            .json(&json!({"title": "Streams"})),
    )
    .await;
    let (_, item) = app
        .get_json(None, &format!("/api/collections/catalog/items/{rivers}"))
        .await;
    assert_eq!(item["properties"]["title"], "Streams");

    let contact = |record: &str| {
        app.send(
            app.http()
                .post(app.url(&format!("/api/records/{record}/contacts/")))
                .bearer_auth(&token)
                .json(&json!({"name": "Ana", "role": "pointOfContact", "email": "ana@example.org"})),
        )
    };
    let response = contact(&rivers).await;
    assert_eq!(response.status(), 201);
    let added: Value = response.json().await.unwrap();
    assert_eq!(contact(&record_id).await.status(), 201);
    let (_, item) = app
        .get_json(None, &format!("/api/collections/catalog/items/{rivers}"))
        .await;
    assert_eq!(item["properties"]["contacts"][0]["name"], "Ana");
    let path = format!("/api/records/{rivers}/contacts/{}/", added["id"].as_str().unwrap());
    assert_eq!(
        app.send(app.http().delete(app.url(&path)).bearer_auth(&token))
            .await
            .status(),
        204
    );
    assert_eq!(
        app.send(app.http().delete(app.url(&path)).bearer_auth(&token))
            .await
            .status(),
        404
    );

    let updated = app
        .send(
            app.http()
                .put(app.url(&format!("/api/records/{record_id}")))
                .bearer_auth(&token)
                .json(&json!({"title": "Water programme"})),
        )
        .await;
    assert_eq!(updated.status(), 200);
    let bad = app
        .send(
            app.http()
                .post(app.url("/api/records"))
                .bearer_auth(&token)
                .json(&json!({"description": "untitled"})),
        )
        .await;
    assert_eq!(bad.status(), 422);
    // An extent past the world (pictures and maps frame it) is refused.
    for extent in [json!([5.1, -1e308, 1e308, 4_600_000]), json!([0, 0, 600_000, 5])] {
        let bad = app
            .send(
                app.http()
                    .post(app.url("/api/records"))
                    .bearer_auth(&token)
                    .json(&json!({"title": "Far", "extent_bbox": extent})),
            )
            .await;
        assert_eq!(bad.status(), 422, "{extent}");
    }
    let deleted = app
        .send(
            app.http()
                .delete(app.url(&format!("/api/records/{record_id}")))
                .bearer_auth(&token),
        )
        .await;
    assert_eq!(deleted.status(), 204);
    assert_eq!(app.get_json(None, &format!("/api/records/{record_id}")).await.0, 404);
}

/// The records items route refuses a query parameter it does not define
/// (OGC API Features Part 1, which Records builds on) rather than
/// answering as if it were not there, and every record, listed or alone,
/// links to its collection.
#[tokio::test]
async fn records_refuse_unknown_parameters_and_link_their_collection() {
    let app = App::start().await;
    let token = app.admin_token().await;
    let response = app
        .send(
            app.http
                .post(app.url("/api/records/"))
                .bearer_auth(&token)
                .json(&json!({"title": "Survey", "extent_bbox": [0, 0, 1, 1]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let record: Value = response.json().await.unwrap();
    let id = record["id"].as_str().unwrap().to_string();

    for query in [
        "colour=red",
        "filter=title%3D%27Survey%27",
        "page=2",
        "q=survey&sort=title",
        "Limit=2",
    ] {
        let response = app
            .send(
                app.http
                    .get(app.url(&format!("/api/collections/catalog/items?{query}"))),
            )
            .await;
        assert_eq!(response.status(), 400, "{query}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{query}"
        );
    }
    // Its own parameters (`f` and the caller's `api_key` among them) are taken.
    let key = app.api_key(&token, "read_only").await;
    for query in [
        "q=survey&bbox=0,0,1,1&datetime=../2100-01-01T00:00:00Z&type=metadata&limit=5&offset=0&sortby=-title"
            .to_string(),
        format!("ids={id}&f=json"),
        format!("api_key={key}"),
    ] {
        let (status, page) = app
            .get_json(None, &format!("/api/collections/catalog/items?{query}"))
            .await;
        assert_eq!(status, 200, "{query}: {page}");
        assert_eq!(page["numberMatched"], 1, "{query}");
    }

    let collection = app.url("/api/collections/catalog");
    let collection_link = |record: &Value| {
        record["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rel"] == "collection")
            .map(|l| (l["href"].clone(), l["type"].clone()))
    };
    let (_, page) = app.get_json(None, "/api/collections/catalog/items").await;
    assert_eq!(page["features"].as_array().map(Vec::len), Some(1), "{page}");
    for record in page["features"].as_array().unwrap() {
        assert_eq!(
            collection_link(record),
            Some((json!(collection), json!("application/json"))),
            "{record}"
        );
    }
    let (status, alone) = app
        .get_json(None, &format!("/api/collections/catalog/items/{id}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        collection_link(&alone),
        Some((json!(collection), json!("application/json")))
    );
    let (status, _) = app.get_json(None, "/api/collections/catalog").await;
    assert_eq!(status, 200, "the link leads to the collection");
}
