#!/usr/bin/env bash
# Builds the npm package into ffi/web/pkg/: the wasm client (size-optimised profile), its JS glue
# (wasm-bindgen --target web: one ES module for browsers and Node), wasm-opt -Oz (npm binaryen),
# and the package's own ES modules and types. Needs: the wasm32 target, wasm-bindgen-cli at the
# version of the wasm-bindgen crate, and `npm ci` done here (scripts/suites/web.sh sees to both).
set -euo pipefail
cd "$(dirname "$0")"
root=../..
wasm="${CARGO_TARGET_DIR:-$root/target}/wasm32-unknown-unknown/release-wasm/proteus_web.wasm"

# simd128: smaller and faster code (every current browser and Node >= 16.4 run it). A low inline
# threshold keeps opt-level 2 (Cargo.toml, profile release-wasm) at the size of "s".
# Panic locations name source files: the checkout's and the registry's paths are shortened, which
# keeps this machine's paths out of the module and saves ~1 KB.
remap="--remap-path-prefix=$(cd "$root" && pwd)=proteus"
for dir in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
  remap+=" --remap-path-prefix=${dir%/}=crates.io"
done
RUSTFLAGS_WASM=${WASM_RUSTFLAGS:--C target-feature=+simd128 -C llvm-args=-inline-threshold=30 $remap}
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$RUSTFLAGS_WASM" \
  cargo build --locked --profile release-wasm --target wasm32-unknown-unknown -p proteus-web
rm -rf pkg
wasm-bindgen --target web --out-dir pkg "$wasm"
# --low-memory-unused: Rust never uses the first 1 KB of memory (it holds the deepest end of the
# stack, which starts at 1 MiB), so wasm-opt may fold constant offsets into loads and stores.
node_modules/.bin/wasm-opt -Oz --low-memory-unused --converge --strip-producers --strip-target-features \
  --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd \
  pkg/proteus_web_bg.wasm -o pkg/proteus_web_bg.opt.wasm
mv pkg/proteus_web_bg.opt.wasm pkg/proteus_web_bg.wasm
rm -f pkg/.gitignore
cp js/*.js js/*.d.ts pkg/
cp README.md pkg/README.md
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
cat > pkg/package.json <<JSON
{
  "name": "proteus-web",
  "version": "$version",
  "description": "Proteus end-to-end encryption (wire-compatible with Wire's) as a small wasm module, with IndexedDB persistence",
  "license": "MIT OR Apache-2.0",
  "type": "module",
  "main": "./index.js",
  "types": "./index.d.ts",
  "exports": {
    ".": { "types": "./index.d.ts", "default": "./index.js" },
    "./raw": { "types": "./proteus_web.d.ts", "default": "./proteus_web.js" }
  },
  "files": ["*.js", "*.d.ts", "proteus_web_bg.wasm", "README.md"],
  "sideEffects": false
}
JSON
raw=$(stat -c %s pkg/proteus_web_bg.wasm)
gz=$(gzip -9 -c pkg/proteus_web_bg.wasm | wc -c)
echo "pkg/proteus_web_bg.wasm: $raw bytes, $gz gzipped (gzip -9)"
