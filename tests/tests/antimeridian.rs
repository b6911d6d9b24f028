//! Extents across the antimeridian: every place that reports a dataset's
//! extent gives the RFC 7946 form (west greater than east), and boxes
//! across it select what lies on either side.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

const ACROSS: [f64; 4] = [170.0, -20.0, -170.0, -10.0];

fn assert_across(bbox: &Value, what: &str) {
    let got: Vec<f64> = bbox
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no bbox"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, ACROSS, "{what}");
}

fn ids_of(collection: &Value) -> Vec<String> {
    collection["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].to_string().trim_matches('"').to_string())
        .collect()
}

#[tokio::test]
async fn extents_across_the_antimeridian_are_reported_and_queried_in_rfc7946_form() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    // One feature in two parts, 170°E to 180° and 180° to 170°W (as
    // RFC 7946 asks such geometries to be cut), and a point on the west side.
    let pacific = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "band"}, "geometry": {"type": "MultiPolygon", "coordinates": [
            [[[170, -20], [180, -20], [180, -10], [170, -10], [170, -20]]],
            [[[-180, -20], [-170, -20], [-170, -10], [-180, -10], [-180, -20]]]
        ]}},
        {"type": "Feature", "properties": {"name": "island"}, "geometry": {"type": "Point", "coordinates": [175, -15]}}
    ]});
    let id = app.ingest_geojson(&token, &pacific, &[("visibility", "public")]).await;

    let dataset = app.dataset(&token, &id).await;
    assert_across(&dataset["extent_bbox"], "dataset record");
    let (_, collection) = app.get_json(None, &format!("/api/collections/{id}")).await;
    assert_across(&collection["extent"]["spatial"]["bbox"][0], "OGC collection");
    let (_, tilejson) = app.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    // TileJSON 3.0.0 bounds must not wrap, and MapLibre requests no tile
    // inside wrapping bounds: such data gets none (the whole world), never
    // the false box between the two sides.
    assert!(tilejson["tiles"].is_array(), "{tilejson}");
    assert!(tilejson.get("bounds").is_none(), "TileJSON: {tilejson}");

    let response = app
        .send(
            app.http
                .post(app.url("/api/maps/"))
                .bearer_auth(&token)
                .json(&json!({"name": "Pacific", "layers": [{"dataset_id": id}]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    assert_across(&map["layers"][0]["dataset_extent_bbox"], "map layer");
    let (_, map) = app
        .get_json(Some(&token), &format!("/api/maps/{}", map["id"].as_str().unwrap()))
        .await;
    assert_across(&map["layers"][0]["dataset_extent_bbox"], "map layer, read back");

    // The dataset's own STAC item and record: the box, and a geometry in
    // two halves rather than the 340° band between east and west.
    let (_, stac) = app.get_json(None, &format!("/api/stac/search?ids={id}")).await;
    assert_across(&stac["features"][0]["bbox"], "STAC item");
    assert_eq!(stac["features"][0]["geometry"]["type"], "MultiPolygon");
    let (_, record) = app.get_json(None, &format!("/api/records/{id}")).await;
    assert_eq!(record["geometry"]["type"], "MultiPolygon", "{record}");

    // Boxes, crossing or not, find the dataset on either side and not elsewhere.
    for (bbox, found) in [
        ("178,-30,-178,0", true),
        ("-175,-30,-172,0", true),
        ("172,-30,174,0", true),
        ("0,-30,10,0", false),
    ] {
        let (status, stac) = app.get_json(None, &format!("/api/stac/search?bbox={bbox}")).await;
        assert_eq!(status, 200, "{stac}");
        assert_eq!(ids_of(&stac).contains(&id), found, "STAC bbox {bbox}: {stac}");
        let (status, records) = app
            .get_json(None, &format!("/api/collections/catalog/items?bbox={bbox}"))
            .await;
        assert_eq!(status, 200, "{records}");
        assert_eq!(ids_of(&records).contains(&id), found, "records bbox {bbox}: {records}");
    }

    // Features: a box across the antimeridian holds the band but not the
    // island at 175°E, on the items route and the features route alike.
    for path in [
        format!("/api/collections/{id}/items?bbox=178,-30,-178,0"),
        format!("/api/datasets/{id}/features?bbox=178,-30,-178,0"),
    ] {
        let (status, page) = app.get_json(Some(&token), &path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert_eq!(page["numberMatched"], 1, "{path}: {page}");
        assert_eq!(page["features"][0]["properties"]["name"], "band", "{path}: {page}");
    }
    let (_, page) = app
        .get_json(
            Some(&token),
            &format!("/api/datasets/{id}/features?bbox=172,-30,-172,0"),
        )
        .await;
    assert_eq!(page["numberMatched"], 2, "{page}");
}

#[tokio::test]
async fn a_registered_table_across_the_antimeridian_gets_the_rfc7946_extent() {
    let app = App::start().await;
    let admin = app.admin_token().await;
    for sql in [
        "CREATE TABLE public.pacific (id integer PRIMARY KEY, geom geometry(MultiPolygon, 4326))",
        "INSERT INTO public.pacific VALUES (1, 'SRID=4326;MULTIPOLYGON(((170 -20,180 -20,180 -10,170 -10,170 -20)),
             ((-180 -20,-170 -20,-170 -10,-180 -10,-180 -20)))'), (2, NULL)",
    ] {
        sqlx::query(sql).execute(&app.pool).await.unwrap();
    }
    let response = app
        .send(
            app.http
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(&admin)
                .json(&json!({"tables": [{"table_name": "pacific", "title": "Pacific"}]})),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["results"][0]["status"], "success", "{body}");
    let dataset = app
        .dataset(&admin, body["results"][0]["dataset_id"].as_str().unwrap())
        .await;
    assert_across(&dataset["extent_bbox"], "registered table");
    assert_eq!(dataset["feature_count"], 2);
}
