#!/usr/bin/env bash
# Ingest benchmark: upload-to-queryable of a generated 1,000,000-point
# GeoPackage through the service versus `ogr2ogr -f PostgreSQL` into the
# same database in the same run; also the worker's peak RSS and the queue's
# pickup latency on an idle system.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

serve_points

OGR_SECONDS=$(ogr2ogr_load_seconds "$GPKG")

python3 bench/ingest_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$WORKER" "$OGR_SECONDS" "$POINTS"
