//! GeoParquet downloads, read back as their users read them: pyarrow (the
//! schema, row groups and `geo` metadata), geopandas (geometries and CRS)
//! and DuckDB (SQL over the file), with the rows, types, values and CRS of
//! the service's items. On Natural Earth's countries, a registered table
//! of every column type, and GeoNames' 234,908 places (row groups of at
//! most 100,000 rows, in spatial order).
use std::process::Command;

use catalog_tests::{Api, App, fixture_file};
use serde_json::{Value, json};

/// What `clients/geoparquet_read.py` saw of a download of `id` with `query`.
async fn read_back(app: &App, token: Option<&str>, id: &str, query: &str, key: &str) -> Value {
    let mut request = app
        .http()
        .get(app.url(&format!("/api/datasets/{id}/download?format=parquet{query}")));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = app.send(request).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_eq!(response.headers()["content-type"], "application/vnd.apache.parquet");
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .ends_with(".parquet\""),
        "{:?}",
        response.headers()["content-disposition"]
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("download.parquet");
    std::fs::write(&path, response.bytes().await.unwrap()).unwrap();
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let output = Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/geoparquet_read.py"))
        .arg(&path)
        .arg(key)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "geoparquet_read.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-9
}

#[tokio::test]
async fn countries_read_back_in_pyarrow_geopandas_and_duckdb_as_items_serve_them() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let id = app.world_countries(&admin, &[("visibility", "public")]).await;
    let (status, items) = app
        .get_json(None, &format!("/api/collections/{id}/items?limit=1000"))
        .await;
    assert_eq!(status, 200);
    let features = items["features"].as_array().unwrap();
    assert_eq!(features.len(), 177);

    let file = read_back(&app, None, &id, "", "gid").await;
    assert_eq!(file["num_rows"], 177);
    let schema = &file["schema"];
    assert_eq!(schema["gid"], "int64", "{schema}");
    assert_eq!(schema["pop_est"], "double", "{schema}");
    assert_eq!(schema["name"], "string", "{schema}");
    assert_eq!(schema["geom"], "binary", "{schema}");
    assert_eq!(
        schema["bbox"],
        "struct<xmin: double not null, ymin: double not null, xmax: double not null, ymax: double not null>",
        "{schema}"
    );

    let geo = &file["geo"];
    assert_eq!(geo["version"], "1.1.0");
    assert_eq!(geo["primary_column"], "geom");
    let column = &geo["columns"]["geom"];
    assert_eq!(column["encoding"], "WKB");
    assert_eq!(column["geometry_types"], json!(["MultiPolygon"]), "{column}");
    assert_eq!(column["crs"]["id"], json!({"authority": "OGC", "code": "CRS84"}));
    assert_eq!(column["covering"]["bbox"]["xmin"], json!(["bbox", "xmin"]));
    let bbox = column["bbox"].as_array().unwrap();
    assert!(close(&bbox[0], -180.0) && close(&bbox[2], 180.0), "{bbox:?}");
    assert!(close(&bbox[1], -90.0) && bbox[3].as_f64().unwrap() > 83.0, "{bbox:?}");

    // Every feature's properties, as items give them: Somalia's population
    // keeps its fraction.
    for feature in features {
        let row = &file["rows"][feature["id"].to_string()];
        for (name, value) in feature["properties"].as_object().unwrap() {
            assert_eq!(&row[name], value, "{name} of {}", feature["id"]);
        }
    }
    let somalia = features.iter().find(|f| f["properties"]["name"] == "Somalia").unwrap();
    assert_eq!(file["rows"][somalia["id"].to_string()]["pop_est"], json!(10192317.3));

    let frame = &file["geopandas"];
    assert_eq!(frame["rows"], 177);
    assert_eq!(frame["crs_is_crs84"], true, "{frame}");
    assert_eq!(frame["geometry_types"], json!(["MultiPolygon"]));
    for (i, corner) in frame["total_bounds"].as_array().unwrap().iter().enumerate() {
        assert!(close(corner, bbox[i].as_f64().unwrap()), "{frame}");
    }
    // Fiji's point is one of its own, across the antimeridian.
    let fiji = features.iter().find(|f| f["properties"]["name"] == "Fiji").unwrap();
    let point = &frame["points"][fiji["id"].to_string()];
    assert!(
        point[1].as_f64().unwrap() < -15.0 && point[0].as_f64().unwrap().abs() > 177.0,
        "{point}"
    );

    let duckdb = &file["duckdb"];
    assert_eq!(duckdb["rows"], 177);
    assert_eq!(duckdb["types"]["pop_est"], "DOUBLE", "{duckdb}");
    assert_eq!(duckdb["types"]["name"], "VARCHAR", "{duckdb}");
    assert_eq!(duckdb["types"]["gid"], "BIGINT", "{duckdb}");

    // A selection and another CRS, as every download takes them.
    let chosen = read_back(
        &app,
        None,
        &id,
        "&filter=continent%3D'Africa'&properties=name,pop_est&crs=http://www.opengis.net/def/crs/EPSG/0/3857&sortby=-pop_est",
        "name",
    )
    .await;
    let africa = features
        .iter()
        .filter(|f| f["properties"]["continent"] == "Africa")
        .count();
    assert_eq!(chosen["num_rows"], africa as u64);
    let names: Vec<&str> = chosen["schema"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["name", "pop_est", "geom", "bbox"]);
    assert_eq!(chosen["geo"]["columns"]["geom"]["crs"]["id"]["code"], 3857);
    assert_eq!(chosen["geopandas"]["crs_epsg"], 3857);
    let nigeria = &chosen["geopandas"]["points"]["Nigeria"];
    assert!(
        nigeria[0].as_f64().unwrap() > 300_000.0 && nigeria[1].as_f64().unwrap() > 400_000.0,
        "Nigeria in metres: {nigeria}"
    );
    let bbox = chosen["geo"]["columns"]["geom"]["bbox"].as_array().unwrap();
    assert!(
        bbox[0].as_f64().unwrap() < -1_500_000.0 && bbox[2].as_f64().unwrap() > 5_000_000.0,
        "{bbox:?}"
    );
}

