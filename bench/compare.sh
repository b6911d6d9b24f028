#!/usr/bin/env bash
# The whole comparison table from one command: every peer benchmark run one
# after the other on this machine, each printing our figures beside the
# peer's from the same run, written to bench/results.md (which the README
# links) with the date, the commit and the machine.
#
#   ingest     upload-to-queryable vs ogr2ogr          bench/ingest.sh
#   items      OGC items pages vs tipg                 bench/items.sh
#   tiles      vector tiles vs martin, caches off/on   bench/martin.sh
#   raster     raster and terrain tiles vs titiler     bench/titiler.sh
#   rehydrate  archived dataset back vs ogr2ogr        bench/rehydrate.sh
#   exports    downloads in every format vs ogr2ogr    bench/exports.sh
#
# `bench/compare.sh items tiles` runs only those. Takes about 20 minutes
# on 2 cores for all six.
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
cd "$ROOT"

declare -A SCRIPT=([ingest]=ingest.sh [items]=items.sh [tiles]=martin.sh [raster]=titiler.sh [rehydrate]=rehydrate.sh [exports]=exports.sh)
declare -A TITLE=(
  [ingest]="Ingest: 1,000,000 points, upload to queryable, against ogr2ogr -f PostgreSQL"
  [items]="OGC API Features items against tipg (wrk, 8 connections)"
  [tiles]="Vector tiles against martin, both caches off, then both on"
  [raster]="Raster and terrain tiles against titiler (our tile cache off)"
  [rehydrate]="Rehydration of an archived 1,000,000-point dataset against ogr2ogr"
  [exports]="Downloads of 1,000,000 points in every format against ogr2ogr from PostGIS"
)
ORDER=(ingest items tiles raster rehydrate exports)
(($#)) && ORDER=("$@")
for name in "${ORDER[@]}"; do
  [[ -n ${SCRIPT[$name]:-} ]] || { echo "unknown benchmark $name; choose from ${!SCRIPT[*]}" >&2; exit 2; }
done

RESULTS="$ROOT/bench/results.md"
DRAFT=$(mktemp)
{
  echo "# Comparison table"
  echo
  echo "Written by \`bench/compare.sh\` on $(date -u +%F) at commit $(git rev-parse --short HEAD)"
  echo "($(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo) of memory; every peer ran on the same machine in"
  echo "the same run). Ratios compare; absolute rates differ from machine to machine."
  echo "What each script measures and how: \`bench/README.md\`."
} >"$DRAFT"
# A bench that fails does not stop the others: its output so far goes in
# with a line saying where it stopped, and results.md is left as it was
# (the table of this run is kept beside the logs instead).
mkdir -p "$ROOT/.data"
FAILED=()
for name in "${ORDER[@]}"; do
  log "bench/${SCRIPT[$name]}"
  status=0
  output=$("bench/${SCRIPT[$name]}" 2>"$ROOT/.data/bench-$name.log") || status=$?
  if ((status)); then
    echo "bench/${SCRIPT[$name]} failed (exit status $status); see .data/bench-$name.log" >&2
    output+=$'\n'"(bench/${SCRIPT[$name]} stopped here with exit status $status; see .data/bench-$name.log)"
    FAILED+=("$name")
  fi
  printf '\n## %s\n\n```\n%s\n```\n' "${TITLE[$name]}" "$output" >>"$DRAFT"
  printf '%s\n' "$output"
done
if ((${#FAILED[@]})); then
  mv "$DRAFT" "$ROOT/.data/bench-results.md"
  log "failed: ${FAILED[*]}; $RESULTS left as it was, this run's table in .data/bench-results.md"
  exit 1
fi
mv "$DRAFT" "$RESULTS"
log "written to $RESULTS"
