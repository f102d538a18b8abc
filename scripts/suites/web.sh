#!/usr/bin/env bash
# The web build (ffi/web): builds the npm package into ffi/web/pkg/ and tests it in Node and in a
# real headless Chromium and Firefox ESR, live against @wireapp/proteus 9.13.0. Installs what is
# missing (and nothing when it is present): a pinned nightly with rust-src (ffi/web/build.sh
# rebuilds std with it; ~10 s to install here), wasm-bindgen-cli at the exact version of the
# wasm-bindgen crate (cargo install, ~5 min the first time), Debian's chromium and firefox-esr, npm
# devDependencies (binaryen 132 for wasm-opt, @wireapp/proteus, playwright-core, puppeteer-core,
# fake-indexeddb, typescript).
#
#   1. build: cargo (profile release-wasm) + wasm-bindgen --target web + wasm-opt -Oz (npm binaryen)
#   2. node --test tests/                       the whole API in Node (memory and IndexedDB stores;
#      importCryptobox from stores the real @wireapp/cryptobox writes: tests/cryptobox)
#      node --test tests/faults/memory.mjs      memory exhaustion at every growth of a batch's wasm
#      memory (the package's module with a maximum on its memory; issue 36, fault 6); the build
#      also writes the module with function names (PROTEUS_WEB_NAMES=1) to name the trap's frames
#   3. a consumer project (the packed tarball, used by name in Node; bundled by esbuild for
#      Chromium) and tsc on a usage of the types
#   4. node --test tests/interop/wireapp.mjs    live interop with @wireapp/proteus
#   5. node --test tests/browser/chromium.mjs   Chromium: IndexedDB + reload, two pages, the demo;
#      tests/browser/sealed.mjs: sealed stores' raw records, keys, fan-out on a sealed store;
#      tests/browser/relaxed.mjs: the browser killed after a relaxed decrypt commit, reopened;
#      tests/browser/faults.mjs: quota exceeded, a transaction aborted, the page closed and the
#      Worker terminated at every request of a decryptBatch's and an encrypt's commit (Chromium only);
#      tests/browser/cryptobox.mjs: importCryptobox from the IndexedDB database the real
#      @wireapp/cryptobox wrote (bundled by esbuild), reloads during an import, and its benchmark
#      (10,000 sessions + 101 prekeys, printed);
#      and examples/chat/tests/web/chromium.mjs: the chat's page against a terminal client
#      node --test tests/browser/worker.mjs     Chromium: a batch in a module Worker, frames keep ticking
#   5b. Firefox ESR (Debian's, headless, driven over WebDriver BiDi by puppeteer-core:
#      PROTEUS_BROWSER=firefox, tests/support/firefox.mjs): the same browser tests (IndexedDB,
#      two pages on one store, the demo, sealed stores, the crash after a relaxed commit, the
#      Worker client, importCryptobox), the bundled page and the chat page, then the browser bench
#      once (bench/browser.mjs, a smoke run); ~2 min here
#   6. the benchmark, one timed run per scenario (a smoke test: every plaintext is checked), and
#      the fast-forward worst case once (forged refused, genuine decrypted)
#   7. Bun 1.4.5 and Deno 2.9.6 (npm packages, pinned in tests/runtimes): every tests/*.test.mjs under
#      `bun test` and `deno test`, and the consumer project (the packed tarball) under each;
#      everything passes there (tests/runtimes/run.mjs would list a known failure with its reason)
#   8. the .wasm size, raw and gzipped, against its budget
set -euo pipefail
cd "$(dirname "$0")/../.."

