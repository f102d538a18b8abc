#!/usr/bin/env bash
# Runs every test suite, installing what a suite needs when it is missing (and nothing when it
# is present). Usage: scripts/test.sh [SUITE...]; with no SUITE, all of them run in order.
#
# Installs that wait on the network (Debian packages, the Swift chroot, Rust toolchains, npm and
# Maven dependencies) and the Rust tools compiled from crates.io start in the background at once,
# so that they overlap the first suites' compiling; a suite starts when what it needs is in
# (scripts/lib/install.sh). The command ends with each suite's time and the total.
#
#   rust     formatting, clippy (warnings are errors; proteus-client also without its default
#            features), every Rust test of the workspace, the docs of the published crates
#            (warnings are errors)
#   msrv     the published crates build with the rust-version they declare (rustup installs it)
#   deny     cargo-deny: licences, duplicate and banned crates, sources (deny.toml)
#   vectors  replay-vectors on the interop vectors made by @wireapp/proteus (tests/vectors, and
#            ../shared/vectors when it is there)
#   wasm     the protocol core builds for wasm32-unknown-unknown; its four-lane SHA-256 tests run
#            in wasm (wasm32-wasip1 with simd128, under Node)
#   bench    each criterion bench runs once (a smoke test; timings are not asserted)
#   fuzz     every cargo-fuzz target for 15 s from its committed corpus (scripts/suites/fuzz.sh)
#   chat     the chat example in two real terminals under tmux (scripts/suites/chat.sh)
#   web      the wasm package: node:test, headless Chromium, live interop (scripts/suites/web.sh)
#   node     the Node package: the napi-rs addon and the wasm fallback under one node:test suite,
#            two processes on one store, a consumer of the tarball (scripts/suites/node.sh)
#   arm64    linux-arm64 cross-compiled and run under qemu-user: Rust tests of the core and the
#            client, the Node addon on Debian's arm64 Node, the tarball with both prebuilds
#            (scripts/suites/arm64.sh)
#   kotlin   the UniFFI Kotlin bindings with Maven and JUnit; the jar holds the x86-64 and the
#            arm64 library (scripts/suites/kotlin.sh)
#   swift    the UniFFI Swift bindings with XCTest in a Debian 13 chroot (scripts/suites/swift.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental caches speed up an edit-compile loop, not a test run, and take gigabytes of a disk
# that CI shares; set CARGO_INCREMENTAL=1 to keep them.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

SHARED=${PROTEUS_SHARED:-../shared}
# The suites that install tools from source (deny, fuzz, web) come after the ones that do not, so
# that the tools compile in the background meanwhile.
ALL_SUITES=(rust msrv vectors wasm bench chat deny fuzz web node arm64 kotlin swift)

log() { printf '\n== %s\n' "$*"; }
# shellcheck source=lib/install.sh
. scripts/lib/install.sh
# shellcheck source=lib/aarch64.sh
. scripts/lib/aarch64.sh

ensure_rust_components() {
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
}

ensure_wasm_target() {
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
}

suite_rust() {
  ensure_rust_components
  log "cargo fmt --check"
  cargo fmt --all -- --check
  log "cargo clippy (warnings are errors)"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  # The workspace build turns on every feature of proteus-client; its tests must also build for
  # a crate without SQLite or sealing (the web build's), so each is left out once.
  local features
  for features in "" sqlite sealed; do
    log "clippy of proteus-client and its tests, no default features${features:+ but $features}"
    cargo clippy -p proteus-client --all-targets --locked --no-default-features ${features:+--features "$features"} -- -D warnings
  done
  # --no-fail-fast: a red run shows every failing test, not the first binary's only.
  log "cargo test"
  cargo test --workspace --locked --no-fail-fast
  log "cargo doc of the published crates (warnings are errors)"
  RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p proteus-core -p proteus-client
}

# msrv_of CRATE: the toolchain of the crate's declared rust-version (1.88 -> 1.88.0).
msrv_of() {
  local version
  version=$(cargo metadata --no-deps --format-version 1 --locked \
    | python3 -c "import json,sys; print(next(p['rust_version'] for p in json.load(sys.stdin)['packages'] if p['name']=='$1'))")
  [[ $version =~ ^[0-9]+\.[0-9]+$ ]] && version=$version.0
  echo "$version"
}
MSRV_CRATES=(proteus-core proteus-client)

ensure_msrv_toolchains() {
  local crate version
  for crate in "${MSRV_CRATES[@]}"; do
    version=$(msrv_of "$crate")
    rustup toolchain list | grep -q "^$version-" || rustup toolchain install "$version" --profile minimal
  done
}

