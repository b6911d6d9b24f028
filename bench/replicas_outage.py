#!/usr/bin/env python3
"""The primary database stops under load, then comes back.

Usage: replicas_outage.py TOKEN COLLECTION OUTAGE_SECONDS BASE1 BASE2 STOP_COMMAND START_COMMAND

Anonymous readers page items and fetch tiles from both API processes the
whole time; a writer uploads every half second. After 5 s of normal load
STOP_COMMAND stops the primary; OUTAGE_SECONDS later START_COMMAND starts
it. Prints, for the outage: reads served and failed, writes answered 503
with Retry-After (and any other answer); then how long after the primary
answered again the first write succeeded. Exits non-zero when a read
failed, a write during the outage got anything but a 503 with
Retry-After, or writes took more than 2 s to come back.
"""
import http.client
import random
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

token, collection, outage, *rest = sys.argv[1:]
outage = float(outage)
bases, stop_command, start_command = rest[:-2], rest[-2], rest[-1]
lock = threading.Lock()
phase = "before"
reads = {"before": [0, []], "outage": [0, []], "after": [0, []]}
writes = {"before": [], "outage": [], "after": []}
finished = False


def connection(base):
    url = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=30)


def request(state, method, path, body=None, headers=None):
    base, conn = state
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.getheader("Retry-After"), response.read()
    except (http.client.HTTPException, OSError) as e:
        state[1] = connection(base)
        return 0, None, str(e).encode()


def reader(base, seed):
    rng = random.Random(seed)
    state = [base, connection(base)]
    while not finished:
        if rng.random() < 0.5:
            west, south = rng.uniform(-170, 150), rng.uniform(-80, 60)
            path = f"/api/collections/{collection}/items?limit=100&bbox={west},{south},{west + 5},{south + 5}"
            expected = {200}
        else:
            z = rng.randint(2, 10)
            path = f"/api/tiles/{collection}/{z}/{rng.randrange(2 ** z)}/{rng.randrange(2 ** z)}.pbf"
            expected = {200, 204}
        status, _, body = request(state, "GET", path)
        with lock:
            entry = reads[phase]
            entry[0] += 1
            if status not in expected:
                entry[1].append(f"{status} {path} {body[:120]!r}")


def upload_body():
    boundary = uuid.uuid4().hex
    document = b'{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"n": 1}, ' \
               b'"geometry": {"type": "Point", "coordinates": [1, 2]}}]}'
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"outage.geojson\"\r\n"
            f"Content-Type: application/geo+json\r\n\r\n").encode() + document + f"\r\n--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": f"Bearer {token}"}


def writer(base):
    state = [base, connection(base)]
    while not finished:
        body, headers = upload_body()
        started = time.monotonic()
        status, retry_after, _ = request(state, "POST", "/api/datasets/upload", body, headers)
        with lock:
            writes[phase].append((started, status, retry_after))
        time.sleep(0.5)


threads = [threading.Thread(target=reader, args=(base, i * 7 + n), daemon=True) for i, base in enumerate(bases) for n in range(3)]
threads.append(threading.Thread(target=writer, args=(bases[0],), daemon=True))
for thread in threads:
    thread.start()
time.sleep(5)
with lock:
    phase = "outage"
subprocess.run(stop_command, shell=True, check=True)
time.sleep(outage)
subprocess.run(start_command, shell=True, check=True)
back = time.monotonic()
with lock:
    phase = "after"
time.sleep(10)
finished = True
for thread in threads:
    thread.join(timeout=60)

ok = True
for name in ("before", "outage", "after"):
    served, failed = reads[name]
    print(f"reads {name:<7} {served:>6} served, {len(failed)} failed")
    for line in failed[:3]:
        print(f"  e.g. {line}")
    ok &= not failed
during = writes["outage"]
refused = [w for w in during if w[1] == 503 and w[2]]
other = [w for w in during if not (w[1] == 503 and w[2])]
print(f"writes during the outage: {len(refused)} answered 503 with Retry-After, {len(other)} otherwise"
      + (f" (e.g. {other[0][1]})" if other else ""))
ok &= not other
recovered = next((w[0] for w in writes["after"] if w[1] == 202), None)
if recovered is None:
    print("writes never came back")
    ok = False
else:
    # The first write sent after the primary answered that succeeded, from
    # the moment pg_ctl saw it accept connections.
    delay = max(0.0, recovered - back)
    print(f"writes back {delay:.2f} s after the primary (goal: within 2 s: {'ok' if delay <= 2 else 'MISSED'})")
    ok &= delay <= 2
sys.exit(0 if ok else 1)
