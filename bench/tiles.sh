#!/usr/bin/env bash
# Vector tile benchmark: the same 1,000,000-point table cut into Mapbox
# Vector Tiles by this service and by tipg (PyPI, on loopback) in the same
# run, driven by wrk at three zooms, plus pgbench running the tile query
# directly against PostgreSQL as the ceiling.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-8}
TIPG_PORT=${BENCH_TIPG_PORT:-18081}

# tipg keeps no tiles, so neither do we here: every request cuts its tile.
export TILE_CACHE_MB=0
# Both serve up to 50,000 features a tile (tipg's default is 10,000).
serve_public_table_beside_tipg TIPG_MAX_FEATURES_PER_TILE=50000

# About 15,000, 250 and 1 points a tile.
TILES=(3/4/2 6/33/22 10/530/340)
OURS="http://127.0.0.1:$API_PORT/api/tiles/$COLLECTION"
THEIRS="http://127.0.0.1:$TIPG_PORT/collections/data.$TABLE/tiles/WebMercatorQuad"

tile_bytes() {
  python3 - "$1" <<'PY'
import sys, urllib.request
data = urllib.request.urlopen(sys.argv[1]).read()
print(len(data))
PY
}

printf '\n%-12s %10s %12s %10s %12s %10s %8s %12s %10s\n' tile "our bytes" "ours req/s" "ours p99" "tipg req/s" "tipg p99" ratio "pgbench tps" "ours/db"
for tile in "${TILES[@]}"; do
  IFS=/ read -r z x y <<<"$tile"
  ours_url="$OURS/$tile.pbf"
  tipg_url="$THEIRS/$tile"
  curl -sf "$ours_url" -o /dev/null || { echo "our tile $tile failed"; exit 1; }
  curl -sf "$tipg_url" -o /dev/null || echo "tipg tile $tile failed" >&2
  bytes=$(tile_bytes "$ours_url")
  # Measurement lines (bench/wrk.sh): "-" where wrk gave no figure, a p99
  # of ">2s" where requests timed out.
  ours_m=$(measure "$ours_url")
  tipg_m=$(measure "$tipg_url")
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r tipg_rps tipg_p99 _ <<<"$tipg_m"
  cat >"$WORK/tile.sql" <<SQL
SELECT ST_AsMVT(tile.*, 'points', 4096, 'mvt_geom', 'mvt_id') FROM (
  SELECT t.gid AS mvt_id, ST_AsMVTGeom(ST_Transform(t.geom, 3857), ST_TileEnvelope($z, $x, $y), 4096, 64, true) AS mvt_geom,
         t.id, t.name, t.category, t.value, t.count, t.observed::text AS observed
  FROM data."$TABLE" t WHERE t.geom && ST_Transform(ST_TileEnvelope($z, $x, $y, margin => 0.015625), 4326) LIMIT 50000
) tile WHERE tile.mvt_geom IS NOT NULL;
SQL
  # An aborted pgbench (it exits 2) leaves no tps: "-", not a stopped bench.
  db_tps=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U catalog -c "$CONNECTIONS" -j 2 -T "$DURATION" -f "$WORK/tile.sql" bench 2>/dev/null |
    awk '/^tps/ {print $3; exit}') || true
  ratio=$(python3 bench/wrk_summary.py ratio --digits 1 --peer tipg "$ours_m" "$tipg_m")
  vs_db=$(python3 bench/wrk_summary.py ratio --digits 2 --suffix '' --peer pgbench "$ours_m" "$db_tps")
  printf '%-12s %10s %12s %10s %12s %10s %8s %12s %10s\n' "$tile" "$bytes" "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" "$ratio" "${db_tps:--}" "$vs_db"
  wrk_notes "our $tile" "$ours_m"
  wrk_notes "tipg's $tile" "$tipg_m"
done
