#!/usr/bin/env python3
"""Drives bench/kill_trials.sh: starts the API and two workers, then
TRIALS times SIGKILLs the worker running a URL import (its source stalls
on the first request, so the job runs until it is killed, and answers at
once afterwards) and measures, from the kill, when the other worker holds
the job's queue task and when the job succeeded. Only the standard
library and psql."""
import http.server
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

from driver_common import Database

BIN = os.environ["KILL_TRIALS_BIN"]
WORK = os.environ["KILL_TRIALS_WORK"]
API_PORT = int(os.environ["KILL_TRIALS_API_PORT"])
TRIALS = int(os.environ.get("TRIALS", "20"))
BURNERS = int(os.environ.get("BURNERS", "0"))
SEED = int(os.environ.get("KILL_TRIALS_SEED", "20261127"))
DATABASE_URL = os.environ["DATABASE_URL"]
sql, sql1 = Database(DATABASE_URL).rows, Database(DATABASE_URL).value
USER, PASSWORD = os.environ["BOOTSTRAP_ADMIN_USERNAME"], os.environ["BOOTSTRAP_ADMIN_PASSWORD"]
GOAL_MEDIAN, GOAL_MAX = 10.0, 15.0
POINTS = 25


def log(msg):
    print(f"\033[1m==> {msg}\033[0m", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the source

FIRST_ASKED = set()
ASKED_LOCK = threading.Lock()
HEAD = b'{"type": "FeatureCollection", "features": ['
BODY = HEAD + ",".join(
    json.dumps({"type": "Feature", "geometry": {"type": "Point", "coordinates": [i, 1]}, "properties": {"i": i}})
    for i in range(POINTS)).encode() + b"]}"


class StallsFirstTime(http.server.BaseHTTPRequestHandler):
    """`/trial/N/points.geojson`: the first request gets the document's head
    and then a space every 200 ms for ten minutes; later ones all of it."""

    def do_GET(self):
        with ASKED_LOCK:
            first = self.path not in FIRST_ASKED
            FIRST_ASKED.add(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/geo+json")
        if not first:
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(HEAD)
            for _ in range(3000):
                self.wfile.flush()
                time.sleep(0.2)
                self.wfile.write(b" ")
        except OSError:
            pass  # the worker died

    def log_message(self, *args):
        pass


def start_source():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StallsFirstTime)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def asked(path):
    with ASKED_LOCK:
        return path in FIRST_ASKED


# ---------------------------------------------------------------- processes

PROCS = []


def spawn(name, argv, env):
    out = open(f"{WORK}/{name}.log", "ab")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    out.close()
    PROCS.append(proc)
    return proc


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            p.terminate()
    for p in PROCS:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def request(method, path, token=None, body=None, content_type=None):
    req = urllib.request.Request(f"http://127.0.0.1:{API_PORT}{path}", data=body, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if content_type:
        req.add_header("Content-Type", content_type)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, json.loads(resp.read() or b"null")


def wait_for(what, check, timeout=60, every=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    sys.exit(f"{what}: not within {timeout} s; logs in {WORK}")


def worker_beating(pid):
    return sql1("SELECT count(*) FROM apalis.workers "
                f"WHERE id LIKE 'worker-%-{pid}-%' AND last_seen > now() - interval '2 seconds'") == "1"


# ---------------------------------------------------------------- the trials

def main():
    rng = random.Random(SEED)
    source_port = start_source()
    env = os.environ.copy()
    env["OUTBOUND_ALLOWED_HOSTS"] = f"127.0.0.1:{source_port}"
    burners = [subprocess.Popen(["timeout", "3600", "yes"], stdout=subprocess.DEVNULL) for _ in range(BURNERS)]
    try:
        spawn("api", [f"{BIN}/catalog-api"], env)
        wait_for("the API answering", lambda: _healthy())
        form = urllib.parse.urlencode({"username": USER, "password": PASSWORD}).encode()
        token = request("POST", "/api/auth/login", body=form,
                        content_type="application/x-www-form-urlencoded")[1]["access_token"]
        started = 0

        def start_worker():
            nonlocal started
            started += 1
            proc = spawn(f"worker-{started}", [f"{BIN}/catalog-worker"], env)
            wait_for(f"worker {proc.pid} beating", lambda: worker_beating(proc.pid))
            return proc

        workers = [start_worker(), start_worker()]
        log(f"{TRIALS} kill trials, {BURNERS} CPU burners, seed {SEED}")
        ran_again, succeeded, failures = [], [], []
        for n in range(TRIALS):
            path = f"/trial/{n}/points.geojson"
            body = json.dumps({"url": f"http://127.0.0.1:{source_port}{path}"}).encode()
            job_id = request("POST", "/api/datasets/import-url", token, body, "application/json")[1]["job_id"]
            task = f"(SELECT queue_task_id FROM jobs WHERE id = '{job_id}')"
            holder = wait_for("the job downloading", lambda: asked(path) and sql1(
                f"SELECT lock_by FROM apalis.jobs WHERE id = {task} AND status = 'Running'"))
            victim = next((w for w in workers if f"-{w.pid}-" in holder), None)
            if victim is None:
                sys.exit(f"trial {n}: the job is held by {holder}, none of ours")
            # Anywhere in the worker's one-second heartbeat.
            time.sleep(rng.uniform(0.5, 1.5))
            killed = time.monotonic()
            victim.send_signal(signal.SIGKILL)
            victim.wait()

            def held_elsewhere():
                now = time.monotonic()
                held = sql1(f"SELECT lock_by FROM apalis.jobs WHERE id = {task}")
                return held and held != holder and now

            def finished():
                now = time.monotonic()
                job = request("GET", f"/api/jobs/{job_id}", token)[1]
                return job["status"] not in ("queued", "running") and (job, now)

            again = wait_for("the job held by another worker", held_elsewhere, timeout=120, every=0.02) - killed
            job, done = wait_for("the job finished", finished, timeout=120, every=0.02)
            done -= killed
            datasets = int(sql1(f"SELECT count(*) FROM datasets WHERE job_id = '{job_id}'"))
            if job["status"] != "succeeded" or job["attempts"] != 2 or datasets != 1:
                failures.append(f"trial {n}: {job['status']}, attempts {job['attempts']}, datasets {datasets}")
            ran_again.append(again)
            succeeded.append(done)
            print(f"trial {n + 1:2}: killed pid {victim.pid}; running again elsewhere after {again:5.2f} s, "
                  f"succeeded after {done:5.2f} s", flush=True)
            workers.remove(victim)
            workers.append(start_worker())
        goal = statistics.median(ran_again) < GOAL_MEDIAN and max(ran_again) <= GOAL_MAX
        print(f"kill trials: {TRIALS} trials, {BURNERS} CPU burners; running again elsewhere: median "
              f"{statistics.median(ran_again):.2f} s, min {min(ran_again):.2f} s, max {max(ran_again):.2f} s; "
              f"succeeded: median {statistics.median(succeeded):.2f} s, max {max(succeeded):.2f} s; "
              f"goal (median under {GOAL_MEDIAN:.0f} s, none over {GOAL_MAX:.0f} s): {'met' if goal else 'NOT met'}",
              flush=True)
        for failure in failures:
            print(f"  FAIL: {failure}", flush=True)
        return 0 if goal and not failures else 1
    finally:
        for b in burners:
            b.terminate()
        stop_all()


def _healthy():
    try:
        return request("GET", "/api/health")[0] == 200
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
