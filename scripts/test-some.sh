#!/usr/bin/env bash
# A quicker loop than test.sh while working on one thing: starts (and
# leaves running) the test cluster, migrates the template database, builds
# the binaries the tests spawn, and runs `cargo test` with the arguments
# given, e.g. `scripts/test-some.sh -p catalog-tests --test tiles`.
# No format check, no web UI build, no package installs: test.sh does those.
set -euo pipefail
source "$(dirname "$0")/stack.sh"
cd "$ROOT"
PORT=${CATALOG_TEST_PG_PORT:-54330}
start_cluster "$ROOT/.data/test-pg" "$PORT" fast
# Built as test.sh builds (lints included), so the two share builds.
lint_as_built
cargo build -q --workspace --bins
export TEST_ADMIN_DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/postgres"
if [[ ${MIGRATE:-1} == 1 ]]; then
  psql -h 127.0.0.1 -p "$PORT" -U catalog -d postgres -qc "DROP DATABASE IF EXISTS catalog_template" >/dev/null
  ensure_database "$PORT" catalog_template
  DATABASE_URL="postgres://catalog@127.0.0.1:$PORT/catalog_template" "$CARGO_TARGET_DIR/debug/catalog-api" migrate
fi
export CATALOG_BIN_DIR="$CARGO_TARGET_DIR/debug"
[[ -x $ROOT/.data/venv/bin/python ]] && export CATALOG_PYTHON="$ROOT/.data/venv/bin/python"
export CATALOG_FIXTURES_DIR="$ROOT/.data/fixtures" CATALOG_QGIS_PYTHON=/usr/bin/python3
NODE_MODULES="$ROOT/.data/node/node_modules"
if [[ -d $NODE_MODULES ]]; then
  export CATALOG_STYLE_VALIDATOR="$NODE_MODULES/.bin/gl-style-validate" CATALOG_NODE_MODULES="$NODE_MODULES"
fi
CHROMIUM=$(command -v chromium || true)
export CHROMIUM
export CATALOG_TEST_LOG_DIR="$ROOT/.data/test-logs-some"
cargo test "$@"
