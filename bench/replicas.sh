#!/usr/bin/env bash
# Scale-out load on one machine: the bench cluster as primary, a streaming
# replica of it made with `pg_basebackup -R`, two API processes reading
# from the replica (DATABASE_READ_URLS) and sharing Redis, two workers.
# bench/load_driver.py's mix runs against each API for LOAD_SECONDS (600 by
# default): anonymous item pages, tiles and searches, signed-in uploads,
# job polling and deletes. Prints each driver's table, then the primary's
# share of the read routes' reads (goal: 0 errors, share under 10%).
#
# Then the primary is stopped for OUTAGE_SECONDS (20) under a read and
# write load (bench/replicas_outage.py): public reads must keep answering
# (goal: no failed read), writes answer 503 with Retry-After, and the time
# writes take to succeed once the primary is back is printed (goal: 2 s).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

LOAD_SECONDS=${LOAD_SECONDS:-600}
OUTAGE_SECONDS=${OUTAGE_SECONDS:-20}
SECOND_API_PORT=${BENCH_SECOND_API_PORT:-18090}
REPLICA_PORT=${BENCH_REPLICA_PORT:-54332}
REDIS_PORT=${BENCH_REDIS_PORT:-16379}
REPLICA_DIR="$WORK/replica-pg"

ensure_packages redis-server
export ACCESS_TOKEN_TTL_SECONDS=$((LOAD_SECONDS + 3600))
serve_public_table

log "making a streaming replica (pg_basebackup -R) on port $REPLICA_PORT"
as_pg "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -m immediate stop >/dev/null 2>&1 || true
rm -rf "$REPLICA_DIR"
mkdir -p "$REPLICA_DIR"
if [[ $(id -u) == 0 ]]; then chown postgres: "$REPLICA_DIR"; fi
chmod 700 "$REPLICA_DIR"
as_pg pg_basebackup -h 127.0.0.1 -p "$PORT" -U catalog -D "$REPLICA_DIR" -R -X stream -c fast
echo "port = $REPLICA_PORT" | as_pg tee -a "$REPLICA_DIR/postgresql.conf" >/dev/null
# Queries on the replica hold back the primary's clean-up rather than being
# cancelled by its replay, or holding replay back (docs/operations.md).
echo "hot_standby_feedback = on" | as_pg tee -a "$REPLICA_DIR/postgresql.conf" >/dev/null
echo "unix_socket_directories = '$REPLICA_DIR'" | as_pg tee -a "$REPLICA_DIR/postgresql.conf" >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -l "$REPLICA_DIR/server.log" -w -t 120 start >/dev/null
trap 'kill ${API:-} ${WORKER:-} ${EXTRA_PIDS:-} 2>/dev/null || true; as_pg "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -m immediate stop >/dev/null 2>&1; stop_cluster "$DIR"' EXIT

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
EXTRA_PIDS+=" $!"

SCALE_OUT=(DATABASE_READ_URLS="postgres://catalog@127.0.0.1:$REPLICA_PORT/bench" REDIS_URL="redis://127.0.0.1:$REDIS_PORT")
restart_api "${SCALE_OUT[@]}"
env "${SCALE_OUT[@]}" BIND_ADDR="127.0.0.1:$SECOND_API_PORT" PUBLIC_URL="http://127.0.0.1:$SECOND_API_PORT" \
  "$CARGO_TARGET_DIR/release/catalog-api" >>"$WORK/api2.log" 2>&1 &
SECOND_API=$!
EXTRA_PIDS+=" $SECOND_API"
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$SECOND_API_PORT/api/health" >/dev/null && break; sleep 0.1; done
WORKERS=()
for n in 1 2; do
  "$CARGO_TARGET_DIR/release/catalog-worker" >>"$WORK/worker$n.log" 2>&1 &
  WORKERS+=("$!")
  EXTRA_PIDS+=" $!"
done

TOKEN=$(curl -sf --data-urlencode username=admin --data-urlencode password=Bench-Password-1 \
  "http://127.0.0.1:$API_PORT/api/auth/login" | python3 -c "import json, sys; print(json.load(sys.stdin)['access_token'])")
# Readers are the public; uploaders sign in.
export LOAD_ANONYMOUS_READS=1
log "mixed load for $LOAD_SECONDS s against each API process"
status=0
python3 bench/load_driver.py "http://127.0.0.1:$API_PORT" "$TOKEN" "$COLLECTION" "$LOAD_SECONDS" "$API" "${WORKERS[0]}" \
  >"$WORK/load1.txt" 2>&1 &
first=$!
python3 bench/load_driver.py "http://127.0.0.1:$SECOND_API_PORT" "$TOKEN" "$COLLECTION" "$LOAD_SECONDS" "$SECOND_API" "${WORKERS[1]}" \
  >"$WORK/load2.txt" 2>&1 || status=1
wait "$first" || status=1
echo "== API 1"; cat "$WORK/load1.txt"
echo "== API 2"; cat "$WORK/load2.txt"

python3 - "$TOKEN" "http://127.0.0.1:$API_PORT" "http://127.0.0.1:$SECOND_API_PORT" <<'PY' || status=1
import sys, urllib.request
token, *bases = sys.argv[1:]
totals = {"primary": 0.0, "replica": 0.0}
for base in bases:
    request = urllib.request.Request(base + "/api/metrics", headers={"Authorization": f"Bearer {token}"})
    for line in urllib.request.urlopen(request).read().decode().splitlines():
        for target in totals:
            if line.startswith(f'catalog_db_reads_total{{target="{target}"}}'):
                totals[target] += float(line.rsplit(" ", 1)[1])
share = totals["primary"] / max(sum(totals.values()), 1)
print(f"reads: primary {totals['primary']:.0f}, replica {totals['replica']:.0f}; "
      f"primary share {share:.1%} (goal under 10%: {'ok' if share < 0.10 else 'MISSED'})")
sys.exit(0 if share < 0.10 else 1)
PY

log "stopping the primary for $OUTAGE_SECONDS s under load"
AS_PG=""
if [[ $(id -u) == 0 ]]; then AS_PG="runuser -u postgres --"; fi
python3 bench/replicas_outage.py "$TOKEN" "$COLLECTION" "$OUTAGE_SECONDS" \
  "http://127.0.0.1:$API_PORT" "http://127.0.0.1:$SECOND_API_PORT" \
  "$AS_PG $PG_BIN/pg_ctl -D $DIR -m immediate stop" \
  "$AS_PG $PG_BIN/pg_ctl -D $DIR -l $DIR/server.log -w -t 60 start" || status=1
exit $status
