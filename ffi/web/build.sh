#!/usr/bin/env bash
# Builds the npm package into ffi/web/pkg/: the wasm client (size-optimised profile, feature
# batch-lanes), its JS glue (wasm-bindgen --target web: one ES module for browsers and Node),
# wasm-opt -Oz (npm binaryen), and the package's own ES modules and types. Installs what it needs
# when it is missing (and nothing when it is present): a pinned nightly with rust-src (rustup),
# wasm-bindgen-cli at the version of the wasm-bindgen crate (cargo install, a few minutes once),
# and the npm devDependencies (`npm ci`, for binaryen's wasm-opt). Works on Linux and macOS.
set -euo pipefail
cd "$(dirname "$0")"
root=../..

# The module is built on a pinned nightly that rebuilds std with panic=immediate-abort: a panic
# traps at once (as panic=abort did, after a hook that printed nowhere in wasm32), without the
# panic machinery, messages, source locations and most of core::fmt (7 KB of the module;
# docs/benchmarks.md, session 14). std is built from the toolchain's rust-src, so no wasm32
# target is installed. A fresh machine installs it once (minimal profile, ~10-60 s).
toolchain=nightly-2026-05-20
# shellcheck source=../../scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
install_toolchain() {
  rustup run "$toolchain" rustc --version >/dev/null 2>&1 \
    || rustup toolchain install "$toolchain" --profile minimal --component rust-src
  rustup component list --toolchain "$toolchain" --installed | grep -q '^rust-src' \
    || rustup component add rust-src --toolchain "$toolchain"
}
# The CLI must be the version of the wasm-bindgen crate in Cargo.lock.
install_wasm_bindgen() {
  local want
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$root/Cargo.lock")
  # Not --locked: the CLI's lockfile pins a crate version the registry here does not serve.
  cargo_install_tool wasm-bindgen-cli "$want" wasm-bindgen
}
# The test command (scripts/test.sh) installs these in the background, each on its own.
case "${1:-}" in
  --install-toolchain) install_toolchain; exit ;;
  --install-wasm-bindgen) install_wasm_bindgen; exit ;;
esac
install_toolchain
install_wasm_bindgen
npm_ci .
wasm="${CARGO_TARGET_DIR:-$root/target}/wasm32-unknown-unknown/release-wasm/proteus_web.wasm"
names_wasm="${wasm%.wasm}.names.wasm"

# PROTEUS_WEB_FEATURES: more features of the proteus-web crate to build the module with.
# simd128: smaller and faster code (every current browser and Node >= 16.4 run it). A low inline
# threshold keeps opt-level 2 (Cargo.toml, profile release-wasm) at the size of "s".
# Source paths are shortened, which keeps this machine's paths out of the module (panic locations
# named them before panics aborted at once).
remap="--remap-path-prefix=$(cd "$root" && pwd)=proteus"
for dir in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
  remap+=" --remap-path-prefix=${dir%/}=crates.io"
done
# curve25519-dalek's fiat backend (fiat-crypto's verified 32-bit field arithmetic) rather than its
# serial u32 one: as fast in wasm (paired CPU time within 1% on 50x20) and 1.7 KB smaller with the
# variable-time subgroup check; its 64-bit serial backend emulates 128-bit products in wasm (36%
# slower on 50x20).
dalek='--cfg curve25519_dalek_backend="fiat"'
abort='-Zunstable-options -Cpanic=immediate-abort'
# MIR inlining of `#[inline]` functions up to 60 rather than 100 (and others up to 30, not 50):
# 1.5 KB less, as fast (a plateau: 25-35 and 60-70 give the same bytes; 50 for the hint 0.9 KB
# more). Without wasm's reference types and multi-value returns wasm-bindgen passes JS values
# through its JS-side table and results through a return pointer: 2 KB less, as fast (a batch
# crosses the boundary a few times).
mir='-Zinline-mir-threshold=30 -Zinline-mir-hint-threshold=60'
abi='-C target-feature=-reference-types,-multivalue'
RUSTFLAGS_WASM=${WASM_RUSTFLAGS:--C target-feature=+simd128 -C llvm-args=-inline-threshold=30 $dalek $remap $abort $mir $abi}

