//! Raster datasets: GeoTIFFs (the real DEM, and files GDAL makes here:
//! RGB in UTM, stripped, rotated, unplaced, truncated) are checked,
//! stored as Cloud-Optimized GeoTIFFs, described in the record, and
//! served as Web Mercator image tiles with TileJSON and signed templates.
use std::path::Path;

use catalog_tests::{Api, App, data_file, tile_at};
use gdal::{
    DriverManager,
    raster::{Buffer, ColorEntry, ColorTable, PaletteInterpretation},
    spatial_ref::SpatialRef,
};
use serde_json::{Value, json};

/// A GeoTIFF GDAL writes: `bands` Byte bands of a gradient, placed by
/// `geo_transform` in `epsg` (none: no CRS), with creation options.
fn geotiff(
    dir: &Path,
    name: &str,
    (width, height, bands): (usize, usize, usize),
    geo_transform: Option<[f64; 6]>,
    epsg: Option<u32>,
    options: &[&str],
) -> Vec<u8> {
    let path = dir.join(name);
    let driver = DriverManager::get_driver_by_name("GTiff").unwrap();
    let options = gdal::cpl::CslStringList::from_iter(options.iter().copied());
    let mut ds = driver
        .create_with_band_type_with_options::<u8, _>(&path, width, height, bands, &options)
        .unwrap();
    if let Some(gt) = geo_transform {
        ds.set_geo_transform(&gt).unwrap();
    }
    if let Some(code) = epsg {
        ds.set_spatial_ref(&SpatialRef::from_epsg(code).unwrap()).unwrap();
    }
    // A sparse file claims its size without holding it.
    let sparse = width * height > 10_000_000;
    for b in (1..=bands).filter(|_| !sparse) {
        let data: Vec<u8> = (0..width * height)
            .map(|i| ((i % width) * 255 / width.max(1)) as u8 / b as u8)
            .collect();
        ds.rasterband(b)
            .unwrap()
            .write((0, 0), (width, height), &mut Buffer::new((width, height), data))
            .unwrap();
    }
    drop(ds);
    std::fs::read(path).unwrap()
}

/// A square PNG's size and its pixels.
fn decode(png: &[u8]) -> (usize, Vec<[u8; 4]>) {
    let (size, _, pixels) = catalog_tests::decode_png(png);
    (size, pixels)
}

/// A GET that follows redirects, as a client over the network does (the
/// service in process answers them as they are): a tile asked at a data
/// version since replaced moves to the current one.
async fn get(app: &App, token: Option<&str>, path: &str) -> reqwest::Response {
    let mut url = app.url(path);
    for _ in 0..10 {
        let mut request = app.http().get(url.as_str());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = app.send(request).await;
        if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
            return response;
        }
        let location = response.headers()["location"].to_str().unwrap();
        url = if location.starts_with('/') {
            app.url(location)
        } else {
            location.to_string()
        };
    }
    panic!("more than 10 redirects from {path}");
}

