//! Styles kept: a GeoPackage whose layer QGIS styled (categorized and
//! graduated, saved to its `layer_styles` as QML and SLD) keeps its styles:
//! listed, downloaded byte for byte, and the default one becomes the
//! dataset's MapLibre paint (a `match` with QGIS's colours), which a map
//! layer starts from. A reupload with styles brings its own; one without
//! keeps the dataset's.
use std::process::Command;

use catalog_tests::{Api, App, validate_style};
use gdal::vector::LayerAccess;
use serde_json::{Value, json};

/// Natural Earth's countries as a GeoPackage (layer `countries`), unstyled.
fn plain_geopackage(gpkg: &std::path::Path) {
    let shapefile = catalog_tests::data_dir().join("shp/naturalearth_lowres/naturalearth_lowres.shp");
    let status = Command::new("ogr2ogr")
        .args(["-f", "GPKG", "-nln", "countries", "-nlt", "MULTIPOLYGON"])
        .arg(gpkg)
        .arg(&shapefile)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Natural Earth's countries as a GeoPackage with QGIS's two styles;
/// answers its bytes and its `layer_styles` rows (name, QML, SLD).
fn styled_geopackage() -> (Vec<u8>, Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let gpkg = dir.path().join("countries.gpkg");
    plain_geopackage(&gpkg);
    let python = std::env::var("CATALOG_QGIS_PYTHON").expect("CATALOG_QGIS_PYTHON (set by scripts/test.sh)");
    let output = Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/qgis_styles.py"))
        .arg(&gpkg)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let ds = gdal::Dataset::open(&gpkg).unwrap();
    let mut rows = ds
        .execute_sql(
            "SELECT styleName, styleQML, styleSLD FROM layer_styles ORDER BY id",
            None,
            gdal::vector::sql::Dialect::SQLITE,
        )
        .unwrap()
        .unwrap();
    let styles = rows
        .features()
        .map(|f| {
            let text = |i| f.field_as_string(i).unwrap().unwrap();
            (text(0), text(1), text(2))
        })
        .collect();
    drop(rows);
    drop(ds);
    (std::fs::read(&gpkg).unwrap(), styles)
}

#[tokio::test]
async fn a_geopackage_keeps_its_qgis_styles_and_its_default_becomes_the_maplibre_paint() {
    let (gpkg, kept) = styled_geopackage();
    assert_eq!(kept.len(), 2, "QGIS saved two styles");
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let job = app
        .upload_ok(&admin, "countries.gpkg", gpkg, &[("visibility", "public")])
        .await;
    let job = app.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(
        job["dataset_ids"].as_array().unwrap().len(),
        1,
        "layer_styles is not a dataset"
    );
    let id = job["dataset_id"].as_str().unwrap().to_string();

    let (status, list) = app.get_json(None, &format!("/api/datasets/{id}/styles")).await;
    assert_eq!(status, 200, "{list}");
    let styles = list["styles"].as_array().unwrap();
    let names: Vec<&str> = styles.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["by continent", "by population"], "the default first");
    assert_eq!(styles[0]["default"], true);
    // Each encoding downloads as it came, byte for byte.
    for (style, (name, qml, sld)) in styles.iter().zip(&kept) {
        assert_eq!(style["name"], name.as_str());
        assert_eq!(style["formats"], json!(["qml", "sld"]));
        for (format, text) in [("qml", qml), ("sld", sld)] {
            let link = style["links"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["href"].as_str().unwrap().ends_with(format))
                .unwrap();
            let href = link["href"].as_str().unwrap();
            let path = &href[href.find("/api/").unwrap()..];
            let response = app.send(app.http().get(app.url(path))).await;
            assert_eq!(response.status(), 200, "{path}");
            assert_eq!(
                response.bytes().await.unwrap().as_ref(),
                text.as_bytes(),
                "{name} {format}"
            );
        }
    }

    // The default (categorized) became a match on the same colours.
    let expected = json!([
        "match",
        ["get", "continent"],
        "Africa",
        "#e41a1c",
        "Asia",
        "#377eb8",
        "Europe",
        "#4daf4a",
        "#999999"
    ]);
    assert_eq!(list["default_paint"]["fill-color"], expected, "{list}");

    // A map layer of the dataset starts from it.
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&admin)
                .json(&json!({"name": "Continents", "layers": [{"dataset_id": id}]})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let (status, style) = app
        .get_json(
            Some(&admin),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200);
    validate_style(&style);
    let layer = style["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["source"].as_str().is_some_and(|s| s.starts_with("dataset-")))
        .unwrap_or_else(|| panic!("the dataset's layer: {style}"));
    assert_eq!(layer["type"], "fill");
    assert_eq!(layer["paint"]["fill-color"], expected);

    // So does the dataset's own style, the one a MapLibre or QGIS user
    // loads for one dataset.
    let (status, own) = app.get_json(None, &format!("/api/tiles/{id}/style.json")).await;
    assert_eq!(status, 200, "{own}");
    validate_style(&own);
    let fill = own["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "data-fill")
        .unwrap_or_else(|| panic!("the data's fill: {own}"));
    assert_eq!(fill["paint"]["fill-color"], expected, "{own}");

    // The GeoPackage download carries the styles, for QGIS to open the
    // layer with its default, and says its geometry type.
    let response = app
        .send(
            app.http()
                .get(app.url(&format!("/api/datasets/{id}/download?format=gpkg"))),
        )
        .await;
    assert_eq!(response.status(), 200);
    let download = tempfile::tempdir().unwrap();
    let file = download.path().join("download.gpkg");
    std::fs::write(&file, response.bytes().await.unwrap()).unwrap();
    let ds = gdal::Dataset::open(&file).unwrap();
    let data = ds
        .layers()
        .find(|l| l.name() != "layer_styles")
        .expect("the data's layer");
    assert_eq!(
        data.defn().geom_fields().next().unwrap().field_type(),
        gdal::vector::OGRwkbGeometryType::wkbMultiPolygon,
        "the layer says MultiPolygon, not Unknown"
    );
    let (layer_name, geometry_column) = (data.name(), data.defn().geom_fields().next().unwrap().name());
    let mut rows = ds
        .execute_sql(
            "SELECT f_table_name, f_geometry_column, styleName, styleQML, styleSLD, useAsDefault FROM layer_styles ORDER BY id",
            None,
            gdal::vector::sql::Dialect::SQLITE,
        )
        .unwrap()
        .expect("a layer_styles table");
    let written: Vec<Vec<String>> = rows
        .features()
        .map(|f| {
            (0..6)
                .map(|i| f.field_as_string(i).unwrap().unwrap_or_default())
                .collect()
        })
        .collect();
    drop(rows);
    let expected_rows: Vec<Vec<String>> = kept
        .iter()
        .enumerate()
        .map(|(i, (name, qml, sld))| {
            vec![
                layer_name.clone(),
                geometry_column.clone(),
                name.clone(),
                qml.clone(),
                sld.clone(),
                if i == 0 { "1" } else { "0" }.to_string(),
            ]
        })
        .collect();
    assert_eq!(written, expected_rows, "every kept style, the default first");

    // QGIS opens the download drawn with the source's default style.
    let python = std::env::var("CATALOG_QGIS_PYTHON").expect("CATALOG_QGIS_PYTHON (set by scripts/test.sh)");
    let output = Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/qgis_open_styled.py"))
        .arg(&file)
        .arg(&layer_name)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let drawn: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(drawn["renderer"], "categorizedSymbol", "{drawn}");
    assert_eq!(drawn["attribute"], "continent", "{drawn}");
    assert_eq!(
        drawn["classes"][0],
        json!(["Africa", "#e41a1c"]),
        "the source's own colours: {drawn}"
    );

    // New data without styles keeps the dataset's; new data with styles
    // brings its own in their place.
    let reupload = async |bytes: Vec<u8>| {
        let response = app
            .post_file(
                &format!("/api/datasets/{id}/reupload"),
                &admin,
                "countries.gpkg",
                bytes,
                &[],
            )
            .await;
        assert_eq!(response.status(), 202);
        let job: Value = response.json().await.unwrap();
        let job = app.wait_job(&admin, job["job_id"].as_str().unwrap()).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        app.get_json(None, &format!("/api/datasets/{id}/styles")).await.1
    };
    let plain = tempfile::tempdir().unwrap();
    plain_geopackage(&plain.path().join("plain.gpkg"));
    let kept = reupload(std::fs::read(plain.path().join("plain.gpkg")).unwrap()).await;
    assert_eq!(kept["styles"], list["styles"], "unstyled data keeps the styles");
    assert_eq!(kept["default_paint"], list["default_paint"]);
    let (again, _) = styled_geopackage();
    let replaced = reupload(again).await;
    let ids = |l: &Value| {
        l["styles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(replaced["styles"].as_array().unwrap().len(), 2);
    assert!(
        ids(&replaced).iter().all(|i| !ids(&list).contains(i)),
        "the new file's styles in place of the old"
    );
    assert_eq!(replaced["default_paint"]["fill-color"], expected);
}

/// Natural Earth's countries as a GeoPackage whose one `layer_styles` row
/// (the default) holds `qml` and `sld`, as a hostile or careless tool may
/// write them.
fn geopackage_styled_with(qml: &str, sld: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let gpkg = dir.path().join("countries.gpkg");
    plain_geopackage(&gpkg);
    let ds = gdal::Dataset::open_ex(
        &gpkg,
        gdal::DatasetOptions {
            open_flags: gdal::GdalOpenFlags::GDAL_OF_UPDATE | gdal::GdalOpenFlags::GDAL_OF_VECTOR,
            ..Default::default()
        },
    )
    .unwrap();
    for sql in [
        "CREATE TABLE layer_styles (id INTEGER PRIMARY KEY AUTOINCREMENT, f_table_catalog TEXT, f_table_schema TEXT, \
         f_table_name TEXT, f_geometry_column TEXT, styleName TEXT, styleQML TEXT, styleSLD TEXT, useAsDefault BOOLEAN, \
         description TEXT, owner TEXT, ui TEXT, update_time DATETIME)"
            .to_string(),
        format!(
            "INSERT INTO layer_styles (f_table_name, f_geometry_column, styleName, styleQML, styleSLD, useAsDefault) \
             VALUES ('countries', 'geom', 'hostile', '{}', '{}', 1)",
            qml.replace('\'', "''"),
            sld.replace('\'', "''")
        ),
    ] {
        let _ = ds.execute_sql(sql, None, gdal::vector::sql::Dialect::SQLITE).unwrap();
    }
    drop(ds);
    std::fs::read(&gpkg).unwrap()
}

/// A style MapLibre would refuse (a categorized renderer with no
/// categories; an SLD colour that is script) gives the dataset no paint,
/// so a map on it, another user's included, stays one the style-spec
/// validator accepts; the style itself is kept byte for byte.
#[tokio::test]
async fn styles_maplibre_would_refuse_give_no_paint_and_every_map_stays_valid() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let (_, alice) = app.user_token("alice", "editor").await;
    let empty_categories = r#"<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'><qgis><renderer-v2 type="categorizedSymbol" attr="continent"><categories/><symbols><symbol name="0" type="fill"><layer class="SimpleFill"><prop k="color" v="1,2,3,255"/></layer></symbol></symbols></renderer-v2></qgis>"#;
    let script = r#"<StyledLayerDescriptor><Rule><PolygonSymbolizer><Fill><CssParameter name="fill">javascript:alert(1)</CssParameter></Fill></PolygonSymbolizer></Rule></StyledLayerDescriptor>"#;
    let mut layers = Vec::new();
    for (qml, sld) in [(empty_categories, ""), ("<broken", script)] {
        let job = app
            .upload_ok(
                &admin,
                "countries.gpkg",
                geopackage_styled_with(qml, sld),
                &[("visibility", "public")],
            )
            .await;
        let job = app.wait_job(&admin, &job).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        let id = job["dataset_id"].as_str().unwrap().to_string();
        let (status, list) = app.get_json(None, &format!("/api/datasets/{id}/styles")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["styles"].as_array().unwrap().len(), 1, "the style is kept: {list}");
        assert!(list["default_paint"].is_null(), "no paint MapLibre refuses: {list}");
        let style_id = list["styles"][0]["id"].as_str().unwrap();
        let response = app
            .send(
                app.http()
                    .get(app.url(&format!("/api/datasets/{id}/styles/{style_id}/qml"))),
            )
            .await;
        if !qml.is_empty() {
            assert_eq!(
                response.bytes().await.unwrap().as_ref(),
                qml.as_bytes(),
                "kept byte for byte"
            );
        }
        layers.push(json!({"dataset_id": id}));
    }
    let response = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&alice)
                .json(&json!({"name": "Alice's", "layers": layers})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let map: Value = response.json().await.unwrap();
    let (status, style) = app
        .get_json(
            Some(&alice),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200, "{style}");
    validate_style(&style);
}

/// A column's summary, which the map editor styles by attribute from, says
/// what the table holds: the same counts per value, range and class breaks
/// as PostGIS computes over the whole table, values typed as tiles carry them.
#[tokio::test]
async fn column_summaries_hold_what_the_table_holds() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app.world_countries(&admin, &[]).await;
    let dataset = app.dataset(&admin, &id).await;
    let table = format!(
        "{}.{}",
        dataset["schema_name"].as_str().unwrap(),
        dataset["table_name"].as_str().unwrap()
    );

    let (status, continents) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/columns/continent/summary"))
        .await;
    assert_eq!(status, 200, "{continents}");
    let expected: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT continent, count(*) FROM {table} GROUP BY 1 ORDER BY 2 DESC, 1"
    )))
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let got: Vec<(String, i64)> = continents["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["value"].as_str().unwrap().to_string(), v["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(continents["distinct"], expected.len());
    assert_eq!(continents["count"], 177);
    assert_eq!(continents["min"], Value::Null, "text has no range");

    let (status, population) = app
        .get_json(
            Some(&admin),
            &format!("/api/datasets/{id}/columns/pop_est/summary?classes=4"),
        )
        .await;
    assert_eq!(status, 200, "{population}");
    let (min, max, breaks): (f64, f64, Vec<f64>) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT min(pop_est)::float8, max(pop_est)::float8,
                percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY pop_est::float8) FROM {table}"
    )))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(population["min"], json!(min));
    assert_eq!(population["max"], json!(max));
    assert_eq!(population["breaks"], json!(breaks));
    assert!(
        population["values"][0]["value"].is_number(),
        "numbers stay numbers: {population}"
    );

    // By the source's name too; unknown columns, bad class counts and rasters are refused.
    let (status, by_title) = app
        .get_json(Some(&admin), &format!("/api/datasets/{id}/columns/name/summary"))
        .await;
    assert_eq!((status, by_title["distinct"].as_i64()), (200, Some(177)));
    assert_eq!(
        app.get_json(Some(&admin), &format!("/api/datasets/{id}/columns/nope/summary"))
            .await
            .0,
        404
    );
    assert_eq!(
        app.get_json(
            Some(&admin),
            &format!("/api/datasets/{id}/columns/name/summary?classes=1")
        )
        .await
        .0,
        400
    );
    assert_eq!(
        app.get_json(None, &format!("/api/datasets/{id}/columns/name/summary"))
            .await
            .0,
        404,
        "private"
    );
}
