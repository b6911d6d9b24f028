#!/usr/bin/env python3
"""Uploads a file as a public dataset and prints its collection id and table.

Usage: load_public.py BASE FILE DATABASE_URL [FIELD=VALUE ...] (more form fields)."""
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

base, path, _database_url = sys.argv[1:4]
extra = [arg for field in sys.argv[4:] for arg in ("-F", field)]
for _ in range(200):
    try:
        urllib.request.urlopen(base + "/api/health")
        break
    except Exception:
        time.sleep(0.1)
form = urllib.parse.urlencode({"username": "admin", "password": "Bench-Password-1"}).encode()
req = urllib.request.Request(base + "/api/auth/login", data=form,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
token = json.load(urllib.request.urlopen(req))["access_token"]
out = subprocess.run(["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{path}",
                      "-F", "visibility=public", *extra, base + "/api/datasets/upload"],
                     check=True, capture_output=True, text=True)
job_id = json.loads(out.stdout)["job_id"]
while True:
    req = urllib.request.Request(f"{base}/api/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"})
    job = json.load(urllib.request.urlopen(req))
    if job["status"] in ("succeeded", "failed", "cancelled"):
        break
    time.sleep(0.2)
assert job["status"] == "succeeded", job
req = urllib.request.Request(f"{base}/api/datasets/{job['dataset_id']}", headers={"Authorization": f"Bearer {token}"})
dataset = json.load(urllib.request.urlopen(req))
print(dataset["id"], dataset["table_name"])
