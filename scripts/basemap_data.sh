#!/usr/bin/env bash
# Rebuilds api/src/basemap/countries-50m.geojson.gz, the data of the built-in
# basemap: Natural Earth's 1:50m countries (public domain) as packaged by
# npm's world-atlas (TopoJSON), turned into GeoJSON by GDAL with 4
# decimals (about 11 m, finer than a pixel at the basemap's zoom 6). The
# API embeds the file and loads it into PostGIS (api/src/basemap/data.rs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm pack --silent world-atlas@2.0.2 >/dev/null
tar xzf world-atlas-2.0.2.tgz
ogr2ogr -f GeoJSON countries.geojson package/countries-50m.json countries -a_srs EPSG:4326 \
  -lco COORDINATE_PRECISION=4 -lco RFC7946=YES -select name
gzip -9 -n -c countries.geojson >"$ROOT/api/src/basemap/countries-50m.geojson.gz"
ls -l "$ROOT/api/src/basemap/countries-50m.geojson.gz"
