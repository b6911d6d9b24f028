//! Generalized tiles on whole-world data (decisions: Generalized tiles):
//! GeoNames' 234,908 places, ordered by country. Below the complete zoom
//! every tile stays within the bounds and every 8x8 cell of a tile that
//! holds a place in PostGIS holds one in the tile; from the complete zoom
//! on a tile holds what PostGIS finds in its envelope; cluster tiles
//! count every place below it; an edit shows at once, at every zoom, and
//! a removed place's cell keeps a place.
use std::collections::{BTreeMap, BTreeSet};

use catalog_tests::{Api, App};
use gdal::vector::LayerAccess;
use serde_json::{Value, json};

/// Half the side of Web Mercator's world, in metres.
const HALF: f64 = 20_037_508.342_789_244;
const MAX_TILE_BYTES: usize = 2_000_000;
const MAX_TILE_FEATURES: usize = 100_000;

/// A latitude's Web Mercator y, in metres.
fn mercator_y(lat: f64) -> f64 {
    lat.to_radians().tan().asinh() * HALF / std::f64::consts::PI
}

/// A position as fractions of Web Mercator's world (x east, y south).
fn fraction(x: f64, y: f64) -> (f64, f64) {
    ((x + HALF) / (2.0 * HALF), (HALF - y) / (2.0 * HALF))
}

/// What `read` takes of each feature of a vector tile, as GDAL's MVT
/// driver reads it, given the feature's position in EPSG:3857.
fn read_tile<T>(
    (z, x, y): (u32, u64, u64),
    bytes: &[u8],
    read: impl Fn(&gdal::vector::Feature, f64, f64) -> T,
) -> Vec<T> {
    let path = format!("/vsimem/tile-{}.pbf", uuid::Uuid::new_v4());
    gdal::vsi::create_mem_file(&path, bytes.to_vec()).unwrap();
    let (zs, xs, ys) = (format!("Z={z}"), format!("X={x}"), format!("Y={y}"));
    let dataset = gdal::Dataset::open_ex(
        &path,
        gdal::DatasetOptions {
            allowed_drivers: Some(&["MVT"]),
            open_options: Some(&[&zs, &xs, &ys, "CLIP=NO"]),
            ..Default::default()
        },
    )
    .unwrap();
    let mut read_features = Vec::new();
    for mut layer in dataset.layers() {
        for feature in layer.features() {
            let (px, py, _) = feature.geometry().unwrap().get_point(0);
            read_features.push(read(&feature, px, py));
        }
    }
    drop(dataset);
    gdal::vsi::unlink_mem_file(&path).unwrap();
    read_features
}

/// The points of a vector tile: key and position in EPSG:3857.
fn tile_points(address: (u32, u64, u64), bytes: &[u8]) -> Vec<(i64, f64, f64)> {
    read_tile(address, bytes, |feature, px, py| {
        let key = feature
            .field_as_integer64(feature.field_index("mvt_id").unwrap())
            .unwrap()
            .unwrap();
        (key, px, py)
    })
}

/// The cells (8 a tile side) of zoom `z` that hold a place in PostGIS.
async fn cells_with_data(app: &App, table: &str, z: u32) -> BTreeSet<(u64, u64)> {
    let rows: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT DISTINCT floor((ST_X(geom) + 180) / 360 * 2 ^ ($1 + 3))::bigint,
                floor((1 - asinh(tan(radians(greatest(-85.0511287798, least(85.0511287798, ST_Y(geom))))))
                 / pi()) / 2 * 2 ^ ($1 + 3))::bigint
         FROM {table}"
    )))
    .bind(z as i32)
    .fetch_all(app.pool())
    .await
    .unwrap();
    rows.into_iter().map(|(x, y)| (x as u64, y as u64)).collect()
}

