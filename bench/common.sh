# Shared by the bench scripts: a fresh `bench` database on the bench
# cluster, the seeded test data, and a release build of the service
# running against them. Expects POINTS, PORT, DIR, WORK and API_PORT.
# shellcheck shell=bash

# fresh_bench_database: (re)creates the bench database on a running cluster.
fresh_bench_database() {
  psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
  ensure_database "$PORT" bench
}

# bench_gpkg: the seeded POINTS-point GeoPackage, generated once.
bench_gpkg() {
  local gpkg="$WORK/points_$POINTS.gpkg"
  if [[ ! -s $gpkg ]]; then
    log "generating $gpkg (seeded)"
    python3 bench/gen_points.py "$POINTS" "$WORK/points_$POINTS.csv"
    ogr2ogr -f GPKG "$gpkg" "$WORK/points_$POINTS.csv" -oo X_POSSIBLE_NAMES=lon -oo Y_POSSIBLE_NAMES=lat \
      -oo KEEP_GEOM_COLUMNS=NO -oo AUTODETECT_TYPE=YES -a_srs EPSG:4326 -nln points -nlt POINT >&2
  fi
  echo "$gpkg"
}

# start_service: builds in release mode and starts the API and one worker
# (their pids in API and WORKER).
start_service() {
  log "building (release)"
  cargo build --release --bins -q
  local bin=$CARGO_TARGET_DIR/release
  export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/bench"
  export JWT_SECRET=bench-secret-bench-secret-bench-secret
  export STORAGE_URL="file://$WORK/storage"
  export BIND_ADDR=127.0.0.1:$API_PORT PUBLIC_URL=http://127.0.0.1:$API_PORT
  export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=Bench-Password-1
  export RUST_LOG=${RUST_LOG:-warn,catalog_jobs=info}
  # The load comes from one address: raise the per-address limits out of its way.
  export RATE_LIMIT_PER_MINUTE=1000000000 RATE_LIMIT_TILES_PER_MINUTE=1000000000
  rm -rf "$WORK/storage"
  "$bin/catalog-api" >"$WORK/api.log" 2>&1 &
  API=$!
  "$bin/catalog-worker" >"$WORK/worker.log" 2>&1 &
  WORKER=$!
}