# build_wasm FEATURES OUT_DIR: cargo, wasm-bindgen and wasm-opt for a set of the crate's features.
build_wasm() {
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$RUSTFLAGS_WASM" \
    cargo "+$toolchain" build --locked --profile release-wasm --target wasm32-unknown-unknown -p proteus-web \
    -Zbuild-std=std,panic_abort \
    ${1:+--features "$1"}
  # What wasm-bindgen and wasm-opt make of this module is kept under a hash of everything that
  # decides it (the module, this script, the tools' versions), so building the package again
  # (the node and arm64 suites after the web suite) skips the 13 s they take.
  local key cache
  key=$( { cat "$wasm" build.sh; wasm-bindgen --version; node_modules/.bin/wasm-opt --version; } | sha256sum | cut -c1-32)
  cache="$(dirname "$wasm")/proteus-web-pkg/$key"
  if [ -d "$cache" ] && { [ "${PROTEUS_WEB_NAMES:-0}" != 1 ] || [ -f "$cache/names.wasm" ]; }; then
    cp -a "$cache/pkg/." "$2/"
    rm -f "$names_wasm"
    if [ -f "$cache/names.wasm" ]; then cp "$cache/names.wasm" "$names_wasm"; fi
    echo "wasm-bindgen and wasm-opt: the output of an identical module reused ($cache)"
    return
  fi
  wasm-bindgen --target web --out-dir "$2" "$wasm"
  # --low-memory-unused: Rust never uses the first 1 KB of memory (it holds the deepest end of the
  # stack, which starts at 1 MiB), so wasm-opt may fold constant offsets into loads and stores.
  # --flatten --rereloop --merge-similar-functions before -Oz: 1.1 KB less, as fast.
  local opt=(--flatten --rereloop --merge-similar-functions -Oz
    --low-memory-unused --converge --strip-producers --strip-target-features
    --enable-bulk-memory --enable-nontrapping-float-to-int
    --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd)
  # PROTEUS_WEB_NAMES=1 (tests only, not shipped): the same module with its function names (-g
  # keeps the name section, and nothing else changes: tests/faults/memory.mjs checks that it is
  # the package's module byte for byte once the names are stripped), for the names of the frames
  # of a trap. One more wasm-opt run, ~17 s of CPU.
  rm -f "$names_wasm"
  if [ "${PROTEUS_WEB_NAMES:-0}" = 1 ]; then
    node_modules/.bin/wasm-opt -g "${opt[@]}" "$2/proteus_web_bg.wasm" -o "$names_wasm"
  fi
  node_modules/.bin/wasm-opt "${opt[@]}" "$2/proteus_web_bg.wasm" -o "$2/proteus_web_bg.opt.wasm"
  mv "$2/proteus_web_bg.opt.wasm" "$2/proteus_web_bg.wasm"
  # Only the newest output is kept.
  rm -rf "$(dirname "$cache")"
  mkdir -p "$cache.tmp/pkg"
  cp -a "$2/." "$cache.tmp/pkg/"
  if [ -f "$names_wasm" ]; then cp "$names_wasm" "$cache.tmp/names.wasm"; fi
  mv "$cache.tmp" "$cache"
}

rm -rf pkg
# The module opens a batch's messages four at a time in SIMD lanes (batch-lanes: 30 % less CPU on
# 1x1000est; docs/benchmarks.md, "Four SHA-256 lanes"). It was an opt-in second module while it
# was over the 200,000-byte budget; now within it, it is the only one. PROTEUS_WEB_LANES=0 builds
# the package on a module without the lanes instead (for A/B measurements; not shipped).
lanes=batch-lanes
[ "${PROTEUS_WEB_LANES:-1}" = 0 ] && lanes=
features="$lanes${lanes:+${PROTEUS_WEB_FEATURES:+,}}${PROTEUS_WEB_FEATURES:-}"
build_wasm "$features" pkg
# `@proteus-engine/web/lanes` (the opt-in of before) loads the same module, and the package's
# exports map the old module's name, proteus_web_lanes_bg.wasm, to it.
rm -f pkg/.gitignore
cp js/*.js js/*.d.ts pkg/
cp README.md pkg/README.md
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" pkg/
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
repository=$(sed -n 's/^repository = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
# The wasm-bindgen client (proteus_web.js) is internal: only the package's API is exported, and
# the .wasm for bundlers that want its URL.
cat > pkg/package.json <<JSON
{
  "name": "@proteus-engine/web",
  "version": "$version",
  "description": "Proteus end-to-end encryption (wire-compatible with Wire's) as a small wasm module, with IndexedDB persistence",
  "license": "MIT OR Apache-2.0",
  "repository": { "type": "git", "url": "git+$repository.git", "directory": "ffi/web" },
  "keywords": ["proteus", "wire", "e2ee", "double-ratchet", "wasm", "indexeddb"],
  "engines": { "node": ">=18" },
  "type": "module",
  "main": "./index.js",
  "types": "./index.d.ts",
  "exports": {
    ".": { "types": "./index.d.ts", "import": "./index.js", "default": "./index.js" },
    "./worker": { "types": "./worker.d.ts", "import": "./worker.js", "default": "./worker.js" },
    "./remote": { "types": "./remote.d.ts", "import": "./remote.js", "default": "./remote.js" },
    "./lanes": { "types": "./lanes.d.ts", "import": "./lanes.js", "default": "./lanes.js" },
    "./proteus_web_bg.wasm": "./proteus_web_bg.wasm",
    "./proteus_web_lanes_bg.wasm": "./proteus_web_bg.wasm",
    "./package.json": "./package.json"
  },
  "files": ["*.js", "*.d.ts", "proteus_web_bg.wasm", "README.md", "LICENSE-MIT", "LICENSE-APACHE"],
  "sideEffects": false
}
JSON
raw=$(wc -c < pkg/proteus_web_bg.wasm | tr -d ' ')
gz=$(gzip -9 -c pkg/proteus_web_bg.wasm | wc -c | tr -d ' ')
echo "pkg/proteus_web_bg.wasm: $raw bytes, $gz gzipped (gzip -9)"
