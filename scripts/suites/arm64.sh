#!/usr/bin/env bash
# linux-arm64 (aarch64-unknown-linux-gnu): cross-compiled on this x86_64 machine with Debian's
# cross toolchain and run under qemu-user (scripts/aarch64-run.sh, which also runs the aarch64
# programs that a test starts), with Debian's arm64 Node for the addon (scripts/lib/aarch64.sh
# installs what is missing: gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user, the Rust
# target, and Debian bookworm's nodejs for arm64 unpacked into /var/lib/proteus-aarch64-node).
#
#   1. Rust tests of proteus-core and proteus-client built for aarch64 and run under qemu: a
#      subset in CI (below); PROTEUS_ARM64_FULL=1 runs every one of them
#   2. the Node addon for arm64 (ffi/node/build-linux-arm64.sh), beside the x64 one that
#      ffi/node/build.sh builds (with the wasm fallback); both ELF files checked
#   3. Debian's arm64 Node 18 under qemu: which addon the package loads (tests/loader/), the
#      package's API on the addon (tests/both/) and the native store (tests/native/store.test.mjs)
#   4. the packed tarball holds both prebuilds; a consumer project installs it and runs on the x64
#      Node and on the arm64 one, native on each, and on the wasm fallback
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=../lib/install.sh
. scripts/lib/install.sh
# shellcheck source=../lib/aarch64.sh
. scripts/lib/aarch64.sh
log() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { echo "the arm64 suite cross-compiles from x86_64 Linux" >&2; exit 1; }
apt_install sqlite3 # tests/native/store.test.mjs holds a store's lock with the sqlite3 CLI
aarch64_install_system
aarch64_install_target
aarch64_install_node
aarch64_env

# Under qemu the code runs 10-30 times slower than natively, so the tests are built with the
# workspace's own crates optimised too (the dependencies already are: Cargo.toml, profile.dev);
# debug assertions and overflow checks stay on. Their dependencies compile once for the target.
export CARGO_PROFILE_DEV_OPT_LEVEL=3
# CI runs a subset that fits its time: each crate's unit tests and a few integration tests (the
# known answers and bad inputs of the core; the client's batch, durability, store opening, sealed
# records and crash tests, the last killing aarch64 processes under qemu). Every test binary
# costs a compile at opt-level 3 and a link; the README's "linux-arm64" has the times.
# PROTEUS_ARM64_FULL=1 runs every test of both crates.
CORE_TESTS=(--lib --test known_answers --test bad_inputs)
CLIENT_TESTS=(--lib --test batch --test durability --test open_store --test sealed_tamper --test crash)
if [ "${PROTEUS_ARM64_FULL:-0}" = 1 ]; then
  log "every Rust test of proteus-core and proteus-client for aarch64, under qemu"
  cargo test --locked --target "$AARCH64_TARGET" -p proteus-core -p proteus-client --no-fail-fast
else
  log "Rust tests for aarch64 under qemu: proteus-core ${CORE_TESTS[*]}; proteus-client ${CLIENT_TESTS[*]}"
  cargo test --locked --target "$AARCH64_TARGET" -p proteus-core "${CORE_TESTS[@]}" --no-fail-fast
  cargo test --locked --target "$AARCH64_TARGET" -p proteus-client "${CLIENT_TESTS[@]}" --no-fail-fast
fi
unset CARGO_PROFILE_DEV_OPT_LEVEL

log "the Node package: the x64 addon and the wasm fallback (ffi/node/build.sh; built by the node suite before)"
npm_ci tests/cryptobox
ffi/node/build.sh
log "the arm64 addon (ffi/node/build-linux-arm64.sh)"
ffi/node/build-linux-arm64.sh
check_elf ffi/node/proteus.linux-x64-gnu.node "Advanced Micro Devices X86-64"

cd ffi/node
export PROTEUS_EXPECT_PREBUILDS="linux-x64-gnu linux-arm64-gnu"
log "node --test tests/loader/ on x64 ($(node --version))"
node --test tests/loader/
log "node --test on Debian's arm64 Node ($(aarch64_node --version)) under qemu: the loader, the API on the addon, the native store"
PROTEUS_BACKEND=native aarch64_node --test tests/loader/ tests/both/ tests/native/store.test.mjs

log "the packed tarball: both prebuilds; a consumer project on x64 and on arm64"
consumer=$(mktemp -d)
npm pack --pack-destination "$consumer" --silent >/dev/null
tarball=$(ls "$consumer"/proteus-engine-node-*.tgz)
listing=$(tar -tzf "$tarball")
for f in package/proteus.linux-x64-gnu.node package/proteus.linux-arm64-gnu.node; do
  grep -qx "$f" <<<"$listing" || { echo "$tarball lacks $f" >&2; exit 1; }
done
grep -E '\.node$' <<<"$listing"
cp tests/consumer/use.mjs tests/consumer/fallback.mjs "$consumer/"
cd "$consumer"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent ./proteus-engine-node-*.tgz
echo "x64:"
node use.mjs
echo "arm64:"
aarch64_node use.mjs
# Debian bookworm's Node 18 has no globalThis.crypto unless a flag asks for it; the package puts
# Node's Web Crypto there before the wasm fallback starts (ffi/node/index.js), so no flag here.
echo "arm64, the wasm fallback:"
PROTEUS_BACKEND=wasm aarch64_node fallback.mjs
cd - >/dev/null
rm -rf "$consumer"