async fn get_tile(app: &App, id: &str, (z, x, y): (u32, u64, u64)) -> (u16, Vec<u8>) {
    let response = app
        .send(app.http().get(app.url(&format!("/api/tiles/{id}/{z}/{x}/{y}.pbf"))))
        .await;
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

/// Every tile of zoom `z` that holds a place: within the bounds, and each
/// of its cells that holds a place in PostGIS holds one in the tile.
async fn check_zoom(app: &App, id: &str, table: &str, z: u32) -> usize {
    let with_data = cells_with_data(app, table, z).await;
    let mut by_tile: BTreeMap<(u64, u64), BTreeSet<(u64, u64)>> = BTreeMap::new();
    for &(cx, cy) in &with_data {
        by_tile.entry((cx / 8, cy / 8)).or_default().insert((cx, cy));
    }
    let cells = f64::from(1u32 << (z + 3));
    // A point sits within a unit of the tile's grid of where PostGIS has it.
    let unit = 1.5 / (f64::from(1u32 << z) * 4096.0);
    let mut most = 0;
    for (&(tx, ty), expected) in &by_tile {
        let (status, body) = get_tile(app, id, (z, tx, ty)).await;
        assert_eq!(status, 200, "{z}/{tx}/{ty} holds places");
        assert!(body.len() <= MAX_TILE_BYTES, "{z}/{tx}/{ty}: {} bytes", body.len());
        let points = tile_points((z, tx, ty), &body);
        assert!(points.len() <= MAX_TILE_FEATURES);
        most = most.max(points.len());
        let mut covered = BTreeSet::new();
        for &(_, px, py) in &points {
            let (fx, fy) = fraction(px, py);
            for dx in [-unit, 0.0, unit] {
                for dy in [-unit, 0.0, unit] {
                    covered.insert((((fx + dx) * cells) as u64, ((fy + dy) * cells) as u64));
                }
            }
        }
        let empty: Vec<_> = expected.difference(&covered).collect();
        assert!(
            empty.is_empty(),
            "zoom {z}, tile {tx}/{ty}: cells {empty:?} hold places in PostGIS, none in the tile"
        );
    }
    most
}

/// The features of a cluster tile: count, key of a lone place, and
/// position in EPSG:3857.
fn cluster_points(address: (u32, u64, u64), bytes: &[u8]) -> Vec<(i64, Option<i64>, f64, f64)> {
    read_tile(address, bytes, |feature, px, py| {
        let field = |name: &str| {
            feature
                .field_index(name)
                .ok()
                .and_then(|i| feature.field_as_integer64(i).unwrap())
        };
        (field("point_count").unwrap(), field("gid"), px, py)
    })
}

/// Each cell (8 a tile side) of zoom `z` that holds places in PostGIS:
/// how many, and the least key among them.
async fn cell_counts(app: &App, table: &str, z: u32) -> BTreeMap<(u64, u64), (i64, i64)> {
    let rows: Vec<(i64, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT x, y, count(*), min(gid) FROM (
           SELECT gid, floor((ST_X(geom) + 180) / 360 * 2 ^ ($1 + 3))::bigint AS x,
                  floor((1 - asinh(tan(radians(greatest(-85.0511287798, least(85.0511287798, ST_Y(geom))))))
                   / pi()) / 2 * 2 ^ ($1 + 3))::bigint AS y
           FROM {table}) c GROUP BY x, y"
    )))
    .bind(z as i32)
    .fetch_all(app.pool())
    .await
    .unwrap();
    rows.into_iter()
        .map(|(x, y, n, key)| ((x as u64, y as u64), (n, key)))
        .collect()
}

