#!/usr/bin/env python3
"""Drives bench/rehydrate.sh: loads the points, archives the dataset,
reads it (which queues the rehydrate job), and prints the job's time beside
ogr2ogr's."""
import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

base, gpkg, database_url, ogr_seconds, points = sys.argv[1:6]
ogr_seconds = float(ogr_seconds)


def call(method, path, token=None, data=None, headers=None):
    req = urllib.request.Request(base + path, method=method, data=data, headers=headers or {})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as r:
        return r.status, json.loads(r.read() or b"null")


for _ in range(200):
    try:
        call("GET", "/api/health")
        break
    except Exception:
        time.sleep(0.1)
form = urllib.parse.urlencode({"username": "admin", "password": "Bench-Password-1"}).encode()
token = call("POST", "/api/auth/login", data=form,
             headers={"Content-Type": "application/x-www-form-urlencoded"})[1]["access_token"]


def wait(job_id):
    while True:
        job = call("GET", f"/api/jobs/{job_id}", token)[1]
        if job["status"] in ("succeeded", "failed", "cancelled"):
            if job["status"] != "succeeded":
                sys.exit(f"job {job_id} {job['status']}: {job.get('error')}")
            return job
        time.sleep(0.05)


out = subprocess.run(
    ["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{gpkg}", base + "/api/datasets/upload"],
    check=True, capture_output=True, text=True)
dataset = wait(json.loads(out.stdout)["job_id"])["dataset_id"]
status, body = call("POST", f"/api/datasets/{dataset}/archive", token, data=b"")
wait(body["job_id"])
status, body = call("GET", f"/api/collections/{dataset}/items?limit=1", token)
assert status == 202, status
job = wait(body["job_id"])
rows = subprocess.run(
    ["psql", database_url, "-tAc",
     f"SELECT extract(epoch FROM finished_at - started_at), "
     f"(SELECT stored_bytes FROM datasets WHERE id = '{dataset}') FROM jobs WHERE id = '{job['id']}'"],
    check=True, capture_output=True, text=True).stdout.strip().split("|")
seconds = float(rows[0])
status, page = call("GET", f"/api/collections/{dataset}/items?limit=1", token)
assert status == 200 and page["numberMatched"] == int(points), (status, page.get("numberMatched"))
print()
print(f"points:                  {int(points):,}")
print(f"rehydrate job:           {seconds:.2f} s")
print(f"ogr2ogr -f PostgreSQL:   {ogr_seconds:.2f} s")
ratio = seconds / ogr_seconds
print(f"ratio:                   {ratio:.2f} (goal at most 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")
