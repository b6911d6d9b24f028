//! Every tile of zooms 0 to 5 of world-scale points, lines and polygons,
//! and of data across the antimeridian, checked against PostGIS's own
//! answer: what intersects a tile (`ST_TileEnvelope`) is in it, and
//! nothing in it lies beyond the tile's buffer.
use std::collections::{BTreeMap, BTreeSet};

use catalog_tests::{Api, App, data_file, shapefile_members, zip_owned};
use futures::{StreamExt, stream};
use serde_json::{Value, json};

const MAX_ZOOM: u32 = 5;

/// A protobuf varint at `at`, moving past it.
fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// The fields of one protobuf message: (field number, wire type, varint
/// value or the bytes of a length-delimited field).
fn fields(bytes: &[u8]) -> Vec<(u64, u64, u64, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let key = varint(bytes, &mut at);
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => out.push((field, wire, varint(bytes, &mut at), &[][..])),
            1 => at += 8,
            2 => {
                let len = varint(bytes, &mut at) as usize;
                out.push((field, wire, 0, &bytes[at..at + len]));
                at += len;
            }
            5 => at += 4,
            other => panic!("wire type {other} in a vector tile"),
        }
    }
    out
}

/// The feature ids of every layer of a Mapbox Vector Tile (Tile.layers = 3,
/// Layer.features = 2, Feature.id = 1).
fn feature_ids(tile: &[u8]) -> BTreeSet<i64> {
    let mut ids = BTreeSet::new();
    for (_, _, _, layer) in fields(tile).into_iter().filter(|f| f.0 == 3) {
        for (_, _, _, feature) in fields(layer).into_iter().filter(|f| f.0 == 2) {
            let id = fields(feature).into_iter().find(|f| f.0 == 1 && f.1 == 0);
            ids.insert(id.expect("every feature carries its gid").2 as i64);
        }
    }
    ids
}

type Tiles = BTreeMap<(u32, u32, u32), BTreeSet<i64>>;

/// The dataset's table as PostGIS names it, its key and its geometry in
/// Web Mercator, from its record.
fn table_of(dataset: &Value) -> (String, String, String) {
    let name = |field: &str| format!("\"{}\"", dataset[field].as_str().unwrap());
    (
        format!("{}.{}", name("schema_name"), name("table_name")),
        name("key_column"),
        format!("ST_Transform(t.{}, 3857)", name("geometry_column")),
    )
}

/// Per tile of zooms 0 to 5, the keys of the dataset's features whose
/// geometry meets the tile's envelope grown by `margin` (a share of its side).
async fn postgis_tiles(app: &App, dataset: &Value, margin: f64) -> Tiles {
    let (table, key, geometry) = table_of(dataset);
    let rows: Vec<(i32, i32, i32, Vec<i64>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT z, x, y, array_agg(t.{key}::bigint ORDER BY t.{key})
         FROM generate_series(0, {MAX_ZOOM}) z, generate_series(0, (1 << z) - 1) x, generate_series(0, (1 << z) - 1) y,
              LATERAL (SELECT ST_TileEnvelope(z, x, y, margin => {margin}) AS envelope) tile,
              {table} t
         WHERE ST_Intersects({geometry}, tile.envelope)
         GROUP BY z, x, y"
    )))
    .fetch_all(app.pool())
    .await
    .unwrap();
    rows.into_iter()
        .map(|(z, x, y, ids)| ((z as u32, x as u32, y as u32), ids.into_iter().collect()))
        .collect()
}

/// Every tile of zooms 0 to 5 of `route` (`""` or `"cluster/"`), by address.
async fn served_tiles(app: &App, id: &str, route: &str) -> BTreeMap<(u32, u32, u32), (u16, Vec<u8>)> {
    let addresses: Vec<(u32, u32, u32)> = (0..=MAX_ZOOM)
        .flat_map(|z| (0..1u32 << z).flat_map(move |x| (0..1u32 << z).map(move |y| (z, x, y))))
        .collect();
    stream::iter(addresses)
        .map(|(z, x, y)| async move {
            let response = app
                .send(
                    app.http()
                        .get(app.url(&format!("/api/tiles/{id}/{route}{z}/{x}/{y}.pbf"))),
                )
                .await;
            let status = response.status().as_u16();
            ((z, x, y), (status, response.bytes().await.unwrap().to_vec()))
        })
        .buffer_unordered(4)
        .collect()
        .await
}