/// Every cluster tile of zoom `z` that holds a place (or, given `at`,
/// those of the places `at`, longitude and latitude) counts every place:
/// each cell of its grid that holds places in PostGIS is one cluster of
/// that many (a lone place with its key), at most 100 of them (the grid
/// and its ring), however few places the thinned tile draws.
async fn check_clusters(app: &App, id: &str, table: &str, z: u32, at: Option<&[(f64, f64)]>) {
    let counts = cell_counts(app, table, z).await;
    let tiles_a_side = f64::from(1u32 << z);
    let chosen: Option<BTreeSet<(u64, u64)>> = at.map(|places| {
        places
            .iter()
            .map(|&(lon, lat)| {
                let (fx, fy) = fraction(lon * HALF / 180.0, mercator_y(lat));
                ((fx * tiles_a_side) as u64, (fy * tiles_a_side) as u64)
            })
            .collect()
    });
    let mut by_tile: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for &(cx, cy) in counts.keys() {
        let tile = (cx / 8, cy / 8);
        if chosen.as_ref().is_none_or(|c| c.contains(&tile)) {
            by_tile.entry(tile).or_default().push((cx, cy));
        }
    }
    assert!(!by_tile.is_empty(), "zoom {z}: no tile to check");
    let cells = f64::from(1u32 << (z + 3));
    // A cluster's centre is in its cell, rounded to the tile's grid (a
    // point on a cell's edge may round into the next).
    let unit = 1.5 / (tiles_a_side * 4096.0);
    for (&(tx, ty), expected) in &by_tile {
        let address = (z, tx, ty);
        let response = app
            .send(
                app.http()
                    .get(app.url(&format!("/api/tiles/{id}/cluster/{z}/{tx}/{ty}.pbf"))),
            )
            .await;
        assert_eq!(response.status(), 200, "cluster tile {address:?} holds places");
        let clusters = cluster_points(address, &response.bytes().await.unwrap());
        assert!(clusters.len() <= 100, "{address:?}: {} clusters", clusters.len());
        let near = |px: f64, py: f64| {
            let (fx, fy) = fraction(px, py);
            [-unit, 0.0, unit]
                .iter()
                .flat_map(|dx| [-unit, 0.0, unit].map(|dy| (((fx + dx) * cells) as u64, ((fy + dy) * cells) as u64)))
                .collect::<BTreeSet<_>>()
        };
        // GDAL reads a property a feature lacks as 0: a cluster's key is
        // read only where it counts one place.
        let key = |m: i64, gid: Option<i64>| if m == 1 { gid } else { None };
        for cell in expected {
            let (n, least) = counts[cell];
            let lone = (n == 1).then_some(least);
            assert!(
                clusters
                    .iter()
                    .any(|&(m, gid, px, py)| (m, key(m, gid)) == (n, lone) && near(px, py).contains(cell)),
                "zoom {z}, tile {tx}/{ty}: cell {cell:?} holds {n} places in PostGIS (lone: {lone:?}); clusters near it: {:?}",
                clusters
                    .iter()
                    .filter(|&&(_, _, px, py)| near(px, py).contains(cell))
                    .collect::<Vec<_>>()
            );
        }
    }
}

/// The keys PostGIS finds in tile z/x/y with its buffer (64 of 4096).
async fn keys_in_tile(app: &App, table: &str, (z, x, y): (u32, u64, u64)) -> BTreeSet<i64> {
    let keys: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT gid FROM {table} WHERE ST_Intersects(ST_Transform(geom, 3857), ST_TileEnvelope($1, $2, $3, margin => 64.0 / 4096))"
    )))
    .bind(z as i32)
    .bind(x as i32)
    .bind(y as i32)
    .fetch_all(app.pool())
    .await
    .unwrap();
    keys.into_iter().collect()
}

