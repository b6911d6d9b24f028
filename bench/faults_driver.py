#!/usr/bin/env python3
"""Drives bench/faults.sh: starts the API and the workers, breaks things
under them (killed workers, a stopped database, a full object store, slow
clients, many large uploads at once) and checks what the service did.
Each scenario prints one line of figures; the last line counts the checks.
Only the standard library and curl."""
import hashlib
import http.client
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from driver_common import Database

BIN = os.environ["FAULTS_BIN"]
WORK = os.environ["FAULTS_WORK"]
PG_DIR = os.environ["FAULTS_PG_DIR"]
PG_BIN = os.environ["FAULTS_PG_BIN"]
PG_PORT = int(os.environ["FAULTS_PG_PORT"])
API_PORT = int(os.environ["FAULTS_API_PORT"])
POINTS = int(os.environ["FAULTS_POINTS"])
BIG_FILE = os.environ["FAULTS_BIG_FILE"]
MNT = os.environ["FAULTS_MNT"]
SEED = int(os.environ.get("FAULTS_SEED", "20261125"))
JOBS = int(os.environ.get("FAULTS_JOBS", "20"))
KILL_TIMEOUT = float(os.environ.get("FAULTS_KILL_TIMEOUT", "360"))
SLOW_HEADER_LIMIT = 60.0
SLOW_BODY_SECONDS = float(os.environ.get("FAULTS_SLOW_BODY_SECONDS", "70"))
LATENCY_BOUND = 10.0
CLIENTS = int(os.environ.get("FAULTS_CLIENTS", "6"))
RECOVERY_GOAL = 5.0
USER, PASSWORD = os.environ["BOOTSTRAP_ADMIN_USERNAME"], os.environ["BOOTSTRAP_ADMIN_PASSWORD"]
STORAGE = urllib.parse.urlparse(os.environ["STORAGE_URL"]).path
DATABASE_URL = os.environ["DATABASE_URL"]
sql, sql1 = Database(DATABASE_URL).rows, Database(DATABASE_URL).value
STAGING_PREFIX = "_staging_"  # shared/src/datasets.rs
GPKG = f"{WORK}/points_{POINTS}.gpkg"
SMALL_GPKG = f"{WORK}/points_1000.gpkg"
MID_CSV = f"{WORK}/mid_70000.csv"
SMALL_TIF = f"{WORK}/small.tif"
PIDS_FILE = f"{WORK}/children.pids"
HEADER_FILE = f"{WORK}/auth.header"
UNFINISHED = ("queued", "running")


def log(msg):
    print(f"\033[1m==> {msg}\033[0m", file=sys.stderr, flush=True)


def figures(line):
    print(line, flush=True)


class Checks:
    def __init__(self):
        self.total = 0
        self.failed = []

    def __call__(self, ok, what):
        self.total += 1
        if not ok:
            self.failed.append(what)
            print(f"  FAIL: {what}", flush=True)
        return ok


check = Checks()


# ---------------------------------------------------------------- processes

class Children:
    """Every process this driver starts, so each one is stopped at exit; the
    live ones are listed in PIDS_FILE for faults.sh's trap as a backstop."""

    def __init__(self):
        self.procs = []
        self.lock = threading.Lock()
        self.workers = 0

    def spawn(self, name, argv, env=None, logname=None):
        with self.lock:
            path = f"{WORK}/{logname or name}.log"
            out = open(path, "ab")
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or os.environ.copy())
            out.close()
            proc.name, proc.log = name, path
            self.procs.append(proc)
            self._write()
            return proc

    def _write(self):
        live = [p.pid for p in self.procs if p.poll() is None]
        with open(PIDS_FILE, "w") as f:
            f.write("".join(f"{pid}\n" for pid in live))

    def stop(self, proc, sig=signal.SIGTERM, timeout=30):
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with self.lock:
            self._write()

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        with self.lock:
            self._write()


children = Children()


def service_env(**extra):
    env = os.environ.copy()
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_api(name="api", port=API_PORT, storage=None):
    env = service_env(BIND_ADDR=f"127.0.0.1:{port}", PUBLIC_URL=f"http://127.0.0.1:{port}")
    if storage:
        env["STORAGE_URL"] = f"file://{storage}"
    proc = children.spawn(name, [f"{BIN}/catalog-api"], env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}; see {proc.log}")
        try:
            if request("GET", "/api/health", port=port, timeout=2)[0] == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"{name} did not answer /api/health within a minute; see {proc.log}")


