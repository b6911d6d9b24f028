//! Raster datasets: GeoTIFFs (the real DEM, and files GDAL makes here:
//! RGB in UTM, stripped, rotated, unplaced, truncated) are checked,
//! stored as Cloud-Optimized GeoTIFFs, described in the record, and
//! served as Web Mercator image tiles with TileJSON and signed templates.
use std::path::Path;

use catalog_tests::{Api, Stack, StackOptions, data_file};
use gdal::{DriverManager, raster::Buffer, spatial_ref::SpatialRef, vsi};
use serde_json::Value;

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

/// A PNG's size and its pixels' alpha values.
fn decode(png: &[u8]) -> (usize, Vec<[u8; 4]>) {
    let path = format!("/vsimem/decoded-{}.png", uuid::Uuid::new_v4());
    vsi::create_mem_file(&path, png.to_vec()).unwrap();
    let ds = gdal::Dataset::open(&path).unwrap();
    let (size, _) = ds.raster_size();
    let bands: Vec<Vec<u8>> = (1..=ds.raster_count())
        .map(|b| {
            let band = ds.rasterband(b).unwrap();
            band.read_as::<u8>((0, 0), (size, size), (size, size), None)
                .unwrap()
                .into_shape_and_vec()
                .1
        })
        .collect();
    drop(ds);
    vsi::unlink_mem_file(&path).unwrap();
    let pixels = (0..size * size)
        .map(|i| {
            [
                bands[0][i],
                bands[1][i],
                bands[2][i],
                bands.get(3).map_or(255, |a| a[i]),
            ]
        })
        .collect();
    (size, pixels)
}

