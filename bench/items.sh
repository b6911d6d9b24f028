#!/usr/bin/env bash
# Items benchmark: the same 1,000,000-point table served by this service and
# by tipg (from PyPI, on loopback) in the same run, driven by wrk with the
# same request mix, plus pgbench running each mix's page query directly
# against PostgreSQL as the ceiling.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONNECTIONS=${CONNECTIONS:-8}
TIPG_PORT=${BENCH_TIPG_PORT:-18081}

serve_public_table_beside_tipg

OURS="http://127.0.0.1:$API_PORT/api/collections/$COLLECTION/items"
THEIRS="http://127.0.0.1:$TIPG_PORT/collections/data.$TABLE/items"
FILTER="filter=category%3D%27park%27"
MERCATOR="crs=http://www.opengis.net/def/crs/EPSG/0/3857"
# Sorting on an indexed column: the index a user who sorts by it makes.
psql -h 127.0.0.1 -p "$PORT" -U catalog -d bench -qc "CREATE INDEX IF NOT EXISTS bench_value ON data.\"$TABLE\" (value)"
psql -h 127.0.0.1 -p "$PORT" -U catalog -d bench -qc "ANALYZE data.\"$TABLE\""
# The cursor a `next` link gives half way through the sorted table.
DEEP_ROW=$(psql -h 127.0.0.1 -p "$PORT" -U catalog -d bench -Atc \
  "SELECT value::text || '|' || gid FROM data.\"$TABLE\" ORDER BY value, gid OFFSET 500000 LIMIT 1")