def start_worker(storage=None):
    env = service_env(TMPDIR=f"{WORK}/worker-tmp")
    if storage:
        env["STORAGE_URL"] = f"file://{storage}"
    children.workers += 1
    n = children.workers
    return children.spawn(f"worker-{n}", [f"{BIN}/catalog-worker"], env)


def as_pg(argv):
    return (["runuser", "-u", "postgres", "--"] + argv) if os.getuid() == 0 else argv


# ---------------------------------------------------------------- HTTP, SQL

def request(method, path, token=None, port=API_PORT, timeout=30, body=None, headers=None):
    """(status, headers as a lower-cased dict, body bytes, seconds)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    started = time.monotonic()
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data, time.monotonic() - started
    finally:
        conn.close()


def get_json(path, token, port=API_PORT):
    status, _, data, _ = request("GET", path, token, port)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {data[:300]!r}")
    return json.loads(data)


def login(port=API_PORT):
    form = urllib.parse.urlencode({"username": USER, "password": PASSWORD})
    status, _, data, _ = request("POST", "/api/auth/login", port=port, body=form,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    if status != 200:
        sys.exit(f"sign-in failed: {status} {data[:300]!r}")
    token = json.loads(data)["access_token"]
    # curl reads the header from a file, so the token is not in any argv.
    fd = os.open(HEADER_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"Authorization: Bearer {token}\n")
    return token


def curl_upload(path, port=API_PORT, timeout=600):
    """(HTTP status, content type, body, seconds); status 0 when curl failed."""
    started = time.monotonic()
    out = subprocess.run(
        ["curl", "-sS", "--max-time", str(timeout), "-H", f"@{HEADER_FILE}", "-F", f"file=@{path}",
         "-w", "\n%{http_code}\n%{content_type}", f"http://127.0.0.1:{port}/api/datasets/upload"],
        capture_output=True, text=True)
    body, code, ctype = out.stdout.rsplit("\n", 2)
    if out.returncode != 0:
        body += f" [curl exit {out.returncode}: {out.stderr.strip()}]"
    return int(code or 0), ctype, body, time.monotonic() - started


def wait_jobs(job_ids, token, timeout, port=API_PORT):
    """Polls until every job left queued/running; answers {id: job}."""
    last = {}
    pending = set(job_ids)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for job_id in list(pending):
            try:
                job = get_json(f"/api/jobs/{job_id}", token, port)
            except (OSError, RuntimeError):
                continue
            last[job_id] = job
            if job["status"] not in UNFINISHED:
                pending.discard(job_id)
        if pending:
            time.sleep(0.5)
    return last


# ---------------------------------------------------------------- object store

def store_files(root):
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def empty_dirs(root):
    return [d for d, sub, files in os.walk(root) if d != root and not sub and not files]


def orphan_objects(root, ignore=()):
    """Files under the store that no database row names: a job's upload
    (until its source is removed), a raster dataset's file, a cold dataset's
    archive; a `#n` suffix is a multipart upload never completed."""
    referenced = {r[0] for r in sql("SELECT payload->>'object_path' FROM jobs WHERE NOT upload_removed "
                                    "AND payload ? 'object_path'")}
    referenced |= {r[0] for r in sql("SELECT raster_object FROM datasets WHERE raster_object IS NOT NULL")}
    cold = {r[0] for r in sql("SELECT id FROM datasets WHERE storage = 'cold'")}
    orphans = []
    for f in store_files(root):
        if f in ignore:
            continue
        if "#" in os.path.basename(f):
            orphans.append((f, "unfinished multipart upload"))
        elif f in referenced:
            continue
        elif f.startswith("archives/") and f.split("/")[1] in cold:
            continue
        else:
            orphans.append((f, "named by no job or dataset"))
    return orphans


# ---------------------------------------------------------------- scenario 1

def scenario_kills():
    log(f"1. {JOBS} ingests of {POINTS} points while workers are SIGKILLed every 1-4 s (seed {SEED})")
    workers = [start_worker(), start_worker()]
    token = login()
    rng = random.Random(SEED)
    done = threading.Event()
    kills = []  # (seconds since start, pid, queue tasks it held)

    def killer(t0):
        while not done.wait(rng.uniform(1, 4)):
            live = [w for w in workers if w.poll() is None]
            if not live:
                workers.append(start_worker())
                continue
            victim = rng.choice(live)
            held = sql1(f"SELECT count(*) FROM apalis.jobs WHERE lock_by LIKE 'worker-%-{victim.pid}-%' "
                        "AND status IN ('Running', 'Queued')")
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            workers.remove(victim)
            workers.append(start_worker())
            kills.append((time.monotonic() - t0, victim.pid, int(held or 0)))
            log(f"   t={kills[-1][0]:6.1f}s SIGKILL worker pid {victim.pid} (held {held} job(s)); replaced")

    t0 = time.monotonic()
    job_ids, upload_failures = [], []
    thread = None
    for i in range(JOBS):
        status, _, body, _ = curl_upload(GPKG)
        if status == 202:
            job_ids.append(json.loads(body)["job_id"])
        else:
            upload_failures.append(f"{status} {body[:200]}")
        if thread is None:
            thread = threading.Thread(target=killer, args=(t0,), daemon=True)
            thread.start()
    jobs = wait_jobs(job_ids, token, KILL_TIMEOUT)
    wall = time.monotonic() - t0
    done.set()
    thread.join()
    statuses = [jobs.get(j, {}).get("status", "unknown") for j in job_ids]
    succeeded, failed = statuses.count("succeeded"), statuses.count("failed")
    stuck = [j for j in job_ids if jobs.get(j, {}).get("status", "unknown") in UNFINISHED + ("unknown",)]
    check(not upload_failures, f"1: uploads refused: {upload_failures}")
    check(succeeded == JOBS, f"1: {succeeded} of {JOBS} jobs succeeded "
          f"({failed} failed, {len(stuck)} still unfinished after {KILL_TIMEOUT:.0f} s: {stuck})")
    for j in job_ids:
        if jobs.get(j, {}).get("status") == "failed":
            print(f"  job {j} failed: {jobs[j].get('error')}", flush=True)

    # One dataset per job, complete.
    job_list = ",".join(f"'{j}'" for j in job_ids) or "NULL"
    per_job = dict(sql(f"SELECT job_id, count(*) FROM datasets WHERE job_id IN ({job_list}) GROUP BY job_id"))
    datasets_sql = int(sql1("SELECT count(*) FROM datasets"))
    api_total = get_json("/api/datasets?limit=1000", token)["total"]
    duplicates = {j: n for j, n in per_job.items() if int(n) > 1}
    missing = [j for j in job_ids if j not in per_job]
    check(datasets_sql == JOBS and api_total == JOBS,
          f"1: {datasets_sql} datasets in the table, {api_total} listed by the API; expected {JOBS}")
    check(not duplicates, f"1: jobs with more than one dataset: {duplicates}")
    check(not missing, f"1: jobs without a dataset: {missing}")
    bad_ids = [j for j in job_ids if len(jobs.get(j, {}).get("dataset_ids") or []) != 1]
    check(not bad_ids, f"1: jobs whose dataset_ids is not exactly one id: {bad_ids}")
    counts_right = 0
    for dataset_id, table in sql("SELECT id, quote_ident(table_name) FROM datasets ORDER BY created_at"):
        page = get_json(f"/api/collections/{dataset_id}/items?limit=1", token)
        rows = int(sql1(f"SELECT count(*) FROM data.{table}"))
        if page.get("numberMatched") == POINTS and rows == POINTS:
            counts_right += 1
        else:
            print(f"  dataset {dataset_id}: numberMatched {page.get('numberMatched')}, {rows} rows; "
                  f"the file has {POINTS}", flush=True)
    check(counts_right == datasets_sql, f"1: {datasets_sql - counts_right} datasets with a wrong feature count")

    # Nothing left behind: staging tables, tables no dataset names, objects.
    staging_q = (f"SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                 f"WHERE c.relkind IN ('r', 'p') AND starts_with(c.relname, '{STAGING_PREFIX}')")
    staging = [r[0] for r in sql(staging_q)]
    staging_after_sweep = staging
    if staging:
        log(f"   {len(staging)} staging tables left; waiting 70 s for the workers' sweep (every 60 s)")
        time.sleep(70)
        staging_after_sweep = [r[0] for r in sql(staging_q)]
    check(not staging, f"1: staging tables left when the jobs had finished: {staging}")
    check(not staging_after_sweep, f"1: staging tables left after a sweep: {staging_after_sweep}")
    stray_tables = [r[0] for r in sql(
        "SELECT t.tablename FROM pg_tables t WHERE t.schemaname = 'data' "
        f"AND NOT starts_with(t.tablename, '{STAGING_PREFIX}') "
        "AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.schema_name = 'data' AND d.table_name = t.tablename)")]
    check(not stray_tables, f"1: tables in schema data that no dataset names: {stray_tables}")
    orphans = orphan_objects(STORAGE)
    check(not orphans, f"1: orphan objects in the store: {orphans}")
    worker_tmp = os.listdir(f"{WORK}/worker-tmp")
    attempts = [int(jobs.get(j, {}).get("attempts") or 0) for j in job_ids]
    interrupted = sum(k[2] for k in kills)
    figures(f"1 worker SIGKILL: {len(job_ids)} jobs, succeeded {succeeded}, failed {failed}, unfinished {len(stuck)}; "
            f"kills {len(kills)} (interrupting {interrupted} job runs), job runs {sum(attempts)} (max {max(attempts, default=0)} for one job); "
            f"datasets {datasets_sql} (API total {api_total}, duplicates {len(duplicates)}), "
            f"feature counts right {counts_right}/{datasets_sql}; staging tables left {len(staging)}"
            f"{f' ({len(staging_after_sweep)} after a sweep)' if staging else ''}, stray tables {len(stray_tables)}, "
            f"orphan objects {len(orphans)}, worker temp dirs left {len(worker_tmp)}; wall {wall:.1f} s")
    return workers, job_ids


# ---------------------------------------------------------------- scenario 2

def pg_ready():
    return subprocess.run([f"{PG_BIN}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(PG_PORT)]).returncode == 0


def scenario_pg_restart(workers):
    log(f"2. PostgreSQL stopped at t=5 s and started at t=12 s under read load ({CLIENTS} clients, 25 s)")
    token = login()
    dataset_id = sql1("SELECT id FROM datasets ORDER BY created_at LIMIT 1")
    paths = ["/api/datasets", f"/api/collections/{dataset_id}/items?limit=10"]
    worker_pids = [w.pid for w in workers if w.poll() is None]
    results = []  # (sent, status, latency, retry_after, detail)
    lock = threading.Lock()
    marks = {}
    t0 = time.monotonic()
    duration = 25.0

    def client(n):
        i = n
        while time.monotonic() - t0 < duration:
            path = paths[i % 2]
            i += 1
            sent = time.monotonic() - t0
            try:
                status, headers, data, latency = request("GET", path, token, timeout=60)
                row = (sent, status, latency, headers.get("retry-after"), data[:200] if status != 200 else b"")
            except OSError as e:
                row = (sent, 0, time.monotonic() - t0 - sent, None, repr(e).encode())
            with lock:
                results.append(row)

    def controller():
        time.sleep(max(0, 5 - (time.monotonic() - t0)))
        marks["stop"] = time.monotonic() - t0
        subprocess.run(as_pg([f"{PG_BIN}/pg_ctl", "-D", PG_DIR, "-m", "fast", "-w", "stop"]),
                       capture_output=True, check=True)
        marks["stopped"] = time.monotonic() - t0
        time.sleep(max(0, 12 - (time.monotonic() - t0)))
        marks["start"] = time.monotonic() - t0
        starter = subprocess.Popen(as_pg([f"{PG_BIN}/pg_ctl", "-D", PG_DIR, "-l", f"{PG_DIR}/server.log",
                                          "-w", "-t", "60", "start"]),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not pg_ready():
            time.sleep(0.05)
        marks["ready"] = time.monotonic() - t0
        starter.wait()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    ctl = threading.Thread(target=controller)
    for t in threads + [ctl]:
        t.start()
    for t in threads + [ctl]:
        t.join()
    if "ready" not in marks:
        check(False, "2: PostgreSQL did not come back")
        return
    stop, ready = marks["stop"], marks["ready"]
    with open(f"{WORK}/pg-restart-requests.json", "w") as f:
        json.dump({"marks": marks, "requests": [
            {"sent": round(r[0], 3), "status": r[1], "latency": round(r[2], 3), "retry_after": r[3],
             "body": r[4].decode(errors="replace")} for r in sorted(results)]}, f, indent=1)
    outage = [r for r in results if stop <= r[0] < ready]
    out_503 = [r for r in outage if r[1] == 503]
    out_503_ra = [r for r in out_503 if r[3]]
    out_200 = [r for r in outage if r[1] == 200]
    out_200_early = [r for r in out_200 if r[0] + r[2] < marks["stopped"]]
    bad = [r for r in results if r[1] != 200 and not (r[1] == 503 and r[3])]
    five_hundreds = [r for r in results if r[1] == 500]
    longest = max(results, key=lambda r: r[2])
    after = sorted(r[0] + r[2] for r in results if r[1] == 200 and r[0] + r[2] >= ready)
    recovery = after[0] - ready if after else float("inf")
    check(not bad, f"2: answers other than 200 or 503 with Retry-After: "
          f"{[(round(r[0], 2), r[1], round(r[2], 2), r[3], r[4]) for r in bad[:10]]} ({len(bad)} in all)")
    check(not five_hundreds, f"2: {len(five_hundreds)} answers 500")
    check(longest[2] < LATENCY_BOUND, f"2: the longest request took {longest[2]:.1f} s (bound {LATENCY_BOUND:.0f} s)")
    check(recovery <= RECOVERY_GOAL, f"2: first 200 came {recovery:.2f} s after PostgreSQL was ready (goal {RECOVERY_GOAL:.0f} s)")

    # The workers carry on by themselves.
    status, _, body, _ = curl_upload(SMALL_GPKG)
    job_id = json.loads(body)["job_id"] if status == 202 else None
    started = time.monotonic()
    job = wait_jobs([job_id], token, 120).get(job_id, {}) if job_id else {}
    took = time.monotonic() - started
    alive = [w.pid for w in workers if w.poll() is None]
    ran_by = [w.pid for w in workers if job_id and job_id in open(w.log, errors="replace").read()]
    check(job.get("status") == "succeeded",
          f"2: the upload after the restart: {status}, job {job.get('status')} {job.get('error') or ''}")
    check(alive == worker_pids and ran_by and ran_by[0] in worker_pids,
          f"2: worker pids before {worker_pids}, alive after {alive}, job ran by {ran_by}")
    figures(f"2 PG restart: {len(results)} requests; outage {stop:.1f}-{ready:.1f} s (stop took {marks['stopped'] - stop:.1f} s, "
            f"start to ready {ready - marks['start']:.1f} s): {len(outage)} requests sent, {len(out_503)} answered 503 "
            f"({len(out_503_ra)} with Retry-After), {len(out_200)} answered 200 ({len(out_200_early)} before the shutdown completed, "
            f"{len(out_200) - len(out_200_early)} after waiting for PostgreSQL), {len(outage) - len(out_503) - len(out_200)} other; "
            f"500s {len(five_hundreds)}; longest latency {longest[2]:.2f} s (status {longest[1]}); "
            f"recovery {recovery:.2f} s; worker job after restart {job.get('status')} in {took:.1f} s, "
            f"worker pids unchanged {alive == worker_pids} (ran by {ran_by[0] if ran_by else '?'})")


# ---------------------------------------------------------------- scenario 3

def scenario_store_full():
    if os.getuid() != 0:
        figures("3 store full: skipped: needs root to mount a tmpfs")
        return
    os.makedirs(MNT, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", MNT], capture_output=True).returncode != 0:
        figures("3 store full: skipped: needs root to mount a tmpfs (mount -t tmpfs failed)")
        return
    log("3. the object store on a 2 MB tmpfs: a 5 MB upload, then a full store under a worker")
    port = API_PORT + 1
    api = worker = None
    try:
        api = start_api("api-tmpfs", port, MNT)
        token = login(port)
        # (a) larger than the store
        jobs_before = int(sql1("SELECT count(*) FROM jobs"))
        size = os.path.getsize(MID_CSV)
        status, ctype, body, secs = curl_upload(MID_CSV, port)
        try:
            problem = json.loads(body)
        except ValueError:
            problem = {}
        left = store_files(MNT) + [os.path.relpath(d, MNT) + "/" for d in empty_dirs(MNT)]
        jobs_after = int(sql1("SELECT count(*) FROM jobs"))
        check(status == 507 and ctype.startswith("application/problem+json") and problem.get("status") == 507,
              f"3a: a {size / 1e6:.1f} MB upload into 2 MB answered {status} {ctype} {body[:300]}")
        check(not left, f"3a: left in the store (a trailing / is an empty folder): {left}")
        check(jobs_after == jobs_before, f"3a: {jobs_after - jobs_before} job rows created")

        # (b) a full store when the worker runs: a GeoPackage (the worker only
        # reads its upload) and a GeoTIFF (the worker writes a COG to the store)
        ids = {}
        for label, path in (("gpkg", SMALL_GPKG), ("tif", SMALL_TIF)):
            s, _, b, _ = curl_upload(path, port)
            check(s == 202, f"3b: the {label} upload into the empty store answered {s} {b[:200]}")
            ids[label] = json.loads(b)["job_id"] if s == 202 else None
        dd = subprocess.run(["dd", "if=/dev/zero", f"of={MNT}/filler", "bs=64k"], capture_output=True, text=True)
        st = os.statvfs(MNT)
        free = st.f_bavail * st.f_frsize
        check(dd.returncode != 0 and "No space left" in dd.stderr and free == 0,
              f"3b: filling the tmpfs: dd exit {dd.returncode}, {free} bytes still free")
        worker = start_worker(MNT)
        started = time.monotonic()
        jobs = wait_jobs([j for j in ids.values() if j], token, 180, port)
        took = time.monotonic() - started
        outcome = {}
        for label, job_id in ids.items():
            job = jobs.get(job_id, {})
            datasets = sql(f"SELECT id, status, feature_count FROM datasets WHERE job_id = '{job_id}'") if job_id else []
            error = job.get("error") or {}
            detail = f"{error.get('status')}: {error.get('detail')}" if error else None
            outcome[label] = (job.get("status"), detail, datasets)
        tif_status, tif_error, tif_datasets = outcome["tif"]
        check(tif_status == "failed" and tif_error, f"3b: the GeoTIFF job under a full store: {tif_status} {tif_error}")
        check(not tif_datasets, f"3b: the failed GeoTIFF job left datasets {tif_datasets}")
        gpkg_status, gpkg_error, gpkg_datasets = outcome["gpkg"]
        check(gpkg_status in ("succeeded", "failed"), f"3b: the GeoPackage job under a full store is {gpkg_status}")
        if gpkg_status == "failed":
            check(not gpkg_datasets and gpkg_error, f"3b: the failed GeoPackage job: {gpkg_error}, datasets {gpkg_datasets}")
        elif gpkg_status == "succeeded":
            check(len(gpkg_datasets) == 1 and gpkg_datasets[0][1] == "ready" and int(gpkg_datasets[0][2]) == 1000,
                  f"3b: the GeoPackage job's datasets {gpkg_datasets}")
        uploads = {sql1(f"SELECT payload->>'object_path' FROM jobs WHERE id = '{j}'") for j in ids.values() if j}
        extra = [f for f in store_files(MNT) if f != "filler" and f not in uploads]
        check(not extra, f"3b: objects left in the full store beyond the filler and the two uploads: {extra}")
        errors = [line.strip()[:400] for line in open(worker.log, errors="replace") if ids["tif"] in line and
                  ("WARN" in line or "ERROR" in line or "failed" in line)]
        for line in errors[:3]:
            print(f"  worker log: {line}", flush=True)
        figures(f"3 store full: (a) {size / 1e6:.1f} MB upload -> {status} {ctype.split(';')[0]} in {secs:.2f} s, "
                f"files or folders left {len(left)}, job rows +{jobs_after - jobs_before}; (b) after filling the store: "
                f"GeoTIFF job {tif_status} ({tif_error}), datasets {len(tif_datasets)}; GeoPackage job {gpkg_status}"
                f"{f' ({gpkg_error})' if gpkg_error else ''}, datasets {len(gpkg_datasets)}; both ended within {took:.1f} s "
                f"of the worker's start; stray objects {len(extra)}")

        # (c) a store the service may not write (the tmpfs remounted
        # read-only: root ignores file permissions, not a read-only mount):
        # an upload answers a clear 500, and a job queued before fails at
        # once saying so, with nothing kept
        children.stop(worker)
        worker = None
        os.remove(f"{MNT}/filler")
        s, _, b, _ = curl_upload(SMALL_TIF, port)
        check(s == 202, f"3c: the GeoTIFF upload before the store turned read-only answered {s} {b[:200]}")
        queued = json.loads(b)["job_id"] if s == 202 else None
        remount = subprocess.run(["mount", "-o", "remount,ro", MNT], capture_output=True, text=True)
        check(remount.returncode == 0, f"3c: remounting the store read-only: {remount.stderr.strip()}")
        jobs_before = int(sql1("SELECT count(*) FROM jobs"))
        ro_status, ro_ctype, ro_body, _ = curl_upload(SMALL_GPKG, port)
        try:
            ro_problem = json.loads(ro_body)
        except ValueError:
            ro_problem = {}
        jobs_after = int(sql1("SELECT count(*) FROM jobs"))
        check(ro_status == 500 and ro_ctype.startswith("application/problem+json")
              and "refused" in ro_problem.get("detail", ""),
              f"3c: an upload into the read-only store answered {ro_status} {ro_ctype} {ro_body[:300]}")
        check(jobs_after == jobs_before, f"3c: {jobs_after - jobs_before} job rows created by the refused upload")
        worker = start_worker(MNT)
        started = time.monotonic()
        job = wait_jobs([queued], token, 120, port).get(queued, {}) if queued else {}
        ro_took = time.monotonic() - started
        ro_error = job.get("error") or {}
        ro_datasets = sql(f"SELECT id FROM datasets WHERE job_id = '{queued}'") if queued else []
        check(job.get("status") == "failed" and ro_error.get("status") == 500
              and "refused" in (ro_error.get("detail") or ""),
              f"3c: the GeoTIFF job under a read-only store: {job.get('status')} {ro_error}")
        check(ro_took < 15, f"3c: the job took {ro_took:.1f} s to fail (retrying what cannot pass?)")
        check(not ro_datasets, f"3c: the failed job left datasets {ro_datasets}")
        figures(f"3 store read-only: upload -> {ro_status} ({ro_problem.get('detail', '')[:60]}...), job rows "
                f"+{jobs_after - jobs_before}; queued GeoTIFF job {job.get('status')} with "
                f"{ro_error.get('status')} within {ro_took:.1f} s, datasets {len(ro_datasets)}")
    finally:
        for p in (worker, api):
            if p:
                children.stop(p)
        if subprocess.run(["umount", MNT], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", MNT], capture_output=True)


# ---------------------------------------------------------------- scenario 4

def slow_headers(result):
    head = (b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: faults-slow-client\r\n"
            b"X-Padding: " + b"a" * 60 + b"\r\n\r\n")
    sock = socket.create_connection(("127.0.0.1", API_PORT))
    t0 = time.monotonic()
    sent = 0
    try:
        while time.monotonic() - t0 < SLOW_HEADER_LIMIT + 2 and sent < len(head):
            try:
                sock.sendall(head[sent:sent + 1])
                sent += 1
            except OSError as e:
                result.update(closed=time.monotonic() - t0, how=f"send failed: {e.strerror}", sent=sent)
                return
            ready, _, _ = select.select([sock], [], [], 2.0)
            if ready:
                try:
                    data = sock.recv(4096)
                except OSError as e:
                    data, err = b"", e.strerror
                else:
                    err = None
                if data:
                    result.update(closed=time.monotonic() - t0, how=f"answered {data.split(b' ')[1].decode()}", sent=sent)
                else:
                    result.update(closed=time.monotonic() - t0, how=err or "closed", sent=sent)
                return
        result.update(closed=None, sent=sent)
    finally:
        sock.close()


def slow_body(token, result):
    boundary = "faultsboundary7"
    preamble = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.csv\"\r\n"
                f"Content-Type: text/csv\r\n\r\nid,lon,lat\r\n").encode()
    length = 10 * 1024 * 1024
    head = (f"POST /api/datasets/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", API_PORT))
    t0 = time.monotonic()
    sock.sendall(head + preamble)
    sent = len(preamble)
    try:
        while time.monotonic() - t0 < SLOW_BODY_SECONDS:
            ready, _, _ = select.select([sock], [], [], 1.0)
            if ready:
                try:
                    data = sock.recv(4096)
                except OSError as e:
                    data = b""
                    result["how"] = e.strerror
                if data:
                    result.update(ended=time.monotonic() - t0, how=f"answered {data.split(b' ')[1].decode()}",
                                  body=data.split(b"\r\n\r\n", 1)[-1][:300].decode(errors="replace"))
                else:
                    result.update(ended=time.monotonic() - t0, how=result.get("how") or "closed")
                result["sent"] = sent
                return
            try:
                sock.sendall(b"1")
                sent += 1
            except OSError as e:
                result.update(ended=time.monotonic() - t0, how=f"send failed: {e.strerror}", sent=sent)
                return
        result.update(ended=None, sent=sent)
    finally:
        sock.close()


def scenario_slow_clients():
    log(f"4. slow clients: headers at 1 byte / 2 s (up to {SLOW_HEADER_LIMIT:.0f} s), "
        f"a 10 MB upload body at 1 byte/s (up to {SLOW_BODY_SECONDS:.0f} s), side by side")
    token = login()
    files_before = set(store_files(STORAGE))
    api_log = f"{WORK}/api.log"
    log_offset = os.path.getsize(api_log)
    a, b = {}, {}
    threads = [threading.Thread(target=slow_headers, args=(a,)), threading.Thread(target=slow_body, args=(token, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(2)
    with open(api_log, errors="replace") as f:
        f.seek(log_offset)
        logged = [re.search(r"status=(\d+)", line).group(1) for line in f
                  if "path=/api/datasets/upload" in line and "status=" in line]
    left = sorted(set(store_files(STORAGE)) - files_before)
    dirs = [os.path.relpath(d, STORAGE) for d in empty_dirs(STORAGE)]
    closed = a.get("closed")
    check(closed is not None and closed <= SLOW_HEADER_LIMIT,
          f"4a: a connection sending a header byte every 2 s was not closed within {SLOW_HEADER_LIMIT:.0f} s "
          f"({a.get('sent')} bytes sent)")
    check(not left, f"4b: objects left by the abandoned upload: {left}")
    a_text = (f"closed after {closed:.1f} s ({a.get('how')}, {a['sent']} bytes sent)" if closed is not None
              else f"not closed in {SLOW_HEADER_LIMIT:.0f} s ({a.get('sent')} bytes sent)")
    ended = b.get("ended")
    b_text = (f"server gave up after {ended:.1f} s ({b.get('how')}{', ' + b['body'] if b.get('body') else ''})"
              if ended is not None else f"server still reading after {SLOW_BODY_SECONDS:.0f} s (we hung up)")
    figures(f"4 slow clients: (a) slow headers: {a_text}; (b) 10 MB body at 1 byte/s: {b_text}, "
            f"{b.get('sent')} body bytes sent, logged by the API as status {','.join(logged) or 'nothing'}; objects left after hanging up {len(left)}, empty upload folders {len(dirs)}")


# ---------------------------------------------------------------- scenario 5

def vm_rss(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def scenario_big_uploads(api):
    size = os.path.getsize(BIG_FILE)
    log(f"5. 20 concurrent uploads of {size / 1e6:.0f} MB, no worker running; the API restarted first")
    children.stop(api)
    api = start_api()
    token = login()
    time.sleep(1)
    samples = []
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            samples.append((time.monotonic(), vm_rss(api.pid)))
            stop.wait(0.1)

    before = 0
    for _ in range(5):
        before = max(before, vm_rss(api.pid))
        time.sleep(0.1)
    th = threading.Thread(target=sampler)
    th.start()
    t0 = time.monotonic()
    results = [None] * 20

    def upload(i):
        results[i] = curl_upload(BIG_FILE, timeout=900)

    ups = [threading.Thread(target=upload, args=(i,)) for i in range(20)]
    for t in ups:
        t.start()
    for t in ups:
        t.join()
    wall = time.monotonic() - t0
    time.sleep(1)
    stop.set()
    th.join()
    after = vm_rss(api.pid)
    peak = max(s[1] for s in samples)
    codes = [r[0] for r in results]
    check(codes == [202] * 20, f"5: statuses {codes}; not 202: {[r[2][:200] for r in results if r[0] != 202][:3]}")
    job_ids = [json.loads(r[2])["job_id"] for r in results if r[0] == 202]
    want = sha256(BIG_FILE)
    intact = 0
    for job_id in job_ids:
        rel = sql1(f"SELECT payload->>'object_path' FROM jobs WHERE id = '{job_id}'")
        path = os.path.join(STORAGE, rel) if rel else None
        if path and os.path.exists(path) and os.path.getsize(path) == size and sha256(path) == want:
            intact += 1
    check(intact == len(job_ids), f"5: {len(job_ids) - intact} stored uploads differ from the file")
    orphans = orphan_objects(STORAGE)
    check(not orphans, f"5: orphan objects in the store after every scenario: {orphans}")
    mb = 1024 * 1024
    figures(f"5 20 x {size / 1e6:.0f} MB uploads: statuses {' '.join(map(str, codes))}; API VmRSS before {before / mb:.0f} MiB, "
            f"peak {peak / mb:.0f} MiB (+{(peak - before) / mb:.0f} MiB, {(peak - before) / mb / 20:.1f} MiB an upload), "
            f"after {after / mb:.0f} MiB; wall {wall:.1f} s ({20 * size / 1e6 / wall:.0f} MB/s); "
            f"stored intact {intact}/{len(job_ids)}; store orphans after all scenarios {len(orphans)}")
    return api


# ---------------------------------------------------------------- logs

def scan_logs():
    five, refused, panics, lines = 0, 0, 0, []
    for path in sorted({p.log for p in children.procs}):
        name = os.path.basename(path)[:-4]
        for line in open(path, errors="replace"):
            if "status=500" in line and "Read-only file system" in line:
                refused += 1  # scenario 3c's refused upload, as it should be
            elif "status=500" in line:
                five += 1
                lines.append(f"{name}: {line.strip()[:300]}")
            if "panicked" in line:
                panics += 1
                lines.append(f"{name}: {line.strip()[:300]}")
    check(five == 0 and panics == 0, f"logs: {five} response(s) 500, {panics} panic(s): {lines[:5]}")
    figures(f"logs: {len(children.procs)} processes, {len({p.log for p in children.procs})} logs; responses 500 logged {five} "
            f"(besides {refused} refused by the read-only store), panics {panics}")


def main():
    api = start_api()
    workers, _ = scenario_kills()
    scenario_pg_restart(workers)
    for w in workers:
        children.stop(w)  # drained: the next scenarios run no worker on this store
    scenario_store_full()
    scenario_slow_clients()
    api = scenario_big_uploads(api)
    scan_logs()
    figures(f"faults: {check.total} checks, {len(check.failed)} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        status = main()
    finally:
        children.stop_all()
    sys.exit(status)
