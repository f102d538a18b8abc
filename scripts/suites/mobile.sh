#!/usr/bin/env bash
# Android and Apple, as far as this machine can check them (not part of the test command's run:
# `scripts/test.sh mobile`). Adds the Rust targets when missing, then `cargo check` of the pure-Rust
# part of the mobile library for each: proteus-core and proteus-client without the SQLite store
# and sealed stores (bundled SQLite and ring compile C, which takes the NDK's clang or Xcode's SDK;
# neither can be had here). The library itself (proteus-uniffi, which needs the SQLite store) is
# NOT compiled for these targets here: ffi/uniffi/README.md, "Android and Apple".
#
# The four ABIs of ffi/uniffi/scripts/build-aar.sh, and the Apple targets of build-xcframework.sh
# that the reachable dist server has (it answers 404 for aarch64-apple-ios-sim and x86_64-apple-ios).
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGETS=(aarch64-linux-android armv7-linux-androideabi i686-linux-android x86_64-linux-android
  aarch64-apple-ios aarch64-apple-darwin x86_64-apple-darwin)

installed=$(rustup target list --installed)
for t in "${TARGETS[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
args=()
for t in "${TARGETS[@]}"; do args+=(--target "$t"); done
echo "== cargo check: proteus-core and proteus-client (features rayon, cryptobox-directory) for ${TARGETS[*]}"
cargo check --locked -p proteus-core -p proteus-client --no-default-features \
  --features proteus-client/rayon,proteus-client/cryptobox-directory "${args[@]}"
echo "checked: the pure-Rust crates for ${#TARGETS[@]} targets; not checked: proteus-uniffi, SQLite, ring (no NDK, no Apple SDK)"