async fn ingest(app: &App, token: &str, name: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> Value {
    let job = app.upload_ok(token, name, bytes, fields).await;
    app.wait_job(token, &job).await
}

/// Luxembourg's elevation (Int16, one band), public; its dataset id.
async fn public_dem(app: &App, token: &str) -> String {
    let dem = data_file("raster/elev_luxembourg.tif");
    let job = ingest(app, token, "elev_luxembourg.tif", dem, &[("visibility", "public")]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    job["dataset_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_geotiff_becomes_a_raster_dataset_served_as_tiles() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = public_dem(&app, &token).await;
    let record = app.dataset(&token, &id).await;
    assert_eq!(record["kind"], "raster");
    assert_eq!(record["title"], "elev_luxembourg");
    assert!(
        record["feature_count"].is_null() && record["geometry_type"].is_null(),
        "{record}"
    );
    let raster = &record["raster"];
    assert_eq!(
        (raster["width"].as_u64(), raster["height"].as_u64()),
        (Some(95), Some(90)),
        "{raster}"
    );
    assert_eq!(raster["band_count"], 1);
    assert_eq!(raster["srid"], 4326);
    assert_eq!(raster["is_cog"], true);
    let band = &raster["bands"][0];
    assert_eq!(band["data_type"], "Int16");
    assert_eq!(band["nodata"], -32768.0);
    assert_eq!(band["color_interpretation"], "Gray");
    let (min, max) = (band["min"].as_f64().unwrap(), band["max"].as_f64().unwrap());
    assert!(min > 0.0 && min < max && max < 1000.0, "nodata is not a value: {band}");
    let extent: Vec<f64> = serde_json::from_value(record["extent_bbox"].clone()).unwrap();
    let expected = [5.741_666, 49.441_666, 6.533_333, 50.191_666];
    assert!(
        extent.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-4),
        "{extent:?}"
    );

    // Not a feature collection.
    assert_eq!(
        get(&app, Some(&token), &format!("/api/collections/{id}/items"))
            .await
            .status(),
        404
    );
    // A collection of tiles (tests/tests/ogc_tiles.rs).
    assert_eq!(
        get(&app, Some(&token), &format!("/api/collections/{id}"))
            .await
            .status(),
        200
    );
    assert_eq!(
        get(&app, Some(&token), &format!("/api/tiles/{id}/8/132/86.pbf"))
            .await
            .status(),
        422
    );

    // A tile over Luxembourg: data opaque, the rest of the tile transparent.
    let tile = get(&app, None, &format!("/api/tiles/{id}/8/132/86.png")).await;
    assert_eq!(tile.status(), 200);
    assert_eq!(tile.headers()["content-type"], "image/png");
    let (size, pixels) = decode(&tile.bytes().await.unwrap());
    assert_eq!(size, 256);
    let opaque = pixels.iter().filter(|p| p[3] == 255).count();
    let clear = pixels.iter().filter(|p| p[3] == 0).count();
    assert!(opaque > 1000 && clear > 1000, "opaque {opaque}, clear {clear}");
    assert!(
        pixels
            .iter()
            .filter(|p| p[3] == 255)
            .all(|p| p[0] == p[1] && p[1] == p[2]),
        "grey without a colormap"
    );
    let coloured = get(&app, None, &format!("/api/tiles/{id}/8/132/86@2x.png?colormap=viridis")).await;
    assert_eq!(coloured.status(), 200);
    let (size, pixels) = decode(&coloured.bytes().await.unwrap());
    assert_eq!(size, 512);
    assert!(
        pixels.iter().any(|p| p[3] == 255 && p[0] != p[2]),
        "viridis is not grey"
    );
    for format in ["webp", "jpg"] {
        let other = get(&app, None, &format!("/api/tiles/{id}/8/132/86.{format}")).await;
        assert_eq!(other.status(), 200, "{format}");
        let expected = if format == "jpg" { "image/jpeg" } else { "image/webp" };
        assert_eq!(other.headers()["content-type"], expected);
    }
    // Wholly outside the data: nothing to draw.
    assert_eq!(
        get(&app, None, &format!("/api/tiles/{id}/8/10/86.png")).await.status(),
        204
    );
    for bad in [
        "bidx=2",
        "bidx=1,1",
        "rescale=5",
        "colormap=rainbow",
        "resampling=lanczos",
    ] {
        let refused = get(&app, None, &format!("/api/tiles/{id}/8/132/86.png?{bad}")).await;
        assert_eq!(refused.status(), 400, "{bad}");
    }

    let tilejson: Value = get(&app, None, &format!("/api/tiles/{id}/tilejson.json"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        tilejson["tiles"][0].as_str().unwrap().ends_with("/{z}/{x}/{y}.png?v=1"),
        "{tilejson}"
    );
    assert_eq!(tilejson["format"], "png");
    let maxzoom = tilejson["maxzoom"].as_u64().unwrap();
    assert!((6..=12).contains(&maxzoom), "about 1 km pixels: {maxzoom}");
    let (status, signed) = app.get_json(Some(&token), &format!("/api/tiles/token/{id}")).await;
    assert_eq!(status, 200);
    assert!(
        signed["tile_url"].as_str().unwrap().contains("/{z}/{x}/{y}.png?"),
        "{signed}"
    );
    assert!(signed["cluster_tile_url"].is_null());
    let terrain_template = signed["terrain_tile_url"].as_str().unwrap();
    assert!(terrain_template.contains("/terrain/{z}/{x}/{y}.png?"), "{signed}");

    // Terrain: heights inside the data, 0 m around it.
    let terrain_path = terrain_template
        .replace("{z}/{x}/{y}", "8/132/86")
        .replace(&app.url(""), "");
    let terrain = get(&app, None, &terrain_path).await;
    assert_eq!(terrain.status(), 200);
    let (size, pixels) = decode(&terrain.bytes().await.unwrap());
    assert_eq!(size, 512);
    let heights: Vec<f64> = pixels
        .iter()
        .map(|p| -10_000.0 + (f64::from(p[0]) * 65_536.0 + f64::from(p[1]) * 256.0 + f64::from(p[2])) * 0.1)
        .collect();
    assert!(heights.iter().any(|h| h.abs() < 0.05), "0 m outside the data");
    let inside: Vec<&f64> = heights.iter().filter(|h| h.abs() >= 0.05).collect();
    assert!(inside.len() > 1000, "{}", inside.len());
    assert!(
        inside.iter().all(|h| **h >= min - 0.1 && **h <= max + 0.1),
        "heights within the band's range"
    );
    let terrarium = get(
        &app,
        None,
        &format!("/api/tiles/{id}/terrain/8/132/86.png?encoding=terrarium&tile_size=256"),
    )
    .await;
    assert_eq!(terrarium.status(), 200);
    let (size, pixels) = decode(&terrarium.bytes().await.unwrap());
    assert_eq!(size, 256);
    let highest = pixels
        .iter()
        .map(|p| f64::from(p[0]) * 256.0 + f64::from(p[1]) + f64::from(p[2]) / 256.0 - 32_768.0)
        .fold(f64::MIN, f64::max);
    assert!(highest > min && highest <= max + 0.1, "{highest}");
    assert_eq!(
        get(&app, None, &format!("/api/tiles/{id}/terrain/8/10/86.png"))
            .await
            .status(),
        204
    );
}

#[tokio::test]
async fn strict_cog_keeps_valid_files_byte_for_byte_and_refuses_the_rest() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();

    let clash = app
        .upload(
            &token,
            "dem.tif",
            data_file("raster/elev_luxembourg.tif"),
            &[
                ("strict_cog", "true"),
                ("resampling", "cubic"),
                ("srid_override", "3857"),
            ],
        )
        .await;
    assert_eq!(clash.status(), 422);
    let problem: Value = clash.json().await.unwrap();
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("resampling") && detail.contains("srid_override"),
        "{detail}"
    );

    // A COG made by GDAL's COG driver is stored as it is.
    let source = dir.path().join("dem.tif");
    std::fs::write(&source, data_file("raster/elev_luxembourg.tif")).unwrap();
    let cog = dir.path().join("dem_cog.tif");
    let made = std::process::Command::new("gdal_translate")
        .args(["-q", "-of", "COG"])
        .args([&source, &cog])
        .status()
        .unwrap();
    assert!(made.success());
    let cog_bytes = std::fs::read(&cog).unwrap();
    let job = ingest(
        &app,
        &token,
        "dem_cog.tif",
        cog_bytes.clone(),
        &[("strict_cog", "true")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let object: String = sqlx::query_scalar("SELECT raster_object FROM datasets WHERE id = $1::uuid")
        .bind(job["dataset_id"].as_str().unwrap())
        .fetch_one(app.pool())
        .await
        .unwrap();
    let stored = std::fs::read(app.storage_dir().join(&object)).unwrap();
    assert!(stored == cog_bytes, "stored byte for byte");

    // A large stripped TIFF without overviews is not a COG.
    let strips = geotiff(
        dir.path(),
        "strips.tif",
        (1200, 1000, 1),
        Some([500_000.0, 10.0, 0.0, 5_000_000.0, 0.0, -10.0]),
        Some(32632),
        &[],
    );
    let job = ingest(&app, &token, "strips.tif", strips.clone(), &[("strict_cog", "true")]).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(detail.contains("not tiled") && detail.contains("overviews"), "{detail}");
    // Without strict_cog the same file is converted.
    let job = ingest(&app, &token, "strips.tif", strips, &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let record = app.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(record["raster"]["is_cog"], true);
    assert!(record["raster"]["overview_count"].as_u64().unwrap() >= 1, "{record}");
    assert_eq!(record["raster"]["srid"], 32632);
}

#[tokio::test]
async fn messy_rasters_fail_clearly_and_leave_nothing() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    let placed = Some([6.0, 0.001, 0.0, 50.0, 0.0, -0.001]);
    let rotated = geotiff(
        dir.path(),
        "rotated.tif",
        (50, 50, 1),
        Some([6.0, 0.001, 0.0002, 50.0, 0.0002, -0.001]),
        Some(4326),
        &[],
    );
    let unplaced = geotiff(dir.path(), "unplaced.tif", (50, 50, 1), None, None, &[]);
    let no_crs = geotiff(dir.path(), "no_crs.tif", (50, 50, 1), placed, None, &[]);
    let whole = geotiff(
        dir.path(),
        "whole.tif",
        (300, 300, 3),
        placed,
        Some(4326),
        &["TILED=YES"],
    );
    let truncated = whole[..whole.len() / 3].to_vec();
    let huge = geotiff(
        dir.path(),
        "huge.tif",
        (100_000, 100_000, 1),
        placed,
        Some(4326),
        &["SPARSE_OK=TRUE", "TILED=YES"],
    );
    assert!(huge.len() < 4 << 20, "a small file: {}", huge.len());
    let cases = [
        ("huge.tif", huge, "pixels per band are accepted"),
        ("rotated.tif", rotated, "rotated or sheared"),
        ("unplaced.tif", unplaced, "no georeferencing"),
        ("no_crs.tif", no_crs.clone(), "srid_override"),
        ("truncated.tif", truncated, "could not be read"),
        ("text.tif", b"not a tiff at all".to_vec(), "not a readable GeoTIFF"),
    ];
    for (name, bytes, expected) in cases {
        let job = ingest(&app, &token, name, bytes, &[]).await;
        assert_eq!(job["status"], "failed", "{name}: {job}");
        let detail = job["error"]["detail"].as_str().unwrap();
        assert!(detail.contains(expected), "{name}: {detail}");
    }
    assert_eq!(app.dataset_count().await, 0);
    let rasters = app.storage_dir().join("rasters");
    assert!(
        !rasters.exists() || std::fs::read_dir(&rasters).unwrap().next().is_none(),
        "no raster file left behind"
    );

    // A zip of two GeoTIFFs and a GeoJSON file: a dataset each.
    let zipped = catalog_tests::zip_of(&[
        ("tiles/north.tif", whole.clone()),
        ("tiles/dem.tif", data_file("raster/elev_luxembourg.tif")),
        ("bikes.geojson", data_file("geojson/cycle_hire_osm.geojson")),
    ]);
    let job = ingest(&app, &token, "bundle.zip", zipped, &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let mut kinds = Vec::new();
    for dataset in job["dataset_ids"].as_array().unwrap() {
        let record = app.dataset(&token, dataset.as_str().unwrap()).await;
        kinds.push(format!(
            "{} {}",
            record["kind"].as_str().unwrap(),
            record["title"].as_str().unwrap()
        ));
    }
    kinds.sort();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(
        kinds[0].starts_with("raster") && kinds[1].starts_with("raster") && kinds[2].starts_with("vector"),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"raster dem".to_string()) && kinds.contains(&"raster north".to_string()),
        "{kinds:?}"
    );

    // The missing CRS named: assigned, not reprojected.
    let job = ingest(&app, &token, "no_crs.tif", no_crs, &[("srid_override", "4326")]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    // RGB: the tile shows the three bands.
    let job = ingest(
        &app,
        &token,
        "whole.tif",
        whole,
        &[("visibility", "public"), ("compression", "zstd")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap();
    let record = app.dataset(&token, id).await;
    let interpretations: Vec<&str> = record["raster"]["bands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["color_interpretation"].as_str().unwrap())
        .collect();
    assert_eq!(interpretations, ["Red", "Green", "Blue"]);
    assert_eq!(
        get(&app, None, &format!("/api/tiles/{id}/terrain/10/529/347.png"))
            .await
            .status(),
        422
    );
    let tile = get(&app, None, &format!("/api/tiles/{id}/10/529/347.png")).await;
    assert_eq!(tile.status(), 200);
    let (_, pixels) = decode(&tile.bytes().await.unwrap());
    assert!(
        pixels.iter().any(|p| p[3] == 255 && p[0] != p[2]),
        "bands 1 and 3 differ"
    );
}

/// A one-band GeoTIFF of `T` values GDAL writes in `srs`, with nodata and
/// a colour table when given.
fn one_band<T: gdal::raster::GdalType + Copy>(
    dir: &Path,
    name: &str,
    (width, height): (usize, usize),
    (geo_transform, srs): ([f64; 6], &SpatialRef),
    value: impl Fn(usize, usize) -> T,
    nodata: Option<f64>,
    palette: Option<&[(i16, i16, i16)]>,
) -> Vec<u8> {
    let path = dir.join(name);
    let driver = DriverManager::get_driver_by_name("GTiff").unwrap();
    let mut ds = driver.create_with_band_type::<T, _>(&path, width, height, 1).unwrap();
    ds.set_geo_transform(&geo_transform).unwrap();
    ds.set_spatial_ref(srs).unwrap();
    let mut band = ds.rasterband(1).unwrap();
    let data: Vec<T> = (0..width * height).map(|i| value(i % width, i / width)).collect();
    band.write((0, 0), (width, height), &mut Buffer::new((width, height), data))
        .unwrap();
    band.set_no_data_value(nodata).unwrap();
    if let Some(colours) = palette {
        let mut table = ColorTable::new(PaletteInterpretation::Rgba);
        for (i, (r, g, b)) in colours.iter().enumerate() {
            table.set_color_entry(i as u16, &ColorEntry::rgba(*r, *g, *b, 255));
        }
        band.set_color_table(&table);
    }
    drop(ds);
    std::fs::read(path).unwrap()
}

/// A point of `srs` in longitude and latitude.
fn to_lon_lat(srs: &SpatialRef, x: f64, y: f64) -> (f64, f64) {
    let mut wgs84 = SpatialRef::from_epsg(4326).unwrap();
    wgs84.set_axis_mapping_strategy(gdal::spatial_ref::AxisMappingStrategy::TraditionalGisOrder);
    let (mut xs, mut ys) = ([x], [y]);
    gdal::spatial_ref::CoordTransform::new(srs, &wgs84)
        .unwrap()
        .transform_coords(&mut xs, &mut ys, &mut [])
        .unwrap();
    (xs[0], ys[0])
}

/// Opaque pixels of a PNG tile fetched anonymously.
async fn opaque_pixels(app: &App, path: &str) -> Vec<[u8; 4]> {
    let tile = get(app, None, path).await;
    assert_eq!(tile.status(), 200, "{path}");
    let (_, pixels) = decode(&tile.bytes().await.unwrap());
    pixels.into_iter().filter(|p| p[3] == 255).collect()
}

#[tokio::test]
async fn palettes_floats_odd_crs_and_the_antimeridian_are_served_as_they_are() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    let public = [("visibility", "public")];

    // A land-cover map: four classes and their colour table. Tiles show the
    // table's colours only, at full resolution and from the overviews (made
    // with nearest, never blending classes).
    let colours = [(220, 30, 30), (30, 160, 60), (40, 80, 220), (240, 220, 40)];
    let classes = one_band::<u8>(
        dir.path(),
        "classes.tif",
        (2000, 2000),
        (
            [5.0, 0.0005, 0.0, 51.0, 0.0, -0.0005],
            &SpatialRef::from_epsg(4326).unwrap(),
        ),
        |x, y| ((x / 97 + y / 89) % 4) as u8,
        None,
        Some(&colours),
    );
    let job = ingest(&app, &token, "classes.tif", classes, &public).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap();
    let record = app.dataset(&token, id).await;
    assert_eq!(record["raster"]["bands"][0]["color_interpretation"], "Palette");
    assert!(record["raster"]["overview_count"].as_u64().unwrap() >= 1, "{record}");
    for z in [7, 9, 11] {
        let (x, y) = tile_at(5.5, 50.5, z);
        let pixels = opaque_pixels(&app, &format!("/api/tiles/{id}/{z}/{x}/{y}.png")).await;
        assert!(pixels.len() > 1000, "zoom {z}: {}", pixels.len());
        for p in &pixels {
            assert!(
                colours
                    .iter()
                    .any(|c| (i16::from(p[0]), i16::from(p[1]), i16::from(p[2])) == *c),
                "zoom {z}: {p:?} is not a class colour"
            );
        }
        for (r, g, b) in colours {
            assert!(
                pixels
                    .iter()
                    .any(|p| (i16::from(p[0]), i16::from(p[1]), i16::from(p[2])) == (r, g, b)),
                "zoom {z}: class ({r}, {g}, {b}) missing"
            );
        }
    }

    // A Float32 DEM in UTM with a nodata hole: statistics leave the hole
    // out, tiles draw it transparent, terrain encodes the heights.
    let utm = SpatialRef::from_epsg(32632).unwrap();
    let dem = one_band::<f32>(
        dir.path(),
        "dem_utm.tif",
        (400, 300),
        ([300_000.0, 30.0, 0.0, 5_600_000.0, 0.0, -30.0], &utm),
        |x, y| {
            if (150..250).contains(&x) && (100..200).contains(&y) {
                -9999.0
            } else {
                100.5 + (x + y) as f32 * 1.25
            }
        },
        Some(-9999.0),
        None,
    );
    let job = ingest(&app, &token, "dem_utm.tif", dem, &public).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let dem_id = job["dataset_id"].as_str().unwrap();
    let record = app.dataset(&token, dem_id).await;
    let band = &record["raster"]["bands"][0];
    assert_eq!(band["data_type"], "Float32");
    assert_eq!(band["nodata"], -9999.0);
    let (min, max) = (band["min"].as_f64().unwrap(), band["max"].as_f64().unwrap());
    assert!(
        (100.5..101.0).contains(&min) && (960.0..=973.0).contains(&max),
        "{band}"
    );
    assert_eq!(record["raster"]["srid"], 32632);
    assert_eq!(record["raster"]["resolution"], serde_json::json!([30.0, 30.0]));
    // The tile at the middle of the 3 km hole, 3 km across, ends inside the data.
    let (lon, lat) = to_lon_lat(&utm, 306_000.0, 5_595_500.0);
    let (x, y) = tile_at(lon, lat, 13);
    let tile = get(
        &app,
        None,
        &format!("/api/tiles/{dem_id}/13/{x}/{y}.png?colormap=terrain"),
    )
    .await;
    assert_eq!(tile.status(), 200);
    let (_, pixels) = decode(&tile.bytes().await.unwrap());
    let clear = pixels.iter().filter(|p| p[3] == 0).count();
    assert!(clear > 1000, "the nodata hole is transparent: {clear}");
    let (x, y) = tile_at(lon, lat, 9);
    let terrain = get(&app, None, &format!("/api/tiles/{dem_id}/terrain/9/{x}/{y}.png")).await;
    assert_eq!(terrain.status(), 200);
    let (_, pixels) = decode(&terrain.bytes().await.unwrap());
    let heights: Vec<f64> = pixels
        .iter()
        .map(|p| -10_000.0 + (f64::from(p[0]) * 65_536.0 + f64::from(p[1]) * 256.0 + f64::from(p[2])) * 0.1)
        .filter(|h| h.abs() >= 0.05)
        .collect();
    assert!(heights.len() > 1000, "{}", heights.len());
    assert!(
        heights.iter().all(|h| (100.4..=973.1).contains(h)),
        "heights within the DEM's range"
    );

    // A projection with no EPSG code: kept as it is, srid null, placed right.
    let custom = SpatialRef::from_proj4(
        "+proj=lcc +lat_0=50 +lon_0=10 +lat_1=45 +lat_2=55 +x_0=0 +y_0=0 +ellps=GRS80 +units=m +no_defs",
    )
    .unwrap();
    let odd = one_band::<u8>(
        dir.path(),
        "odd_crs.tif",
        (200, 200),
        ([-10_000.0, 100.0, 0.0, 10_000.0, 0.0, -100.0], &custom),
        |x, _| (x + 10) as u8,
        None,
        None,
    );
    let job = ingest(&app, &token, "odd_crs.tif", odd, &public).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let odd_id = job["dataset_id"].as_str().unwrap();
    let record = app.dataset(&token, odd_id).await;
    assert!(record["raster"]["srid"].is_null(), "{record}");
    let extent: Vec<f64> = serde_json::from_value(record["extent_bbox"].clone()).unwrap();
    assert!(
        (9.8..9.9).contains(&extent[0]) && (10.1..10.2).contains(&extent[2]),
        "{extent:?}"
    );
    assert!(
        (49.9..49.95).contains(&extent[1]) && (50.05..50.1).contains(&extent[3]),
        "{extent:?}"
    );
    let (x, y) = tile_at(10.0, 50.0, 10);
    assert!(
        opaque_pixels(&app, &format!("/api/tiles/{odd_id}/10/{x}/{y}.png"))
            .await
            .len()
            > 1000
    );

    // Fiji in UTM zone 60 south, across 180°: the extent runs west > east
    // (RFC 7946) and the tiles on both sides of the antimeridian hold data.
    let fiji = one_band::<u8>(
        dir.path(),
        "fiji.tif",
        (600, 330),
        (
            [400_000.0, 1000.0, 0.0, 8_230_000.0, 0.0, -1000.0],
            &SpatialRef::from_epsg(32760).unwrap(),
        ),
        |x, y| (1 + (x + y) % 250) as u8,
        Some(0.0),
        None,
    );
    let job = ingest(&app, &token, "fiji.tif", fiji, &public).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let fiji_id = job["dataset_id"].as_str().unwrap();
    let record = app.dataset(&token, fiji_id).await;
    let extent: Vec<f64> = serde_json::from_value(record["extent_bbox"].clone()).unwrap();
    assert!(extent[0] > 175.0 && extent[2] < -177.0, "west > east: {extent:?}");
    let tilejson: Value = get(&app, None, &format!("/api/tiles/{fiji_id}/tilejson.json"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        tilejson.get("bounds").is_none(),
        "TileJSON bounds cannot cross 180°: {tilejson}"
    );
    for lon in [179.0, -179.5] {
        let (x, y) = tile_at(lon, -17.5, 6);
        let pixels = opaque_pixels(&app, &format!("/api/tiles/{fiji_id}/6/{x}/{y}.png")).await;
        assert!(pixels.len() > 500, "longitude {lon}: {}", pixels.len());
    }
    let (x, y) = tile_at(0.0, -17.5, 6);
    assert_eq!(
        get(&app, None, &format!("/api/tiles/{fiji_id}/6/{x}/{y}.png"))
            .await
            .status(),
        204,
        "the other side of the world is empty"
    );
}

#[tokio::test]
async fn a_raster_takes_a_new_geotiff_in_place() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("rafa", "editor").await;
    let dir = tempfile::tempdir().unwrap();
    let wgs84 = SpatialRef::from_epsg(4326).unwrap();
    let plain = |name: &str, colour: (i16, i16, i16), west: f64| {
        one_band::<u8>(
            dir.path(),
            name,
            (200, 200),
            ([west, 0.005, 0.0, 51.0, 0.0, -0.005], &wgs84),
            |_, _| 0,
            None,
            Some(&[colour]),
        )
    };
    let job = ingest(
        &app,
        &owner,
        "red.tif",
        plain("red.tif", (200, 0, 0), 5.0),
        &[("visibility", "public")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let before = app.dataset(&owner, &id).await;
    let old_object: String = sqlx::query_scalar("SELECT raster_object FROM datasets WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(app.pool())
        .await
        .unwrap();
    let (_, signed) = app.get_json(Some(&owner), &format!("/api/tiles/token/{id}")).await;
    let template = signed["tile_url"].as_str().unwrap().replace(&app.url(""), "");
    let (x, y) = tile_at(5.5, 50.5, 8);
    let tile_path = template.replace("{z}/{x}/{y}", &format!("8/{x}/{y}"));
    let colour_of = |pixels: Vec<[u8; 4]>| {
        assert!(pixels.len() > 1000, "{}", pixels.len());
        pixels[0]
    };
    assert_eq!(colour_of(opaque_pixels(&app, &tile_path).await), [200, 0, 0, 255]);
    let etag = get(&app, None, &tile_path).await.headers()["etag"].clone();

    let reupload = |name: &str, bytes: Vec<u8>, fields: Vec<(&'static str, &'static str)>| {
        let name = name.to_string();
        let app = &app;
        let (owner, id) = (&owner, &id);
        async move {
            app.post_file(&format!("/api/datasets/{id}/reupload"), owner, &name, bytes, &fields)
                .await
        }
    };
    // Refused at once: a preview (no rows to compare), a strict_cog clash.
    let refused = reupload(
        "blue.tif",
        plain("blue.tif", (0, 0, 200), 5.2),
        vec![("preview", "true")],
    )
    .await;
    assert_eq!(refused.status(), 422);
    let refused = reupload(
        "blue.tif",
        plain("blue.tif", (0, 0, 200), 5.2),
        vec![("strict_cog", "true"), ("compression", "zstd")],
    )
    .await;
    assert_eq!(refused.status(), 422);

    // A new GeoTIFF replaces the file: same id and links, new extent, new
    // pixels (the cached tile is not served again), the old file gone.
    let accepted = reupload(
        "blue.tif",
        plain("blue.tif", (0, 0, 200), 5.2),
        vec![("compression", "zstd")],
    )
    .await;
    assert_eq!(accepted.status(), 202);
    let accepted: Value = accepted.json().await.unwrap();
    let job = app.wait_job(&owner, accepted["job_id"].as_str().unwrap()).await;
    assert_eq!(
        (job["kind"].as_str(), job["status"].as_str()),
        (Some("reupload"), Some("succeeded")),
        "{job}"
    );
    assert_eq!(job["dataset_id"], id.as_str());
    let after = app.dataset(&owner, &id).await;
    assert_eq!(after["publication_version"], before["publication_version"]);
    assert_eq!(after["source_filename"], "blue.tif");
    assert!(
        (after["extent_bbox"][0].as_f64().unwrap() - 5.2).abs() < 1e-6,
        "{after}"
    );
    let response = get(&app, None, &tile_path).await;
    assert_ne!(response.headers()["etag"], etag);
    let (_, pixels) = decode(&response.bytes().await.unwrap());
    let opaque: Vec<_> = pixels.into_iter().filter(|p| p[3] == 255).collect();
    assert_eq!(colour_of(opaque), [0, 0, 200, 255]);
    assert!(!app.storage_dir().join(&old_object).exists(), "the old file is removed");

    // Features are not a raster: the job fails and the raster stays.
    let accepted = reupload("points.geojson", data_file("geojson/cycle_hire_osm.geojson"), vec![]).await;
    let accepted: Value = accepted.json().await.unwrap();
    let job = app.wait_job(&owner, accepted["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]["detail"].as_str().unwrap().contains("takes a GeoTIFF"),
        "{job}"
    );
    assert_eq!(colour_of(opaque_pixels(&app, &tile_path).await), [0, 0, 200, 255]);
}

#[tokio::test]
async fn a_conversion_shows_its_overviews_then_its_full_image() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    let large = one_band::<u8>(
        dir.path(),
        "large.tif",
        (6000, 6000),
        (
            [5.0, 0.0001, 0.0, 51.0, 0.0, -0.0001],
            &SpatialRef::from_epsg(4326).unwrap(),
        ),
        |x, y| ((x * 7 + y * 13) % 251) as u8,
        None,
        None,
    );
    let job = app
        .upload_ok(&token, "large.tif", large, &[("resampling", "cubic")])
        .await;
    // The steps as the job's record holds them, read every 2 ms; a client
    // reads the same fields (checked below). The conversion's two steps
    // take seconds and are always seen; the publishing step after them
    // takes milliseconds, which a busy machine may pass between two reads,
    // so it is held only to its place when seen.
    let job_id: uuid::Uuid = job.parse().unwrap();
    let mut seen: Vec<(String, Option<i64>)> = Vec::new();
    let mut seen_by_client: Vec<Value> = Vec::new();
    for read in 0.. {
        if read % 25 == 0 {
            seen_by_client.push(app.job(&token, &job).await);
        }
        let (status, step, done): (String, Option<String>, Option<i64>) =
            sqlx::query_as("SELECT status, step, progress_done FROM jobs WHERE id = $1")
                .bind(job_id)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        if ["succeeded", "failed", "cancelled"].contains(&status.as_str()) {
            break;
        }
        if let Some(step) = step
            && seen.last().is_none_or(|(s, d)| *s != step || *d != done)
        {
            seen.push((step, done));
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let finished = app.job(&token, &job).await;
    assert!(
        seen_by_client.iter().any(|j| {
            matches!(j["step"].as_str(), Some("overviews" | "converting")) && j["progress"]["done"].is_i64()
        }),
        "a client polling the job sees the conversion's step and percent: {seen_by_client:?}"
    );
    assert_eq!(finished["status"], "succeeded", "{finished}");
    let steps: Vec<&str> = seen.iter().map(|(s, _)| s.as_str()).collect();
    let first = |name: &str| steps.iter().position(|s| *s == name);
    let (Some(overviews), Some(converting)) = (first("overviews"), first("converting")) else {
        panic!("the conversion's steps were not seen: {seen:?}");
    };
    assert!(overviews < converting, "{seen:?}");
    assert!(first("publishing").is_none_or(|p| p > converting), "{seen:?}");
    // Percentages rise through the conversion and stay within 0 to 100.
    let percents: Vec<i64> = seen
        .iter()
        .filter(|(s, _)| s == "overviews" || s == "converting")
        .filter_map(|(_, d)| *d)
        .collect();
    assert!(percents.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(percents.iter().all(|p| (0..=100).contains(p)), "{seen:?}");
    let record = app.dataset(&token, finished["dataset_id"].as_str().unwrap()).await;
    assert!(record["raster"]["overview_count"].as_u64().unwrap() >= 3, "{record}");
}

#[tokio::test]
async fn a_crs_without_an_epsg_code_is_null_everywhere_and_given_as_wkt() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    // The DEM reprojected to a transverse Mercator that no EPSG code names.
    let custom = dir.path().join("tmerc.tif");
    let status = std::process::Command::new("gdalwarp")
        .args([
            "-q",
            "-t_srs",
            "+proj=tmerc +lat_0=0 +lon_0=6 +k=1 +x_0=0 +y_0=0 +ellps=GRS80 +units=m",
        ])
        .arg(catalog_tests::data_dir().join("raster/elev_luxembourg.tif"))
        .arg(&custom)
        .status()
        .unwrap();
    assert!(status.success());
    let job = ingest(&app, &token, "tmerc.tif", std::fs::read(&custom).unwrap(), &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let record = app.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert!(
        record["srid"].is_null() && record["raster"]["srid"].is_null(),
        "no EPSG code, in both places: {record}"
    );
    let wkt = record["raster"]["crs_wkt"].as_str().unwrap_or_default();
    assert!(
        wkt.contains("Transverse Mercator") && wkt.contains("GRS") && wkt.contains("6"),
        "the CRS itself: {record}"
    );
    let extent: Vec<f64> = serde_json::from_value(record["extent_bbox"].clone()).unwrap();
    assert!(
        (extent[0] - 5.74).abs() < 0.05 && (extent[3] - 50.19).abs() < 0.05,
        "{extent:?}"
    );

    // A CRS with an EPSG code says it the same way in both places, and
    // the code is all that is needed.
    let job = ingest(
        &app,
        &token,
        "elev_luxembourg.tif",
        data_file("raster/elev_luxembourg.tif"),
        &[],
    )
    .await;
    let record = app.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(
        (&record["srid"], &record["raster"]["srid"]),
        (&4326.into(), &4326.into()),
        "{record}"
    );
    assert!(record["raster"]["crs_wkt"].is_null(), "{record}");

    // The document says the record's srid may be null.
    let (_, document) = app.get_json(None, "/api/openapi.json").await;
    let srid = &document["components"]["schemas"]["Dataset"]["properties"]["srid"];
    assert!(
        srid["type"].as_array().is_some_and(|t| t.contains(&"null".into())),
        "{srid}"
    );
}

#[tokio::test]
async fn the_upload_forms_name_geotiffs() {
    let app = App::start().await;
    let (status, document) = app.get_json(None, "/api/openapi.json").await;
    assert_eq!(status, 200);
    for form in ["UploadForm", "ReuploadForm"] {
        let file = &document["components"]["schemas"][form]["properties"]["file"]["description"];
        let file = file.as_str().unwrap_or_default();
        assert!(
            file.contains(".tif") && file.contains(".tiff") && file.contains(".gpkg"),
            "{form}: {file}"
        );
    }
}

/// A multi-band raster that is not an RGB(A) image (two bands; five
/// bytes, as a multispectral scene) shows band 1 by default, in grey.
#[tokio::test]
async fn multi_band_rasters_show_band_one_by_default() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    let placed = Some([6.0, 0.001, 0.0, 50.0, 0.0, -0.001]);
    for bands in [2, 5] {
        let name = format!("bands_{bands}.tif");
        let file = geotiff(dir.path(), &name, (300, 300, bands), placed, Some(4326), &[]);
        let job = ingest(&app, &token, &name, file, &[("visibility", "public")]).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        let id = job["dataset_id"].as_str().unwrap();
        let raster = app.dataset(&token, id).await["raster"].clone();
        assert_eq!(raster["band_count"], bands);
        let tile = format!("/api/tiles/{id}/10/529/347.png");
        let default = png(&app, &tile).await;
        let (_, pixels) = decode(&default);
        assert!(pixels.iter().filter(|p| p[3] == 255).count() > 1000);
        assert!(
            pixels
                .iter()
                .filter(|p| p[3] == 255)
                .all(|p| p[0] == p[1] && p[1] == p[2]),
            "{bands} bands: one band, in grey: {raster}"
        );
        assert_eq!(
            default,
            png(&app, &format!("{tile}?bidx=1")).await,
            "{bands} bands: band 1"
        );
    }
}

/// A PNG tile fetched anonymously.
async fn png(app: &App, path: &str) -> Vec<u8> {
    let response = get(app, None, path).await;
    assert_eq!(response.status(), 200, "{path}");
    response.bytes().await.unwrap().to_vec()
}

/// A malformed `rescale` (not two numbers, a non-number, NaN or infinity,
/// min not below max) or `bidx` list is a 400 problem naming the
/// parameter, never a tile; a well-formed `rescale` stretches the pixels.
#[tokio::test]
async fn malformed_band_lists_are_refused() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let dir = tempfile::tempdir().unwrap();
    let placed = Some([6.0, 0.001, 0.0, 50.0, 0.0, -0.001]);
    let file = geotiff(dir.path(), "rgb.tif", (300, 300, 3), placed, Some(4326), &[]);
    let job = ingest(&app, &token, "rgb.tif", file, &[("visibility", "public")]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap();
    let tile = format!("/api/tiles/{id}/10/529/347.png");
    // Well-formed stretches are applied: 0,255 is a Byte band's own range
    // (the bands' values as they are), and -150,200 maps each value v to
    // (v + 150) / 350 of the full scale, so the same tile's pixels differ.
    let (size, own) = decode(&png(&app, &format!("{tile}?rescale=0,255")).await);
    let (stretched_size, stretched) = decode(&png(&app, &format!("{tile}?rescale=-1.5e2, 2e2")).await);
    assert_eq!((size, stretched_size), (256, 256));
    assert!(
        own == decode(&png(&app, &tile).await).1,
        "0,255 is a Byte band's default"
    );
    let opaque: Vec<([u8; 4], [u8; 4])> = own
        .iter()
        .zip(&stretched)
        .filter(|(a, _)| a[3] == 255)
        .map(|(a, b)| (*a, *b))
        .collect();
    assert!(opaque.len() > 1000, "{} opaque pixels", opaque.len());
    assert!(
        own != stretched,
        "the tile rescaled -150,200 is the tile rescaled 0,255"
    );
    for (a, b) in &opaque {
        let expected = a.map(|v| ((f64::from(v) + 150.0) / 350.0 * 255.0).round().min(255.0) as u8);
        assert_eq!(b[3], 255, "{a:?} -> {b:?}");
        assert!(
            (0..3).all(|c| b[c].abs_diff(expected[c]) <= 1),
            "{a:?} rescaled -150,200 is {b:?}, not {expected:?}"
        );
    }
    for (parameter, value) in [
        ("rescale", "0,abc,255"),
        ("rescale", "0,255,"),
        ("rescale", ",0,255"),
        ("rescale", "0,,255"),
        ("rescale", "0"),
        ("rescale", "0,1,2"),
        ("rescale", ""),
        ("rescale", "abc,255"),
        ("rescale", "NaN,255"),
        ("rescale", "0,inf"),
        ("rescale", "-infinity,0"),
        ("rescale", "255,0"),
        ("rescale", "7,7"),
        ("bidx", "1,abc,2"),
        ("bidx", "1,,2"),
        ("bidx", "1,2"),
        ("bidx", ""),
    ] {
        let response = get(&app, None, &format!("{tile}?{parameter}={value}")).await;
        assert_eq!(response.status(), 400, "{parameter}={value}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{parameter}={value}"
        );
        let problem: Value = response.json().await.unwrap();
        assert!(
            problem["detail"].as_str().unwrap().contains(parameter),
            "{parameter}={value}: {problem}"
        );
    }
}

/// A rendering chosen once (band, stretch, colour map) travels in the tile
/// template: TileJSON takes it, checked as tiles check it, and a map layer's
/// rendering goes into its exported style; the tiles then come coloured.
#[tokio::test]
async fn a_rendering_travels_in_tilejson_and_map_styles() {
    let app = App::start_with_worker().await;
    let token = app.admin_token().await;
    let id = public_dem(&app, &token).await;
    let tilejson: Value = get(
        &app,
        None,
        &format!("/api/tiles/{id}/tilejson.json?colormap=terrain&rescale=200,550"),
    )
    .await
    .json()
    .await
    .unwrap();
    let template = tilejson["tiles"][0].as_str().unwrap().to_string();
    assert!(
        template.ends_with("/{z}/{x}/{y}.png?v=1&rescale=200%2C550&colormap=terrain"),
        "{template}"
    );
    let coloured = template.replace("{z}/{x}/{y}", "10/529/347");
    let painted = png(&app, coloured.trim_start_matches(app.base())).await;
    let grey = png(&app, &format!("/api/tiles/{id}/10/529/347.png")).await;
    let colourful = |bytes: &[u8]| {
        let (_, pixels) = decode(bytes);
        pixels
            .iter()
            .filter(|p| p[3] > 0 && p[0].max(p[1]).max(p[2]) - p[0].min(p[1]).min(p[2]) > 40)
            .count()
    };
    assert!(colourful(&painted) > 1000, "the colour map paints the tile");
    assert_eq!(colourful(&grey), 0, "the default is grey");
    for bad in ["colormap=rainbow", "rescale=5,1", "bidx=2"] {
        let response = get(&app, None, &format!("/api/tiles/{id}/tilejson.json?{bad}")).await;
        assert_eq!(response.status(), 400, "{bad}");
    }
    let vector = app
        .ingest_geojson(
            &token,
            &json!({"type": "FeatureCollection", "features": [
                {"type": "Feature", "geometry": {"type": "Point", "coordinates": [6, 49.6]}, "properties": {}}]}),
            &[("visibility", "public")],
        )
        .await;
    let response = get(
        &app,
        None,
        &format!("/api/tiles/{vector}/tilejson.json?colormap=terrain"),
    )
    .await;
    assert_eq!(response.status(), 400, "vector tiles take no raster rendering");

    // A map layer's rendering is in its exported style.
    let map: Value = app
        .send(app.http().post(app.url("/api/maps")).bearer_auth(&token).json(&json!({
            "name": "Relief", "layers": [{"dataset_id": id, "style_config": {"mode": "raster", "colormap": "terrain", "rescale": [200, 550]}}]})))
        .await
        .json()
        .await
        .unwrap();
    let (status, style) = app
        .get_json(
            Some(&token),
            &format!("/api/maps/{}/style.json", map["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(status, 200, "{style}");
    let source = &style["sources"][format!("dataset-{id}-raster")];
    let tiles = source["tiles"][0].as_str().unwrap();
    assert!(tiles.contains("rescale=200%2C550&colormap=terrain"), "{tiles}");
}
