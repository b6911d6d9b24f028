#!/usr/bin/env bash
# History benchmark: a generated 1,000,000-point dataset is loaded through
# the service (its ingest job timed), edited 100 times one feature at a
# time through OGC API Features Part 4, and its first version restored.
# Prints what the 100 versions added to the database (goal: under 5 MB)
# and the restore job's time beside the ingest job's (goal: at most 1).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

serve_points

python3 bench/history_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$POINTS"
