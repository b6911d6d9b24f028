#!/usr/bin/env bash
# Rehydration benchmark: a generated 1,000,000-point dataset is loaded
# through the service, archived into the object store, and brought back by
# a read; the rehydrate job's time is printed beside `ogr2ogr -f
# PostgreSQL` loading the same data into the same database (goal: at most
# half of ogr2ogr's time).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

serve_points

OGR_SECONDS=$(ogr2ogr_load_seconds "$GPKG")

python3 bench/rehydrate_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$OGR_SECONDS" "$POINTS"
