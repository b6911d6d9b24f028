#!/usr/bin/env bash
# Installs what is missing, starts a project-local PostgreSQL/PostGIS under
# .data/, migrates, and runs the API and one worker in the foreground.
set -euo pipefail
source "$(dirname "$0")/stack.sh"
cd "$ROOT"

build_while_installing --release --bins
PORT=${CATALOG_PG_PORT:-54329}
start_cluster "$ROOT/.data/pg" "$PORT"
ensure_database "$PORT" catalog

export DATABASE_URL=${DATABASE_URL:-postgres://catalog@127.0.0.1:$PORT/catalog}
export JWT_SECRET=${JWT_SECRET:-$(persistent_secret "$ROOT/.data/jwt_secret")}
export STORAGE_URL=${STORAGE_URL:-file://$ROOT/.data/storage}
export BOOTSTRAP_ADMIN_USERNAME=${BOOTSTRAP_ADMIN_USERNAME:-admin}
export BOOTSTRAP_ADMIN_PASSWORD=${BOOTSTRAP_ADMIN_PASSWORD:-$(persistent_secret "$ROOT/.data/admin_password")}

build_ui
wait_early_build
log "building (release)"
cargo build --release --bins
BIN=$CARGO_TARGET_DIR/release
"$BIN/catalog-api" migrate

"$BIN/catalog-worker" 2>&1 | sed -u 's/^/[worker] /' &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT
log "web UI and API on http://${BIND_ADDR:-127.0.0.1:8080}; sign in as $BOOTSTRAP_ADMIN_USERNAME with the password in .data/admin_password"
"$BIN/catalog-api" 2>&1 | sed -u 's/^/[api] /'
