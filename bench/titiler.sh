#!/usr/bin/env bash
# Raster tiles against titiler: the same three Cloud-Optimized GeoTIFFs (an
# RGB image in Web Mercator, a Float32 UTM DEM served as Terrain-RGB, an RGB
# image in UTM reprojected on the fly) served by this service (uploaded with
# strict_cog, so it stores the very same bytes; its tile cache off) and by
# titiler (`titiler.application` from PyPI, uvicorn, 2 workers) in the same
# run. wrk (8 connections) walks the same z/x/y list on both; the pixels are
# compared before anything is counted. Goal: at least 3x titiler's tiles/s
# with a lower p99 on every mix.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-8}
TITILER_PORT=${BENCH_TITILER_PORT:-18083}
VENV="$ROOT/.data/bench-venv"
COGS="$WORK/cogs"

ensure_packages wrk
[[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check titiler.application uvicorn
if [[ ! -s $COGS/rgb_utm.tiles ]]; then
  log "writing the bench COGs (seeded)"
  "$VENV/bin/python" bench/raster_cogs.py "$COGS"
fi

start_cluster "$DIR" "$PORT"
trap 'kill ${API:-} ${WORKER:-} ${TITILER:-} 2>/dev/null || true; stop_cluster "$DIR"' EXIT
fresh_bench_database
start_service
declare -A ID
for name in rgb_mercator dem_utm rgb_utm; do
  log "uploading $name.tif (strict_cog: stored byte for byte)"
  read -r ID[$name] _ < <(python3 bench/load_public.py "http://127.0.0.1:$API_PORT" "$COGS/$name.tif" "$DATABASE_URL" strict_cog=true)
done
kill "$WORKER"
restart_api TILE_CACHE_MB=0

log "starting titiler (2 workers) on 127.0.0.1:$TITILER_PORT"
"$VENV/bin/uvicorn" titiler.application.main:app --host 127.0.0.1 --port "$TITILER_PORT" --workers 2 \
  --log-level warning >"$WORK/titiler.log" 2>&1 &
TITILER=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$TITILER_PORT/healthz" >/dev/null && break; sleep 0.2; done

OURS="http://127.0.0.1:$API_PORT"
THEIRS="http://127.0.0.1:$TITILER_PORT"

# diff/mask: mean difference where both draw (levels, or metres of height)
# and the share of pixels both call data or empty.
printf '\n%-13s %9s %10s %10s %12s %11s %7s %9s %6s\n' mix diff/mask "ours t/s" "ours p99" "titiler t/s" "titiler p99" ratio "p99 ours" goal
for mix in rgb_mercator dem_utm rgb_utm; do
  tiles="$COGS/$mix.tiles"
  file="$COGS/$mix.tif"
  if [[ $mix == dem_utm ]]; then
    sed "s|^|/api/tiles/${ID[$mix]}/terrain/|; s|$|.png|" "$tiles" >"$WORK/ours.paths"
    sed "s|$|.png?url=$file\&algorithm=terrainrgb\&resampling=bilinear\&reproject=bilinear\&tilesize=512|; s|^|/cog/tiles/WebMercatorQuad/|" "$tiles" >"$WORK/theirs.paths"
    kind=terrain
  else
    sed "s|^|/api/tiles/${ID[$mix]}/|; s|$|.png|" "$tiles" >"$WORK/ours.paths"
    sed "s|$|.png?url=$file|; s|^|/cog/tiles/WebMercatorQuad/|" "$tiles" >"$WORK/theirs.paths"
    kind=rgb
  fi
  if ! agree=$("$VENV/bin/python" bench/compare_tiles.py "$OURS" "$WORK/ours.paths" "$THEIRS" "$WORK/theirs.paths" $kind); then
    echo "$mix: our tiles and titiler's differ (mean difference/mask agreement ${agree:-none}); not comparable" >&2
    exit 1
  fi
  # Measurement lines (bench/wrk.sh): "-" where wrk gave no figure, a p99
  # of ">2s" where requests timed out (a p99 ratio against it is "<x"); the
  # ratio cell says why it has no figure, the lines under the row count
  # timeouts and errors.
  ours_m=$(TILE_PATHS="$WORK/ours.paths" measure "$OURS" -s bench/tile_list.lua)
  theirs_m=$(TILE_PATHS="$WORK/theirs.paths" measure "$THEIRS" -s bench/tile_list.lua)
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r theirs_rps theirs_p99 _ <<<"$theirs_m"
  ratio=$(python3 bench/wrk_summary.py ratio --digits 1 --peer titiler "$ours_m" "$theirs_m")
  p99_ratio=$(python3 bench/wrk_summary.py p99ratio "$ours_m" "$theirs_m")
  goal=$(python3 bench/wrk_summary.py goal 3 "$ours_m" "$theirs_m")
  printf '%-13s %9s %10s %10s %12s %11s %7s %9s %6s\n' "$mix" "$agree" "$ours_rps" "$ours_p99" "$theirs_rps" "$theirs_p99" "$ratio" "$p99_ratio" "$goal"
  wrk_notes "our $mix" "$ours_m"
  wrk_notes "titiler's $mix" "$theirs_m"
done
