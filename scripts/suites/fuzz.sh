#!/usr/bin/env bash
# Smoke-runs every fuzz target from its committed corpus: every corpus input, then new inputs for
# 5 s per target in the test command (FUZZ_SECONDS overrides: `FUZZ_SECONDS=300
# scripts/test.sh fuzz` is the long sweep). New inputs go to a scratch corpus, so the committed
# one only changes on purpose.
# Stable Rust with RUSTC_BOOTSTRAP=1 builds cargo-fuzz's sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-5}
export RUSTC_BOOTSTRAP=1
# cargo caches its rustc probe; without RUSTC_BOOTSTRAP in the cache a stale probe rejects -Z.
rm -f fuzz/target/.rustc_info.json

# shellcheck source=../lib/install.sh
. scripts/lib/install.sh
cargo_install_tool cargo-fuzz 0.13.2

targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^proteus-fuzz$')
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cargo fuzz build --fuzz-dir fuzz
failed=0
for target in $targets; do
  mkdir -p "$scratch/$target"
  echo "== fuzz $target for ${SECONDS_PER_TARGET}s"
  if ! cargo fuzz run --fuzz-dir fuzz "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -print_final_stats=1 2>"$scratch/$target.log"; then
    failed=$((failed + 1))
    tail -40 "$scratch/$target.log"
    echo "fuzz target $target FAILED (artifacts in fuzz/artifacts/$target)"
  else
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$scratch/$target.log" | sed "s/^/  $target /" || true
  fi
done
[ "$failed" -eq 0 ]