WEB=ffi/web
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
FIREFOX=${FIREFOX:-/usr/bin/firefox-esr}
# The .wasm must stay within this many bytes. 200,000 is the target; the security hardening took
# it to 205,387 and the team accepted 206,000. The journal's records in a sorted vector brought it
# to 196,316; the shared-store commit protocol put 5.7 KB back (202,048): docs/benchmarks.md.
# Session 9's size work (webtrim) made room for the lazy sending step and the open plan
# (199,083 merged), so the budget is the target again. The lanes module (batch-lanes), an opt-in
# second module over the budget until session 14 (limit 216,000), is the only one since it fits.
# Issue 32's one batch path (crates/proteus-client/src/batch/) took the module to 228,392 bytes;
# session 17 won it back to 209,267 (one prekey and one identity view for every decrypt path, no
# B-tree, sort or extra hash table in the batch: docs/benchmarks.md, "Issue 32"). The errors'
# messages derived by thiserror, with their fields, then cost 3.5 KB (core::fmt's integer and
# padding code): 212,783. Issue 32 allows 210,000 in all; the 2.8 KB left are open work.
# importCryptobox (issue 34: a whole cryptobox store in one commit) added 10.2 KB: 222,936;
# resetSession and topUpPrekeys (issue 35) 2.7 KB more: 225,766. Each batch's summary (issue 35:
# the outcomes counted, lastBatchCounts) 1.9 KB: 227,623. The client's log is compiled out of
# the module (`log`'s max_level_off in Cargo.toml): with it, 5 KB more. Identity pinning (issue
# 35: pins in the session's commit, acceptIdentity, pinnedIdentity) 6.5 KB: 234,139. The calls
# declared once for every binding (ffi/surface: four calls that could not fail now return a
# Result) 188 bytes, forgetSession 243, and the imports' secret arguments taken as owned buffers
# and wiped after the call (wasm-bindgen frees a borrowed one unwiped) 485; the prekey calls
# declared once too (one shape in every binding) gave 76 back: 234,979. Issue 33 (the web
# store's rules in Rust): the sealed format of IndexedDB stores (proteus-client's web_sealed,
# RawSealer) and the record buffers' bounds moved from JS into the module, 45,374 bytes (the JS
# lost its sealing and record-layout code): 280,349. The records' buffers crossing as owned,
# wiped vectors (tests/secrets.test.mjs) 627: 280,976. That code made smaller: the test-only
# exports out (openManifest, openRecord, sealLegacy, sealedCommit; the tests write format 1
# themselves) 4,938; one HashMap type for the bound entries and a commit's changes 1,870; a
# batch's outputs in one wiped buffer and loops rather than collects into a Result 1,053 (457 of
# them in stored_records); one path for a write job's steps and two shared setters of the JS
# objects 177: 272,938.
# The commit protocol's driving loop in Rust (issue 33: journal/driver.rs, executed by
# commit-engine.js) added 1,351 (the state machine; the journal's five step exports went): 274,289.
# Opening a store step by step in Rust (issue 33: web_sealed::open_step, executed by idb.js; the
# message of sealing a sealed store came with it) added 388, 123 of them won back by making
# web_sealed's fixed StoreCorrupt messages in one function: 274,554. The in-memory store's
# records and compare-and-swap in Rust (issue 33: proteus-client's HostMemoryStore, RawMemoryStore;
# stores.js's MemoryStore only moves buffers) 1,923: 276,477.
# Where the bytes go: node scripts/wasm-sizes.mjs on the module with names (PROTEUS_WEB_NAMES=1).
WASM_BUDGET=${WASM_BUDGET:-276540}

log() { printf '\n== %s\n' "$*"; }
timed() { # what, command...
  local what=$1 start=$SECONDS
  shift
  "$@"
  echo "($what: $((SECONDS - start)) s)"
}

# --- what the suite needs ----------------------------------------------------------------------

# The nightly toolchain, wasm-bindgen-cli and the npm devDependencies: ffi/web/build.sh installs them.

# shellcheck source=../lib/install.sh
. scripts/lib/install.sh
[ -x "$CHROMIUM" ] || apt_install chromium
[ -x "$FIREFOX" ] || apt_install firefox-esr

# Stores written by Wire's real @wireapp/cryptobox 12.8.0, for importCryptobox's tests.
npm_ci tests/cryptobox

# --- build and tests ---------------------------------------------------------------------------

log "build the package into $WEB/pkg"
timed build env PROTEUS_WEB_NAMES=1 "$WEB/build.sh"

