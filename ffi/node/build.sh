#!/usr/bin/env bash
# Builds the Node package in ffi/node: the web package (ffi/web/build.sh, into ffi/web/pkg),
# copied into wasm/ as the fallback backend, and the native addon for this platform with
# @napi-rs/cli (`napi build --platform --release`: proteus.<triple>.node, e.g.
# proteus.linux-x64-gnu.node). Installs the npm devDependencies when missing.
set -euo pipefail
cd "$(dirname "$0")"
root=../..

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
"$root/ffi/web/build.sh"
rm -rf wasm
cp -r "$root/ffi/web/pkg" wasm
# --platform names the binary with napi-rs's platform suffix; cargo's target dir is honoured.
# --no-js: index.js is our own loader; the raw layer's generated types go to addon.d.ts (not shipped).
node_modules/.bin/napi build --platform --release --strip --no-js --dts addon.d.ts
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" .