#[tokio::test]
async fn geonames_places_are_thinned_evenly_below_the_complete_zoom_and_exact_from_it() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let csv = catalog_tests::fixture_file("geonames_cities500.csv");
    let job = app
        .upload_ok(&admin, "geonames_cities500.csv", csv, &[("visibility", "public")])
        .await;
    let job = app.wait_job(&admin, &job).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let dataset = app.dataset(&admin, &id).await;
    let table = format!(
        "\"{}\".\"{}\"",
        dataset["schema_name"].as_str().unwrap(),
        dataset["table_name"].as_str().unwrap()
    );

    let (_, tilejson) = app.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    let complete = tilejson["vector_layers"][0]["complete_zoom"].as_u64().unwrap() as u32;
    assert!((3..=12).contains(&complete), "GeoNames is complete at zoom {complete}");
    let (_, tileset) = app
        .get_json(None, &format!("/api/collections/{id}/tiles/WebMercatorQuad"))
        .await;
    assert_eq!(tileset["layers"][0]["complete_zoom"], json!(complete));
    assert_eq!(dataset["complete_zoom"], json!(complete), "the dataset says it too");

    // The dataset's picture draws what zoom 0 draws: every column of the
    // picture (the world's width, 1.5 degrees a pixel) under a place of
    // the zoom-0 tile between 50° S and 50° N (inside the picture's
    // height) holds a dot, where a sample of the table misses sparse ones.
    let picture = app
        .send(app.http().get(app.url(&format!("/api/datasets/{id}/thumbnail.png"))))
        .await;
    assert_eq!(picture.status(), 200);
    let (width, height, pixels) = catalog_tests::decode_png(&picture.bytes().await.unwrap());
    let basemap = [[214, 230, 242, 255], [238, 235, 226, 255], [190, 186, 176, 255]];
    let dotted: BTreeSet<usize> = (0..width)
        .filter(|&c| (0..height).any(|r| !basemap.contains(&pixels[r * width + c])))
        .collect();
    let (_, z0) = get_tile(&app, &id, (0, 0, 0)).await;
    let within = mercator_y(50.0);
    let columns: BTreeSet<usize> = tile_points((0, 0, 0), &z0)
        .into_iter()
        .filter(|&(_, x, y)| x.abs() < HALF && y.abs() < within)
        .map(|(_, x, _)| (((x + HALF) / (2.0 * HALF) * width as f64) as usize).min(width - 1))
        .collect();
    let undotted: Vec<_> = columns
        .iter()
        .filter(|&&c| !(c.saturating_sub(1)..=c + 1).any(|n| dotted.contains(&n)))
        .collect();
    assert!(
        columns.len() > 150 && undotted.is_empty(),
        "{} columns hold zoom 0's places; no dot in {undotted:?}",
        columns.len()
    );

    // A map says the layer is thinned, and so does its exported style.
    let map = app
        .send(
            app.http()
                .post(app.url("/api/maps"))
                .bearer_auth(&admin)
                .json(&json!({"name": "Places", "layers": [{"dataset_id": id}]})),
        )
        .await;
    assert_eq!(map.status(), 201);
    let map: Value = map.json().await.unwrap();
    assert_eq!(map["layers"][0]["dataset_complete_zoom"], json!(complete), "{map}");
    let (status, style) = app
        .get_json(
            Some(&admin),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200);
    let layer = style["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["source"].is_string() && l["type"] == "circle")
        .unwrap_or_else(|| panic!("{style}"));
    let meta = layer["metadata"].as_object().unwrap().values().next().unwrap();
    assert_eq!(meta["complete_zoom"], json!(complete), "{layer}");

    // Zoom 0 carries a place in every cell that has one, not 50,000 in
    // storage order.
    for z in 0..=6 {
        let most = check_zoom(&app, &id, &table, z).await;
        if z < complete {
            assert!(
                most <= 4096 + 512,
                "zoom {z}: at most a place a cell of 8 pixels (and the buffer's), not {most}"
            );
        }
    }

    // Cluster tiles below the complete zoom count every place.
    for z in 0..complete.min(6) {
        check_clusters(&app, &id, &table, z, None).await;
    }

    // From the complete zoom on, the densest tiles hold what PostGIS finds.
    let densest: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT x, y FROM (SELECT floor((ST_X(geom) + 180) / 360 * 2 ^ $1)::bigint AS x,
                floor((1 - asinh(tan(radians(ST_Y(geom)))) / pi()) / 2 * 2 ^ $1)::bigint AS y FROM {table}) t
         GROUP BY x, y ORDER BY count(*) DESC LIMIT 4"
    )))
    .bind(complete as i32)
    .fetch_all(app.pool())
    .await
    .unwrap();
    for (x, y) in densest {
        let address = (complete, x as u64, y as u64);
        let (status, body) = get_tile(&app, &id, address).await;
        assert_eq!(status, 200);
        assert!(body.len() <= MAX_TILE_BYTES, "{address:?}: {} bytes", body.len());
        let drawn: BTreeSet<i64> = tile_points(address, &body).into_iter().map(|(k, _, _)| k).collect();
        let found = keys_in_tile(&app, &table, address).await;
        let missing: Vec<_> = found.difference(&drawn).take(5).collect();
        let extra: Vec<_> = drawn.difference(&found).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{address:?}: {} drawn, {} in PostGIS; missing {missing:?}, extra {extra:?}",
            drawn.len(),
            found.len()
        );
    }

    // An edit shows at once: a place where there was none is drawn at every
    // zoom; removing the place drawn for a cell leaves the cell a place.
    let new_key = create_place(&app, &admin, &id, "Nowhere", (-140.0, -40.0)).await;
    for z in 0..=complete {
        let n = f64::from(1u32 << z);
        let (x, y) = (((-140.0 + 180.0) / 360.0 * n) as u64, {
            let lat = (-40.0f64).to_radians();
            ((1.0 - lat.tan().asinh() / std::f64::consts::PI) / 2.0 * n) as u64
        });
        let (status, body) = get_tile(&app, &id, (z, x, y)).await;
        assert_eq!(status, 200, "zoom {z}");
        let keys: BTreeSet<i64> = tile_points((z, x, y), &body).into_iter().map(|(k, _, _)| k).collect();
        assert!(keys.contains(&new_key), "zoom {z}: the new place is drawn");
    }
    // The place drawn for Paris's cell at zoom 0 goes; the cell keeps one.
    let (status, body) = get_tile(&app, &id, (0, 0, 0)).await;
    assert_eq!(status, 200);
    let paris = fraction(2.35 * HALF / 180.0, {
        let lat = 48.85f64.to_radians();
        lat.tan().asinh() * HALF / std::f64::consts::PI
    });
    let cell_of = |(fx, fy): (f64, f64)| ((fx * 8.0) as u64, (fy * 8.0) as u64);
    let drawn = tile_points((0, 0, 0), &body)
        .into_iter()
        .find(|&(_, px, py)| cell_of(fraction(px, py)) == cell_of(paris))
        .expect("Paris's cell has a place at zoom 0");
    assert_eq!(edit_place(&app, &admin, &id, drawn.0, None).await, 204);
    check_zoom(&app, &id, &table, 0).await;
    check_zoom(&app, &id, &table, 3).await;
    let (_, body) = get_tile(&app, &id, (0, 0, 0)).await;
    let keys: BTreeSet<i64> = tile_points((0, 0, 0), &body).into_iter().map(|(k, _, _)| k).collect();
    assert!(!keys.contains(&drawn.0), "the removed place is gone from zoom 0");
    // Clusters count the edits: one more in the new place's cells, one
    // less in those of the removed.
    let deepest = complete.saturating_sub(1);
    check_clusters(&app, &id, &table, 0, None).await;
    check_clusters(&app, &id, &table, deepest, Some(&[(-140.0, -40.0), (2.35, 48.85)])).await;
    // A second place beside the new one, then gone: its cells hold two,
    // then one again, which is named.
    let beside = create_place(&app, &admin, &id, "Beside", (-140.0001, -40.0001)).await;
    for z in [0, deepest] {
        check_clusters(&app, &id, &table, z, Some(&[(-140.0, -40.0)])).await;
    }
    edit_place(&app, &admin, &id, beside, None).await;
    for z in [0, deepest] {
        check_clusters(&app, &id, &table, z, Some(&[(-140.0, -40.0)])).await;
    }
    // The new place moves across the world: it leaves its cells and joins
    // others at every zoom.
    edit_place(&app, &admin, &id, new_key, Some((-100.0, -55.0))).await;
    for z in [0, 2, deepest] {
        check_clusters(&app, &id, &table, z, Some(&[(-140.0, -40.0), (-100.0, -55.0)])).await;
    }

    check_archive(&app, &admin, &id, &dataset, complete).await;
}

