#!/usr/bin/env python3
"""Drives bench/history.sh: loads the points, makes 100 single-feature
edits with If-Match, measures what the history added, restores version 1
and compares the restore job's time with the ingest job's."""
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

base, gpkg, database_url, points = sys.argv[1:5]


def call(method, path, token=None, data=None, headers=None):
    req = urllib.request.Request(base + path, method=method, data=data, headers=headers or {})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as r:
        return r.status, dict(r.headers), json.loads(r.read() or b"null")


def psql(sql):
    return subprocess.run(["psql", database_url, "-tAc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


for _ in range(200):
    try:
        call("GET", "/api/health")
        break
    except Exception:
        time.sleep(0.1)
form = urllib.parse.urlencode({"username": "admin", "password": "Bench-Password-1"}).encode()
token = call("POST", "/api/auth/login", data=form,
             headers={"Content-Type": "application/x-www-form-urlencoded"})[2]["access_token"]


def wait(job_id):
    while True:
        job = call("GET", f"/api/jobs/{job_id}", token)[2]
        if job["status"] in ("succeeded", "failed", "cancelled"):
            if job["status"] != "succeeded":
                sys.exit(f"job {job_id} {job['status']}: {job.get('error')}")
            return job


def job_seconds(job_id):
    return float(psql(f"SELECT extract(epoch FROM finished_at - started_at) FROM jobs WHERE id = '{job_id}'"))


out = subprocess.run(
    ["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{gpkg}", base + "/api/datasets/upload"],
    check=True, capture_output=True, text=True)
ingest = wait(json.loads(out.stdout)["job_id"])
dataset = ingest["dataset_id"]
ingest_seconds = job_seconds(ingest["id"])

history_bytes = ("SELECT coalesce(sum(pg_total_relation_size(c)), 0) FROM unnest(ARRAY["
                 "'feature_changes'::regclass, 'feature_changes_pkey'::regclass, "
                 "'feature_changes_by_version'::regclass, 'dataset_versions'::regclass, "
                 "'dataset_versions_pkey'::regclass]) AS c")
before = int(psql(history_bytes))
items = f"/api/collections/{dataset}/items"
started = time.time()
for i in range(100):
    fid = 1 + i * 9973
    _, headers, _ = call("GET", f"{items}/{fid}", token)
    body = json.dumps({"properties": {"name": f"edited {i}"}}).encode()
    call("PATCH", f"{items}/{fid}", token, data=body,
         headers={"If-Match": headers["etag"], "Content-Type": "application/merge-patch+json"})
edits_seconds = time.time() - started
psql("VACUUM ANALYZE feature_changes, dataset_versions")
added = int(psql(history_bytes)) - before

status, _, body = call("POST", f"/api/datasets/{dataset}/versions/1/restore", token, data=b"")
assert status == 202, status
restore = wait(body["job_id"])
restore_seconds = job_seconds(restore["id"])
_, _, page = call("GET", f"{items}?limit=1", token)
assert page["numberMatched"] == int(points), page.get("numberMatched")
_, _, diff = call("GET", f"/api/datasets/{dataset}/versions/1/diff/{102}?limit=10", token)
assert not (diff["added"] or diff["removed"] or diff["changed"]), "the restore is version 1 exactly"

print()
print(f"points:                      {int(points):,}")
print(f"100 single-feature edits:    {edits_seconds:.2f} s ({edits_seconds * 10:.1f} ms each, read and write)")
print(f"history added by 100 edits:  {added / 1e6:.2f} MB (goal under 5 MB: {'met' if added < 5e6 else 'NOT met'})")
print(f"ingest job:                  {ingest_seconds:.2f} s")
print(f"restore job (version 1):     {restore_seconds:.2f} s")
ratio = restore_seconds / ingest_seconds
print(f"ratio:                       {ratio:.2f} (goal at most 1: {'met' if ratio <= 1 else 'NOT met'})")
