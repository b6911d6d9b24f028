#!/usr/bin/env bash
# Export benchmark: the seeded 1,000,000 points loaded as a public dataset,
# then downloaded in every format twice (the first request writes the
# export, the repeat is served from the object store), beside `ogr2ogr`
# writing the same table from PostGIS into the same format in the same run
# (goals: first download at most 1.2x ogr2ogr; GeoParquet, which Debian's
# GDAL cannot write, at most 0.5x of our GeoJSON; the API's memory grows
# by under 100 MB).
set -euo pipefail
source "$(dirname "$0")/../scripts/stack.sh"
source "$(dirname "$0")/common.sh"
cd "$ROOT"

serve_public_table
python3 bench/exports_driver.py "http://127.0.0.1:$API_PORT" "$COLLECTION" "$TABLE" \
  "host=127.0.0.1 port=$PORT user=catalog dbname=bench" "$API" "$WORK/exports"