cd "$WEB"
log "node --test: the API in Node"
node --test tests/

log "memory exhaustion at every growth of a batch (a maximum on the module's memory, page by page)"
timed "memory faults" node --test tests/faults/memory.mjs

log "a consumer project: the packed tarball installed outside the repository and used by name"
consumer=$(mktemp -d)
(cd pkg && npm pack --pack-destination "$consumer" --silent >/dev/null)
(cd "$consumer" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent ./proteus-engine-web-*.tgz \
  && cp "$OLDPWD/tests/consumer/use.mjs" "$OLDPWD/tests/consumer/worker.mjs" "$OLDPWD/tests/consumer/lanes.mjs" . \
  && node use.mjs && node worker.mjs && node lanes.mjs)
rm -rf "$consumer"

log "a bundled application: esbuild bundles the packed package for the browser, run in Chromium"
CHROMIUM=$CHROMIUM node --test tests/bundler/esbuild.mjs

log "tsc: the package's types"
node_modules/.bin/tsc -p tests/types && echo "types ok"

log "live interop with @wireapp/proteus"
node --test tests/interop/wireapp.mjs

log "headless Chromium ($("$CHROMIUM" --version 2>/dev/null | head -n1))"
CHROMIUM=$CHROMIUM node --test tests/browser/chromium.mjs tests/browser/sealed.mjs tests/browser/relaxed.mjs \
  tests/browser/cryptobox.mjs tests/browser/faults.mjs

log "the chat's web client in headless Chromium against a terminal client (examples/chat)"
cargo build --locked -p proteus-chat --manifest-path ../../Cargo.toml
CHROMIUM=$CHROMIUM node --test ../../examples/chat/tests/web/chromium.mjs

log "Chromium: a 20,000-message batch in a module Worker while the page keeps drawing frames"
CHROMIUM=$CHROMIUM node --test tests/browser/worker.mjs

# --- Firefox (issue 37) ------------------------------------------------------------------------
log "headless Firefox ESR ($("$FIREFOX" --version 2>/dev/null | head -n1)) over WebDriver BiDi: the browser tests, the bundled page, the chat page"
firefox_tests() {
  PROTEUS_BROWSER=firefox FIREFOX=$FIREFOX node --test tests/browser/chromium.mjs tests/browser/sealed.mjs \
    tests/browser/relaxed.mjs tests/browser/worker.mjs tests/browser/cryptobox.mjs tests/bundler/esbuild.mjs \
    ../../examples/chat/tests/web/chromium.mjs
}
timed "firefox tests" firefox_tests
log "the browser bench in Firefox, one short run (smoke: every plaintext is checked)"
timed "firefox bench" env PROTEUS_BROWSER=firefox FIREFOX="$FIREFOX" node bench/browser.mjs --runs 2 --cold 1

log "benchmark, one timed run per scenario (smoke)"
node bench/bench.mjs --json --runs 1
log "the worst case of a long absence: one message at a gap of 100,000, forged and genuine (smoke)"
node bench/fast-forward.mjs --runs 1
log "what the worker costs a 10,000-message batch: Client in this thread and RemoteClient in a worker thread (smoke)"
node bench/worker.mjs --runs 1

# --- Bun and Deno (issue 37) -------------------------------------------------------------------
log "Bun and Deno: tests/*.test.mjs under bun test and deno test, the consumer project under each"
npm_ci tests/runtimes
timed "bun and deno" node tests/runtimes/run.mjs

log "size"
size_check() { # module budget
  local raw gz
  raw=$(wc -c <"pkg/$1" | tr -d ' ')
  gz=$(gzip -9 -c "pkg/$1" | wc -c | tr -d ' ')
  echo "pkg/$1: $raw bytes raw, $gz bytes gzipped (gzip -9); budget $2 bytes"
  [ "$raw" -le "$2" ] || { echo "pkg/$1 is over its budget" >&2; exit 1; }
}
size_check proteus_web_bg.wasm "$WASM_BUDGET"
