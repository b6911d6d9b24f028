#!/usr/bin/env python3
"""Writes a deterministic CSV of N points with six attributes (seeded); with
a third argument `bad`, every hundredth point has a latitude no place has
(95), for the ingest report's cost; with `sorted`, the points come in order
of longitude (each in its own sliver of 360/N degrees), the storage order
in which a first-N cut of a tile leaves whole bands of the world empty."""
import random
import sys

n = int(sys.argv[1])
out = sys.argv[2]
bad = sys.argv[3:] == ["bad"]
by_longitude = sys.argv[3:] == ["sorted"]
rng = random.Random(42)
categories = ["residential", "commercial", "industrial", "park", "water", "road"]
with open(out, "w") as f:
    f.write("id,lon,lat,name,category,value,count,observed\n")
    for i in range(n):
        lon = -180 + 360 * (i + rng.random()) / n if by_longitude else rng.uniform(-180, 180)
        lat = rng.uniform(-85, 85)
        if bad and i % 100 == 99:
            lat = 95.0
        f.write(
            f"{i},{lon:.6f},{lat:.6f},point {i},{categories[i % 6]},{rng.random() * 1000:.3f},"
            f"{rng.randint(0, 10000)},2024-{1 + i % 12:02d}-{1 + i % 28:02d}\n"
        )
