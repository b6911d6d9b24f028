#!/usr/bin/env python3
"""Checks that our tiles and titiler's show the same pixels before they are
timed. Usage: compare_tiles.py OURS_BASE OURS_PATHS THEIRS_BASE THEIRS_PATHS
rgb|terrain. Prints the share of comparable pixels that agree; exits 1 when
fewer than 90% do or when either side has no data."""
import sys
import urllib.request

import numpy as np
from rasterio.io import MemoryFile

ours_base, ours_file, theirs_base, theirs_file, kind = sys.argv[1:6]
ours_paths = open(ours_file).read().split()
theirs_paths = open(theirs_file).read().split()


def pixels(url):
    with urllib.request.urlopen(url) as response:
        if response.status == 204:
            return None
        data = response.read()
    with MemoryFile(data) as f, f.open() as ds:
        bands = ds.read()
    if bands.shape[0] in (2, 4):
        return bands[:-1].astype(np.float64), bands[-1] > 0
    return bands.astype(np.float64), np.ones(bands.shape[1:], bool)


def heights(rgb):
    return -10_000 + (rgb[0] * 65_536 + rgb[1] * 256 + rgb[2]) * 0.1


agree = total = 0
for ours_path, theirs_path in list(zip(ours_paths, theirs_paths))[:25]:
    ours = pixels(ours_base + ours_path)
    theirs = pixels(theirs_base + theirs_path)
    if ours is None or theirs is None:
        continue
    (a, a_mask), (b, b_mask) = ours, theirs
    if kind == "terrain":
        a_h, b_h = heights(a), heights(b)
        both = a_mask & b_mask & (a_h != 0)
        close = np.abs(a_h - b_h) <= 5
    else:
        both = a_mask & b_mask
        close = np.max(np.abs(a - b), axis=0) <= 8
    agree += int((close & both).sum())
    total += int(both.sum())
share = agree / total if total else 0
print(f"{share:.3f}")
sys.exit(0 if share >= 0.9 else 1)