/// A place made with the features route; its key.
async fn create_place(app: &App, admin: &str, id: &str, name: &str, (lon, lat): (f64, f64)) -> i64 {
    let created = app
        .send(
            app.http()
                .post(app.url(&format!("/api/collections/{id}/items")))
                .bearer_auth(admin)
                .header("Content-Type", "application/geo+json")
                .body(
                    json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
                           "properties": {"name": name}})
                    .to_string(),
                ),
        )
        .await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    created["id"]
        .as_i64()
        .or_else(|| created["id"].as_str().and_then(|k| k.parse().ok()))
        .unwrap_or_else(|| panic!("{created}"))
}

/// Moves a place (PATCH of its geometry) or, without a place, deletes it;
/// the answer's status.
async fn edit_place(app: &App, admin: &str, id: &str, key: i64, to: Option<(f64, f64)>) -> u16 {
    let item = app.url(&format!("/api/collections/{id}/items/{key}"));
    let current = app.send(app.http().get(&item).bearer_auth(admin)).await;
    let etag = current.headers()["etag"].to_str().unwrap().to_string();
    let request = match to {
        Some((lon, lat)) => app
            .http()
            .patch(&item)
            .header("Content-Type", "application/merge-patch+json")
            .body(json!({"geometry": {"type": "Point", "coordinates": [lon, lat]}}).to_string()),
        None => app.http().delete(&item),
    };
    let response = app.send(request.bearer_auth(admin).header("If-Match", etag)).await;
    assert!(
        response.status().is_success(),
        "{:?} of {key}: {}",
        to,
        response.status()
    );
    response.status().as_u16()
}

