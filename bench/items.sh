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
declare -A OUR_URL=(
  [first]="$OURS?limit=100"
  [bbox]="$OURS?limit=100&bbox=-10,40,10,50"
  [filter]="$OURS?limit=100&$FILTER"
  [deep]="$OURS?limit=100&after_gid=500000"
)
declare -A TIPG_URL=(
  [first]="$THEIRS?limit=100"
  [bbox]="$THEIRS?limit=100&bbox=-10,40,10,50"
  [filter]="$THEIRS?limit=100&$FILTER"
  [deep]="$THEIRS?limit=100&offset=500000"
)
FEATURE="json_build_object('type','Feature','id',t.gid,'geometry',ST_AsGeoJSON(t.geom)::json,'properties',json_build_object('id',t.id,'name',t.name,'category',t.category,'value',t.value,'count',t.count,'observed',t.observed))::text"
declare -A PAGE_SQL=(
  [first]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t ORDER BY t.gid LIMIT 101;"
  [bbox]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE ST_Intersects(t.geom, ST_MakeEnvelope(-10,40,10,50,4326)) ORDER BY t.gid LIMIT 101;"
  [filter]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE t.category = 'park' ORDER BY t.gid LIMIT 101;"
  [deep]="SELECT t.gid, $FEATURE FROM data.\"$TABLE\" t WHERE t.gid > 500000 ORDER BY t.gid LIMIT 101;"
)

printf '\n%-8s %12s %10s %12s %10s %8s %12s %10s %s\n' mix "ours req/s" "ours p99" "tipg req/s" "tipg p99" ratio "pgbench tps" "ours/db" "goal (>=5x, lower p99)"
for mix in first bbox filter deep; do
  curl -sf "${OUR_URL[$mix]}" >/dev/null || { echo "our $mix request failed"; exit 1; }
  curl -sf "${TIPG_URL[$mix]}" >/dev/null || echo "tipg $mix request failed" >&2
  # Warm-up first: every pooled connection runs the prepared page query
  # many more than the five times after which PostgreSQL may switch to a
  # generic plan, so the measured run sees the plan steady traffic gets.
  DURATION=$WARMUP measure "${OUR_URL[$mix]}" >/dev/null
  DURATION=$WARMUP measure "${TIPG_URL[$mix]}" >/dev/null
  read -r ours_rps ours_p99 ours_bad < <(measure "${OUR_URL[$mix]}")
  read -r tipg_rps tipg_p99 _ < <(measure "${TIPG_URL[$mix]}")
  echo "${PAGE_SQL[$mix]}" >"$WORK/page_$mix.sql"
  db_tps=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U catalog -c "$CONNECTIONS" -j 2 -T "$DURATION" -f "$WORK/page_$mix.sql" bench 2>/dev/null |
    awk '/^tps/ {print $3; exit}')
  ratio=$(python3 -c "print(f'{$ours_rps / max($tipg_rps, 0.001):.1f}x')")
  vs_db=$(python3 -c "print(f'{$ours_rps / max($db_tps, 0.001):.2f}')")
  goal=$(python3 bench/goal.py "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" 5)
  printf '%-8s %12s %10s %12s %10s %8s %12s %10s %s\n' "$mix" "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" "$ratio" "$db_tps" "$vs_db" "$goal"
  [[ $ours_bad == 0 ]] || echo "  (our $mix answered $ours_bad non-2xx responses)"
done