#[tokio::test]
async fn every_column_type_keeps_its_type_and_value() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    sqlx::raw_sql(
        "CREATE TABLE public.zoo (id serial PRIMARY KEY, s smallint, i integer, b bigint, r real,
            d double precision, n numeric(12,3), t text, v varchar(10), ok boolean, day date,
            at timestamptz, local timestamp, clock time, u uuid, j jsonb, raw bytea, tags text[],
            geom geometry(PointZ, 4326));
         INSERT INTO public.zoo (s, i, b, r, d, n, t, v, ok, day, at, local, clock, u, j, raw, tags, geom) VALUES
           (-7, 2147483647, 9007199254740993, 1.5, 0.1, 12345.678, 'Zürich', 'abc', true, '2024-02-29',
            '2024-02-29 12:34:56.789012+00', '1999-12-31 23:59:59', '23:59:59.5',
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": [1, 2]}', '\\xdeadbeef', '{x,y}',
            'SRID=4326;POINT Z (2.35 48.85 35)'),
           (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           (0, 0, 0, 0, 0, 0, '', '', false, 'infinity', '-infinity', NULL, '00:00', NULL, 'null', '', '{}',
            'SRID=4326;POINT Z (-70 -33 500)');",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(&admin)
                .json(&json!({"tables": [{"table_name": "zoo", "title": "Zoo"}]})),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    let id = body["results"][0]["dataset_id"].as_str().unwrap().to_string();

    let file = read_back(&app, Some(&admin), &id, "", "id").await;
    assert_eq!(file["num_rows"], 3);
    let expected_types = json!({
        "id": "int32", "s": "int16", "i": "int32", "b": "int64", "r": "float", "d": "double",
        "n": "double", "t": "string", "v": "string", "ok": "bool", "day": "date32[day]",
        "at": "timestamp[us, tz=UTC]", "local": "timestamp[us]", "clock": "time64[us]",
        "u": "string", "j": "extension<arrow.json>", "raw": "binary", "tags": "string",
        "geom": "binary",
    });
    for (name, kind) in expected_types.as_object().unwrap() {
        assert_eq!(&file["schema"][name], kind, "{name}: {}", file["schema"]);
    }
    let full = &file["rows"]["1"];
    let expected = json!({
        "id": 1, "s": -7, "i": 2147483647, "b": 9007199254740993_i64, "r": 1.5, "d": 0.1,
        "n": 12345.678, "t": "Zürich", "v": "abc", "ok": true, "day": "2024-02-29",
        "at": "2024-02-29T12:34:56.789012+00:00", "local": "1999-12-31T23:59:59",
        "clock": "23:59:59.500000", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "j": "{\"a\": [1, 2]}", "raw": "deadbeef", "tags": "{x,y}",
        "bbox": {"xmin": 2.35, "ymin": 48.85, "xmax": 2.35, "ymax": 48.85},
    });
    for (name, value) in expected.as_object().unwrap() {
        assert_eq!(&full[name], value, "{name}: {full}");
    }
    // Nulls stay null, the box too; infinite dates, which Parquet cannot
    // hold, are null; empty values stay empty.
    let empty = &file["rows"]["2"];
    for name in expected.as_object().unwrap().keys().filter(|n| *n != "id") {
        assert_eq!(empty[name], Value::Null, "{name}: {empty}");
    }
    let edges = &file["rows"]["3"];
    assert_eq!(edges["day"], Value::Null);
    assert_eq!(edges["at"], Value::Null);
    assert_eq!(edges["t"], "");
    assert_eq!(edges["raw"], "");
    assert_eq!(edges["clock"], "00:00:00");
    assert_eq!(edges["j"], "null");

    let column = &file["geo"]["columns"]["geom"];
    assert_eq!(column["geometry_types"], json!(["Point Z"]));
    assert_eq!(column["bbox"], json!([-70.0, -33.0, 2.35, 48.85]));
    assert_eq!(file["geopandas"]["has_z"], true);
    assert_eq!(file["geopandas"]["rows"], 3);
    assert_eq!(
        file["duckdb"]["types"]["at"], "TIMESTAMP WITH TIME ZONE",
        "{}",
        file["duckdb"]
    );
    assert_eq!(file["duckdb"]["types"]["s"], "SMALLINT");
}

