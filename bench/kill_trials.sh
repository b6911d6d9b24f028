#!/usr/bin/env bash
# Kill trials: how soon a SIGKILLed worker's job runs again elsewhere.
# TRIALS times (20), a URL import whose source stalls on its first request
# runs on one of two workers; that worker is SIGKILLed at a random moment
# of its heartbeat and replaced. Prints, for each trial, the seconds from
# the kill until the other worker holds the job and until the job
# succeeded, then the median and maximum of both against the goal: the job
# runs again in under 10 s (median), never over 15 s. Exit status 1 when
# the goal or a check fails.
#   BURNERS=4 bench/kill_trials.sh   the same on a machine loaded by 4 `yes`
# The debug binaries, like bench/faults.sh: `cargo build --bins` first (or
# KILL_TRIALS_BUILD=1). Its own cluster (.data/kill-trials-pg, port 54333)
# and API (127.0.0.1:18140). Takes about 15 s a trial.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

PORT=${KILL_TRIALS_PG_PORT:-54333}
DIR="$ROOT/.data/kill-trials-pg"
WORK="$ROOT/.data/kill-trials"
API_PORT=${KILL_TRIALS_API_PORT:-18140}
mkdir -p "$WORK"

ensure_packages
require_debug_bins KILL_TRIALS_BUILD

start_cluster "$DIR" "$PORT"
DRIVER=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $DRIVER ]] && kill -0 "$DRIVER" 2>/dev/null; then
    kill "$DRIVER" 2>/dev/null || true
    wait "$DRIVER" 2>/dev/null || true
  fi
  stop_cluster "$DIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS kill_trials WITH (FORCE)" >/dev/null
ensure_database "$PORT" kill_trials
rm -rf "$WORK/storage" "$WORK"/*.log
mkdir -p "$WORK/storage"

export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/kill_trials"
export JWT_SECRET=kill-trials-secret-kill-trials-secret-0123
export STORAGE_URL="file://$WORK/storage"
export BIND_ADDR=127.0.0.1:$API_PORT PUBLIC_URL=http://127.0.0.1:$API_PORT
export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=Kill-Trials-Password-9
export RATE_LIMIT_PER_MINUTE=1000000000
export RUST_LOG=${RUST_LOG:-info}
log "migrating"
"$BIN/catalog-api" migrate >"$WORK/migrate.log" 2>&1

export KILL_TRIALS_BIN=$BIN KILL_TRIALS_WORK=$WORK KILL_TRIALS_API_PORT=$API_PORT
python3 bench/kill_trials_driver.py &
DRIVER=$!
status=0
wait "$DRIVER" || status=$?
DRIVER=""
exit "$status"
