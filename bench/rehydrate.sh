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

POINTS=${POINTS:-1000000}
PORT=${CATALOG_BENCH_PG_PORT:-54331}
DIR="$ROOT/.data/bench-pg"
WORK="$ROOT/.data/bench"
API_PORT=${BENCH_API_PORT:-18080}
mkdir -p "$WORK"

ensure_packages
start_cluster "$DIR" "$PORT"
trap 'kill ${API:-} ${WORKER:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
fresh_bench_database
GPKG=$(bench_gpkg)
start_service

log "ogr2ogr -f PostgreSQL (PG_USE_COPY=YES, key and GiST index)"
start=$(date +%s.%N)
PG_USE_COPY=YES ogr2ogr -f PostgreSQL "PG:host=127.0.0.1 port=$PORT user=catalog dbname=bench" "$GPKG" \
  -nln ogr2ogr_points -lco SPATIAL_INDEX=GIST -overwrite
end=$(date +%s.%N)
OGR_SECONDS=$(python3 -c "print(f'{$end - $start:.2f}')")

python3 bench/rehydrate_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$OGR_SECONDS" "$POINTS"
