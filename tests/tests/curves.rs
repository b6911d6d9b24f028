//! Every stored geometry can be served: curve geometries (with arcs or
//! made of straight parts) are stored as straight segments, the dataset
//! says so, and items, features, tiles and the sandbox serve them.
use std::process::Command;

use catalog_tests::{Api, App};
use serde_json::{Value, json};

/// Layer name, GDAL layer type, and two geometries: one with arcs, one of
/// a curve type whose parts are all straight.
const LAYERS: [(&str, &str, &str, &str); 6] = [
    (
        "circular",
        "CIRCULARSTRING",
        "CIRCULARSTRING(0 0,1 1,2 0)",
        "CIRCULARSTRING(10 0,11 1,12 0,13 -1,14 0)",
    ),
    (
        "compound",
        "COMPOUNDCURVE",
        "COMPOUNDCURVE(CIRCULARSTRING(0 0,1 1,2 0),(2 0,3 0))",
        "COMPOUNDCURVE((10 0,11 1),(11 1,12 0))",
    ),
    (
        "curvepolygon",
        "CURVEPOLYGON",
        "CURVEPOLYGON(CIRCULARSTRING(0 0,2 0,0 0))",
        "CURVEPOLYGON((10 0,11 0,11 1,10 0))",
    ),
    (
        "multicurve",
        "MULTICURVE",
        "MULTICURVE(CIRCULARSTRING(0 0,1 1,2 0),(3 0,4 0))",
        "MULTICURVE((10 0,11 1))",
    ),
    (
        "multisurface",
        "MULTISURFACE",
        "MULTISURFACE(CURVEPOLYGON(CIRCULARSTRING(0 0,2 0,0 0)))",
        "MULTISURFACE(((10 0,11 0,11 1,10 0)))",
    ),
    // A layer of no declared type holding curves of two families.
    (
        "mixed",
        "GEOMETRY",
        "CURVEPOLYGON(CIRCULARSTRING(0 0,2 0,0 0))",
        "COMPOUNDCURVE((10 0,11 1),(11 1,12 0))",
    ),
];

