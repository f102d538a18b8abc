#!/usr/bin/env bash
# Kotlin bindings (UniFFI) on the JVM: builds the native library and generates the Kotlin sources
# (ffi/uniffi/scripts/build.sh), then `mvn package`: the JUnit tests run against the library,
# loaded by JNA from the jar's resources, and the jar is built with the library inside: this
# machine's (linux-x86-64) and the arm64 one (linux-aarch64, cross-compiled by build.sh), which
# the suite checks are both in the jar, each built for its machine.
#
# Installs a JDK and Maven with apt only when missing. Maven takes its plugins and dependencies
# from Maven Central into ~/.m2 (about 100 MB the first time, 30-40 s).
#
# PROTEUS_BENCH=1 also measures the cost of crossing the boundary: 1000 queued messages
# decrypted by one decryptBatch call from Kotlin against the native figure of proteus-bench for
# the same scenario (1x1000est, memory and sqlite-batch).
#
# PROTEUS_FANOUT=1 runs the fan-out scenario (one 150-byte plaintext to 4000 sessions with one
# encryptFor call, memory and durable SQLite) through Kotlin, after the native proteus-bench
# figure of the same scenario on the same machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
  # shellcheck source=../lib/install.sh
  . scripts/lib/install.sh
  apt_install default-jdk-headless maven
fi

bash ffi/uniffi/scripts/build.sh

echo "== mvn install (JUnit tests, the jar, and the jar into the local Maven repository)"
mvn -B -ntp -f ffi/uniffi/kotlin/pom.xml install

echo "== a consumer project outside the repository, on the installed coordinates"
consumer=$(mktemp -d)
cp -r ffi/uniffi/kotlin/consumer/. "$consumer"
mvn -B -ntp -q -f "$consumer/pom.xml" compile exec:java
rm -rf "$consumer"

jar=$(ls ffi/uniffi/kotlin/target/proteus-jvm-*.jar | grep -v -e '-sources.jar$' -e '-javadoc.jar$')
for classifier in sources javadoc; do
  unzip -l "${jar%.jar}-$classifier.jar" | tail -n1
done
echo "== $jar: $(wc -c < "$jar" | tr -d ' ') bytes"
unzip -l "$jar" | grep -E 'libproteus_uniffi\.so|proteus/Client\.class'
# The jar carries the library for x86-64 and for arm64 Linux under JNA's resource prefixes
# (ffi/uniffi/scripts/build.sh), each an ELF of its machine; the arm64 one with its LOAD segments
# aligned to 16 KB or more.
# shellcheck source=../lib/aarch64.sh
. scripts/lib/aarch64.sh
libs=$(mktemp -d)
unzip -q -d "$libs" "$jar" 'linux-x86-64/libproteus_uniffi.so' 'linux-aarch64/libproteus_uniffi.so'
check_elf "$libs/linux-x86-64/libproteus_uniffi.so" "Advanced Micro Devices X86-64"
check_elf "$libs/linux-aarch64/libproteus_uniffi.so" AArch64
rm -rf "$libs"

if [ "${PROTEUS_BENCH:-0}" = 1 ]; then
  # Three rounds, native and Kotlin alternating so that both see the same machine; each round's
  # Kotlin median is compared with the native median of the same round, and the median of the
  # three ratios is the overhead.
  out=target/uniffi/bench
  mkdir -p "$out"
  : > "$out/native.jsonl"
  : > "$out/kotlin.jsonl"
  for round in 1 2 3; do
    echo "== round $round: native proteus-bench 1x1000est (memory, sqlite-batch); load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
    cargo run --locked --release -q -p proteus-bench -- --json --runs 61 --scenario 1x1000est \
      --store memory,sqlite-batch | tee -a "$out/native.jsonl"
    echo "== round $round: Kotlin, the same scenario through decryptBatch"
    PROTEUS_BENCH_OUT="$PWD/$out/kotlin-round.jsonl" mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml \
      surefire:test -Dtest='BatchOverheadBench#decrypt*' -Dsurefire.failIfNoSpecifiedTests=false
    cat "$out/kotlin-round.jsonl" >> "$out/kotlin.jsonl"
  done
  echo "== where the time of a Kotlin batch goes; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  PROTEUS_BENCH_OUT=/dev/null mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml \
    surefire:test -Dtest='BatchOverheadBench#where*' -Dsurefire.failIfNoSpecifiedTests=false
  python3 - "$out/native.jsonl" "$out/kotlin.jsonl" <<'PY'
import json, statistics, sys
def rounds(path):
    out = {}
    for j in map(json.loads, open(path)):
        out.setdefault(j["store"], []).append(j["median_ms"])
    return out
native, kotlin = rounds(sys.argv[1]), rounds(sys.argv[2])
print("| 1x1000est, medians of 61 runs per round | native Rust | Kotlin decryptBatch | overhead |")
print("|---|---|---|---|")
for store, ks in kotlin.items():
    ns = native[store]
    for i, (n, k) in enumerate(zip(ns, ks), 1):
        print(f"| {store}, round {i} | {n:.2f} ms | {k:.2f} ms | {(k / n - 1) * 100:+.0f}% |")
    ratio = statistics.median(k / n for n, k in zip(ns, ks))
    print(f"| **{store}: median of the rounds** | {statistics.median(ns):.2f} ms | "
          f"{statistics.median(ks):.2f} ms | **{(ratio - 1) * 100:+.0f}%** |")
PY
fi

if [ "${PROTEUS_FANOUT:-0}" = 1 ]; then
  echo "== fanout4000: native proteus-bench; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
  cargo run --locked --release -q -p proteus-bench -- --json --scenario fanout4000 --store memory,sqlite-batch
  echo "== fanout4000 through Kotlin (encryptFor); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  PROTEUS_FANOUT=1 mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml surefire:test -Dtest=FanoutBench \
    -Dsurefire.failIfNoSpecifiedTests=false
fi
