#!/usr/bin/env python3
"""A mixed load against a running service for a fixed time: item pages,
vector tiles, catalog search, uploads and the job polling that follows
them, each from its own client threads over kept-alive connections.

Usage: load_driver.py BASE TOKEN COLLECTION SECONDS API_PID WORKER_PID

Prints, per route: requests, errors, p50 and p99; then the error rate, and
the API's and worker's resident memory (VmRSS, sampled every 5 s) at the
start of the second half and at its end, with the growth between them.
Exits non-zero when any request failed or either process grew by more than
10% over the second half (memory that keeps growing under a steady load).
With LOAD_ANONYMOUS_READS=1, item pages, tiles and searches are sent
without the token (the public reading a public collection).
"""
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse
import uuid

base, token, collection, seconds, api_pid, worker_pid = sys.argv[1:7]
seconds = float(seconds)
host = urllib.parse.urlsplit(base)
AUTH = {"Authorization": f"Bearer {token}"}
SIGNED_READS = os.environ.get("LOAD_ANONYMOUS_READS") != "1"
deadline = time.monotonic() + seconds
lock = threading.Lock()
latencies: dict[str, list[float]] = {}
errors: dict[str, list[str]] = {}


def record(route, started, status, expected, detail=""):
    elapsed = time.monotonic() - started
    with lock:
        latencies.setdefault(route, []).append(elapsed)
        errors.setdefault(route, [])
        if status not in expected:
            errors[route].append(f"{status} {detail}"[:200])


class Client:
    def __init__(self):
        self.connection = http.client.HTTPConnection(host.hostname, host.port, timeout=60)

    def request(self, method, path, body=None, headers=None, signed=True):
        for attempt in (0, 1):
            try:
                credential = AUTH if signed else {}
                self.connection.request(method, path, body=body, headers={**credential, **(headers or {})})
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                # A kept-alive connection the server closed between requests.
                self.connection.close()
                self.connection = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
                if attempt:
                    raise


def items(rng):
    client = Client()
    while time.monotonic() < deadline:
        west, south = rng.uniform(-170, 150), rng.uniform(-80, 60)
        span = rng.choice([0.5, 5, 20])
        path = (f"/api/collections/{collection}/items?limit=100"
                f"&bbox={west},{south},{west + span},{south + span}")
        started = time.monotonic()
        status, body = client.request("GET", path, signed=SIGNED_READS)
        record("items", started, status, {200}, body[:120])


# Viewers ask for the same tiles again and again: a fixed set of 3000, so
# the tile cache fills in the first half and holds steady in the second.
TILE_SET = [(z, r.randrange(2 ** z), r.randrange(2 ** z))
            for r in [random.Random(7)] for z in (r.randint(2, 12) for _ in range(3000))]


def tiles(rng):
    client = Client()
    while time.monotonic() < deadline:
        z, x, y = rng.choice(TILE_SET)
        started = time.monotonic()
        status, body = client.request("GET", f"/api/tiles/{collection}/{z}/{x}/{y}.pbf", signed=SIGNED_READS)
        record("tiles", started, status, {200, 204}, body[:120])


def search(rng):
    client = Client()
    words = ["points", "bench", "category", "world", "roads", "counties"]
    while time.monotonic() < deadline:
        started = time.monotonic()
        status, body = client.request("GET", f"/api/search/datasets?q={rng.choice(words)}&limit=10", signed=SIGNED_READS)
        record("search", started, status, {200}, body[:120])


def uploads(rng):
    client = Client()
    while time.monotonic() < deadline:
        features = [{"type": "Feature", "properties": {"n": i, "label": f"p{i}"},
                     "geometry": {"type": "Point", "coordinates": [rng.uniform(-180, 180), rng.uniform(-85, 85)]}}
                    for i in range(rng.randint(10, 500))]
        document = json.dumps({"type": "FeatureCollection", "features": features}).encode()
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"load.geojson\"\r\n"
                f"Content-Type: application/geo+json\r\n\r\n").encode() + document + f"\r\n--{boundary}--\r\n".encode()
        started = time.monotonic()
        status, answer = client.request("POST", "/api/datasets/upload", body,
                                        {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        record("upload", started, status, {202}, answer[:120])
        if status != 202:
            continue
        job = json.loads(answer)["job_id"]
        state, finished = "queued", {}
        while state in ("queued", "running") and time.monotonic() < deadline + 120:
            time.sleep(0.5)
            started = time.monotonic()
            status, answer = client.request("GET", f"/api/jobs/{job}")
            record("job", started, status, {200}, answer[:120])
            finished = json.loads(answer) if status == 200 else {}
            state = finished.get("status", "unknown")
        with lock:
            if state != "succeeded":
                errors.setdefault("ingest", []).append(f"job {job} ended {state}")
            latencies.setdefault("ingest", []).append(0.0)
        # Delete it again so the catalog stays the same size over the run.
        dataset = finished.get("dataset_id")
        if dataset:
            started = time.monotonic()
            status, answer = client.request("DELETE", f"/api/datasets/{dataset}")
            record("delete", started, status, {200, 204}, answer[:120])


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        return None
    return None


samples = []  # (elapsed, api_kib, worker_kib)


def memory():
    start = time.monotonic()
    while time.monotonic() < deadline:
        samples.append((time.monotonic() - start, rss_kib(api_pid), rss_kib(worker_pid)))
        time.sleep(5)


rng = random.Random(20261125)
threads = [threading.Thread(target=f, args=(random.Random(rng.random()),), daemon=True)
           for f in [items, items, items, tiles, tiles, tiles, search, uploads, uploads]]
threads.append(threading.Thread(target=memory, daemon=True))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=seconds + 180)


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


print(f"{'route':<8} {'requests':>9} {'errors':>7} {'p50':>9} {'p99':>9}")
total = failed = 0
for route in ["items", "tiles", "search", "upload", "job", "delete", "ingest"]:
    values = latencies.get(route, [])
    wrong = errors.get(route, [])
    total += len(values)
    failed += len(wrong)
    if route == "ingest":
        print(f"{route:<8} {len(values):>9} {len(wrong):>7} {'':>9} {'':>9}  (jobs that did not succeed)")
    else:
        print(f"{route:<8} {len(values):>9} {len(wrong):>7} {percentile(values, 0.5) * 1000:>7.1f}ms"
              f" {percentile(values, 0.99) * 1000:>7.1f}ms")
    for line in wrong[:3]:
        print(f"  e.g. {line}")
print(f"error rate: {failed}/{total} = {failed / max(total, 1):.4%}")

half = [s for s in samples if s[0] >= seconds / 2]
grew = False
for name, index in (("API", 1), ("worker", 2)):
    series = [s[index] for s in half if s[index]]
    if len(series) < 2:
        print(f"{name} RSS: not enough samples")
        grew = True
        continue
    # Averages of the first and last fifth of the second half, so one
    # sample taken mid-ingest does not decide.
    fifth = max(1, len(series) // 5)
    first, last = sum(series[:fifth]) / fifth, sum(series[-fifth:]) / fifth
    growth = (last - first) / first
    grew |= growth > 0.10
    print(f"{name} RSS over the second half: {first / 1024:.0f} MB -> {last / 1024:.0f} MB ({growth:+.1%}),"
          f" peak {max(series) / 1024:.0f} MB")
sys.exit(1 if failed or grew else 0)
