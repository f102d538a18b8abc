#!/usr/bin/env bash
# Smoke-runs every fuzz target (15 s each by default; FUZZ_SECONDS overrides) from its committed
# corpus. New inputs go to a scratch corpus, so the committed one only changes on purpose.
# Stable Rust with RUSTC_BOOTSTRAP=1 builds cargo-fuzz's sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-15}
export RUSTC_BOOTSTRAP=1
# cargo caches its rustc probe; without RUSTC_BOOTSTRAP in the cache a stale probe rejects -Z.
rm -f fuzz/target/.rustc_info.json

if ! cargo fuzz --version 2>/dev/null | grep -q '0.13.2'; then
  cargo install cargo-fuzz --version 0.13.2
fi

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
