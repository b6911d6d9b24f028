#!/usr/bin/env python3
"""Drives bench/rehydrate.sh: loads the points, archives the dataset,
reads it (which queues the rehydrate job), and prints the job's time beside
ogr2ogr's."""
import sys

from driver_common import Service

base, gpkg, database_url, ogr_seconds, points = sys.argv[1:6]
ogr_seconds = float(ogr_seconds)
service = Service(base, database_url).sign_in()
dataset = service.job(service.upload(gpkg))["dataset_id"]
service.job(service.call("POST", f"/api/datasets/{dataset}/archive", data=b"")[2]["job_id"])
status, _, body = service.call("GET", f"/api/collections/{dataset}/items?limit=1")
assert status == 202, status
job = service.job(body["job_id"])
seconds = service.job_seconds(job["id"])
status, _, page = service.call("GET", f"/api/collections/{dataset}/items?limit=1")
assert status == 200 and page["numberMatched"] == int(points), (status, page.get("numberMatched"))
print()
print(f"points:                  {int(points):,}")
print(f"rehydrate job:           {seconds:.2f} s")
print(f"ogr2ogr -f PostgreSQL:   {ogr_seconds:.2f} s")
ratio = seconds / ogr_seconds
print(f"ratio:                   {ratio:.2f} (goal at most 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")
