#!/usr/bin/env bash
# Worker scaling benchmark: the same batch of I/O-bound jobs (URL imports
# from a deliberately slow server on loopback) run by one worker, then by
# two; prints both times and the speed-up (goal: at least 1.8x).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

SLOW_PORT=${BENCH_SLOW_PORT:-18099}
JOBS=${JOBS:-16}

ensure_packages
start_cluster "$DIR" "$PORT"
trap 'kill ${API:-} ${WORKER:-} ${SLOW:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
fresh_bench_database

# Each file trickles out over about two seconds.
python3 bench/slow_server.py "$SLOW_PORT" &
SLOW=$!
export OUTBOUND_ALLOWED_HOSTS="127.0.0.1:$SLOW_PORT"
start_service
# The bench starts and stops workers itself.
kill "$WORKER"
wait "$WORKER" 2>/dev/null || true
python3 bench/workers_driver.py "http://$BIND_ADDR" "http://127.0.0.1:$SLOW_PORT" \
  "$CARGO_TARGET_DIR/release/catalog-worker" "$JOBS" "$WORK"
