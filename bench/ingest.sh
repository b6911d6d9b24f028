#!/usr/bin/env bash
# Ingest benchmark: upload-to-queryable of a generated 1,000,000-point
# GeoPackage through the service versus `ogr2ogr -f PostgreSQL` into the
# same database in the same run; also the worker's peak RSS and the queue's
# pickup latency on an idle system.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
cd "$ROOT"

POINTS=${POINTS:-1000000}
PORT=${CATALOG_BENCH_PG_PORT:-54331}
DIR="$ROOT/.data/bench-pg"
WORK="$ROOT/.data/bench"
mkdir -p "$WORK"

ensure_packages
start_cluster "$DIR" "$PORT"
trap 'kill ${API:-} ${WORKER:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
ensure_database "$PORT" bench

GPKG="$WORK/points_$POINTS.gpkg"
if [[ ! -s $GPKG ]]; then
  log "generating $GPKG (seeded)"
  python3 bench/gen_points.py "$POINTS" "$WORK/points_$POINTS.csv"
  ogr2ogr -f GPKG "$GPKG" "$WORK/points_$POINTS.csv" -oo X_POSSIBLE_NAMES=lon -oo Y_POSSIBLE_NAMES=lat \
    -oo KEEP_GEOM_COLUMNS=NO -oo AUTODETECT_TYPE=YES -a_srs EPSG:4326 -nln points -nlt POINT
fi

log "building (release)"
cargo build --release --bins -q
BIN=$CARGO_TARGET_DIR/release
export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/bench"
export JWT_SECRET=bench-secret-bench-secret-bench-secret
export STORAGE_URL="file://$WORK/storage"
export BIND_ADDR=127.0.0.1:${BENCH_API_PORT:-18080}
export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=Bench-Password-1
export RUST_LOG=${RUST_LOG:-warn,catalog_jobs=info}
rm -rf "$WORK/storage"
"$BIN/catalog-api" >"$WORK/api.log" 2>&1 &
API=$!
"$BIN/catalog-worker" >"$WORK/worker.log" 2>&1 &
WORKER=$!

log "ogr2ogr -f PostgreSQL (PG_USE_COPY=YES, key and GiST index)"
start=$(date +%s.%N)
PG_USE_COPY=YES ogr2ogr -f PostgreSQL "PG:host=127.0.0.1 port=$PORT user=catalog dbname=bench" "$GPKG" \
  -nln ogr2ogr_points -lco SPATIAL_INDEX=GIST -overwrite
end=$(date +%s.%N)
OGR_SECONDS=$(python3 -c "print(f'{$end - $start:.2f}')")

python3 bench/ingest_driver.py "http://$BIND_ADDR" "$GPKG" "$DATABASE_URL" "$WORKER" "$OGR_SECONDS" "$POINTS"
