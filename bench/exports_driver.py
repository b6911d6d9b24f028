#!/usr/bin/env python3
"""Drives bench/exports.sh: each format's download, first and repeated,
beside ogr2ogr from PostGIS to the same format, and the API's memory.

Usage: exports_driver.py BASE COLLECTION TABLE PG_CONNINFO API_PID WORKDIR"""
import os
import shutil
import subprocess
import sys
import time

base, collection, table, conninfo, api_pid, work = sys.argv[1:7]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

# Our format names, GDAL's driver and its options as the service passes them.
FORMATS = [
    ("gpkg", "GPKG", ["-nlt", "POINT"]),
    ("geojson", "GeoJSON", ["-lco", "RFC7946=YES"]),
    ("csv", "CSV", ["-lco", "GEOMETRY=AS_WKT"]),
    ("shp", "ESRI Shapefile", ["-lco", "ENCODING=UTF-8"]),
    ("fgb", "FlatGeobuf", ["-nlt", "POINT"]),
    ("parquet", None, []),
]


def memory(field):
    """The API process's VmRSS or VmHWM, in MB."""
    with open(f"/proc/{api_pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise SystemExit(f"no {field} for the API process")


def reset_peak():
    """Sets VmHWM back to the current VmRSS (Linux's clear_refs 5)."""
    with open(f"/proc/{api_pid}/clear_refs", "w") as f:
        f.write("5")


def timed(command):
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def download(name, out):
    return timed(["curl", "-sf", "-o", out, f"{base}/api/datasets/{collection}/download?format={name}"])


rows = []
for name, driver, options in FORMATS:
    out = os.path.join(work, f"ours.{name}")
    reset_peak()
    rss_before = memory("VmRSS")
    first = download(name, out)
    size = os.path.getsize(out)
    repeat = download(name, out)
    growth = memory("VmHWM") - rss_before
    peer = None
    if driver:
        target = os.path.join(work, f"ogr2ogr.{name}")
        peer = timed(["ogr2ogr", "-f", driver, target, f"PG:{conninfo}", f"data.{table}", "-nln", "points", *options])
        if name == "shp":
            # The download is the shapefile's files zipped: so is the peer's.
            peer += timed(["zip", "-q", "-j", "-r", target + ".zip", target])
    rows.append((name, first, repeat, peer, size, growth))
    print(f"  {name}: first {first:.2f} s, repeat {repeat:.3f} s, ogr2ogr {peer if peer is None else round(peer, 2)} s, "
          f"memory +{growth:.0f} MB", file=sys.stderr)

print()
print("format    first (s)  repeat (s)  ogr2ogr (s)  first/ogr2ogr  size (MB)  API memory (MB)")
for name, first, repeat, peer, size, growth in rows:
    ratio = f"{first / peer:13.2f}" if peer else f"{'-':>13}"
    peer_text = f"{peer:11.2f}" if peer else f"{'-':>11}"
    print(f"{name:8}  {first:9.2f}  {repeat:10.3f}  {peer_text}  {ratio}  {size / 1e6:9.1f}  {growth:15.0f}")
print()
for name, first, repeat, peer, _, _ in rows:
    if peer:
        ratio = first / peer
        print(f"{name} first export / ogr2ogr: {ratio:.2f} (goal at most 1.2: {'met' if ratio <= 1.2 else 'NOT met'})")
    print(f"{name} repeat / first: {repeat / first:.3f} (goal: served from the store, at most 0.1: "
          f"{'met' if repeat <= 0.1 * first else 'NOT met'})")
geojson = next(first for name, first, *_ in rows if name == "geojson")
parquet = next(first for name, first, *_ in rows if name == "parquet")
print(f"parquet first / geojson first: {parquet / geojson:.2f} (goal at most 0.5: {'met' if parquet <= 0.5 * geojson else 'NOT met'})")
growth = max(row[5] for row in rows)
print(f"API memory growth, the most of one format: {growth:.0f} MB (goal under 100: {'met' if growth < 100 else 'NOT met'})")