/// `format=pmtiles`: 202 with a job, then the archive, range-readable, as
/// the `pmtiles` package (PyPI) reads it over HTTP ranges; its tiles hold
/// what the service's own tiles hold (read by GDAL's MVT driver).
async fn check_archive(app: &App, admin: &str, id: &str, dataset: &Value, complete: u32) {
    let download = app.url(&format!("/api/datasets/{id}/download?format=pmtiles"));
    let first = app.send(app.http().get(&download)).await;
    assert_eq!(first.status(), 202, "the archive is made by a job");
    assert!(first.headers().contains_key("retry-after"));
    let first: Value = first.json().await.unwrap();
    let job_id = first["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let again = app.send(app.http().get(&download)).await;
    if again.status() == 202 {
        let again: Value = again.json().await.unwrap();
        assert_eq!(again["job_id"], json!(job_id), "one job however many ask");
    }
    let job = app.wait_job(admin, &job_id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["kind"], "tile_archive");
    let whole = app.send(app.http().get(&download)).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["content-type"], "application/vnd.pmtiles");
    assert!(whole.headers().contains_key("etag"));
    let bytes = whole.bytes().await.unwrap();
    assert_eq!(&bytes[..7], b"PMTiles");
    assert_eq!(bytes[7], 3, "version 3");
    let header = app.send(app.http().get(&download).header("range", "bytes=0-126")).await;
    assert_eq!(header.status(), 206);
    assert_eq!(header.bytes().await.unwrap().len(), 127);
    // Refusals: a selection, and a dataset with no pyramid.
    let selected = app.send(app.http().get(format!("{download}&bbox=0,0,1,1"))).await;
    assert_eq!(selected.status(), 400);

    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("places.pmtiles");
    std::fs::write(&file, &bytes).unwrap();
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    let output = std::process::Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/pmtiles_read.py"))
        .arg(&file)
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "pmtiles_read.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: Value = serde_json::from_slice(&output.stdout).unwrap();
    let head = &read["header"];
    assert_eq!(head["min_zoom"], 0, "{head}");
    assert_eq!(head["max_zoom"], json!(complete), "{head}");
    assert_eq!(head["tile_type"], "MVT", "{head}");
    assert_eq!(head["tile_compression"], "GZIP", "{head}");
    let layer = &read["metadata"]["vector_layers"][0];
    assert_eq!(layer["id"], dataset["table_name"], "{}", read["metadata"]);
    let tiles: BTreeMap<(u32, u64, u64), u64> = read["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let n = |i: usize| t[i].as_u64().unwrap();
            ((n(0) as u32, n(1), n(2)), n(3))
        })
        .collect();
    assert!(tiles.keys().all(|&(z, _, _)| z <= complete));
    let archived = |(z, x, y): (u32, u64, u64)| {
        let bytes = std::fs::read(out.path().join(format!("{z}/{x}/{y}.pbf"))).unwrap();
        tile_points((z, x, y), &bytes)
            .into_iter()
            .map(|(k, _, _)| k)
            .collect::<BTreeSet<i64>>()
    };
    // Every tile of zooms 0 to 2 the service draws is archived, and no
    // other; then the biggest tiles of each zoom up to the complete one.
    let mut compared = Vec::new();
    for z in 0..=2u32 {
        for x in 0..1u64 << z {
            for y in 0..1u64 << z {
                compared.push((z, x, y));
            }
        }
    }
    for z in 3..=complete {
        let mut of_zoom: Vec<_> = tiles.iter().filter(|((tz, _, _), _)| *tz == z).collect();
        of_zoom.sort_by_key(|(_, size)| std::cmp::Reverse(**size));
        compared.extend(of_zoom.iter().take(3).map(|(address, _)| **address));
    }
    for address in compared {
        let (status, body) = get_tile(app, id, address).await;
        if status == 204 {
            assert!(
                !tiles.contains_key(&address),
                "{address:?}: archived, but the service draws nothing"
            );
            continue;
        }
        assert_eq!(status, 200);
        assert!(
            tiles.contains_key(&address),
            "{address:?}: drawn by the service, not archived"
        );
        let served: BTreeSet<i64> = tile_points(address, &body).into_iter().map(|(k, _, _)| k).collect();
        assert_eq!(
            archived(address),
            served,
            "{address:?}: the archived tile holds what the service draws"
        );
    }
}

