# Shared by the bench scripts: a fresh `bench` database on the bench
# cluster, the seeded test data, a release build of the service running
# against them, tipg beside it, and wrk. Sets the defaults below (a script
# may set its own after sourcing this, as bench/faults.sh does); expects
# TIPG_PORT, CONNECTIONS and DURATION for tipg and wrk.
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

# bench_gpkg [N]: the seeded N-point (default POINTS) GeoPackage, generated
# once; prints its path.
bench_gpkg() {
  local n=${1:-$POINTS}
  local gpkg="$WORK/points_$n.gpkg"
  if [[ ! -s $gpkg ]]; then
    log "generating $gpkg (seeded)"
    python3 bench/gen_points.py "$n" "$WORK/points_$n.csv"
    ogr2ogr -f GPKG "$gpkg" "$WORK/points_$n.csv" -oo X_POSSIBLE_NAMES=lon -oo Y_POSSIBLE_NAMES=lat \
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
  python3 -c "print(f'{$end - $start:.2f}')"
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

# measure URL [WRK_ARG ...]: wrk's requests/s, 99th-percentile latency and
# non-2xx count.
measure() {
  local url=$1 out rps p99 non2xx
  shift
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  # Requests wrk gave up on (after its 2 s timeout) have no latency; when
  # they are 1% or more of all, the p99 is at least that timeout.
  local answered timeouts
  answered=$(awk '/requests in/ {print $1}' <<<"$out")
  timeouts=$(awk '/Socket errors/ {for (i = 1; i < NF; i++) if ($i == "timeout") print $(i + 1)}' <<<"$out")
  if ((${timeouts:-0} > 0 && ${timeouts:-0} * 100 >= ${answered:-0} + ${timeouts:-0})); then
    p99=">=2.00s"
  fi
  echo "$rps ${p99:-?} ${non2xx:-0}"
}

# measure_pair URL_OURS URL_PEER: `measure` of both servers over ROUNDS
# rounds (default 3) of DURATION/ROUNDS seconds each, alternating which
# goes first, so a drift of this shared machine's speed falls on both.
# Prints each server's median requests/s, median p99 and total non-2xx:
# "ours_rps ours_p99 ours_bad peer_rps peer_p99 peer_bad".
measure_pair() {
  local rounds=${ROUNDS:-3} round first second
  local -a ours=() peer=()
  local seconds=$(( (DURATION + rounds - 1) / rounds ))
  for ((round = 0; round < rounds; round++)); do
    if ((round % 2 == 0)); then first=$1 second=$2; else first=$2 second=$1; fi
    local a b
    a=$(DURATION=$seconds measure "$first")
    b=$(DURATION=$seconds measure "$second")
    if [[ $first == "$1" ]]; then ours+=("$a") peer+=("$b"); else ours+=("$b") peer+=("$a"); fi
  done
  python3 - "${ours[@]}" -- "${peer[@]}" <<'PY'
import statistics, sys
args = sys.argv[1:]
cut = args.index("--")
def seconds(p99):
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
    for unit in ("us", "ms", "s"):
        if p99.endswith(unit):
            return float(p99[: -len(unit)]) * units[unit]
    return float("nan")
def summary(runs):
    runs = [r.split() for r in runs]
    rps = statistics.median(float(r[0]) for r in runs)
    p99 = sorted((r[1] for r in runs), key=seconds)[len(runs) // 2]
    bad = sum(int(r[2]) for r in runs)
    return f"{rps:.2f} {p99} {bad}"
print(summary(args[:cut]), summary(args[cut + 1:]))
PY
}

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
