//! Ingest never changes a value: a column gets a number type only when
//! every value comes back unchanged (CSV: the same text; GeoJSON and DBF,
//! whose numbers are typed: the same number); otherwise it is text,
//! holding exactly what the file says.
use std::process::Command;

use catalog_tests::{Api, App, zip_owned};
use serde_json::{Value, json};

/// Uploads, waits, and answers the dataset and its features' properties.
async fn ingest(app: &App, token: &str, filename: &str, bytes: Vec<u8>) -> (Value, Vec<Value>) {
    let job_id = app.upload_ok(token, filename, bytes, &[]).await;
    let job = app.wait_job(token, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}\n{}", app.process_logs());
    let id = job["dataset_id"].as_str().unwrap();
    let dataset = app.dataset(token, id).await;
    let (status, items) = app
        .get_json(Some(token), &format!("/api/collections/{id}/items?limit=100"))
        .await;
    assert_eq!(status, 200, "{items}");
    let properties = items["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["properties"].clone())
        .collect();
    (dataset, properties)
}

fn column_type(dataset: &Value, name: &str) -> String {
    dataset["column_info"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no column {name}: {dataset}"))["type"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn csv_values_keep_their_text() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let csv = "\
lon,lat,zip,signed,thousands,long_digits,exponent,not_a_number,mixed,trailing_zero,count,ratio,big
-66.5,18.2,00501,+5,\"1,000\",123456789012345678901234,1e5,NaN,5,2.0,1,1.5,9007199254740993
-66.6,18.3,12345,7,2,1,2,1,x,2.5,2,-2.25,1
";
    let (dataset, rows) = ingest(&app, &token, "zips.csv", csv.as_bytes().to_vec()).await;
    for (column, first, second) in [
        ("zip", "00501", "12345"),
        ("signed", "+5", "7"),
        ("thousands", "1,000", "2"),
        ("long_digits", "123456789012345678901234", "1"),
        ("exponent", "1e5", "2"),
        ("not_a_number", "NaN", "1"),
        ("mixed", "5", "x"),
        ("trailing_zero", "2.0", "2.5"),
    ] {
        assert_eq!(column_type(&dataset, column), "text", "{column}");
        assert_eq!(rows[0][column], first, "{column}: {rows:?}");
        assert_eq!(rows[1][column], second, "{column}: {rows:?}");
    }
    assert_eq!(dataset["sample_values"]["zip"][0], "00501");
    // Numbers spelled as numbers stay numbers.
    assert_eq!(column_type(&dataset, "count"), "integer");
    assert_eq!(column_type(&dataset, "ratio"), "double precision");
    assert_eq!(column_type(&dataset, "big"), "bigint");
    assert_eq!(rows[0]["count"], 1);
    assert_eq!(rows[1]["ratio"], json!(-2.25));
    assert_eq!(rows[0]["big"], json!(9007199254740993i64));
}

#[tokio::test]
async fn geojson_numbers_keep_their_value() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    // Written by hand: serde_json would round these numbers itself.
    let geojson = r#"{"type": "FeatureCollection", "features": [
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]},
       "properties": {"zip": "00501", "huge": 12345678901234567890123, "precise": 0.10000000000000000000001,
                      "count": 1, "price": 1.50, "science": 1e5, "id64": 9007199254740993}},
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 4]},
       "properties": {"zip": "12345", "huge": 1, "precise": 1, "count": 2, "price": 2, "science": 2, "id64": 1}}
    ]}"#;
    let (dataset, rows) = ingest(&app, &token, "values.geojson", geojson.as_bytes().to_vec()).await;
    assert_eq!(column_type(&dataset, "zip"), "text");
    assert_eq!(rows[0]["zip"], "00501");
    // Past what a number column holds: kept as the number's text.
    assert_eq!(column_type(&dataset, "huge"), "text");
    assert_eq!(rows[0]["huge"], "12345678901234567890123");
    assert_eq!(column_type(&dataset, "precise"), "text");
    assert_eq!(rows[0]["precise"], "0.10000000000000000000001");
    assert_eq!(rows[1]["precise"], "1");
    // Numbers a column holds exactly stay numbers (1.50 is the number 1.5).
    assert_eq!(column_type(&dataset, "count"), "integer");
    assert_eq!(column_type(&dataset, "price"), "double precision");
    assert_eq!(rows[0]["price"], json!(1.5));
    assert_eq!(column_type(&dataset, "science"), "double precision");
    assert_eq!(rows[0]["science"].as_f64(), Some(100000.0));
    assert_eq!(column_type(&dataset, "id64"), "bigint");
    assert_eq!(rows[0]["id64"], json!(9007199254740993i64));
}

