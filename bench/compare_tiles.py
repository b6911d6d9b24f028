#!/usr/bin/env python3
"""Checks that our tiles and titiler's show the same picture before they are
timed. Usage: compare_tiles.py OURS_BASE OURS_PATHS THEIRS_BASE THEIRS_PATHS
rgb|terrain. Over the first 25 tiles of the lists, where both draw data:
the mean absolute difference (colour levels 0-255, or metres of height for
terrain) and the share of pixels both agree are data or empty. Prints
"<mean difference>/<mask agreement>"; exits 1 when the pictures differ (the
two servers may sample a pixel apart, so single pixels of a noisy image
can differ while the tile is the same)."""
import sys
import urllib.error
import urllib.request

import numpy as np
from rasterio.io import MemoryFile

ours_base, ours_file, theirs_base, theirs_file, kind = sys.argv[1:6]
ours_paths = open(ours_file).read().split()
theirs_paths = open(theirs_file).read().split()


def pixels(url):
    """A tile's colour bands and data mask; None for an empty tile (our
    204, titiler's 404 outside the data)."""
    try:
        with urllib.request.urlopen(url) as response:
            if response.status == 204:
                return None
            data = response.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    with MemoryFile(data) as f, f.open() as ds:
        bands = ds.read()
    if bands.shape[0] in (2, 4):
        return bands[:-1].astype(np.float64), bands[-1] > 0
    return bands.astype(np.float64), np.ones(bands.shape[1:], bool)


def heights(rgb):
    return -10_000 + (rgb[0] * 65_536 + rgb[1] * 256 + rgb[2]) * 0.1


difference = both_count = same_mask = total = 0.0
for ours_path, theirs_path in list(zip(ours_paths, theirs_paths))[:25]:
    ours = pixels(ours_base + ours_path)
    theirs = pixels(theirs_base + theirs_path)
    if ours is None or theirs is None:
        continue
    (a, a_mask), (b, b_mask) = ours, theirs
    if kind == "terrain":
        a_h, b_h = heights(a), heights(b)
        # Our terrain draws no data as 0 m; titiler leaves it transparent.
        a_mask = a_mask & (a_h != 0)
        both = a_mask & b_mask
        difference += np.abs(a_h - b_h)[both].sum()
    else:
        both = a_mask & b_mask
        difference += np.abs(a - b).mean(axis=0)[both].sum()
    both_count += both.sum()
    same_mask += (a_mask == b_mask).sum()
    total += a_mask.size
mean = difference / both_count if both_count else float("inf")
agreement = same_mask / total if total else 0
print(f"{mean:.1f}/{agreement:.2f}")
limit = 10 if kind == "terrain" else 12
sys.exit(0 if mean <= limit and agreement >= 0.95 else 1)