/// A GeoPackage with one layer per curve type, written by GDAL itself.
fn curves_gpkg() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let gpkg = dir.path().join("curves.gpkg");
    for (name, kind, arc, straight) in LAYERS {
        let csv = dir.path().join(format!("{name}.csv"));
        std::fs::write(&csv, format!("name,wkt\narc,\"{arc}\"\nstraight,\"{straight}\"\n")).unwrap();
        let mut command = Command::new("ogr2ogr");
        command.args(["-f", "GPKG"]).arg(&gpkg).arg(&csv);
        if gpkg.exists() {
            command.arg("-update");
        }
        let output = command
            .args(["-nln", name, "-nlt", kind, "-a_srs", "EPSG:4326"])
            .args(["-oo", "GEOM_POSSIBLE_NAMES=wkt", "-oo", "KEEP_GEOM_COLUMNS=NO"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    std::fs::read(gpkg).unwrap()
}

const LINEAR: [&str; 6] = [
    "Point",
    "LineString",
    "Polygon",
    "MultiPoint",
    "MultiLineString",
    "MultiPolygon",
];

#[tokio::test]
async fn every_curve_type_is_stored_straight_and_served_everywhere() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let job_id = app
        .upload_ok(&token, "curves.gpkg", curves_gpkg(), &[("visibility", "public")])
        .await;
    let job = app.wait_job(&token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}\n{}", app.process_logs());
    let ids: Vec<String> = job["dataset_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), LAYERS.len(), "{job}");
    for id in &ids {
        let dataset = app.dataset(&token, id).await;
        let layer = dataset["source_layer"].as_str().unwrap().to_string();
        let expected = match layer.as_str() {
            "circular" | "compound" | "multicurve" => "MultiLineString",
            "curvepolygon" | "multisurface" => "MultiPolygon",
            _ => "Geometry",
        };
        assert_eq!(dataset["geometry_type"], expected, "{layer}: {dataset}");
        assert_eq!(dataset["geometry_info"]["linearized"], true, "{layer}: {dataset}");
        assert!(
            !dataset["geometry_info"]["source_curve_types"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{layer}: {dataset}"
        );

        let (status, items) = app.get_json(None, &format!("/api/collections/{id}/items")).await;
        assert_eq!(status, 200, "{layer}: {items}");
        let features = items["features"].as_array().unwrap();
        assert_eq!(features.len(), 2, "{layer}: {items}");
        let arcs = features.iter().filter(|f| f["properties"]["name"] == "arc").count();
        assert_eq!(arcs, 1, "{layer}: {items}");
        for feature in features {
            let kind = feature["geometry"]["type"].as_str().unwrap_or_default();
            assert!(LINEAR.contains(&kind), "{layer}: {feature}");
            // The arcs were cut into segments, not reduced to their end points.
            if feature["properties"]["name"] == "arc" {
                assert!(
                    feature["geometry"].to_string().matches(',').count() > 10,
                    "{layer}: {feature}"
                );
            }
        }
        let first = features[0]["id"].clone();
        let (status, item) = app
            .get_json(None, &format!("/api/collections/{id}/items/{first}"))
            .await;
        assert_eq!(status, 200, "{layer}: {item}");

        let (status, page) = app
            .get_json(Some(&token), &format!("/api/datasets/{id}/features"))
            .await;
        assert_eq!(status, 200, "{layer}: {page}");

        let tile = app
            .send(app.http().get(app.url(&format!("/api/tiles/{id}/0/0/0.pbf"))))
            .await;
        assert_eq!(tile.status(), 200, "{layer}");

        let table = dataset["table_name"].as_str().unwrap();
        let response = app
            .send(
                app.http()
                    .post(app.url("/api/query/"))
                    .bearer_auth(&token)
                    .json(&json!({"sql": format!("SELECT geom FROM data.{table}")})),
            )
            .await;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or_default();
        assert_eq!(status, 200, "{layer}: {body}");
    }
}

#[tokio::test]
async fn features_cannot_be_written_as_curves() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let mixed = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [0, 0]}},
        {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}
    ]});
    let id = app.ingest_geojson(&token, &mixed, &[]).await;
    assert_eq!(app.dataset(&token, &id).await["geometry_type"], "Geometry");
    for geometry in [
        json!({"type": "CircularString", "coordinates": [[0, 0], [1, 1], [2, 0]]}),
        json!({"type": "GeometryCollection", "geometries": [{"type": "CurvePolygon", "coordinates": [[[0, 0], [2, 0], [0, 0]]]}]}),
    ] {
        let response = app
            .send(
                app.http()
                    .post(app.url(&format!("/api/datasets/{id}/features")))
                    .bearer_auth(&token)
                    .json(&json!({"type": "Feature", "geometry": geometry, "properties": {}})),
            )
            .await;
        assert_eq!(response.status(), 422, "{geometry}");
    }
}

#[tokio::test]
async fn tables_holding_curves_are_not_registered() {
    let app = App::start().await;
    let admin = app.admin_token().await;
    for sql in [
        "CREATE TABLE public.arcs (id integer PRIMARY KEY, geom geometry(CurvePolygon, 4326))",
        "INSERT INTO public.arcs VALUES (1, 'SRID=4326;CURVEPOLYGON(CIRCULARSTRING(0 0,2 0,0 0))')",
        "CREATE TABLE public.shapes (id integer PRIMARY KEY, geom geometry(Geometry, 4326))",
        "INSERT INTO public.shapes VALUES (1, 'SRID=4326;POINT(0 0)'), (2, 'SRID=4326;COMPOUNDCURVE((0 0,1 1),(1 1,2 0))')",
        "CREATE TABLE public.lines (id integer PRIMARY KEY, geom geometry(LineString, 4326))",
        "INSERT INTO public.lines VALUES (1, 'SRID=4326;LINESTRING(0 0,1 1)')",
    ] {
        sqlx::query(sql).execute(&app.pool).await.unwrap();
    }
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(&admin)
                .json(&json!({"tables": [
                    {"table_name": "arcs", "title": "Arcs"},
                    {"table_name": "shapes", "title": "Shapes"},
                    {"table_name": "lines", "title": "Lines"}
                ]})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let results = body["results"].as_array().unwrap();
    for (result, curve) in results.iter().zip(["CurvePolygon", "CompoundCurve"]) {
        assert_eq!(result["status"], "error", "{body}");
        let error = result["error"].as_str().unwrap();
        assert!(error.contains(curve) && error.contains("ST_CurveToLine"), "{error}");
    }
    assert_eq!(results[2]["status"], "success", "{body}");
}
