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
  out=target/uniffi/bench
  mkdir -p "$out"
  echo "== native: proteus-bench 1x1000est (memory, sqlite-batch)"
  cargo run --locked --release -q -p proteus-bench -- --json --runs 61 --scenario 1x1000est \
    --store memory,sqlite-batch | tee "$out/native.jsonl"
  echo "== Kotlin: the same scenario through decryptBatch"
  PROTEUS_BENCH_OUT="$PWD/$out/kotlin.jsonl" mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml \
    surefire:test -Dtest=BatchOverheadBench -Dsurefire.failIfNoSpecifiedTests=false
  python3 - "$out/native.jsonl" "$out/kotlin.jsonl" <<'PY'
import json, sys
native = {j["store"]: j for j in map(json.loads, open(sys.argv[1]))}
kotlin = {j["store"]: j for j in map(json.loads, open(sys.argv[2]))}
print(f"{'1x1000est':<14}{'native ms':>11}{'Kotlin ms':>11}{'overhead':>10}   (medians)")
for store, k in kotlin.items():
    n = native[store]
    over = (k["median_ms"] / n["median_ms"] - 1) * 100
    print(f"{store:<14}{n['median_ms']:>11.3f}{k['median_ms']:>11.3f}{over:>9.1f}%")
PY
fi