suite_msrv() {
  # Each published crate, checked with the toolchain of its declared rust-version, in a target
  # dir of its own so the main build's artefacts stay valid.
  local crate version
  ensure_msrv_toolchains
  for crate in "${MSRV_CRATES[@]}"; do
    version=$(msrv_of "$crate")
    log "$crate with Rust $version (its rust-version)"
    # Without the repository's rustflags (.cargo/config.toml), which a consumer does not have.
    CARGO_ENCODED_RUSTFLAGS= CARGO_TARGET_DIR=target/msrv cargo "+$version" check --locked -p "$crate"
  done
}

suite_deny() {
  # Installed from the crate registry when missing (a few minutes, once). Advisories are left out:
  # the RustSec database is a git clone from GitHub, which these machines cannot reach.
  cargo_install_tool cargo-deny 0.20.2 cargo-deny --locked
  log "cargo deny: the workspace"
  cargo deny --workspace check licenses bans sources
  log "cargo deny: the fuzz targets"
  (cd fuzz && cargo deny --config ../deny.toml check licenses bans sources)
}

suite_vectors() {
  log "replay-vectors: the public set and the sets generated here with @wireapp/proteus (tests/vectors)"
  local dirs=(tests/vectors/proteus-js tests/vectors/generated)
  # The set given to the project, when it is beside the repository (it may hold more than the copy).
  if [ -d "$SHARED/vectors" ]; then
    while IFS= read -r index; do dirs+=("$(dirname "$index")"); done < <(find "$SHARED/vectors" -name index.json | sort)
  fi
  # The test profile, as the rust suite built it (proteus-tests and the dependencies are optimised
  # in it: Cargo.toml).
  # shellcheck disable=SC2086
  cargo run --locked --bin replay-vectors -- "${dirs[@]}" ${EXTRA_VECTORS:-}
}

ensure_wasm_targets() {
  ensure_wasm_target
  rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
}

suite_wasm() {
  ensure_wasm_targets
  log "proteus-core for wasm32-unknown-unknown"
  cargo build --locked --release -p proteus-core --target wasm32-unknown-unknown
  # The four-lane SHA-256 of the web build (crates/proteus-core/src/sha256x4) on its v128 lanes:
  # its tests built for wasm32-wasip1 with simd128, run by Node's WASI (scripts/wasi-run.mjs).
  # The web build's curve arithmetic (ffi/web/build.sh: dalek's fiat backend) under the key
  # checks' tests: the keys accepted in wasm are exactly the reference's.
  local flags='-C target-feature=+simd128 --cfg curve25519_dalek_backend="fiat"'
  log "proteus-core's four-lane SHA-256 and key-check tests in wasm (wasm32-wasip1, simd128, Node)"
  CARGO_TARGET_WASM32_WASIP1_RUNNER="node $PWD/scripts/wasi-run.mjs" \
    CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="$flags" \
    cargo test --locked --release -p proteus-core --lib --target wasm32-wasip1 -- sha256x4 crypto:: keys::public_key
  log "proteus-core's open plan in wasm: open_jobs opens four jobs at a time in v128 lanes"
  CARGO_TARGET_WASM32_WASIP1_RUNNER="node $PWD/scripts/wasi-run.mjs" \
    CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="$flags" \
    cargo test --locked --release -p proteus-core --target wasm32-wasip1 --test open_plan
}

suite_bench() {
  # In the test profile the rust suite built the rest in: a smoke run checks that every scenario
  # runs and decrypts; `cargo bench -p proteus-bench` measures.
  log "criterion benches, one iteration each"
  cargo test --locked -p proteus-bench --benches
}

# Suites of a binding or tool live in scripts/suites/NAME.sh; each installs what it needs.
suite_external() {
  bash "scripts/suites/$1.sh"
}

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${ALL_SUITES[@]}")
for suite in "${suites[@]}"; do
  if ! declare -F "suite_$suite" >/dev/null && [ ! -f "scripts/suites/$suite.sh" ]; then
    echo "unknown suite: $suite (known: ${ALL_SUITES[*]})" >&2
    exit 2
  fi
done
selected() { local s; for s in "${suites[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# --- installs in the background ----------------------------------------------------------------
# Each is one of the suites' own install steps, started early; the suites that need it wait for
# it (needs_of) and then find it done. With PROTEUS_BACKGROUND=0 nothing starts early.
needs_of() {
  case $1 in
    msrv | wasm) echo toolchains ;;
    chat | swift) echo system ;;
    deny | fuzz) echo tools ;;
    web | node | arm64) echo system toolchains packages tools ;;
    kotlin) echo system toolchains packages ;;
  esac
}

