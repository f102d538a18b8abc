#!/usr/bin/env bash
# The Node package (ffi/node): the napi-rs addon over proteus-client and the wasm build of the web
# package as its fallback, behind the web package's API. Installs what is missing (npm
# devDependencies, @napi-rs/cli; ffi/web/build.sh installs what the wasm build needs).
#
#   1. build: ffi/node/build.sh (the web package, copied into wasm/; the addon, napi build --release)
#   2. node --test tests/both/ with PROTEUS_BACKEND=native, then =wasm: one suite, both backends
#   3. node --test tests/native/: the durable SQLite store (plain, sealed), a batch that cannot
#      take the store (the sqlite3 CLI holds its lock) and a process killed in the batch callback
#      commit nothing, two Node processes on one store file, the addon and the wasm build talking to
#      each other; tests/loader/: the package loads the prebuild of its machine
#      (proteus.linux-x64-gnu.node here; scripts/suites/arm64.sh runs it on arm64 too), and the
#      wasm build where it has none
#   4. node --test tests/faults/: the addon built again with the cargo feature fault-injection (tests
#      only, into tests/faults/addon/): a batch whose results fail to reach JS after its commit
#      rejects (Internal, 599) rather than never settling; the package's addon has no such hook
#   5. tsc on a usage of the types
#   6. a consumer project: the packed tarball installed outside the repository, on the durable store,
#      and its wasm fallback (what the tarball ships of the web package is all it needs)
#   7. the benchmark, one timed run per implementation and scenario (a smoke test)
set -euo pipefail
cd "$(dirname "$0")/../.."

# The store tests hold a store's write lock from another process with the sqlite3 CLI.
# shellcheck source=../lib/install.sh
. scripts/lib/install.sh
apt_install sqlite3
# Stores written by Wire's real @wireapp/cryptobox 12.8.0, and its peers (tests/both/cryptobox).
npm_ci tests/cryptobox

NODE=ffi/node
log() { printf '\n== %s\n' "$*"; }

log "build the Node package in $NODE"
"$NODE/build.sh"

cd "$NODE"
log "node --test: the API on the native addon"
PROTEUS_BACKEND=native node --test tests/both/
log "node --test: the same API on the wasm fallback"
PROTEUS_BACKEND=wasm node --test tests/both/
log "node --test: the native store, two processes on one store, native and wasm together"
PROTEUS_BACKEND=native node --test tests/native/
log "node --test: which addon the package loads (its platform's prebuild, else the wasm build)"
node --test tests/loader/

log "node --test: results that fail to reach JS after the commit (the addon built with fault-injection)"
# Built as build.sh builds (stripped by the profile: no RUSTFLAGS, so the dependencies are shared).
CARGO_PROFILE_RELEASE_STRIP=symbols node_modules/.bin/napi build --platform --release --no-js \
  --features fault-injection --output-dir tests/faults/addon --dts addon.d.ts
node --test tests/faults/

log "tsc: the package's types"
node_modules/.bin/tsc -p tests/types && echo "types ok"

log "a consumer project: the packed tarball installed outside the repository, on the durable store"
consumer=$(mktemp -d)
npm pack --pack-destination "$consumer" --silent >/dev/null
(cd "$consumer" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent ./proteus-engine-node-*.tgz \
  && cp "$OLDPWD/tests/consumer/use.mjs" "$OLDPWD/tests/consumer/fallback.mjs" . && node use.mjs \
  && PROTEUS_BACKEND=wasm node fallback.mjs)
rm -rf "$consumer"

log "benchmark, one timed run per implementation and scenario (smoke)"
node bench/bench.mjs --runs 1
