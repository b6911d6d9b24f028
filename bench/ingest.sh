#!/usr/bin/env bash
# Ingest benchmark: upload-to-queryable of a generated 1,000,000-point
# GeoPackage through the service versus `ogr2ogr -f PostgreSQL` into the
# same database in the same run; also the worker's peak RSS and the queue's
# pickup latency on an idle system; and the same file with 1% of its rows
# off the world, whose quarantine and report cost against the clean load
# (docs/ingest-report.md).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

serve_points

OGR_SECONDS=$(ogr2ogr_load_seconds "$GPKG")

BAD_GPKG=$(bench_gpkg "$POINTS" bad)

python3 bench/ingest_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$WORKER" "$OGR_SECONDS" "$POINTS" "$BAD_GPKG"
