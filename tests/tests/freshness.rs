//! Fresh and consistent answers: changes show at once in every API
//! process; paging links continue exactly and keep the caller's credential.
use std::collections::HashSet;

use catalog_tests::{Api, Stack, StackOptions};
use serde_json::{Value, json};

fn points(n: usize) -> Value {
    let features: Vec<Value> = (0..n)
        .map(|i| json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i as f64, 0.0]}, "properties": {"n": i}}))
        .collect();
    json!({"type": "FeatureCollection", "features": features})
}

async fn get(stack: &Stack, url: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = stack.http.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn post(stack: &Stack, url: &str, body: &Value) -> Value {
    let response = stack.http.post(url).json(body).send().await.unwrap();
    response.json().await.unwrap()
}

fn next_href(page: &Value) -> Option<String> {
    page["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == "next")
        .map(|l| l["href"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn changes_show_at_once_in_every_api_process() {
    let mut stack = Stack::start_with(StackOptions::workers(1)).await;
    let second = stack.add_api().await;
    let token = stack.admin_token().await;
    let (_, reader) = stack.user_token("rhea", "viewer").await;
    let id = stack
        .ingest_geojson(&token, &points(3), &[("visibility", "internal")])
        .await;

    // The second process has the dataset cached from these reads.
    let items = format!("{second}/api/collections/{id}/items");
    let (status, page) = get(&stack, &items, Some(&reader)).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["numberMatched"], 3);
    let (_, queryables) = get(
        &stack,
        &format!("{second}/api/collections/{id}/queryables"),
        Some(&reader),
    )
    .await;
    assert!(queryables["properties"]["colour"].is_null());

    // A column and a feature added through the first process...
    let response = stack
        .http
        .post(stack.url(&format!("/api/layers/{id}/columns/")))
        .bearer_auth(&token)
        .json(&json!({"column": {"name": "colour", "type": "text"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = stack
        .http
        .post(stack.url(&format!("/api/datasets/{id}/features")))
        .bearer_auth(&token)
        .json(&json!({"geometry": {"type": "Point", "coordinates": [9, 9]}, "properties": {"colour": "red"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    // ...show in the second at once (the announcement is asynchronous, so
    // allow it a moment, far below the cache's minute).
    let fresh = async {
        for _ in 0..40 {
            let (_, queryables) = get(
                &stack,
                &format!("{second}/api/collections/{id}/queryables"),
                Some(&reader),
            )
            .await;
            let (_, page) = get(&stack, &format!("{items}?colour=red"), Some(&reader)).await;
            if queryables["properties"]["colour"]["type"] == "string" && page["numberMatched"] == 1 {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    };
    assert!(fresh.await, "the second API process still serves the old record");

    // Made private: gone at once for the reader, in every listing of both.
    let response = stack
        .http
        .patch(stack.url(&format!("/api/datasets/{id}")))
        .bearer_auth(&token)
        .json(&json!({"visibility": "private"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut gone = false;
    for _ in 0..40 {
        let (status, _) = get(&stack, &items, Some(&reader)).await;
        let (_, list) = get(&stack, &format!("{second}/api/collections"), Some(&reader)).await;
        let listed = list["collections"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == id.as_str());
        if status == 404 && !listed {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(gone, "a dataset made private is still served by the second process");

    // A newly published dataset is listed at once by both.
    let new_id = stack
        .ingest_geojson(&token, &points(2), &[("visibility", "public")])
        .await;
    for base in [stack.url(""), second.clone()] {
        let (_, list) = get(&stack, &format!("{base}/api/collections"), None).await;
        assert!(
            list["collections"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["id"] == new_id.as_str()),
            "{base}: {list}"
        );
        let (status, _) = get(&stack, &format!("{base}/api/collections/{new_id}/items"), None).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn links_keep_the_callers_query_string_key_and_nothing_else() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let id = stack.ingest_geojson(&token, &points(5), &[]).await;
    let key = stack.api_key(&token, "read_only").await;

    let (status, collection) = get(
        &stack,
        &stack.url(&format!("/api/collections/{id}?api_key={key}")),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let items_link = collection["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "items")
        .unwrap()["href"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, page) = get(&stack, &format!("{items_link}&limit=2"), None).await;
    assert_eq!(
        status, 200,
        "the collection's items link works with no other credential: {page}"
    );
    let mut seen = Vec::new();
    let mut page = page;
    loop {
        seen.extend(
            page["features"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_i64().unwrap()),
        );
        let Some(next) = next_href(&page) else { break };
        assert!(next.contains(&format!("api_key={key}")), "{next}");
        let (status, body) = get(&stack, &next, None).await;
        assert_eq!(status, 200, "page after {seen:?}: {body}");
        page = body;
    }
    assert_eq!(seen, vec![1, 2, 3, 4, 5]);

    // The offset-paged feature list keeps its filter and the key too.
    let (status, page) = get(
        &stack,
        &stack.url(&format!(
            "/api/datasets/{id}/features?limit=1&bbox=0.5,-1,4.5,1&api_key={key}"
        )),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let next = next_href(&page).unwrap();
    let (status, page) = get(&stack, &next, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["numberMatched"], 4, "the bbox rides along: {next}");

    // A header credential is never written into a link.
    let (_, page) = get(
        &stack,
        &stack.url(&format!("/api/collections/{id}/items?limit=2")),
        Some(&token),
    )
    .await;
    assert!(!next_href(&page).unwrap().contains("api_key"));
}

#[tokio::test]
async fn stac_search_pages_continue_exactly() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let mut ids = Vec::new();
    for _ in 0..7 {
        ids.push(
            stack
                .ingest_geojson(&token, &points(1), &[("visibility", "public")])
                .await,
        );
    }

    // POST: page 1, then the catalog changes (one seen item deleted, one
    // added), then the rest through next links.
    let first = post(&stack, &stack.url("/api/stac/search"), &json!({"limit": 3})).await;
    let page_ids = |page: &Value| -> Vec<String> {
        page["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    let mut seen = page_ids(&first);
    assert_eq!(seen.len(), 3);
    let response = stack
        .http
        .delete(stack.url(&format!("/api/datasets/{}", seen[0])))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let added = stack
        .ingest_geojson(&token, &points(1), &[("visibility", "public")])
        .await;
    let mut page = first;
    while let Some(next) = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "next")
        .cloned()
    {
        assert_eq!(next["method"], "POST");
        page = post(&stack, next["href"].as_str().unwrap(), &next["body"]).await;
        seen.extend(page_ids(&page));
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no item twice: {seen:?}");
    let mut expected = ids.clone();
    expected.push(added);
    assert_eq!(seen, expected, "every item once, in order, the new one last");

    // GET: filters (ids) and the paging stay in the next link.
    let wanted = [&ids[1], &ids[3], &ids[4], &ids[6]].map(|s| s.as_str()).join(",");
    let (status, page) = get(
        &stack,
        &stack.url(&format!("/api/stac/search?limit=2&ids={wanted}")),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let mut seen = page_ids(&page);
    let next = next_href(&page).unwrap();
    let (status, page) = get(&stack, &next, None).await;
    assert_eq!(status, 200, "{page}");
    seen.extend(page_ids(&page));
    assert_eq!(seen.join(","), wanted);
    assert!(next_href(&page).is_none());
    let (status, _) = get(&stack, &stack.url("/api/stac/search?token=offset:3"), None).await;
    assert_eq!(status, 400, "a token this service did not write");
}