/// A point of the test's crowded square: a long note makes every row
/// weigh about 1.6 KB, so a complete tile holds about a thousand.
fn crowded_point(i: usize) -> Value {
    let (lon, lat) = (0.5 + (i % 40) as f64 * 0.45, 0.5 + (i / 40 % 40) as f64 * 0.45);
    json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
           "properties": {"name": format!("point {i}"), "note": "n".repeat(1500)}})
}

/// Edits that fill the complete zoom's tile past what a complete tile may
/// hold raise the complete zoom in their own transaction (decisions:
/// computed at ingest and after each change): the layer, complete from
/// zoom 0 while it fits one tile, is thinned below its new complete zoom,
/// within the bounds and with a point in every 8x8 cell that holds one,
/// and exact from it.
#[tokio::test]
async fn edits_that_overfill_a_complete_tile_raise_the_complete_zoom() {
    let app = App::start_with_worker().await;
    let admin = app.admin_token().await;
    let loaded = 1000;
    let features: Vec<Value> = (0..loaded).map(crowded_point).collect();
    let id = app
        .ingest_geojson(
            &admin,
            &json!({"type": "FeatureCollection", "features": features}),
            &[("visibility", "public")],
        )
        .await;
    let dataset = app.dataset(&admin, &id).await;
    assert_eq!(dataset["complete_zoom"], json!(0), "{} points fit one tile", loaded);
    let table = format!(
        "\"{}\".\"{}\"",
        dataset["schema_name"].as_str().unwrap(),
        dataset["table_name"].as_str().unwrap()
    );
    // The budget as the load counts it: the table's bytes a row.
    let bytes: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT pg_table_size('{table}')")))
        .fetch_one(app.pool())
        .await
        .unwrap();
    let budget = catalog_shared::generalize::tile_budget(bytes as u64 / loaded as u64) as usize;
    assert!(
        budget > loaded && budget < loaded + 400,
        "a complete tile holds {budget} of these points"
    );
    let mut added = 0;
    let complete = loop {
        let created = app
            .send(
                app.http()
                    .post(app.url(&format!("/api/collections/{id}/items")))
                    .bearer_auth(&admin)
                    .header("Content-Type", "application/geo+json")
                    .body(crowded_point(loaded + added).to_string()),
            )
            .await;
        assert_eq!(created.status(), 201);
        added += 1;
        let complete = app.dataset(&admin, &id).await["complete_zoom"].as_u64().unwrap() as u32;
        if complete > 0 || added > budget - loaded + 50 {
            break complete;
        }
    };
    assert!(
        complete > 0,
        "{} points in one tile, past its {budget}, and still complete at zoom 0",
        loaded + added
    );
    assert!(
        loaded + added > budget * 9 / 10,
        "raised at {} points, well under the budget {budget}",
        loaded + added
    );
    let (_, tilejson) = app.get_json(None, &format!("/api/tiles/{id}/tilejson.json")).await;
    assert_eq!(tilejson["vector_layers"][0]["complete_zoom"], json!(complete));
    for z in 0..complete {
        let most = check_zoom(&app, &id, &table, z).await;
        assert!(
            most < loaded + added,
            "zoom {z} is thinned: {most} of {} points",
            loaded + added
        );
    }
    let (x, y) = catalog_tests::tile_at(9.0, 9.0, complete);
    let (status, body) = get_tile(&app, &id, (complete, u64::from(x), u64::from(y))).await;
    assert_eq!(status, 200);
    let drawn: BTreeSet<i64> = tile_points((complete, u64::from(x), u64::from(y)), &body)
        .into_iter()
        .map(|(key, ..)| key)
        .collect();
    assert_eq!(
        drawn,
        keys_in_tile(&app, &table, (complete, u64::from(x), u64::from(y))).await,
        "zoom {complete} is exact"
    );
}
