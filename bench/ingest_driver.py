#!/usr/bin/env python3
"""Drives the running service for bench/ingest.sh and prints the figures."""
import json
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

base, gpkg, database_url, worker_pid, ogr_seconds, points = sys.argv[1:7]
ogr_seconds = float(ogr_seconds)


def call(method, path, token=None, data=None, headers=None):
    req = urllib.request.Request(base + path, method=method, data=data, headers=headers or {})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


for _ in range(200):
    try:
        call("GET", "/api/health")
        break
    except Exception:
        time.sleep(0.1)

form = urllib.parse.urlencode({"username": "admin", "password": "Bench-Password-1"}).encode()
token = call("POST", "/api/auth/login", data=form,
             headers={"Content-Type": "application/x-www-form-urlencoded"})["access_token"]


def upload(path):
    out = subprocess.run(
        ["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{path}", base + "/api/datasets/upload"],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["job_id"]


def wait(job_id):
    while True:
        job = call("GET", f"/api/jobs/{job_id}", token)
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.02)


start = time.monotonic()
job = wait(upload(gpkg))
service_seconds = time.monotonic() - start
assert job["status"] == "succeeded", job
dataset = call("GET", f"/api/datasets/{job['dataset_id']}", token)
assert dataset["feature_count"] == int(points), dataset

with open(f"/proc/{worker_pid}/status") as f:
    rss_mb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

# Pickup latency: tiny jobs, one at a time, on an idle system.
tiny = "/tmp/bench_tiny.geojson"
with open(tiny, "w") as f:
    json.dump({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [0, 0]}}]}, f)
ids = []
for _ in range(30):
    time.sleep(0.2)
    job_id = upload(tiny)
    wait(job_id)
    ids.append(job_id)
rows = subprocess.run(
    ["psql", database_url, "-tAc",
     "SELECT extract(epoch FROM started_at - created_at) * 1000 FROM jobs WHERE id = ANY('{%s}')" % ",".join(ids)],
    check=True, capture_output=True, text=True).stdout.split()
latencies = sorted(float(r) for r in rows)

print()
print(f"points:                       {int(points):,}")
print(f"service upload-to-queryable:  {service_seconds:.2f} s")
print(f"ogr2ogr -f PostgreSQL:        {ogr_seconds:.2f} s")
print(f"ratio service/ogr2ogr:        {service_seconds / ogr_seconds:.2f}  (target <= 0.5)")
print(f"worker peak RSS:              {rss_mb:.0f} MB  (target < 300)")
print(f"pickup latency median:        {statistics.median(latencies):.1f} ms  "
      f"(p90 {latencies[int(len(latencies) * 0.9) - 1]:.1f} ms, max {latencies[-1]:.1f} ms; target median < 50)")
