#!/usr/bin/env bash
# Ten minutes of mixed load (bench/load_driver.py): item pages, vector
# tiles, catalog search, uploads with their job polling, against the
# release build over the seeded 1,000,000-point public collection, one API
# and one worker. Prints each route's requests, errors, p50 and p99, the
# error rate (goal 0), and the API's and worker's RSS over the second half
# (goal: flat, under 10% growth). LOAD_SECONDS shortens it.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

LOAD_SECONDS=${LOAD_SECONDS:-600}

# Sessions outlast the run, however long it is asked to be.
export ACCESS_TOKEN_TTL_SECONDS=$((LOAD_SECONDS + 3600))
serve_public_table
"$CARGO_TARGET_DIR/release/catalog-worker" >>"$WORK/worker.log" 2>&1 &
WORKER=$!

TOKEN=$(curl -sf --data-urlencode username=admin --data-urlencode password=Bench-Password-1 \
  "http://127.0.0.1:$API_PORT/api/auth/login" | python3 -c "import json, sys; print(json.load(sys.stdin)['access_token'])")
log "mixed load for $LOAD_SECONDS s"
python3 bench/load_driver.py "http://127.0.0.1:$API_PORT" "$TOKEN" "$COLLECTION" "$LOAD_SECONDS" "$API" "$WORKER"
