#!/usr/bin/env bash
# Builds the addon for arm64 Linux (glibc) on an x86_64 Linux machine, beside the one build.sh
# builds for this machine: proteus.linux-arm64-gnu.node, cross-compiled with Debian's toolchain
# (gcc-aarch64-linux-gnu, installed with the Rust target when missing: scripts/lib/aarch64.sh).
# `npm pack` after both ships the two prebuilds; load.js loads the one of the machine it runs on.
# Checks the binary: an AArch64 ELF whose LOAD segments are aligned to 16 KB or more.
set -euo pipefail
cd "$(dirname "$0")"
root=../..
# shellcheck source=../../scripts/lib/install.sh
. "$root/scripts/lib/install.sh"
# shellcheck source=../../scripts/lib/aarch64.sh
. "$root/scripts/lib/aarch64.sh"

npm_ci .
aarch64_install_system
aarch64_install_target
aarch64_env
# As build.sh builds: stripped by the profile, no RUSTFLAGS; the raw layer's types (addon.d.ts,
# not shipped) are the same for every target.
export CARGO_PROFILE_RELEASE_STRIP=symbols
node_modules/.bin/napi build --platform --release --no-js --target "$AARCH64_TARGET" --dts addon.d.ts
check_elf proteus.linux-arm64-gnu.node AArch64