DEEP_VALUE=${DEEP_ROW%|*} DEEP_GID=${DEEP_ROW#*|}
DEEP_CURSOR=$(python3 -c 'import base64, json, sys; print(base64.urlsafe_b64encode(json.dumps({"values": [sys.argv[1]], "key": int(sys.argv[2])}).encode()).decode().rstrip("="))' "$DEEP_VALUE" "$DEEP_GID")
declare -A OUR_URL=(
  [first]="$OURS?limit=100"
  [bbox]="$OURS?limit=100&bbox=-10,40,10,50"
  [filter]="$OURS?limit=100&$FILTER"
  [deep]="$OURS?limit=100&after_gid=500000"
  [crs_first]="$OURS?limit=100&$MERCATOR"
  [crs_bbox]="$OURS?limit=100&bbox=-10,40,10,50&$MERCATOR"
  [crs_deep]="$OURS?limit=100&after_gid=500000&$MERCATOR"
  [sort_first]="$OURS?limit=100&sortby=value"
  [sort_bbox]="$OURS?limit=100&bbox=-10,40,10,50&sortby=value"
  [sort_deep]="$OURS?limit=100&sortby=value&cursor=$DEEP_CURSOR"
)
declare -A TIPG_URL=(
  [first]="$THEIRS?limit=100"
  [bbox]="$THEIRS?limit=100&bbox=-10,40,10,50"
  [filter]="$THEIRS?limit=100&$FILTER"
  [deep]="$THEIRS?limit=100&offset=500000"
  [crs_first]="$THEIRS?limit=100&$MERCATOR"
  [crs_bbox]="$THEIRS?limit=100&bbox=-10,40,10,50&$MERCATOR"
  [crs_deep]="$THEIRS?limit=100&offset=500000&$MERCATOR"
  [sort_first]="$THEIRS?limit=100&sortby=value"
  [sort_bbox]="$THEIRS?limit=100&bbox=-10,40,10,50&sortby=value"
  [sort_deep]="$THEIRS?limit=100&sortby=value&offset=500000"
)
# The plain mix each CRS or sorted mix is held to (within 20%).
declare -A PLAIN=([crs_first]=first [crs_bbox]=bbox [crs_deep]=deep [sort_first]=first [sort_bbox]=bbox [sort_deep]=deep)
FEATURE="json_build_object('type','Feature','id',t.gid,'geometry',ST_AsGeoJSON(t.geom)::json,'properties',json_build_object('id',t.id,'name',t.name,'category',t.category,'value',t.value,'count',t.count,'observed',t.observed))::text"
declare -A PAGE_SQL=(
  [first]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t ORDER BY t.gid LIMIT 101;"
  [bbox]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE ST_Intersects(t.geom, ST_MakeEnvelope(-10,40,10,50,4326)) ORDER BY t.gid LIMIT 101;"
  [filter]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE t.category = 'park' ORDER BY t.gid LIMIT 101;"
  [deep]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE t.gid > 500000 ORDER BY t.gid LIMIT 101;"
)
# In EPSG:3857 as the service writes it: millimetres, no `crs` member.
MERCATOR_GEOMETRY="ST_AsGeoJSON(ST_Transform(t.geom, 3857), 3, 0)"
PAGE_SQL[crs_first]="${PAGE_SQL[first]//ST_AsGeoJSON(t.geom)/$MERCATOR_GEOMETRY}"
PAGE_SQL[crs_bbox]="${PAGE_SQL[bbox]//ST_AsGeoJSON(t.geom)/$MERCATOR_GEOMETRY}"
PAGE_SQL[crs_deep]="${PAGE_SQL[deep]//ST_AsGeoJSON(t.geom)/$MERCATOR_GEOMETRY}"
PAGE_SQL[sort_first]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t ORDER BY t.value, t.gid LIMIT 101;"
PAGE_SQL[sort_bbox]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE ST_Intersects(t.geom, ST_MakeEnvelope(-10,40,10,50,4326)) ORDER BY t.value, t.gid LIMIT 101;"
# The keyset condition the service writes for the cursor.
PAGE_SQL[sort_deep]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE (t.value > $DEEP_VALUE OR (t.value = $DEEP_VALUE AND t.gid > $DEEP_GID)) AND t.value >= $DEEP_VALUE ORDER BY t.value, t.gid LIMIT 101;"

declare -A OUR_RPS
printf '\n%-10s %12s %10s %12s %10s %8s %12s %10s %s\n' mix "ours req/s" "ours p99" "tipg req/s" "tipg p99" ratio "pgbench tps" "ours/db" "goal (>=5x, lower p99)"
for mix in first crs_first sort_first bbox crs_bbox sort_bbox deep crs_deep sort_deep filter; do
  curl -sf "${OUR_URL[$mix]}" >/dev/null || { echo "our $mix request failed"; exit 1; }
  curl -sf "${TIPG_URL[$mix]}" >/dev/null || echo "tipg $mix request failed" >&2
  # Warm-up first: every pooled connection runs the prepared page query
  # many more than the five times after which PostgreSQL may switch to a
  # generic plan, so the measured run sees the plan steady traffic gets.
  DURATION=$WARMUP measure "${OUR_URL[$mix]}" >/dev/null
  DURATION=$WARMUP measure "${TIPG_URL[$mix]}" >/dev/null
  # Measurement lines (bench/wrk.sh): "-" where wrk gave no figure, a p99
  # of ">2s" where requests timed out.
  ours_m=$(measure "${OUR_URL[$mix]}")
  tipg_m=$(measure "${TIPG_URL[$mix]}")
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r tipg_rps tipg_p99 _ <<<"$tipg_m"
  echo "${PAGE_SQL[$mix]}" >"$WORK/page_$mix.sql"
  # An aborted pgbench (it exits 2) leaves no tps: "-", not a stopped bench.
  db_tps=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U catalog -c "$CONNECTIONS" -j 2 -T "$DURATION" -f "$WORK/page_$mix.sql" bench 2>/dev/null |
    awk '/^tps/ {print $3; exit}') || true
  ratio=$(python3 bench/wrk_summary.py ratio --digits 1 --peer tipg "$ours_m" "$tipg_m")
  vs_db=$(python3 bench/wrk_summary.py ratio --digits 2 --suffix '' --peer pgbench "$ours_m" "$db_tps")
  goal=$(python3 bench/goal.py "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" 5)
  OUR_RPS[$mix]=$ours_rps
  printf '%-10s %12s %10s %12s %10s %8s %12s %10s %s\n' "$mix" "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" "$ratio" "${db_tps:--}" "$vs_db" "$goal"
  wrk_notes "our $mix" "$ours_m"
  wrk_notes "tipg's $mix" "$tipg_m"
done

