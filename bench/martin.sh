#!/usr/bin/env bash
# Vector tiles against martin: the same 1,000,000-point table served by this
# service and by martin (`cargo install martin`, cached under
# ~/.cache/spatial-catalog/martin) in the same run, driven by wrk at four
# tiles, from a crowded one to an empty one. Two pairings: both caches off
# (every request cuts its tile in PostgreSQL), then both on (the warm path).
# The tiles are checked to hold the same features before anything is counted,
# from the layer's complete zoom on; below it ours are generalized (thinned)
# and the table shows both counts, ours/martin's.
# Each tile is measured in ROUNDS (3) rounds alternating which server goes
# first, and the medians are compared: this 2-core machine's speed drifts.
# Then the big layer (BIG_POINTS, 10,000,000 points in order of longitude,
# loaded through the service): one tile a zoom from 0 to 6, cut cold by
# each, bytes and seconds, and how many times smaller and faster ours are;
# and what share of its load the generalization took.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

DURATION=${DURATION:-15}
CONNECTIONS=${CONNECTIONS:-8}
MARTIN_PORT=${BENCH_MARTIN_PORT:-18082}
MARTIN_VERSION=1.14.0
MARTIN_ROOT="$HOME/.cache/spatial-catalog/martin"
MARTIN="$MARTIN_ROOT/bin/martin"

if ! "$MARTIN" --version 2>/dev/null | grep -q "$MARTIN_VERSION"; then
  log "installing martin $MARTIN_VERSION (PostgreSQL sources only; cached)"
  cargo install "martin@$MARTIN_VERSION" --locked --no-default-features --features postgres --root "$MARTIN_ROOT"
fi

serve_public_table

# start_martin CACHE_MB: martin over the bench database (pid in MARTIN_PID).
start_martin() {
  [[ -z ${MARTIN_PID:-} ]] || { kill "$MARTIN_PID"; wait "$MARTIN_PID" 2>/dev/null || true; }
  "$MARTIN" "postgresql://catalog@127.0.0.1:$PORT/bench" --listen-addresses "127.0.0.1:$MARTIN_PORT" \
    --cache-size "$1" >>"$WORK/martin.log" 2>&1 &
  MARTIN_PID=$!
  EXTRA_PIDS=$MARTIN_PID
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$MARTIN_PORT/catalog" >/dev/null && return; sleep 0.1; done
  echo "martin did not start; see $WORK/martin.log" >&2
  exit 1
}

