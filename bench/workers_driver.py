#!/usr/bin/env python3
"""Drives bench/workers.sh: queues the same batch of URL imports for one
worker and then for two, times each batch from the workers' start to the
last job's success, and prints the speed-up."""
import os
import subprocess
import sys
import time

from driver_common import Service

base, slow, worker_bin, jobs, work = sys.argv[1:6]
jobs = int(jobs)
service = Service(base).sign_in()


def batch(workers, label):
    ids = [service.call("POST", "/api/datasets/import-url", body={"url": f"{slow}/{label}-{i}.geojson"})[2]["job_id"]
           for i in range(jobs)]
    start = time.monotonic()
    procs = [subprocess.Popen([worker_bin], stdout=open(f"{work}/{label}-worker{n}.log", "w"),
                              stderr=subprocess.STDOUT, env=os.environ) for n in range(workers)]
    pending = set(ids)
    while pending:
        for job_id in list(pending):
            status = service.get(f"/api/jobs/{job_id}")["status"]
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
