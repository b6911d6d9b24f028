#!/usr/bin/env python3
"""Drives bench/workers.sh: queues the same batch of URL imports for one
worker and then for two, times each batch from the workers' start to the
last job's success, and prints the speed-up."""
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

base, slow, worker_bin, jobs, work = sys.argv[1:6]
jobs = int(jobs)


def call(method, path, token=None, body=None, form=None):
    data, headers = None, {}
    if body is not None:
        data, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
    req = urllib.request.Request(base + path, method=method, data=data, headers=headers)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


for _ in range(600):
    try:
        call("GET", "/api/health")
        break
    except Exception:
        time.sleep(0.1)
else:
    sys.exit(f"the API at {base} did not answer /api/health within a minute")
token = call("POST", "/api/auth/login", form={"username": "admin", "password": "Bench-Password-1"})["access_token"]


def batch(workers, label):
    ids = [call("POST", "/api/datasets/import-url", token, {"url": f"{slow}/{label}-{i}.geojson"})["job_id"]
           for i in range(jobs)]
    start = time.monotonic()
    procs = [subprocess.Popen([worker_bin], stdout=open(f"{work}/{label}-worker{n}.log", "w"),
                              stderr=subprocess.STDOUT, env=os.environ) for n in range(workers)]
    pending = set(ids)
    while pending:
        for job_id in list(pending):
            status = call("GET", f"/api/jobs/{job_id}", token)["status"]
            if status == "succeeded":
                pending.discard(job_id)
            elif status in ("failed", "cancelled"):
                sys.exit(f"job {job_id} {status}")
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()
    return elapsed


one = batch(1, "one")
two = batch(2, "two")
print(f"{jobs} URL imports (each about 2 s of download), WORKER_CONCURRENCY={os.environ.get('WORKER_CONCURRENCY', 2)}")
print(f"1 worker:  {one:.2f} s")
print(f"2 workers: {two:.2f} s")
speedup = one / two
print(f"speed-up:  {speedup:.2f}x (goal 1.8x: {'met' if speedup >= 1.8 else 'NOT met'})")