/// Compares each served tile with PostGIS: nothing that meets the tile is
/// missing (`tolerated`, gids small enough to vanish at a zoom, aside), and
/// nothing beyond twice the buffer is there.
async fn check_every_tile(app: &App, what: &str, id: &str, tolerated: &Tiles) {
    let dataset = app.dataset(&app.admin_token().await, id).await;
    let inside = postgis_tiles(app, &dataset, 0.0).await;
    let near = postgis_tiles(app, &dataset, 2.0 * 64.0 / 4096.0).await;
    let served = served_tiles(app, id, "").await;
    let mut wrong = Vec::new();
    for (&(z, x, y), (status, body)) in &served {
        let got = if *status == 204 {
            BTreeSet::new()
        } else {
            feature_ids(body)
        };
        assert!(matches!(status, 200 | 204), "{what} {z}/{x}/{y}: {status}");
        let empty = BTreeSet::new();
        let expected = inside.get(&(z, x, y)).unwrap_or(&empty);
        let allowed_missing = tolerated.get(&(z, x, y)).unwrap_or(&empty);
        let missing: Vec<_> = expected
            .difference(&got)
            .filter(|g| !allowed_missing.contains(g))
            .collect();
        let far: Vec<_> = got.difference(near.get(&(z, x, y)).unwrap_or(&empty)).collect();
        if !missing.is_empty() || !far.is_empty() {
            wrong.push(format!(
                "{z}/{x}/{y}: {} of {} missing {missing:?}, far {far:?}",
                missing.len(),
                expected.len()
            ));
        }
    }
    assert_eq!(served.len(), 1365, "{what}: tiles of zooms 0 to 5");
    assert!(
        wrong.is_empty(),
        "{what}: {} tiles wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Per tile, polygons and lines whose part inside the tile is smaller than
/// one of its 4096 units across, which the vector tile encoder drops.
async fn below_a_unit(app: &App, id: &str) -> Tiles {
    let dataset = app.dataset(&app.admin_token().await, id).await;
    let (table, key, geometry) = table_of(&dataset);
    let rows: Vec<(i32, i32, i32, Vec<i64>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT z, x, y, array_agg(t.{key}::bigint)
         FROM generate_series(0, {MAX_ZOOM}) z, generate_series(0, (1 << z) - 1) x, generate_series(0, (1 << z) - 1) y,
              LATERAL (SELECT ST_TileEnvelope(z, x, y) AS envelope) tile,
              {table} t,
              LATERAL (SELECT ST_ClipByBox2D({geometry}, tile.envelope::box2d)::box2d AS part) clipped
         WHERE {geometry} && tile.envelope
           AND greatest(ST_XMax(clipped.part) - ST_XMin(clipped.part), ST_YMax(clipped.part) - ST_YMin(clipped.part))
               < 2 * (ST_XMax(tile.envelope) - ST_XMin(tile.envelope)) / 4096
         GROUP BY z, x, y"
    )))
    .fetch_all(app.pool())
    .await
    .unwrap();
    rows.into_iter()
        .map(|(z, x, y, ids)| ((z as u32, x as u32, y as u32), ids.into_iter().collect()))
        .collect()
}

