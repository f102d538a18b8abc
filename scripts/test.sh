#!/usr/bin/env bash
# Runs every test suite, installing what a suite needs when it is missing (and nothing when it
# is present). Usage: scripts/test.sh [SUITE...]; with no SUITE, all of them run in order.
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
#   kotlin   the UniFFI Kotlin bindings with Maven and JUnit (scripts/suites/kotlin.sh)
#   swift    the UniFFI Swift bindings with XCTest in a Debian 13 chroot (scripts/suites/swift.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental caches speed up an edit-compile loop, not a test run, and take gigabytes of a disk
# that CI shares; set CARGO_INCREMENTAL=1 to keep them.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

SHARED=${PROTEUS_SHARED:-../shared}
ALL_SUITES=(rust msrv deny vectors wasm bench fuzz chat web node kotlin swift)

log() { printf '\n== %s\n' "$*"; }

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
  log "cargo test"
  cargo test --workspace --locked
  log "cargo doc of the published crates (warnings are errors)"
  RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p proteus-core -p proteus-client
}

suite_msrv() {
  # Each published crate, checked with the toolchain of its declared rust-version, in a target
  # dir of its own so the main build's artefacts stay valid.
  local crate version
  for crate in proteus-core proteus-client; do
    version=$(cargo metadata --no-deps --format-version 1 --locked \
      | python3 -c "import json,sys; print(next(p['rust_version'] for p in json.load(sys.stdin)['packages'] if p['name']=='$crate'))")
    [[ $version =~ ^[0-9]+\.[0-9]+$ ]] && version=$version.0
    rustup toolchain list | grep -q "^$version-" || rustup toolchain install "$version" --profile minimal
    log "$crate with Rust $version (its rust-version)"
    # Without the repository's rustflags (.cargo/config.toml), which a consumer does not have.
    CARGO_ENCODED_RUSTFLAGS= CARGO_TARGET_DIR=target/msrv cargo "+$version" check --locked -p "$crate"
  done
}

suite_deny() {
  # Installed from the crate registry when missing (a few minutes, once). Advisories are left out:
  # the RustSec database is a git clone from GitHub, which these machines cannot reach.
  command -v cargo-deny >/dev/null || cargo install --locked cargo-deny --version 0.20.2
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
  # shellcheck disable=SC2086
  cargo run --release --locked --bin replay-vectors -- "${dirs[@]}" ${EXTRA_VECTORS:-}
}

suite_wasm() {
  ensure_wasm_target
  log "proteus-core for wasm32-unknown-unknown"
  cargo build --locked --release -p proteus-core --target wasm32-unknown-unknown
  # The four-lane SHA-256 of the web build (crates/proteus-core/src/sha256x4) on its v128 lanes:
  # its tests built for wasm32-wasip1 with simd128, run by Node's WASI (scripts/wasi-run.mjs).
  rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
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
  log "criterion benches, one iteration each"
  cargo test --locked --release -p proteus-bench --benches
}

# Suites of a binding or tool live in scripts/suites/NAME.sh; each installs what it needs.
suite_external() {
  bash "scripts/suites/$1.sh"
}

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${ALL_SUITES[@]}")
passed=0
failed=0
failed_names=()
for suite in "${suites[@]}"; do
  if declare -F "suite_$suite" >/dev/null; then
    run=("suite_$suite")
  elif [ -f "scripts/suites/$suite.sh" ]; then
    run=(suite_external "$suite")
  else
    echo "unknown suite: $suite (known: ${ALL_SUITES[*]})" >&2
    exit 2
  fi
  start=$SECONDS
  # Not `if ( … )`: errexit is ignored inside a tested command, so a failing step would not stop
  # its suite.
  set +e
  ( set -e; "${run[@]}" )
  status=$?
  set -e
  if [ $status -eq 0 ]; then
    passed=$((passed + 1))
    log "suite $suite passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1))
    failed_names+=("$suite")
    log "suite $suite FAILED after $((SECONDS - start)) s"
  fi
done
echo
[ $failed -eq 0 ] || echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