install_system() { # Debian packages, then the Swift chroot (network and disk)
  local packages=()
  selected chat && packages+=(tmux)
  selected web && packages+=(chromium firefox-esr)
  { selected node || selected arm64; } && packages+=(sqlite3)
  selected swift && packages+=(debootstrap)
  apt_install "${packages[@]}"
  # The cross toolchain and qemu (arm64; the jar's arm64 library), Debian's arm64 Node (arm64).
  if selected arm64 || selected kotlin; then aarch64_install_system; fi
  if selected arm64; then aarch64_install_node; fi
  if selected swift; then bash scripts/suites/swift.sh --prepare; fi
}

install_toolchains() { # rustup: toolchains and targets (network)
  if selected msrv; then ensure_msrv_toolchains; fi
  if selected wasm; then ensure_wasm_targets; fi
  if selected web || selected node || selected arm64; then ffi/web/build.sh --install-toolchain; fi
  if selected arm64 || selected kotlin; then aarch64_install_target; fi
}

install_packages() { # npm and Maven dependencies (network)
  if selected web || selected node || selected arm64; then npm_ci ffi/web && npm_ci tests/cryptobox; fi
  if selected web; then npm_ci ffi/web/tests/runtimes; fi
  if selected node || selected arm64; then npm_ci ffi/node; fi
  if selected kotlin && command -v mvn >/dev/null; then
    mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml dependency:go-offline
  fi
}

install_tools() { # Rust tools compiled from crates.io (CPU, at the lowest priority)
  renice -n 19 -p "$BASHPID" >/dev/null
  if selected deny; then cargo_install_tool cargo-deny 0.20.2 cargo-deny --locked; fi
  if selected fuzz; then cargo_install_tool cargo-fuzz 0.13.2; fi
  if selected web || selected node || selected arm64; then
    await_background toolchains
    ffi/web/build.sh --install-wasm-bindgen
  fi
}

if [ "${PROTEUS_BACKGROUND:-1}" != 0 ]; then
  PROTEUS_BACKGROUND=$(mktemp -d "${TMPDIR:-/tmp}/proteus-installs.XXXXXX")
  export PROTEUS_BACKGROUND
  started=()
  for install in system toolchains packages tools; do
    for suite in "${suites[@]}"; do
      if [[ " $(needs_of "$suite") " == *" $install "* ]]; then
        background "$install" "install_$install"
        started+=("$install")
        break
      fi
    done
  done
  [ ${#started[@]} -eq 0 ] || log "installing in the background: ${started[*]} (logs in $PROTEUS_BACKGROUND)"
fi

# --- the suites --------------------------------------------------------------------------------
passed=0
failed=0
failed_names=()
table=()
total_start=$SECONDS
for suite in "${suites[@]}"; do
  if declare -F "suite_$suite" >/dev/null; then
    run=("suite_$suite")
  else
    run=(suite_external "$suite")
  fi
  start=$SECONDS
  for install in $(needs_of "$suite"); do await_background "$install"; done
  waited=$((SECONDS - start))
  # Not `if ( … )`: errexit is ignored inside a tested command, so a failing step would not stop
  # its suite.
  set +e
  ( set -e; "${run[@]}" )
  status=$?
  set -e
  if [ $status -eq 0 ]; then
    passed=$((passed + 1))
    result=passed
  else
    failed=$((failed + 1))
    failed_names+=("$suite")
    result=FAILED
  fi
  log "suite $suite $result in $((SECONDS - start)) s"
  table+=("$(printf '| %-8s | %-6s | %6d | %6d |' "$suite" "$result" "$((SECONDS - start))" "$waited")")
done
wait # the background installs of suites that did not run (a failed selection)

echo
echo "Time per suite (s; 'waited' is the part spent waiting for a background install):"
echo "| suite    | result |   time | waited |"
echo "|----------|--------|--------|--------|"
printf '%s\n' "${table[@]}"
printf '| %-8s | %-6s | %6d |        |\n' total "" "$((SECONDS - total_start))"
if [ -n "${PROTEUS_BACKGROUND:-}" ]; then
  for done_file in "$PROTEUS_BACKGROUND"/*.done; do
    [ -f "$done_file" ] || continue
    read -r status seconds <"$done_file"
    echo "background install $(basename "$done_file" .done): ${seconds} s, exit $status"
  done
fi
echo
[ $failed -eq 0 ] || echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
