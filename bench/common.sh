# Shared by the bench scripts: a fresh `bench` database on the bench
# cluster, the seeded test data, a release build of the service running
# against them, tipg beside it, and wrk (bench/wrk.sh). Sets the defaults
# below (a script may set its own after sourcing this, as bench/faults.sh
# does); expects TIPG_PORT, CONNECTIONS and DURATION for tipg and wrk.
# shellcheck shell=bash

# The bench cluster, its work folder, the service's port and the seeded
# table's size.
POINTS=${POINTS:-1000000}
PORT=${CATALOG_BENCH_PG_PORT:-54331}
DIR="$ROOT/.data/bench-pg"
WORK="$ROOT/.data/bench"
API_PORT=${BENCH_API_PORT:-18080}
mkdir -p "$WORK"

# fresh_bench_database: (re)creates the bench database on a running cluster.
fresh_bench_database() {
  psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
  ensure_database "$PORT" bench
}

# bench_gpkg [N] [bad]: the seeded N-point (default POINTS) GeoPackage,
# generated once; with `bad`, every hundredth point lies off the world
# (latitude 95). Prints its path.
bench_gpkg() {
  local n=${1:-$POINTS} variant=${2:-}
  local name="points_$n${variant:+_$variant}"
  local gpkg="$WORK/$name.gpkg"
  if [[ ! -s $gpkg ]]; then
    log "generating $gpkg (seeded)"
    python3 bench/gen_points.py "$n" "$WORK/$name.csv" $variant
    ogr2ogr -f GPKG "$gpkg" "$WORK/$name.csv" -oo X_POSSIBLE_NAMES=lon -oo Y_POSSIBLE_NAMES=lat \
      -oo KEEP_GEOM_COLUMNS=NO -oo AUTODETECT_TYPE=YES -a_srs EPSG:4326 -nln points -nlt POINT >&2
  fi
  echo "$gpkg"
}

# ogr2ogr_load_seconds GPKG: the peer's figure, seconds for `ogr2ogr -f
# PostgreSQL` (COPY, key and GiST index) to load GPKG into the bench database.
ogr2ogr_load_seconds() {
  log "ogr2ogr -f PostgreSQL (PG_USE_COPY=YES, key and GiST index)"
  local start end
  start=$(date +%s.%N)
  PG_USE_COPY=YES ogr2ogr -f PostgreSQL "PG:host=127.0.0.1 port=$PORT user=catalog dbname=bench" "$1" \
    -nln ogr2ogr_points -lco SPATIAL_INDEX=GIST -overwrite >&2
  end=$(date +%s.%N)
  python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$start" "$end"
}

# start_service: builds in release mode and starts the API and one worker
# (their pids in API and WORKER).
start_service() {
  log "building (release)"
  cargo build --release --bins -q
  local bin=$CARGO_TARGET_DIR/release
  export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/bench"
  export JWT_SECRET=bench-secret-bench-secret-bench-secret
  export STORAGE_URL="file://$WORK/storage"
  export BIND_ADDR=127.0.0.1:$API_PORT PUBLIC_URL=http://127.0.0.1:$API_PORT
  export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=Bench-Password-1
  export RUST_LOG=${RUST_LOG:-warn,catalog_jobs=info}
  # The load comes from one address: raise the per-address limits out of its way.
  export RATE_LIMIT_PER_MINUTE=1000000000 RATE_LIMIT_TILES_PER_MINUTE=1000000000
  rm -rf "$WORK/storage"
  "$bin/catalog-api" >"$WORK/api.log" 2>&1 &
  API=$!
  "$bin/catalog-worker" >"$WORK/worker.log" 2>&1 &
  WORKER=$!
}

# require_debug_bins BUILD_VAR: BIN, the folder of the binaries to run
# (CATALOG_BIN_DIR, else the debug build), built first when $BUILD_VAR is
# 1; exits, saying how to build them, when they are missing.
require_debug_bins() {
  BIN=${CATALOG_BIN_DIR:-$CARGO_TARGET_DIR/debug}
  if [[ ${!1:-} == 1 ]]; then
    log "building (debug)"
    cargo build --bins -q
  fi
  local bin
  for bin in catalog-api catalog-worker; do
    if [[ ! -x $BIN/$bin ]]; then
      echo "$BIN/$bin is missing: run cargo build --bins (or $1=1 $0)" >&2
      exit 1
    fi
  done
}

# serve_points: starts the bench cluster on a fresh database and the
# service on it (pids in API and WORKER; all stop on exit), with the seeded
# points' GeoPackage in GPKG.
serve_points() {
  ensure_packages
  start_cluster "$DIR" "$PORT"
  trap 'kill ${API:-} ${WORKER:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
  fresh_bench_database
  GPKG=$(bench_gpkg)
  start_service
}

# serve_public_table: starts the bench cluster and the service, and loads
# the seeded points through it as a public collection (COLLECTION, TABLE).
# Pids in API and WORKER (stopped once loaded); the extra pids in EXTRA_PIDS
# and everything else stop on exit.
serve_public_table() {
  ensure_packages wrk
  start_cluster "$DIR" "$PORT"
  trap 'kill ${API:-} ${WORKER:-} ${TIPG:-} ${EXTRA_PIDS:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
  fresh_bench_database
  local gpkg
  gpkg=$(bench_gpkg)
  start_service

  log "loading the table through the service"
  read -r COLLECTION TABLE < <(python3 bench/load_public.py "http://127.0.0.1:$API_PORT" "$gpkg" "$DATABASE_URL")
  kill "$WORKER"
}

# serve_public_table_beside_tipg [VAR=value ...]: serve_public_table, then
# tipg (PyPI) on TIPG_PORT over the same table with the given extra
# settings (pid in TIPG).
serve_public_table_beside_tipg() {
  [[ -x $ROOT/.data/bench-venv/bin/python ]] || python3 -m venv "$ROOT/.data/bench-venv"
  "$ROOT/.data/bench-venv/bin/pip" install -q --disable-pip-version-check tipg uvicorn
  serve_public_table

  log "starting tipg on 127.0.0.1:$TIPG_PORT"
  env DATABASE_URL="postgresql://catalog@127.0.0.1:$PORT/bench" TIPG_DB_SCHEMAS='["data"]' "$@" \
    "$ROOT/.data/bench-venv/bin/uvicorn" tipg.main:app --host 127.0.0.1 --port "$TIPG_PORT" --log-level warning \
    >"$WORK/tipg.log" 2>&1 &
  TIPG=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$TIPG_PORT/collections" >/dev/null && break; sleep 0.3; done
}

# measure, measure_pair and wrk_notes: wrk's figures as measurement lines.
source "$(dirname "${BASH_SOURCE[0]}")/wrk.sh"

# restart_api [VAR=value ...]: stops the API and starts it again with these
# settings added to the environment start_service set.
restart_api() {
  kill "$API"
  wait "$API" 2>/dev/null || true
  env "$@" "$CARGO_TARGET_DIR/release/catalog-api" >>"$WORK/api.log" 2>&1 &
  API=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$API_PORT/api/health" >/dev/null && return; sleep 0.1; done
  echo "the API did not come back" >&2
  exit 1
}

# mvt_features URL Z X Y: how many features GDAL's MVT driver reads in the tile.
mvt_features() {
  local tile="$WORK/check.pbf"
  : >"$tile"
  curl -sf "$1" -o "$tile" || true
  if [[ ! -s $tile ]]; then
    echo 0
    return
  fi
  ogrinfo -ro -al -oo "Z=$2" -oo "X=$3" -oo "Y=$4" "$tile" | grep -c '^OGRFeature(' || true
}
