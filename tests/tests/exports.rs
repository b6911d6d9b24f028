//! Filtered exports: a download takes the items parameters that choose
//! features, properties, order and CRS, and every format GDAL writes opens
//! in GDAL with the features items match, the asked columns in the asked
//! order and the coordinates in the asked CRS. Natural Earth's countries,
//! the whole world, are the data.
use catalog_tests::{Api, App};
use serde_json::{Value, json};

const EPSG_3857: &str = "http://www.opengis.net/def/crs/EPSG/0/3857";

fn query(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The first coordinate pair of a GeoJSON geometry.
fn first_point(geometry: &Value) -> [f64; 2] {
    let mut value = &geometry["coordinates"];
    while value[0].is_array() {
        value = &value[0];
    }
    [value[0].as_f64().unwrap(), value[1].as_f64().unwrap()]
}

/// What GDAL reads from a downloaded file: per feature its id, `name`
/// and first point; the layer's field names and EPSG code.
struct Opened {
    features: Vec<(u64, String, [f64; 2])>,
    fields: Vec<String>,
    epsg: Option<u32>,
}

fn open(bytes: &[u8], file_name: &str) -> Opened {
    use gdal::vector::LayerAccess;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name);
    std::fs::write(&path, bytes).unwrap();
    let opened = if file_name.ends_with(".zip") {
        format!("/vsizip/{}", path.display())
    } else {
        path.display().to_string()
    };
    let ds = gdal::Dataset::open(&opened).unwrap_or_else(|e| panic!("{file_name}: {e}"));
    let mut layer = ds.layer(0).unwrap();
    let fields = layer.defn().fields().map(|f| f.name()).collect();
    let epsg = layer
        .spatial_ref()
        .and_then(|srs| srs.auth_code().ok())
        .map(|code| code as u32);
    let features = layer
        .features()
        .map(|f| {
            let name = f
                .field_as_string(f.field_index("name").unwrap())
                .unwrap()
                .unwrap_or_default();
            let point = f.geometry().map(|g| {
                let mut g = g.clone();
                while g.geometry_count() > 0 {
                    g = g.get_geometry(0).clone();
                }
                let (x, y, _) = g.get_point(0);
                [x, y]
            });
            (f.fid().unwrap_or(0), name, point.unwrap_or([f64::NAN, f64::NAN]))
        })
        .collect();
    Opened { features, fields, epsg }
}

#[tokio::test]
async fn exports_hold_the_features_items_match_in_every_format() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app.world_countries(&admin, &[("visibility", "public")]).await;

    // Populous countries of Africa and its neighbours, by text CQL2 and a
    // box; sorted by population, largest first.
    let filter = "continent IN ('Africa', 'Asia') AND pop_est > 20000000";
    let chosen = [("filter", filter), ("bbox", "-20,-40,60,40"), ("sortby", "-pop_est")];
    let (status, items) = app
        .get_json(
            None,
            &format!(
                "/api/collections/{id}/items?{}",
                query(&[&chosen[..], &[("limit", "1000"), ("crs", EPSG_3857)]].concat())
            ),
        )
        .await;
    assert_eq!(status, 200, "{items}");
    let expected: Vec<(u64, String, [f64; 2])> = items["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_u64().unwrap(),
                f["properties"]["name"].as_str().unwrap().to_string(),
                first_point(&f["geometry"]),
            )
        })
        .collect();
    assert_eq!(items["numberMatched"].as_u64().unwrap() as usize, expected.len());
    assert!(expected.len() > 10, "a real subset: {}", expected.len());

    let asked = [("properties", "name,iso_a3,pop_est"), ("crs", EPSG_3857)];
    for (format, file_name) in [
        ("gpkg", "a.gpkg"),
        ("geojson", "a.geojson"),
        ("csv", "a.csv"),
        ("shp", "a.zip"),
        ("fgb", "a.fgb"),
    ] {
        let url = format!(
            "/api/datasets/{id}/download?{}",
            query(&[&chosen[..], &asked[..], &[("format", format)]].concat())
        );
        let response = app.send(app.http().get(app.url(&url))).await;
        assert_eq!(response.status(), 200, "{format}: {}", response.text().await.unwrap());
        assert_eq!(
            response.headers()["content-crs"],
            format!("<{EPSG_3857}>").as_str(),
            "{format}"
        );
        let opened = open(&response.bytes().await.unwrap(), file_name);
        let fields: Vec<&str> = opened
            .fields
            .iter()
            .map(String::as_str)
            .filter(|f| *f != "WKT")
            .collect();
        assert_eq!(
            fields,
            ["name", "iso_a3", "pop_est"],
            "{format}: the asked columns in order"
        );
        // A GeoPackage keeps each feature's id as its row id, and reads
        // back in that order.
        let mut expected = expected.clone();
        if format == "gpkg" {
            expected.sort_by_key(|f| f.0);
        }
        let names: Vec<&str> = opened.features.iter().map(|f| f.1.as_str()).collect();
        let expected_names: Vec<&str> = expected.iter().map(|f| f.1.as_str()).collect();
        assert_eq!(
            names, expected_names,
            "{format}: the features items match, in their order"
        );
        if format != "csv" {
            assert_eq!(opened.epsg, Some(3857), "{format}");
            for ((fid, name, point), (id, _, item_point)) in opened.features.iter().zip(&expected) {
                assert!(
                    (point[0] - item_point[0]).abs() < 1e-3 && (point[1] - item_point[1]).abs() < 1e-3,
                    "{format}: {name} starts at {point:?}, items say {item_point:?}"
                );
                if matches!(format, "gpkg" | "geojson") {
                    assert_eq!(fid, id, "{format}: {name} keeps its id");
                }
            }
        }
    }

    // The same selection in CQL2 JSON; every property, in CRS84, when
    // none are named (the key first where the format keeps no ids).
    let json_filter = json!({"op": "and", "args": [
        {"op": "in", "args": [{"property": "continent"}, ["Africa", "Asia"]]},
        {"op": ">", "args": [{"property": "pop_est"}, 20000000]}]})
    .to_string();
    let url = format!(
        "/api/datasets/{id}/download?{}",
        query(&[
            ("filter", json_filter.as_str()),
            ("filter-lang", "cql2-json"),
            ("bbox", "-20,-40,60,40"),
            ("format", "fgb"),
        ])
    );
    let response = app.send(app.http().get(app.url(&url))).await;
    assert_eq!(response.status(), 200);
    let opened = open(&response.bytes().await.unwrap(), "b.fgb");
    assert_eq!(opened.features.len(), expected.len());
    assert_eq!(opened.epsg, Some(4326));
    assert_eq!(opened.fields[0], "gid", "{:?}", opened.fields);
    for name in ["pop_est", "continent", "name", "iso_a3", "gdp_md_est"] {
        assert!(opened.fields.iter().any(|f| f == name), "{name}: {:?}", opened.fields);
    }

    // Mistakes are 400 problems before any file is written.
    for refused in [
        "limit=5",
        "cursor=abc",
        "filter=nosuch%20%3D%201",
        "filter=pop_est%20%3D%20'many'",
        "filter=name%20%3D",
        "properties=nosuch",
        "crs=http://www.opengis.net/def/crs/EPSG/0/9999",
        "bbox=1,2,3",
        "format=kml",
    ] {
        let response = app
            .send(
                app.http()
                    .get(app.url(&format!("/api/datasets/{id}/download?{refused}"))),
            )
            .await;
        assert_eq!(response.status(), 400, "{refused}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{refused}"
        );
    }
}
