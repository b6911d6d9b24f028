#!/usr/bin/env python3
"""Writes the raster bench's Cloud-Optimized GeoTIFFs (seeded) and the tile
list of each: an RGB image in Web Mercator, a Float32 DEM in UTM (served as
terrain), and an RGB image in UTM (reprojected on the fly).

Usage: raster_cogs.py OUT_DIR. Writes OUT_DIR/<name>.tif and
OUT_DIR/<name>.tiles (one z/x/y a line, shuffled with a fixed seed)."""
import math
import os
import random
import sys

import numpy as np
import rasterio
from rasterio.crs import CRS
from rasterio.transform import from_origin
from rasterio.warp import transform_bounds

OUT = sys.argv[1]
SIZE = 4096
TILES_PER_IMAGE = 400
rng = np.random.default_rng(7)


def texture(size, scale):
    """Smooth hills with fine noise, 0..1."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    hills = (np.sin(x * scale) * np.cos(y * scale * 0.7) + np.sin((x + y) * scale * 2.3)) / 4 + 0.5
    return np.clip(hills + rng.normal(0, 0.03, (size, size)).astype(np.float32), 0, 1)


def write(name, data, crs, transform, nodata=None):
    path = os.path.join(OUT, f"{name}.tif")
    profile = dict(driver="COG", width=data.shape[2], height=data.shape[1], count=data.shape[0],
                   dtype=data.dtype, crs=crs, transform=transform, nodata=nodata,
                   compress="deflate", blocksize=512, overview_resampling="average")
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(data)
    return path


def tile_list(path, name):
    """Tiles from 3 zooms below the image's native zoom to the native one,
    all inside its extent, a fixed random sample of them."""
    with rasterio.open(path) as ds:
        west, south, east, north = transform_bounds(ds.crs, "EPSG:4326", *ds.bounds)
        res_m = max(abs(ds.transform.a), abs(ds.transform.e))
        if ds.crs.is_geographic:
            res_m *= 111_320
    native = round(math.log2(156_543.03 * math.cos(math.radians((south + north) / 2)) / res_m))
    tiles = []
    for z in range(native - 3, native + 1):
        n = 2 ** z
        x0, x1 = int((west + 180) / 360 * n), int((east + 180) / 360 * n)
        y_of = lambda lat: int((1 - math.asinh(math.tan(math.radians(lat))) / math.pi) / 2 * n)
        y0, y1 = y_of(north), y_of(south)
        tiles += [f"{z}/{x}/{y}" for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
    random.Random(11).shuffle(tiles)
    with open(os.path.join(OUT, f"{name}.tiles"), "w") as out:
        out.write("\n".join(tiles[:TILES_PER_IMAGE]) + "\n")


os.makedirs(OUT, exist_ok=True)

# RGB in Web Mercator, 20 m pixels over the Alps.
rgb = np.stack([texture(SIZE, s) for s in (9, 13, 17)])
path = write("rgb_mercator", (rgb * 255).astype(np.uint8), CRS.from_epsg(3857),
             from_origin(650_000, 5_900_000, 20, 20))
tile_list(path, "rgb_mercator")

# Float32 DEM in UTM 32N, 30 m pixels, with a nodata lake.
height = (texture(SIZE, 5) * 2500 + 200).astype(np.float32)
height[1800:2200, 1800:2300] = -9999
path = write("dem_utm", height[np.newaxis], CRS.from_epsg(32632),
             from_origin(300_000, 5_300_000, 30, 30), nodata=-9999)
tile_list(path, "dem_utm")

# RGB in UTM 33N, 15 m pixels: every tile is reprojected.
rgb = np.stack([texture(SIZE, s) for s in (7, 11, 19)])
path = write("rgb_utm", (rgb * 255).astype(np.uint8), CRS.from_epsg(32633),
             from_origin(400_000, 5_200_000, 15, 15))
tile_list(path, "rgb_utm")