async fn ingested(app: &App, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> String {
    let job = app.upload_ok(token, filename, bytes, fields).await;
    let job = app.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{filename}: {job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

fn bbox(dataset: &Value) -> [f64; 4] {
    let b: Vec<f64> = dataset["extent_bbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    [b[0], b[1], b[2], b[3]]
}

#[tokio::test]
async fn every_tile_of_world_data_holds_what_postgis_finds_in_it() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let public = [("visibility", "public")];

    // Natural Earth's 243 capitals: spread over the globe, with a gap in
    // the Pacific, they get a plain extent, not a box across 180°.
    let cities = ingested(
        &app,
        &admin,
        "cities.zip",
        zip_owned(&shapefile_members("shp/naturalearth_cities")),
        &public,
    )
    .await;
    let [west, _, east, _] = bbox(&app.dataset(&admin, &cities).await);
    assert!(
        west < east && west < -170.0 && east > 170.0,
        "capitals' extent [{west}, {east}]"
    );
    for (z, x, y) in [
        (1, 0, 0),
        (1, 1, 0),
        (1, 0, 1),
        (1, 1, 1),
        (2, 0, 1),
        (2, 3, 1),
        (3, 7, 4),
    ] {
        let response = app
            .send(app.http().get(app.url(&format!("/api/tiles/{cities}/{z}/{x}/{y}.pbf"))))
            .await;
        assert_eq!(response.status(), 200, "capitals' tile {z}/{x}/{y}");
    }
    check_every_tile(&app, "capitals", &cities, &Tiles::new()).await;

    // Their clusters: a tile with capitals in it is never empty.
    let inside = postgis_tiles(&app, &app.dataset(&admin, &cities).await, 0.0).await;
    for (&(z, x, y), (status, _)) in &served_tiles(&app, &cities, "cluster/").await {
        if inside.contains_key(&(z, x, y)) {
            assert_eq!(*status, 200, "capitals' cluster tile {z}/{x}/{y}");
        }
    }

    // Natural Earth's 177 countries.
    let countries = ingested(
        &app,
        &admin,
        "countries.zip",
        zip_owned(&shapefile_members("shp/naturalearth_lowres")),
        &public,
    )
    .await;
    let tolerated = below_a_unit(&app, &countries).await;
    check_every_tile(&app, "countries", &countries, &tolerated).await;

    // Lines over the world: the 46 disputed borders.
    let borders = ingested(
        &app,
        &admin,
        "world_map.gpkg",
        data_file("gpkg/world_map.gpkg"),
        &[("layer", "disputed_borders"), ("visibility", "public")],
    )
    .await;
    let tolerated = below_a_unit(&app, &borders).await;
    check_every_tile(&app, "disputed borders", &borders, &tolerated).await;

    // Fiji-like data that really crosses 180°: islands either side, a
    // territory cut at the antimeridian and a route over it.
    let fiji = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "west"}, "geometry": {"type": "Point", "coordinates": [177.4, -17.7]}},
        {"type": "Feature", "properties": {"name": "east"}, "geometry": {"type": "Point", "coordinates": [-178.9, -16.9]}},
        {"type": "Feature", "properties": {"name": "edge"}, "geometry": {"type": "Point", "coordinates": [179.99, -16.0]}},
        {"type": "Feature", "properties": {"name": "territory"}, "geometry": {"type": "MultiPolygon", "coordinates": [
            [[[176, -21], [180, -21], [180, -12], [176, -12], [176, -21]]],
            [[[-180, -21], [-178, -21], [-178, -12], [-180, -12], [-180, -21]]]]}},
        {"type": "Feature", "properties": {"name": "route"}, "geometry": {"type": "MultiLineString", "coordinates": [
            [[178, -18], [180, -18.5]], [[-180, -18.5], [-179, -19]]]}}
    ]});
    let across = app.ingest_geojson(&admin, &fiji, &public).await;
    assert_eq!(bbox(&app.dataset(&admin, &across).await), [176.0, -21.0, -178.0, -12.0]);
    check_every_tile(&app, "data across 180°", &across, &Tiles::new()).await;

    // A registered table in a projected CRS (ETRS89 / LAEA Europe): the
    // capitals of Europe, read in place.
    let capitals = app.dataset(&admin, &cities).await;
    let (table, key, _) = table_of(&capitals);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE public.europe AS
         SELECT {key}::integer AS id, ST_Transform(geom, 3035)::geometry(Point, 3035) AS geom
         FROM {table} WHERE ST_X(geom) BETWEEN -25 AND 40 AND ST_Y(geom) BETWEEN 34 AND 72"
    )))
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("ALTER TABLE public.europe ADD PRIMARY KEY (id)")
        .execute(app.pool())
        .await
        .unwrap();
    let response = app
        .send(
            app.http()
                .post(app.url("/api/ingest/register/bulk/"))
                .bearer_auth(&admin)
                .json(&json!({"tables": [{"table_name": "europe", "title": "Europe", "visibility": "public"}]})),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["results"][0]["status"], "success", "{body}");
    let europe = body["results"][0]["dataset_id"].as_str().unwrap().to_string();
    let registered = app.dataset(&admin, &europe).await;
    assert_eq!(registered["srid"], 3035, "{registered}");
    check_every_tile(&app, "a registered table in EPSG:3035", &europe, &Tiles::new()).await;

    // A tile served again comes from the cache, alike.
    let first = served_tiles(&app, &countries, "").await;
    let again = served_tiles(&app, &countries, "").await;
    assert!(first == again, "cached tiles differ from the first ones");
}