/// A shapefile whose DBF holds the given fields as numbers (`N`): GDAL
/// writes them as text fields, and the descriptors are then retyped.
fn shapefile_with_numeric_fields() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("values.csv");
    std::fs::write(
        &csv,
        "name,zip,big,amount,lon,lat\na,00501,123456789012345678901234,12.500,1,2\nb,12345,42,3.250,3,4\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("values.csvt"),
        "\"String(10)\",\"String(5)\",\"String(24)\",\"String(10)\",\"Real\",\"Real\"\n",
    )
    .unwrap();
    let out = dir.path().join("shp");
    let output = Command::new("ogr2ogr")
        .args(["-f", "ESRI Shapefile"])
        .arg(&out)
        .arg(&csv)
        .args([
            "-oo",
            "X_POSSIBLE_NAMES=lon",
            "-oo",
            "Y_POSSIBLE_NAMES=lat",
            "-oo",
            "KEEP_GEOM_COLUMNS=NO",
        ])
        .args(["-a_srs", "EPSG:4326"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dbf_path = out.join("values.dbf");
    let mut dbf = std::fs::read(&dbf_path).unwrap();
    let mut at = 32;
    while dbf[at] != 0x0D {
        let name = String::from_utf8_lossy(&dbf[at..at + 11])
            .trim_end_matches('\0')
            .to_string();
        if ["zip", "big", "amount"].contains(&name.as_str()) {
            dbf[at + 11] = b'N';
            dbf[at + 17] = if name == "amount" { 3 } else { 0 };
        }
        at += 32;
    }
    std::fs::write(&dbf_path, dbf).unwrap();
    let members: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    zip_owned(&members)
}

#[tokio::test]
async fn dbf_numbers_keep_their_value() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let (dataset, rows) = ingest(&app, &token, "values.zip", shapefile_with_numeric_fields()).await;
    // More digits than a double holds: the DBF's own text.
    assert_eq!(column_type(&dataset, "big"), "text");
    assert_eq!(rows[0]["big"], "123456789012345678901234");
    assert_eq!(rows[1]["big"], "42");
    // A DBF number is a number: its zero padding is the format's layout.
    assert_eq!(column_type(&dataset, "zip"), "integer");
    assert_eq!(rows[0]["zip"], 501);
    assert_eq!(column_type(&dataset, "amount"), "double precision");
    assert_eq!(rows[0]["amount"], json!(12.5));
}

#[tokio::test]
async fn a_reupload_preview_shows_values_as_they_will_be_kept() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let (dataset, _) = ingest(&app, &token, "zips.csv", b"lon,lat,zip\n1,2,12345\n".to_vec()).await;
    assert_eq!(column_type(&dataset, "zip"), "integer");
    let id = dataset["id"].as_str().unwrap();
    let response = app
        .post_file(
            &format!("/api/datasets/{id}/reupload"),
            &token,
            "zips.csv",
            b"lon,lat,zip\n1,2,00501\n3,4,12345\n".to_vec(),
            &[("preview", "true")],
        )
        .await;
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.unwrap();
    let job = app.wait_job(&token, accepted["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let result = &job["result"];
    assert_eq!(result["sample_rows"][0]["zip"], "00501", "{result}");
    assert_eq!(
        result["schema_diff"]["type_changes"],
        json!([{"name": "zip", "old_type": "integer", "new_type": "text"}]),
        "{result}"
    );
}

#[tokio::test]
async fn geojson_arrays_keep_every_number() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let geojson = r#"{"type": "FeatureCollection", "features": [
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]},
       "properties": {"ids": [12345678901234567890123, 7], "levels": [1.50, 0.10000000000000000000001]}},
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 4]},
       "properties": {"ids": [1], "levels": [2.5]}}
    ]}"#;
    let (dataset, rows) = ingest(&app, &token, "arrays.geojson", geojson.as_bytes().to_vec()).await;
    assert_eq!(column_type(&dataset, "ids"), "jsonb");
    assert_eq!(rows[1]["ids"], json!([1]));
    // The body as sent: a JSON parser of its own would round these numbers.
    let id = dataset["id"].as_str().unwrap();
    let body = app
        .send(
            app.http()
                .get(app.url(&format!("/api/collections/{id}/items")))
                .bearer_auth(&token),
        )
        .await
        .text()
        .await
        .unwrap();
    for written in ["12345678901234567890123", "1.50", "0.10000000000000000000001"] {
        assert!(body.contains(written), "{written} in {body}");
    }
}
