#!/usr/bin/env python3
"""Drives the running service for bench/ingest.sh and prints the figures."""
import json
import statistics
import sys
import time

from driver_common import Service

base, gpkg, database_url, worker_pid, ogr_seconds, points, bad_gpkg = sys.argv[1:8]
ogr_seconds = float(ogr_seconds)
service = Service(base, database_url).sign_in()

start = time.monotonic()
job = service.job(service.upload(gpkg))
service_seconds = time.monotonic() - start
dataset = service.get(f"/api/datasets/{job['dataset_id']}")
assert dataset["feature_count"] == int(points), dataset

# The same points with every hundredth off the world: quarantined and
# reported, the rest loaded.
start = time.monotonic()
bad_job = service.job(service.upload(bad_gpkg))
bad_seconds = time.monotonic() - start
bad = service.get(f"/api/datasets/{bad_job['dataset_id']}")
assert bad["quarantined_count"] == int(points) // 100, bad
assert bad["feature_count"] + bad["quarantined_count"] == int(points), bad

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
    job_id = service.upload(tiny)
    service.job(job_id)
    ids.append(job_id)
rows = service.psql(
    "SELECT extract(epoch FROM started_at - created_at) * 1000 FROM jobs WHERE id = ANY('{%s}')" % ",".join(ids)).split()
latencies = sorted(float(r) for r in rows)

print()
print(f"points:                       {int(points):,}")
print(f"service upload-to-queryable:  {service_seconds:.2f} s")
print(f"ogr2ogr -f PostgreSQL:        {ogr_seconds:.2f} s")
print(f"ratio service/ogr2ogr:        {service_seconds / ogr_seconds:.2f}  (target <= 0.5)")
print(f"1% of rows quarantined:       {bad_seconds:.2f} s, {bad_seconds / service_seconds:.2f}x the clean load  (target <= 1.25)")
print(f"worker peak RSS:              {rss_mb:.0f} MB  (target < 300)")
print(f"pickup latency median:        {statistics.median(latencies):.1f} ms  "
      f"(p90 {latencies[int(len(latencies) * 0.9) - 1]:.1f} ms, max {latencies[-1]:.1f} ms; target median < 50)")
