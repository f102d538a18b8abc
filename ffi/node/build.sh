#!/usr/bin/env bash
# Builds the Node package in ffi/node: the web package (ffi/web/build.sh, into ffi/web/pkg),
# what the fallback backend runs of it copied into wasm/, and the native addon for this platform with
# @napi-rs/cli (`napi build --platform --release`: proteus.<triple>.node, e.g.
# proteus.linux-x64-gnu.node). Installs the npm devDependencies when missing.
set -euo pipefail
cd "$(dirname "$0")"
root=../..

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
"$root/ffi/web/build.sh"
# The wasm fallback: the web package's JS and its module, under the module's own name (the glue
# and init.js load that name by default, and bundlers following their `new URL(...)` find it), so
# the fallback and a browser bundle (browser.js) both run it with a plain init().
# Not shipped: lanes.js (the old opt-in's name for the same module), the web package's Worker
# client (remote.js, worker.js, wire.js: this package does not export them), the glue's types,
# and the web package's manifest, README and licence copies.
pkg="$root/ffi/web/pkg"
rm -rf wasm
mkdir wasm
for f in "$pkg"/*.js "$pkg"/index.d.ts "$pkg"/codes.d.ts; do
  case "$(basename "$f")" in
    lanes.js | remote.js | worker.js | wire.js) ;;
    *) cp "$f" wasm/ ;;
  esac
done
cp "$pkg/proteus_web_bg.wasm" wasm/
# --platform names the binary with napi-rs's platform suffix; cargo's target dir is honoured.
# --no-js: index.js is our own loader; the raw layer's generated types go to addon.d.ts (not shipped).
# Stripped by the profile, not `napi build --strip`: that sets RUSTFLAGS, which replaces the
# workspace's rustflags (.cargo/config.toml: curve25519-dalek's AVX-512 IFMA backend), so the
# addon was built unlike the Rust bench and ran slower (docs/benchmarks.md, session 13).
export CARGO_PROFILE_RELEASE_STRIP=symbols
node_modules/.bin/napi build --platform --release --no-js --dts addon.d.ts
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" .