# About 15,000, 250, 1 and 0 points a tile.
TILES=(3/4/2 6/33/22 10/530/340 10/10/10)
OURS="http://127.0.0.1:$API_PORT/api/tiles/$COLLECTION"
THEIRS="http://127.0.0.1:$MARTIN_PORT/$TABLE"
# Below the layer's complete zoom our tiles are generalized (thinned):
# martin's hold every point there, so only the zooms from it on compare
# feature for feature.
COMPLETE=$(curl -sf "$OURS/tilejson.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["vector_layers"][0]["complete_zoom"])')
log "the layer is complete from zoom $COMPLETE"

printf '\n%-6s %-12s %9s %12s %10s %12s %10s %8s\n' cache tile features "ours req/s" "ours p99" "martin req/s" "martin p99" ratio
for pairing in off on; do
  if [[ $pairing == off ]]; then
    restart_api TILE_CACHE_MB=0
    start_martin 0
  else
    restart_api
    start_martin 512
  fi
  for tile in "${TILES[@]}"; do
    IFS=/ read -r z x y <<<"$tile"
    ours=$(mvt_features "$OURS/$tile.pbf" "$z" "$x" "$y")
    theirs=$(mvt_features "$THEIRS/$tile" "$z" "$x" "$y")
    if ((z >= COMPLETE)) && [[ $ours != "$theirs" ]]; then
      echo "tile $tile: we serve $ours features, martin $theirs; not comparable" >&2
      exit 1
    fi
    ((z >= COMPLETE)) || ours="$ours/$theirs"
    # Measurement lines (bench/wrk.sh): "-" where wrk gave no figure, a
    # p99 of ">2s" where requests timed out; the ratio cell says why it
    # has no figure, the lines under the row count timeouts and errors.
    mapfile -t pair < <(measure_pair "$OURS/$tile.pbf" "$THEIRS/$tile")
    ours_m=${pair[0]:-} martin_m=${pair[1]:-}
    read -r ours_rps ours_p99 _ <<<"$ours_m"
    read -r martin_rps martin_p99 _ <<<"$martin_m"
    ratio=$(python3 bench/wrk_summary.py ratio --digits 2 --peer martin "$ours_m" "$martin_m")
    printf '%-6s %-12s %9s %12s %10s %12s %10s %8s\n' "$pairing" "$tile" "$ours" "$ours_rps" "$ours_p99" "$martin_rps" "$martin_p99" "$ratio"
    wrk_notes "our $tile" "$ours_m"
    wrk_notes "martin's $tile" "$martin_m"
  done
done

# The big layer: loaded through the service (the worker again), then
# martin restarted to find its table.
BIG_POINTS=${BIG_POINTS:-10000000}
big_csv="$WORK/sorted_points_$BIG_POINTS.csv"
if [[ ! -s $big_csv ]]; then
  log "generating $big_csv (seeded, in order of longitude)"
  python3 bench/gen_points.py "$BIG_POINTS" "$big_csv" sorted
fi
"$CARGO_TARGET_DIR/release/catalog-worker" >"$WORK/worker-big.log" 2>&1 &
WORKER=$!
log "loading $BIG_POINTS points through the service"
started=$(date +%s.%N)
read -r BIG_COLLECTION BIG_TABLE < <(python3 bench/load_public.py "http://127.0.0.1:$API_PORT" "$big_csv" "$DATABASE_URL")
ingest_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$started" "$(date +%s.%N)")
kill "$WORKER"
loaded=$(grep 'layer loaded' "$WORK/worker-big.log" | tail -1 || true)
if [[ -z $loaded ]]; then
  echo "the worker logged no 'layer loaded' line (RUST_LOG must keep catalog_jobs at info); see $WORK/worker-big.log" >&2
  exit 1
fi
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$loaded"; }
restart_api TILE_CACHE_MB=0
start_martin 0
BIG_OURS="http://127.0.0.1:$API_PORT/api/tiles/$BIG_COLLECTION"
BIG_THEIRS="http://127.0.0.1:$MARTIN_PORT/$BIG_TABLE"
BIG_COMPLETE=$(curl -sf "$BIG_OURS/tilejson.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["vector_layers"][0]["complete_zoom"])')
python3 -c "import sys
points, complete, ingest, copy, generalize, index = sys.argv[1:]
ingest, copy, generalize, index = float(ingest), int(copy) / 1000, int(generalize) / 1000, int(index) / 1000
print(f'\\n{points} points in order of longitude, complete from zoom {complete}; ingest {ingest:.1f} s '
      f'(upload to published), of which copy {copy:.1f} s, generalization {generalize:.1f} s '
      f'({100 * generalize / ingest:.0f}% of the ingest, an upper bound: with the geometry check; goal at most 30%), '
      f'indexes {index:.1f} s')" \
  "$BIG_POINTS" "$BIG_COMPLETE" "$ingest_s" "$(field copy_ms)" "$(field generalize_ms)" "$(field index_ms)"

# cut_tile URL: "bytes seconds" of one tile, uncompressed, as the server
# cuts it ("- -" when it gives none within ten minutes).
cut_tile() {
  local figures
  if figures=$(curl -sf --max-time 600 -o /dev/null -w '%{size_download} %{time_total}' "$1"); then
    echo "$figures"
  else
    echo "- -"
  fi
}
printf '%-10s %12s %9s %14s %10s %9s %8s\n' tile "ours bytes" "ours s" "martin bytes" "martin s" smaller faster
for z in 0 1 2 3 4 5 6; do
  # The tile over 10° E, 47° N.
  read -r x y < <(python3 -c "import math; n = 2 ** $z; lat = math.radians(47)
print(int((10 + 180) / 360 * n), int((1 - math.asinh(math.tan(lat)) / math.pi) / 2 * n))")
  # Each twice, alternating, the second counted: both read the table
  # from PostgreSQL's cache, neither from its own tile cache.
  cut_tile "$BIG_OURS/$z/$x/$y.pbf" >/dev/null
  cut_tile "$BIG_THEIRS/$z/$x/$y" >/dev/null
  read -r our_bytes our_s < <(cut_tile "$BIG_OURS/$z/$x/$y.pbf")
  read -r their_bytes their_s < <(cut_tile "$BIG_THEIRS/$z/$x/$y")
  ratios=$(python3 -c "import sys
a = sys.argv[1:]
try:
    print(f'{int(a[2]) / max(int(a[0]), 1):.1f}x {float(a[3]) / max(float(a[1]), 1e-6):.1f}x')
except ValueError:
    print('- -')" "$our_bytes" "$our_s" "$their_bytes" "$their_s")
  # shellcheck disable=SC2086 # two cells
  printf '%-10s %12s %9s %14s %10s %9s %8s\n' "$z/$x/$y" "$our_bytes" "$our_s" "$their_bytes" "$their_s" $ratios
done
