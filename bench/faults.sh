#!/usr/bin/env bash
# Fault-injection benchmark: runs the debug binaries against their own
# PostgreSQL cluster and breaks things under them. Five scenarios, one
# line of figures each, then `faults: N checks, M failed` (exit status 1
# when a check failed):
#   1. workers SIGKILLed (and replaced) every 1-4 s during 20 ingests;
#   2. PostgreSQL stopped for 7 s under read load, and the workers after it;
#   3. the object store full, then read-only (a 2 MB tmpfs; root only, else
#      skipped);
#   4. slow clients: headers at one byte every 2 s, a body at 1 byte/s;
#   5. 20 concurrent 100 MB uploads: the API's resident memory.
# The scenarios themselves are in bench/faults_driver.py. Nothing is built
# here: run `cargo build --bins` first (or FAULTS_BUILD=1 to have it done).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

PORT=${FAULTS_PG_PORT:-54332}
DIR="$ROOT/.data/faults-pg"
WORK="$ROOT/.data/faults"
API_PORT=${FAULTS_API_PORT:-18130}
# Scenario 1 ingests this many points per file (about 3 s each, debug build).
POINTS=${FAULTS_POINTS:-200000}
# Scenario 5's upload: about 105 MB of CSV.
BIG_ROWS=${FAULTS_BIG_ROWS:-1450000}
MNT="$WORK/tmpfs-store"
mkdir -p "$WORK"

ensure_packages
require_debug_bins FAULTS_BUILD

start_cluster "$DIR" "$PORT"

DRIVER=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $DRIVER ]] && kill -0 "$DRIVER" 2>/dev/null; then
    kill "$DRIVER" 2>/dev/null || true
    wait "$DRIVER" 2>/dev/null || true
  fi
  # The driver stops its own processes; should it have died first, the
  # ones it listed as still running go too (only if they are our binaries).
  if [[ -s $WORK/children.pids ]]; then
    while read -r pid; do
      if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "^$BIN/catalog-"; then
        kill -9 "$pid" 2>/dev/null || true
      fi
    done <"$WORK/children.pids"
    rm -f "$WORK/children.pids"
  fi
  if mountpoint -q "$MNT" 2>/dev/null; then
    umount "$MNT" || umount -l "$MNT" || true
  fi
  # Scenario 5 leaves 2 GB of uploads: the database goes with the next
  # run anyway.
  rm -rf "$WORK/storage"
  rm -f "$WORK/auth.header"
  stop_cluster "$DIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A fresh database and object store on every run.
psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS faults WITH (FORCE)" >/dev/null
ensure_database "$PORT" faults
rm -rf "$WORK/storage" "$WORK/worker-tmp" "$WORK"/*.log
mkdir -p "$WORK/storage" "$WORK/worker-tmp"

# Test data, generated once (seeded).
bench_gpkg "$POINTS" >/dev/null
bench_gpkg 1000 >/dev/null
if [[ ! -s $WORK/big_$BIG_ROWS.csv ]]; then
  log "generating $WORK/big_$BIG_ROWS.csv (seeded)"
  python3 bench/gen_points.py "$BIG_ROWS" "$WORK/big_$BIG_ROWS.csv"
fi
if [[ ! -s $WORK/mid_70000.csv ]]; then
  python3 bench/gen_points.py 70000 "$WORK/mid_70000.csv"
fi
if [[ ! -s $WORK/small.tif ]]; then
  gdal_create -q -of GTiff -outsize 256 256 -bands 1 -ot Byte -burn 7 -a_srs EPSG:4326 \
    -a_ullr 0 10 10 0 "$WORK/small.tif"
fi

export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/faults"
export JWT_SECRET=faults-secret-faults-secret-faults-secret-0123
export STORAGE_URL="file://$WORK/storage"
export BIND_ADDR=127.0.0.1:$API_PORT PUBLIC_URL=http://127.0.0.1:$API_PORT
export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=Faults-Password-Strong-9
export RATE_LIMIT_PER_MINUTE=1000000000 RATE_LIMIT_TILES_PER_MINUTE=1000000000
# Above scenario 5's 105 MB file (the default, 2 GiB, is too; set for clarity).
export MAX_UPLOAD_BYTES=209715200
export RUST_LOG=${RUST_LOG:-info}
log "migrating"
"$BIN/catalog-api" migrate >"$WORK/migrate.log" 2>&1

export FAULTS_BIN=$BIN FAULTS_WORK=$WORK FAULTS_PG_DIR=$DIR FAULTS_PG_BIN=$PG_BIN FAULTS_PG_PORT=$PORT
export FAULTS_API_PORT=$API_PORT FAULTS_POINTS=$POINTS FAULTS_BIG_FILE=$WORK/big_$BIG_ROWS.csv FAULTS_MNT=$MNT
python3 bench/faults_driver.py &
DRIVER=$!
status=0
wait "$DRIVER" || status=$?
DRIVER=""
exit "$status"
