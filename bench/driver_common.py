"""What the bench drivers share: calls to the running service, signing in
as the bench admin, uploads, waiting for jobs and reading the database."""
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ADMIN = {"username": "admin", "password": "Bench-Password-1"}


class Service:
    """The service at `base`, once it answers /api/health (a minute at most)."""

    def __init__(self, base, database_url=None):
        self.base, self.database_url, self.token = base, database_url, None
        for _ in range(600):
            try:
                self.call("GET", "/api/health")
                return
            except Exception:
                time.sleep(0.1)
        sys.exit(f"the API at {base} did not answer /api/health within a minute")

    def call(self, method, path, data=None, headers=None, body=None, form=None):
        """(status, headers, JSON body) of one request, as the admin once signed in."""
        headers = dict(headers or {})
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.base + path, method=method, data=data, headers=headers)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), json.loads(r.read() or b"null")

    def get(self, path):
        return self.call("GET", path)[2]

    def sign_in(self):
        self.token = self.call("POST", "/api/auth/login", form=ADMIN)[2]["access_token"]
        return self

    def upload(self, path):
        """Uploads a file with curl (as a browser would, streamed); the job's id."""
        out = subprocess.run(
            ["curl", "-sf", "-H", f"Authorization: Bearer {self.token}", "-F", f"file=@{path}",
             self.base + "/api/datasets/upload"],
            check=True, capture_output=True, text=True)
        return json.loads(out.stdout)["job_id"]

    def job(self, job_id):
        """The job once it has ended; exits unless it succeeded."""
        while True:
            job = self.get(f"/api/jobs/{job_id}")
            if job["status"] in ("succeeded", "failed", "cancelled"):
                if job["status"] != "succeeded":
                    sys.exit(f"job {job_id} {job['status']}: {job.get('error')}")
                return job
            time.sleep(0.02)

    def psql(self, sql):
        return subprocess.run(["psql", self.database_url, "-tAc", sql], check=True, capture_output=True,
                              text=True).stdout.strip()

    def job_seconds(self, job_id):
        """How long the job ran, from the worker's start to its end."""
        return float(self.psql(f"SELECT extract(epoch FROM finished_at - started_at) FROM jobs WHERE id = '{job_id}'"))


class Database:
    """psql against `url`: rows as lists of text, or the first value."""

    def __init__(self, url):
        self.url = url

    def rows(self, query):
        out = subprocess.run(["psql", self.url, "-XAtq", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", query],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"psql: {out.stderr.strip()}")
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def value(self, query):
        rows = self.rows(query)
        return rows[0][0] if rows else None