#[tokio::test]
async fn a_big_layer_comes_in_row_groups_of_places_near_each_other() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let job = app
        .upload_ok(
            &admin,
            "geonames_cities500.csv",
            fixture_file("geonames_cities500.csv"),
            &[("visibility", "public")],
        )
        .await;
    let job = app.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();

    let file = read_back(&app, None, &id, "&properties=geonameid,name,population", "geonameid").await;
    assert_eq!(file["num_rows"], 234_908);
    assert_eq!(file["rows"].as_object().unwrap().len(), 234_908, "every place once");
    let groups = file["row_groups"].as_array().unwrap();
    let rows: Vec<u64> = groups.iter().map(|g| g["rows"].as_u64().unwrap()).collect();
    assert_eq!(rows, [100_000, 100_000, 34_908]);
    // The rows come by country code, as a `sortby` keeps them: each row
    // group then spans the world. Otherwise they come in spatial order, each
    // row group a part of the world, so a reader's box skips the others.
    let cover = |file: &Value| {
        let area = |g: &Value| {
            let corner =
                |name: &str, end: usize| g["bbox"][name][end].as_f64().unwrap_or_else(|| panic!("{name}: {g}"));
            (corner("xmax", 1) - corner("xmin", 0)) * (corner("ymax", 1) - corner("ymin", 0))
        };
        let groups: f64 = file["row_groups"].as_array().unwrap().iter().map(area).sum();
        let [xmin, ymin, xmax, ymax]: [f64; 4] =
            serde_json::from_value(file["geo"]["columns"]["geom"]["bbox"].clone()).unwrap();
        groups / ((xmax - xmin) * (ymax - ymin))
    };
    assert!(cover(&file) < 2.0, "row groups cover {} extents", cover(&file));
    assert_eq!(file["duckdb"]["rows"], 234_908);
    let by_country = read_back(
        &app,
        None,
        &id,
        "&properties=geonameid,countrycode&sortby=countrycode",
        "geonameid",
    )
    .await;
    assert_eq!(by_country["num_rows"], 234_908);
    assert!(
        cover(&by_country) > 2.5,
        "sorted by country: {} extents",
        cover(&by_country)
    );
}
