#!/usr/bin/env bash
# Kotlin bindings (UniFFI) on the JVM: builds the native library and generates the Kotlin sources
# (ffi/uniffi/scripts/build.sh), then `mvn package`: the JUnit tests run against the library,
# loaded by JNA from the jar's resources, and the jar is built with the library inside.
#
# Installs a JDK and Maven with apt only when missing. Maven takes its plugins and dependencies
# from Maven Central into ~/.m2 (about 100 MB the first time, 30-40 s).
#
# PROTEUS_BENCH=1 also measures the cost of crossing the boundary: 1000 queued messages
# decrypted by one decryptBatch call from Kotlin against the native figure of proteus-bench for
# the same scenario (1x1000est, memory and sqlite-batch).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
  echo "== installing a JDK and Maven"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends default-jdk-headless maven >/dev/null
fi

bash ffi/uniffi/scripts/build.sh

echo "== mvn package (JUnit tests, then the jar)"
mvn -B -ntp -f ffi/uniffi/kotlin/pom.xml package

jar=$(ls ffi/uniffi/kotlin/target/proteus-jvm-*.jar)
echo "== $jar: $(stat -c %s "$jar") bytes"
unzip -l "$jar" | grep -E 'libproteus_uniffi\.so|proteus/Client\.class'

if [ "${PROTEUS_BENCH:-0}" = 1 ]; then
  # Three rounds, native and Kotlin alternating so that both see the same machine; the best
  # median of each is compared.
  out=target/uniffi/bench
  mkdir -p "$out"
  : > "$out/native.jsonl"
  : > "$out/kotlin.jsonl"
  for round in 1 2 3; do
    echo "== round $round: native proteus-bench 1x1000est (memory, sqlite-batch)"
    cargo run --locked --release -q -p proteus-bench -- --json --runs 61 --scenario 1x1000est \
      --store memory,sqlite-batch | tee -a "$out/native.jsonl"
    echo "== round $round: Kotlin, the same scenario through decryptBatch"
    PROTEUS_BENCH_OUT="$PWD/$out/kotlin-round.jsonl" mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml \
      surefire:test -Dtest=BatchOverheadBench -Dsurefire.failIfNoSpecifiedTests=false
    cat "$out/kotlin-round.jsonl" >> "$out/kotlin.jsonl"
  done
  python3 - "$out/native.jsonl" "$out/kotlin.jsonl" <<'PY'
import json, sys
def best(path):
    out = {}
    for j in map(json.loads, open(path)):
        if j["store"] not in out or j["median_ms"] < out[j["store"]]["median_ms"]:
            out[j["store"]] = j
    return out
native, kotlin = best(sys.argv[1]), best(sys.argv[2])
print(f"| 1x1000est, median of 61 runs (best of 3 rounds) | native Rust | Kotlin decryptBatch | overhead |")
print(f"|---|---|---|---|")
for store, k in kotlin.items():
    n = native[store]
    over = (k["median_ms"] / n["median_ms"] - 1) * 100
    print(f"| {store} | {n['median_ms']:.2f} ms | {k['median_ms']:.2f} ms | {over:+.0f}% |")
PY
fi
