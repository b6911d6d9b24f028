#!/usr/bin/env bash
# Records a release's data for the upgrade test, with that release's own
# binaries: run it on the release's commit, before tagging it. It starts
# the release's API and a worker on a fresh database of the test cluster,
# loads one file of each kind, a viewer, an API key and a map
# (scripts/release_fixture.py), and writes tests/upgrade/<version>/:
# catalog.dump (pg_dump, custom format: what docs/upgrade.md's backup
# takes), storage.tar.gz (the object store) and manifest.json (what the
# upgrade test reads back). tests/tests/upgrade.rs upgrades every recorded
# release with the current binaries.
set -euo pipefail
source "$(dirname "$0")/stack.sh"
cd "$ROOT"

PORT=${CATALOG_TEST_PG_PORT:-54330}
DIR="$ROOT/.data/test-pg"
API_PORT=${FIXTURE_API_PORT:-18120}
DB=release_fixture
# The tests' own secret (tests/src/lib.rs): an upgrade keeps its deployment's secret.
JWT_SECRET=test-secret-test-secret-test-secret-0123
ADMIN_PASSWORD=Fixture-Admin-Passw0rd

log "building"
cargo build --bins -q
BIN="$CARGO_TARGET_DIR/debug"
VERSION=$("$BIN/catalog-api" --version | awk '{print $2}')
OUT="$ROOT/tests/upgrade/$VERSION"
WORK=$(mktemp -d)
start_cluster "$DIR" "$PORT" fast
psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
ensure_database "$PORT" "$DB"

export DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/$DB" JWT_SECRET STORAGE_URL="file://$WORK/storage"
export BIND_ADDR="127.0.0.1:$API_PORT" PUBLIC_URL="http://127.0.0.1:$API_PORT"
export BOOTSTRAP_ADMIN_USERNAME=admin BOOTSTRAP_ADMIN_PASSWORD=$ADMIN_PASSWORD RUST_LOG=warn
"$BIN/catalog-api" migrate
"$BIN/catalog-api" >"$WORK/api.log" 2>&1 &
API=$!
"$BIN/catalog-worker" >"$WORK/worker.log" 2>&1 &
WORKER=$!
trap 'kill $API $WORKER 2>/dev/null || true' EXIT
for _ in $(seq 300); do curl -sf "$PUBLIC_URL/api/health" >/dev/null && break; sleep 0.1; done

log "loading release $VERSION's data"
mkdir -p "$OUT"
python3 scripts/release_fixture.py "$PUBLIC_URL" "$ADMIN_PASSWORD" tests/data "$OUT/manifest.json"
kill $API $WORKER
wait $API $WORKER 2>/dev/null || true

log "writing $OUT"
# The basemap's rows come with the binary, which loads them when missing.
pg_dump -h 127.0.0.1 -p "$PORT" -U catalog -Fc --no-owner --no-acl --exclude-table-data='basemap.*' \
  -f "$OUT/catalog.dump" "$DB"
tar -C "$WORK/storage" -czf "$OUT/storage.tar.gz" .
psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE $DB WITH (FORCE)" >/dev/null
rm -rf "$WORK"
du -sh "$OUT"/*