async fn get(stack: &Stack, token: Option<&str>, path: &str) -> reqwest::Response {
    let mut request = stack.http.get(stack.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    stack.send(request).await
}

async fn ingest(stack: &Stack, token: &str, name: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> Value {
    let job = stack.upload_ok(token, name, bytes, fields).await;
    stack.wait_job(token, &job).await
}

#[tokio::test]
async fn a_geotiff_becomes_a_raster_dataset_served_as_tiles() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let dem = data_file("raster/elev_luxembourg.tif");
    let job = ingest(&stack, &token, "elev_luxembourg.tif", dem, &[("visibility", "public")]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap().to_string();
    let record = stack.dataset(&token, &id).await;
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
        get(&stack, Some(&token), &format!("/api/collections/{id}/items"))
            .await
            .status(),
        422
    );
    assert_eq!(
        get(&stack, Some(&token), &format!("/api/collections/{id}"))
            .await
            .status(),
        404
    );
    assert_eq!(
        get(&stack, Some(&token), &format!("/api/tiles/{id}/8/132/86.pbf"))
            .await
            .status(),
        422
    );

    // A tile over Luxembourg: data opaque, the rest of the tile transparent.
    let tile = get(&stack, None, &format!("/api/tiles/{id}/8/132/86.png")).await;
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
    let coloured = get(
        &stack,
        None,
        &format!("/api/tiles/{id}/8/132/86@2x.png?colormap=viridis"),
    )
    .await;
    assert_eq!(coloured.status(), 200);
    let (size, pixels) = decode(&coloured.bytes().await.unwrap());
    assert_eq!(size, 512);
    assert!(
        pixels.iter().any(|p| p[3] == 255 && p[0] != p[2]),
        "viridis is not grey"
    );
    for format in ["webp", "jpg"] {
        let other = get(&stack, None, &format!("/api/tiles/{id}/8/132/86.{format}")).await;
        assert_eq!(other.status(), 200, "{format}");
        let expected = if format == "jpg" { "image/jpeg" } else { "image/webp" };
        assert_eq!(other.headers()["content-type"], expected);
    }
    // Wholly outside the data: nothing to draw.
    assert_eq!(
        get(&stack, None, &format!("/api/tiles/{id}/8/10/86.png"))
            .await
            .status(),
        204
    );
    for bad in [
        "bidx=2",
        "bidx=1,1",
        "rescale=5",
        "colormap=rainbow",
        "resampling=lanczos",
    ] {
        let refused = get(&stack, None, &format!("/api/tiles/{id}/8/132/86.png?{bad}")).await;
        assert_eq!(refused.status(), 400, "{bad}");
    }

    let tilejson: Value = get(&stack, None, &format!("/api/tiles/{id}/tilejson.json"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        tilejson["tiles"][0].as_str().unwrap().ends_with("/{z}/{x}/{y}.png"),
        "{tilejson}"
    );
    assert_eq!(tilejson["format"], "png");
    let maxzoom = tilejson["maxzoom"].as_u64().unwrap();
    assert!((6..=12).contains(&maxzoom), "about 1 km pixels: {maxzoom}");
    let (status, signed) = stack.get_json(Some(&token), &format!("/api/tiles/token/{id}")).await;
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
        .replace(&stack.url(""), "");
    let terrain = get(&stack, None, &terrain_path).await;
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
        &stack,
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
        get(&stack, None, &format!("/api/tiles/{id}/terrain/8/10/86.png"))
            .await
            .status(),
        204
    );
}

#[tokio::test]
async fn strict_cog_keeps_valid_files_byte_for_byte_and_refuses_the_rest() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
    let dir = tempfile::tempdir().unwrap();

    let clash = stack
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
        &stack,
        &token,
        "dem_cog.tif",
        cog_bytes.clone(),
        &[("strict_cog", "true")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let object: String = sqlx::query_scalar("SELECT raster_object FROM datasets WHERE id = $1::uuid")
        .bind(job["dataset_id"].as_str().unwrap())
        .fetch_one(stack.pool())
        .await
        .unwrap();
    let stored = std::fs::read(stack.storage_dir().join(&object)).unwrap();
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
    let job = ingest(&stack, &token, "strips.tif", strips.clone(), &[("strict_cog", "true")]).await;
    assert_eq!(job["status"], "failed", "{job}");
    let detail = job["error"]["detail"].as_str().unwrap();
    assert!(detail.contains("not tiled") && detail.contains("overviews"), "{detail}");
    // Without strict_cog the same file is converted.
    let job = ingest(&stack, &token, "strips.tif", strips, &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let record = stack.dataset(&token, job["dataset_id"].as_str().unwrap()).await;
    assert_eq!(record["raster"]["is_cog"], true);
    assert!(record["raster"]["overview_count"].as_u64().unwrap() >= 1, "{record}");
    assert_eq!(record["raster"]["srid"], 32632);
}

#[tokio::test]
async fn messy_rasters_fail_clearly_and_leave_nothing() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let token = stack.admin_token().await;
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
        let job = ingest(&stack, &token, name, bytes, &[]).await;
        assert_eq!(job["status"], "failed", "{name}: {job}");
        let detail = job["error"]["detail"].as_str().unwrap();
        assert!(detail.contains(expected), "{name}: {detail}");
    }
    assert_eq!(stack.dataset_count().await, 0);
    let rasters = stack.storage_dir().join("rasters");
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
    let job = ingest(&stack, &token, "bundle.zip", zipped, &[]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let mut kinds = Vec::new();
    for dataset in job["dataset_ids"].as_array().unwrap() {
        let record = stack.dataset(&token, dataset.as_str().unwrap()).await;
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
    let job = ingest(&stack, &token, "no_crs.tif", no_crs, &[("srid_override", "4326")]).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    // RGB: the tile shows the three bands.
    let job = ingest(
        &stack,
        &token,
        "whole.tif",
        whole,
        &[("visibility", "public"), ("compression", "zstd")],
    )
    .await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let id = job["dataset_id"].as_str().unwrap();
    let record = stack.dataset(&token, id).await;
    let interpretations: Vec<&str> = record["raster"]["bands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["color_interpretation"].as_str().unwrap())
        .collect();
    assert_eq!(interpretations, ["Red", "Green", "Blue"]);
    assert_eq!(
        get(&stack, None, &format!("/api/tiles/{id}/terrain/10/529/347.png"))
            .await
            .status(),
        422
    );
    let tile = get(&stack, None, &format!("/api/tiles/{id}/10/529/347.png")).await;
    assert_eq!(tile.status(), 200);
    let (_, pixels) = decode(&tile.bytes().await.unwrap());
    assert!(
        pixels.iter().any(|p| p[3] == 255 && p[0] != p[2]),
        "bands 1 and 3 differ"
    );
}
