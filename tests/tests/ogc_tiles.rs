//! OGC API Tiles and rasters as collections, read by real clients: GDAL's
//! OGC API driver opens a raster through its tiles; a client that knows
//! only a tileset's template and `tileMatrixSetLimits` finds every feature
//! of zooms 0 to 5, each tile decoded by GDAL's MVT driver; every tile
//! equals the same tile of `/api/tiles`.
use std::{
    collections::{BTreeMap, BTreeSet},
    process::Command,
};

use catalog_tests::{Api, Stack, StackOptions, data_file, decode_png, ogrinfo_of_tile, shapefile_members, zip_owned};
use futures::{StreamExt, stream};
use serde_json::Value;

async fn ingested(stack: &Stack, token: &str, filename: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> String {
    let job = stack.upload_ok(token, filename, bytes, fields).await;
    let job = stack.wait_job(token, &job).await;
    assert_eq!(job["status"], "succeeded", "{filename}: {job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

fn link<'a>(document: &'a Value, rel: &str) -> Option<&'a Value> {
    document["links"].as_array()?.iter().find(|l| l["rel"] == rel)
}

fn href(document: &Value, rel: &str) -> String {
    link(document, rel).unwrap_or_else(|| panic!("no {rel} link in {document}"))["href"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn get(stack: &Stack, url: &str) -> (u16, Vec<u8>) {
    let response = stack.http.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

async fn get_json(stack: &Stack, url: &str) -> Value {
    let (status, body) = get(stack, url).await;
    assert_eq!(status, 200, "{url}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// The feature ids (`gid`) GDAL's MVT driver reads from tile z/x/y.
fn gdal_mvt_ids(address: (u32, u64, u64), bytes: &[u8]) -> BTreeSet<i64> {
    // GDAL numbers features itself and gives the tile's own id as `mvt_id`.
    ogrinfo_of_tile(bytes, address)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mvt_id (Integer64) = "))
        .map(|id| id.trim().parse().unwrap())
        .collect()
}

/// What a client that reads only the tileset metadata finds: from the
/// collection to its tilesets, the WebMercatorQuad tileset's template and
/// limits, every tile of zooms 0 to 5 within them decoded by GDAL.
async fn features_through_tileset(stack: &Stack, id: &str) -> BTreeMap<u32, BTreeSet<i64>> {
    let collection = get_json(stack, &stack.url(&format!("/api/collections/{id}"))).await;
    let tilesets = get_json(
        stack,
        &href(&collection, "http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector"),
    )
    .await;
    let tileset = tilesets["tilesets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tileMatrixSetURI"].as_str().unwrap().ends_with("/WebMercatorQuad"))
        .expect("a WebMercatorQuad tileset");
    assert_eq!(tileset["dataType"], "vector");
    let metadata = get_json(stack, &href(tileset, "self")).await;
    let item = link(&metadata, "item").expect("a tile template");
    assert_eq!(item["type"], "application/vnd.mapbox-vector-tile");
    let template = item["href"].as_str().unwrap().to_string();
    let mut found: BTreeMap<u32, BTreeSet<i64>> = BTreeMap::new();
    for limits in metadata["tileMatrixSetLimits"].as_array().unwrap() {
        let z: u32 = limits["tileMatrix"].as_str().unwrap().parse().unwrap();
        if z > 5 {
            continue;
        }
        let n = |k: &str| limits[k].as_u64().unwrap();
        let addresses: Vec<(u64, u64)> = (n("minTileRow")..=n("maxTileRow"))
            .flat_map(|row| (n("minTileCol")..=n("maxTileCol")).map(move |col| (row, col)))
            .collect();
        let tiles: Vec<(u64, u64, u16, Vec<u8>)> = stream::iter(addresses)
            .map(|(row, col)| {
                let url = template
                    .replace("{tileMatrix}", &z.to_string())
                    .replace("{tileRow}", &row.to_string())
                    .replace("{tileCol}", &col.to_string());
                async move {
                    let (status, body) = get(stack, &url).await;
                    (row, col, status, body)
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        for (row, col, status, body) in tiles {
            assert!(matches!(status, 200 | 204), "{z}/{row}/{col}: {status}");
            if status == 200 {
                let ids = gdal_mvt_ids((z, col, row), &body);
                found.entry(z).or_default().extend(ids);
            }
        }
    }
    found
}

async fn all_keys(stack: &Stack, id: &str) -> BTreeSet<i64> {
    let dataset = stack.dataset(&stack.admin_token().await, id).await;
    let name = |field: &str| format!("\"{}\"", dataset[field].as_str().unwrap());
    let keys: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT {}::bigint FROM {}.{}",
        name("key_column"),
        name("schema_name"),
        name("table_name")
    )))
    .fetch_all(&stack.pool)
    .await
    .unwrap();
    keys.into_iter().collect()
}

#[tokio::test]
async fn clients_of_ogc_api_tiles_find_every_feature_and_pixel() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let public = [("visibility", "public")];
    let cities = ingested(
        &stack,
        &token,
        "cities.zip",
        zip_owned(&shapefile_members("shp/naturalearth_cities")),
        &public,
    )
    .await;
    let raster = ingested(
        &stack,
        &token,
        "elev.tif",
        data_file("raster/elev_luxembourg.tif"),
        &public,
    )
    .await;

    // The landing page and conformance lead to the tile matrix sets.
    let landing = get_json(&stack, &stack.url("/api")).await;
    let sets = get_json(
        &stack,
        &href(&landing, "http://www.opengis.net/def/rel/ogc/1.0/tiling-schemes"),
    )
    .await;
    let ids: Vec<&str> = sets["tileMatrixSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["WebMercatorQuad", "WorldCRS84Quad"]);
    let conformance = get_json(&stack, &stack.url("/api/conformance")).await;
    for class in ["core", "tileset", "tilesets-list", "geodata-tilesets", "mvt", "png"] {
        let uri = format!("http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/{class}");
        assert!(
            conformance["conformsTo"].as_array().unwrap().iter().any(|c| c == &uri),
            "{uri}"
        );
    }

    // Every feature of every zoom from 0 to 5, by the tileset alone.
    let keys = all_keys(&stack, &cities).await;
    let found = features_through_tileset(&stack, &cities).await;
    assert_eq!(found.len(), 6, "zooms 0 to 5");
    for (z, ids) in &found {
        assert_eq!(ids, &keys, "zoom {z}: every city once at least, nothing else");
    }

    // The same tile as /api/tiles, byte for byte, for zooms 0 to 3.
    for (id, extension) in [(&cities, ""), (&raster, ".png")] {
        for z in 0..=3u32 {
            for x in 0..1u32 << z {
                for y in 0..1u32 << z {
                    let ogc = get(
                        &stack,
                        &stack.url(&format!("/api/collections/{id}/tiles/WebMercatorQuad/{z}/{y}/{x}")),
                    )
                    .await;
                    let xyz = get(&stack, &stack.url(&format!("/api/tiles/{id}/{z}/{x}/{y}{extension}"))).await;
                    assert_eq!(ogc, xyz, "{id} {z}/{x}/{y}");
                }
            }
        }
    }

    // A raster is a collection of tiles, not of features.
    let collection = get_json(&stack, &stack.url(&format!("/api/collections/{raster}"))).await;
    assert!(link(&collection, "items").is_none(), "{collection}");
    assert!(link(&collection, "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map").is_some());
    let cog = link(&collection, "enclosure").expect("the COG");
    assert_eq!(cog["type"], "image/tiff; application=geotiff; profile=cloud-optimized");
    let ranged = stack
        .http
        .get(cog["href"].as_str().unwrap())
        .header("Range", "bytes=0-3")
        .send()
        .await
        .unwrap();
    assert_eq!(ranged.status(), 206, "a public COG opens with no credential");
    assert_eq!(&ranged.bytes().await.unwrap()[..2], b"II", "a little-endian TIFF");
    let collections = get_json(&stack, &stack.url("/api/collections")).await;
    assert!(
        collections["collections"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == raster.as_str()),
        "rasters are listed"
    );
    let (status, body) = get(&stack, &stack.url(&format!("/api/collections/{raster}/items"))).await;
    assert_eq!(status, 404);
    assert!(
        String::from_utf8_lossy(&body).contains("raster"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _) = get(
        &stack,
        &stack.url(&format!("/api/collections/{cities}/tiles/WorldCRS84Quad")),
    )
    .await;
    assert_eq!(status, 404, "vector tiles are on WebMercatorQuad only");
    let (status, _) = get(
        &stack,
        &stack.url(&format!("/api/collections/{cities}/tiles/WebMercatorQuad/0/0/0?f=png")),
    )
    .await;
    assert_eq!(status, 400, "a vector collection has no PNG tiles");

    // GDAL 3.6 opens the raster through its tiles, with no option: four
    // bands (PNG's RGBA), on WorldCRS84Quad at the zoom of the raster's
    // own resolution (95 px over 0.79 degrees: zoom 7, 0.703125 / 2^7).
    let opened = Command::new("gdalinfo")
        .args(["-stats", "-oo", "CACHE=NO"])
        .arg(format!("OGCAPI:{}", stack.url(&format!("/api/collections/{raster}"))))
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&opened.stdout);
    assert!(
        opened.status.success(),
        "{info}\n{}",
        String::from_utf8_lossy(&opened.stderr)
    );
    assert!(info.contains("Band 4 Block") && !info.contains("Band 5"), "{info}");
    assert!(info.contains("WGS 84"), "{info}");
    assert!(
        info.contains("Pixel Size = (0.005493164062500,-0.005493164062500)"),
        "{info}"
    );
    // The data is there: the alpha band is opaque somewhere.
    assert!(info.contains("STATISTICS_MAXIMUM=255"), "{info}");

    // Any other reader (here one that names itself, as browsers, OWSLib and
    // GDAL 3.8 do) gets the tiles that hold the raster at every zoom, on
    // both tile matrix sets: the extent's tiles, and no tile outside them
    // with a pixel of data.
    let extent: Vec<f64> = serde_json::from_value(collection["extent"]["spatial"]["bbox"][0].clone()).unwrap();
    for (tms, columns_per_row) in [("WebMercatorQuad", 1u64), ("WorldCRS84Quad", 2)] {
        let tileset = stack.url(&format!("/api/collections/{raster}/tiles/{tms}"));
        let named = stack
            .http
            .get(&tileset)
            .header("User-Agent", "Mozilla/5.0")
            .send()
            .await
            .unwrap();
        assert_eq!(named.headers()["vary"], "User-Agent");
        let named: Value = named.json().await.unwrap();
        let gdal_36: Value = stack.http.get(&tileset).send().await.unwrap().json().await.unwrap();
        let limits = named["tileMatrixSetLimits"].as_array().unwrap();
        assert!(!limits.is_empty(), "{named}");
        for (exact, old) in limits.iter().zip(gdal_36["tileMatrixSetLimits"].as_array().unwrap()) {
            let z: u32 = exact["tileMatrix"].as_str().unwrap().parse().unwrap();
            let n = |l: &Value, k: &str| l[k].as_u64().unwrap();
            let expected = data_tiles(tms, &extent, z);
            let got = ["minTileCol", "maxTileCol", "minTileRow", "maxTileRow"].map(|k| n(exact, k));
            assert_eq!(got, expected, "{tms} zoom {z}: {exact}");
            assert_eq!(
                [
                    n(old, "minTileCol"),
                    n(old, "maxTileCol"),
                    n(old, "minTileRow"),
                    n(old, "maxTileRow")
                ],
                [0, expected[1], 0, (1 << z) - 1],
                "{tms} zoom {z}, GDAL 3.6's limits: {old}"
            );
            // The ring of tiles around the limits holds no data.
            let [min_col, max_col, min_row, max_row] = expected;
            let (last_col, last_row) = ((columns_per_row << z) - 1, (1u64 << z) - 1);
            for row in min_row.saturating_sub(1)..=(max_row + 1).min(last_row) {
                for col in min_col.saturating_sub(1)..=(max_col + 1).min(last_col) {
                    let (status, body) = get(
                        &stack,
                        &stack.url(&format!("/api/collections/{raster}/tiles/{tms}/{z}/{row}/{col}")),
                    )
                    .await;
                    let inside = (min_row..=max_row).contains(&row) && (min_col..=max_col).contains(&col);
                    let holds_data = status == 200 && decode_png(&body).2.iter().any(|p| p[3] > 0);
                    assert!(
                        inside || !holds_data,
                        "{tms} {z}/{row}/{col} holds data outside {exact}"
                    );
                }
            }
        }
    }
}

/// The columns and rows `[min_col, max_col, min_row, max_row]` of the tiles
/// that hold `[west, south, east, north]` at zoom `z`.
fn data_tiles(tms: &str, extent: &[f64], z: u32) -> [u64; 4] {
    let rows = f64::from(1u32 << z);
    let (columns, row_of): (f64, Box<dyn Fn(f64) -> f64>) = if tms == "WebMercatorQuad" {
        let row = move |lat: f64| (1.0 - lat.to_radians().tan().asinh() / std::f64::consts::PI) / 2.0 * rows;
        (rows, Box::new(row))
    } else {
        (2.0 * rows, Box::new(move |lat: f64| (90.0 - lat) / 180.0 * rows))
    };
    let col = |lon: f64| ((lon + 180.0) / 360.0 * columns).floor() as u64;
    let row = |lat: f64| row_of(lat).floor() as u64;
    [col(extent[0]), col(extent[2]), row(extent[3]), row(extent[1])]
}

/// Runs `tests/clients/qgis_draw.py` with Debian's Python and QGIS.
fn qgis_draw(args: &[&str]) -> Value {
    let python = std::env::var("CATALOG_QGIS_PYTHON").expect("CATALOG_QGIS_PYTHON (set by scripts/test.sh)");
    let out = tempfile::tempdir().unwrap();
    let image = out.path().join("drawn.png");
    let output = Command::new(python)
        .arg(catalog_tests::package_dir().join("clients/qgis_draw.py"))
        .args(args)
        .arg(&image)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// How long after a link was made its reader still opens it: five minutes,
/// well past the two-minute download token that once stopped QGIS (met
/// through an API process whose clock runs that far ahead).
const FIVE_MINUTES_LATER: std::time::Duration = std::time::Duration::from_secs(5 * 60 + 5);

#[tokio::test]
async fn qgis_and_gdal_read_a_private_cog_in_place_five_minutes_on_and_qgis_draws_oapif_and_vector_tiles() {
    let mut stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let raster = ingested(&stack, &token, "elev.tif", data_file("raster/elev_luxembourg.tif"), &[]).await;
    let cities = ingested(
        &stack,
        &token,
        "cities.zip",
        zip_owned(&shapefile_members("shp/naturalearth_cities")),
        &[("visibility", "public")],
    )
    .await;

    // The private raster's collection gives its reader a signed COG link.
    let (status, collection) = stack
        .get_json(Some(&token), &format!("/api/collections/{raster}"))
        .await;
    assert_eq!(status, 200);
    let cog = href(&collection, "enclosure");
    assert!(cog.contains("sig="), "a private COG's link is signed: {cog}");
    let unsigned = cog.split('?').next().unwrap();
    assert_eq!(get(&stack, unsigned).await.0, 401, "without the signature, no COG");
    // So does its STAC item, as the `data` asset pystac-client hands on.
    let (status, item) = stack
        .get_json(Some(&token), &format!("/api/stac/collections/raster/items/{raster}"))
        .await;
    assert_eq!(status, 200);
    let asset = item["assets"]["data"]["href"].as_str().unwrap().to_string();
    assert!(asset.contains("sig="), "{asset}");

    // Five minutes on, QGIS draws the COG in place and GDAL opens the asset.
    let later = stack.add_api_ahead(FIVE_MINUTES_LATER).await;
    let (asset, cog) = (asset.replace(&stack.base, &later), cog.replace(&stack.base, &later));
    assert!(asset.starts_with(&later) && cog.starts_with(&later), "{asset} {cog}");
    let info = catalog_tests::gdalinfo_vsicurl(&asset);
    assert!(info.contains("Driver: GTiff") && info.contains("Band 1"), "{info}");
    let drawn = qgis_draw(&["cog", &cog]);
    assert_eq!(drawn["valid"], true, "{drawn}");
    assert_eq!(drawn["crs"], "EPSG:4326", "{drawn}");
    assert!(drawn["painted"].as_u64().unwrap() > 10_000, "the DEM is drawn: {drawn}");
    assert_eq!(drawn["errors"], serde_json::json!([]), "{drawn}");

    // And an OGC API Features layer, drawn in Web Mercator.
    let drawn = qgis_draw(&["oapif", &stack.url("/api"), &cities]);
    assert_eq!(drawn["valid"], true, "{drawn}");
    assert_eq!(drawn["features"], 243, "{drawn}");
    assert!(
        drawn["painted"].as_u64().unwrap() > 100,
        "the cities are drawn: {drawn}"
    );

    // And as vector tiles, from the TileJSON's template (QGIS's "Vector
    // Tiles" connection), over the world and over Europe.
    let tilejson = get_json(&stack, &stack.url(&format!("/api/tiles/{cities}/tilejson.json"))).await;
    let template = tilejson["tiles"][0].as_str().unwrap();
    for (extent, at_least) in [(["-180", "-80", "180", "80"], 2000), (["-10", "35", "30", "60"], 1000)] {
        let mut args = vec!["mvt", template];
        args.extend(extent);
        let drawn = qgis_draw(&args);
        assert_eq!(drawn["valid"], true, "{drawn}");
        assert_eq!(drawn["errors"], serde_json::json!([]), "{drawn}");
        assert!(
            drawn["painted"].as_u64().unwrap() > at_least,
            "the cities' tiles are drawn over {extent:?}: {drawn}"
        );
    }
}

#[tokio::test]
async fn signed_tileset_templates_open_their_tiles_only() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let cities = zip_owned(&shapefile_members("shp/naturalearth_cities"));
    let private = ingested(&stack, &token, "cities.zip", cities.clone(), &[]).await;
    let other = ingested(&stack, &token, "cities.zip", cities, &[]).await;

    let (status, tileset) = stack
        .get_json(
            Some(&token),
            &format!("/api/collections/{private}/tiles/WebMercatorQuad"),
        )
        .await;
    assert_eq!(status, 200);
    let template = link(&tileset, "item").unwrap()["href"].as_str().unwrap().to_string();
    assert!(
        template.contains("sig="),
        "a private tileset's template is signed: {template}"
    );
    let tile = template
        .replace("{tileMatrix}", "0")
        .replace("{tileRow}", "0")
        .replace("{tileCol}", "0");
    assert_eq!(get(&stack, &tile).await.0, 200, "its own tile, with no credential");
    let query = tile.split_once('?').unwrap().1;
    for path in [
        format!("/api/collections/{other}/tiles/WebMercatorQuad/0/0/0"),
        format!("/api/collections/{private}"),
        format!("/api/collections/{private}/tiles/WebMercatorQuad"),
        format!("/api/collections/{private}/items"),
    ] {
        let (status, _) = get(&stack, &format!("{}?{query}", stack.url(&path))).await;
        assert_eq!(status, 404, "{path} with another template's signature");
    }
}
