#!/usr/bin/env python3
"""Fails when the logs of a test run hold a secret.

Usage: secrets_in_logs.py LOG_DIR TESTS_DIR

LOG_DIR holds the API's and workers' logs of every test that started them
(the test harness copies them there, see `keep_logs` in tests/src/lib.rs).
Two kinds of secrets are looked for:

- every password, client secret, webhook secret and token the tests wrote
  as a literal in TESTS_DIR (found by the names they are given there);
- every credential this service mints, by its shape: access tokens (JWTs),
  API keys, refresh tokens, embed tokens, map share links, signed-link
  signatures, and any
  `password=`, `token=`, `secret=` or `Bearer` value.

Each finding prints its file, line number and what matched (the secret
itself cut short), so the leak can be found without spreading it further.
"""

import pathlib
import re
import sys

# Names under which the tests keep secrets: a JSON field, a form pair, an
# environment variable or a constant.
SECRET_NAME = r"[A-Za-z_]*(?:password|PASSWORD|secret|SECRET|token|TOKEN)[A-Za-z_]*"
LITERALS = [
    # "password": "…", ("password", "…"), "client_secret": "…"
    re.compile(r'"' + SECRET_NAME + r'"\s*[:,]\s*"([^"\s]{8,})"'),
    # const ADMIN_PASSWORD: &str = "…";
    re.compile(r"const " + SECRET_NAME + r': &str = "([^"\s]{8,})"'),
    # .env("JWT_SECRET", "…")
    re.compile(r'\.env\(\s*"' + SECRET_NAME + r'",\s*"([^"\s]{8,})"'),
]
# Values that are not secrets although they stand where one would.
NOT_SECRETS = {"too-short", "rotated-wrong"}

SHAPES = {
    "access token (JWT)": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
    "API key": re.compile(r"sdc_[0-9a-f]{16,}"),
    "refresh token": re.compile(r"rt_[0-9a-f]{16,}"),
    "embed token": re.compile(r"embed_[0-9a-f]{16,}"),
    "map share token": re.compile(r"/share[sd]/[0-9a-f]{32}"),
    "signed-link signature": re.compile(r"[?&]sig=[A-Za-z0-9_-]{8,}"),
    "credential in a query": re.compile(r"[?&](?:token|api_key|access_token|password|secret)=[^&\s\"']{6,}"),
    "bearer credential": re.compile(r"Bearer\s+[A-Za-z0-9._~+/-]{12,}"),
    "password field": re.compile(r"password[\"']?\s*[:=]\s*[\"']?[^\s\"',}]{6,}", re.IGNORECASE),
}


def test_literals(tests_dir: pathlib.Path) -> set[str]:
    found = set()
    for source in tests_dir.rglob("*.rs"):
        text = source.read_text(errors="replace")
        for pattern in LITERALS:
            found.update(pattern.findall(text))
    return found - NOT_SECRETS


def main() -> int:
    log_dir, tests_dir = map(pathlib.Path, sys.argv[1:3])
    logs = sorted(p for p in log_dir.glob("*.log") if p.is_file())
    literals = test_literals(tests_dir)
    if not literals:
        print(f"no secret literals found under {tests_dir}: the patterns no longer match the tests", file=sys.stderr)
        return 1
    findings = 0
    for log in logs:
        for number, line in enumerate(log.read_text(errors="replace").splitlines(), 1):
            hits = [f"a test secret ({s[:4]}…)" for s in literals if s in line]
            hits += [f"{kind} ({m.group(0)[:12]}…)" for kind, p in SHAPES.items() for m in [p.search(line)] if m]
            for hit in hits:
                findings += 1
                print(f"{log.name}:{number}: {hit}", file=sys.stderr)
    print(f"{len(logs)} logs, {len(literals)} test secrets and {len(SHAPES)} credential shapes checked: {findings} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