# Each CRS or sorted mix against its plain one (goal: at least 0.8 of its
# rate). The two run back to back in PLAIN_ROUNDS rounds of PLAIN_SECONDS
# each, taking turns to go first; the figure is the median of the rounds'
# ratios, so a change of this shared machine's speed between two mixes,
# which moved single runs by 30%, falls on both sides of each ratio.
PLAIN_ROUNDS=${PLAIN_ROUNDS:-6} PLAIN_SECONDS=${PLAIN_SECONDS:-3}
printf '\n%-10s %-6s %14s %14s %s\n' mix plain "mix req/s" "plain req/s" "mix/plain (median of $PLAIN_ROUNDS rounds, >=0.8)"
for mix in crs_first sort_first crs_bbox sort_bbox crs_deep sort_deep; do
  plain=${PLAIN[$mix]}
  mix_rates=() plain_rates=()
  for ((round = 0; round < PLAIN_ROUNDS; round++)); do
    if ((round % 2 == 0)); then
      a=$(DURATION=$PLAIN_SECONDS measure "${OUR_URL[$mix]}")
      b=$(DURATION=$PLAIN_SECONDS measure "${OUR_URL[$plain]}")
    else
      b=$(DURATION=$PLAIN_SECONDS measure "${OUR_URL[$plain]}")
      a=$(DURATION=$PLAIN_SECONDS measure "${OUR_URL[$mix]}")
    fi
    # Each round's requests/s ("-" where wrk gave none).
    a=${a%% *} b=${b%% *} a=${a:--} b=${b:--}
    mix_rates+=("$a") plain_rates+=("$b")
  done
  python3 - "$mix" "$plain" "${mix_rates[*]}" "${plain_rates[*]}" <<'PY'
import statistics, sys
mix, plain, ours, theirs = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
def rate(token):
    try:
        return float(token)
    except ValueError:  # "-": wrk gave no figure that round
        return None
def median(rates):
    rates = [r for r in rates if r is not None]
    return f"{statistics.median(rates):14.1f}" if rates else f"{'-':>14}"
pairs = [(rate(a), rate(b)) for a, b in zip(ours, theirs)]
ratios = [a / b for a, b in pairs if a is not None and b is not None and b > 0]
head = f"{mix:<10} {plain:<6} {median(a for a, _ in pairs)} {median(b for _, b in pairs)} "
if ratios:
    ratio = statistics.median(ratios)
    print(head + f"{ratio:.2f} {'ok' if ratio >= 0.8 else 'MISSED'} (rounds {min(ratios):.2f} to {max(ratios):.2f})")
else:
    print(head + f"n/a: no round gave both figures ({len(pairs)} rounds)")
PY
done

# The cost of running behind a transaction-mode pooler that keeps no
# prepared statements (Debian's PgBouncer 1.18): the same mixes through it,
# with DATABASE_PREPARED_STATEMENTS=false, against the direct figures above.
ensure_packages pgbouncer
BOUNCER_PORT=${BENCH_BOUNCER_PORT:-18432}
BOUNCER_DIR="$WORK/pgbouncer"
mkdir -p "$BOUNCER_DIR"
printf '"catalog" ""\n' >"$BOUNCER_DIR/userlist.txt"
cat >"$BOUNCER_DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $BOUNCER_DIR/userlist.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = $BOUNCER_DIR/pgbouncer.log
pidfile = $BOUNCER_DIR/pgbouncer.pid
INI
# PgBouncer refuses to run as root, like initdb.
if [[ $(id -u) == 0 ]]; then chown -R postgres: "$BOUNCER_DIR"; fi
as_pg /usr/sbin/pgbouncer -d "$BOUNCER_DIR/pgbouncer.ini"
for _ in $(seq 100); do [[ -s $BOUNCER_DIR/pgbouncer.pid ]] && break; sleep 0.1; done
EXTRA_PIDS+=" $(cat "$BOUNCER_DIR/pgbouncer.pid")"
restart_api DATABASE_URL="postgres://catalog@127.0.0.1:$BOUNCER_PORT/bench" \
  DATABASE_DIRECT_URL="postgres://catalog@127.0.0.1:$PORT/bench" DATABASE_PREPARED_STATEMENTS=false
printf '\n%-10s %14s %16s %10s %s\n' mix "direct req/s" "pgbouncer req/s" p99 "pooled/direct"
for mix in first bbox filter deep sort_first; do
  curl -sf "${OUR_URL[$mix]}" >/dev/null || { echo "our $mix request through PgBouncer failed"; exit 1; }
  DURATION=$WARMUP measure "${OUR_URL[$mix]}" >/dev/null
  pooled_m=$(measure "${OUR_URL[$mix]}")
  read -r pooled_rps pooled_p99 _ <<<"$pooled_m"
  share=$(python3 bench/wrk_summary.py ratio --digits 2 --suffix '' --ours "PgBouncer" --peer "the direct run" "$pooled_m" "${OUR_RPS[$mix]}")
  printf '%-10s %14s %16s %10s %s\n' "$mix" "${OUR_RPS[$mix]}" "$pooled_rps" "$pooled_p99" "$share"
  wrk_notes "$mix through PgBouncer" "$pooled_m"
done
