#!/usr/bin/env bash
# A notification extension's path (issue 35, item 7) natively, from Kotlin and from Swift: a new
# process opens a store of 10,000 sessions and 1,001 prekeys (OpenMode existing), decrypts one
# message, closes it. Each run starts a fresh process of each of the three, on a fresh copy of
# the same store, the page cache dropped first where root allows (as `proteus-bench --extension`
# does), in an order that rotates from run to run; then the medians, with the load average.
#
#   bash ffi/uniffi/bench/extension.sh
#
#   native  proteus-bench --extension-child (the process `proteus-bench --extension` times)
#   kotlin  a new JVM (`java -cp … proteus.ExtensionBenchKt`, ffi/uniffi/kotlin/src/test/kotlin/
#           proteus/ExtensionBench.kt) on the jar as built, which JNA loads the library from
#   swift   ffi/uniffi/bench/swift-extension (release), run in the Swift suite's Debian 13 chroot
#
# Reported for each: the process's wall time from outside (start included: the JVM's, the
# dynamic loader's) and its CPU time (user and system: less sensitive to the load), the time
# inside it (Kotlin and Swift: from main through close, reading the message included; native:
# open through close), the open/decrypt/close split, peak memory growth (VmHWM at the end minus
# the RSS just before open, and for Kotlin and Swift minus the RSS at main) and the process's
# peak RSS (getrusage of the child). Afterwards `proteus-bench --extension` (10,000 and 100,000
# sessions), the native figure alone.
#
# PROTEUS_EXTENSION_RUNS (default 9), PROTEUS_EXTENSION_SESSIONS (default "10000"; e.g.
# "10000 100000"), PROTEUS_EXTENSION_ONLY (default "native,kotlin,swift"), PROTEUS_BENCH_WARM=1
# (leave the page cache alone), PROTEUS_EXTENSION_NO_BUILD=1 (reuse the last build),
# PROTEUS_EXTENSION_NATIVE_BENCH=0 (skip the closing proteus-bench --extension).
set -euo pipefail
cd "$(dirname "$0")/../../.."
repo=$PWD
runs=${PROTEUS_EXTENSION_RUNS:-9}
sessions_list=${PROTEUS_EXTENSION_SESSIONS:-10000}
only=${PROTEUS_EXTENSION_ONLY:-native,kotlin,swift}
root=${PROTEUS_SWIFT_ROOT:-/var/lib/proteus-swift-trixie}
cargo_target=${CARGO_TARGET_DIR:-target}
out=target/uniffi/bench
mkdir -p "$out"
has() { [[ ",$only," == *",$1,"* ]]; }

if [ "${PROTEUS_EXTENSION_NO_BUILD:-0}" != 1 ]; then
  echo "== building: proteus-bench, the native library and the bindings"
  cargo build --locked --release -q -p proteus-bench
  if has kotlin || has swift; then
    bash ffi/uniffi/scripts/build.sh
  fi
  if has kotlin; then
    echo "== the jar and the test classes (mvn package, tests skipped), and its runtime classpath"
    mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml -DskipTests package
    mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml dependency:build-classpath \
      -Dmdep.includeScope=runtime -Dmdep.outputFile="$repo/$out/kotlin-classpath.txt"
  fi
fi

if has swift; then
  [ -f "$root/.proteus-ready" ] || bash scripts/suites/swift.sh --prepare
  # As scripts/suites/swift.sh does: /proc and the repository at its own path in the chroot.
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  mkdir -p "$root$repo"
  mountpoint -q "$root$repo" || mount --bind "$repo" "$root$repo"
  trap 'umount -l "$root$repo" 2>/dev/null || true' EXIT
  if [ "${PROTEUS_EXTENSION_NO_BUILD:-0}" != 1 ]; then
    echo "== swift build -c release (ffi/uniffi/bench/swift-extension, in the chroot)"
    chroot "$root" env HOME=/root LIBRARY_PATH="$repo/$cargo_target/release" \
      bash -c "cd '$repo/ffi/uniffi/bench/swift-extension' && swift build -c release \
        --scratch-path /var/tmp/proteus-extension-build 2>&1 | tail -n 3"
  fi
fi

# The stores live where all three see them: inside the chroot when Swift runs.
if has swift; then
  inner=/var/tmp/proteus-extension-$$
  work=$root$inner
else
  work=$(mktemp -d /tmp/proteus-extension-XXXXXX)
  inner=$work
fi
mkdir -p "$work"
trap 'rm -rf "$work"; umount -l "$root$repo" 2>/dev/null || true' EXIT

jar=""
classpath=""
if has kotlin; then
  jar=$(ls ffi/uniffi/kotlin/target/proteus-jvm-*.jar | grep -v -e '-sources.jar$' -e '-javadoc.jar$')
  # The jar's runtime dependencies only (the plugin lists the test ones too).
  deps=$(tr ':' '\n' < "$out/kotlin-classpath.txt" \
    | grep -v -E 'junit|opentest4j|apiguardian|/kotlin-test|coroutines-test' | paste -sd:)
  classpath="$repo/ffi/uniffi/kotlin/target/test-classes:$repo/$jar:$deps"
fi
echo "== $(nproc) cores; $(java -version 2>&1 | sed -n 1p)$(has swift && echo "; $(chroot "$root" swift --version 2>&1 | sed -n 1p)")"

for sessions in $sessions_list; do
  echo "== setup (not timed): $sessions sessions, 1001 prekeys"
  "$cargo_target/release/proteus-bench" --extension-setup "$work/s$sessions" "$sessions" >/dev/null
  python3 - "$runs" "$sessions" "$only" "$work/s$sessions" "$inner/s$sessions" \
    "$repo/$cargo_target/release" "$classpath" "$root" "$repo/$out/extension.jsonl" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
runs, sessions, only, work, inner, release, classpath, root, log = sys.argv[1:]
runs, sessions, only = int(runs), int(sessions), only.split(",")
session_id = open(os.path.join(work, "session-id")).read().strip()
warm = os.environ.get("PROTEUS_BENCH_WARM") is not None

def command(impl, store, message):
    if impl == "native":
        return [os.path.join(release, "proteus-bench"), "--extension-child", store, message, session_id]
    if impl == "kotlin":
        return ["java", "-cp", classpath, "proteus.ExtensionBenchKt", store, message, session_id]
    # Inside the chroot, the paths are the inner ones.
    store, message = store.replace(work, inner, 1), message.replace(work, inner, 1)
    return ["chroot", root, "env", f"LD_LIBRARY_PATH={release}",
            "/var/tmp/proteus-extension-build/release/ExtensionBench", store, message, session_id]

def drop_cache():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

load_before = loadavg()
results = {impl: [] for impl in only}
cold = not warm
for run in range(runs):
    order = only[run % len(only):] + only[:run % len(only)]
    for impl in order:
        store = os.path.join(work, f"run-{run}-{impl}.db")
        shutil.copyfile(os.path.join(work, "template.db"), store)
        # On the disk before the run, as a store that has been there a while: otherwise the
        # run's first fsync of the store would write the whole copy.
        fd = os.open(store, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        message = os.path.join(work, "message.bin")
        if not warm:
            cold &= drop_cache()
        with open(os.path.join(work, "out"), "w+") as out, open(os.path.join(work, "err"), "w+") as err:
            start = time.perf_counter_ns()
            child = subprocess.Popen(command(impl, store, message), stdout=out, stderr=err)
            _, status, usage = os.wait4(child.pid, 0)
            wall = (time.perf_counter_ns() - start) / 1e6
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0); err.seek(0)
            text, errors = out.read(), err.read()
        if child.returncode != 0:
            sys.exit(f"{impl} failed ({child.returncode}): {errors}{text}")
        line = json.loads(text.strip().splitlines()[-1])
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(store + suffix):
                os.remove(store + suffix)
        if impl == "native":
            r = dict(inside=line["total_ms"], open=line["open_ms"], decrypt=line["decrypt_ms"],
                     close=line["close_ms"], growth=line["rss_growth_mib"])
        else:
            r = dict(inside=line["main_to_close_ms"], before_open=line["before_open_ms"],
                     open=line["open_ms"],
                     decrypt=line["decrypt_ms"], close=line["close_ms"],
                     growth=(line["hwm_kib"] - line["rss_before_open_kib"]) / 1024,
                     growth_main=(line["hwm_kib"] - line["rss_at_main_kib"]) / 1024,
                     at_main=line["rss_at_main_kib"] / 1024)
        # ru_maxrss: the child's peak resident set, in KiB on Linux.
        r.update(wall=wall, cpu=(usage.ru_utime + usage.ru_stime) * 1000,
                 peak=usage.ru_maxrss / 1024, run=run, impl=impl, sessions=sessions, cold=not warm)
        results[impl].append(r)
        with open(log, "a") as f:
            f.write(json.dumps(r) + "\n")
load_after = loadavg()

med = lambda impl, key: statistics.median(r[key] for r in results[impl])
cache = "page cache dropped before each run" if cold else (
    "page cache left warm" if warm else "page cache NOT dropped (not root)")
print(f"\n{sessions} sessions, 1001 prekeys; {cache}; median of {runs} runs each, new process "
      f"each; load average {load_before} before, {load_after} after; message for {session_id}\n")
print("| | process wall | process CPU | in process | open | decrypt | close "
      "| peak growth from open | from main | RSS at main | process peak RSS |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
names = {"native": "native (Rust)", "kotlin": "Kotlin (JVM)", "swift": "Swift"}
for impl in only:
    worst = max(r["growth"] for r in results[impl])
    main = "–" if impl == "native" else f"{med(impl, 'growth_main'):.2f} MiB"
    at_main = "–" if impl == "native" else f"{med(impl, 'at_main'):.1f} MiB"
    print(f"| {names[impl]} | {med(impl, 'wall'):.1f} ms | {med(impl, 'cpu'):.0f} ms | "
          f"{med(impl, 'inside'):.1f} ms | "
          f"{med(impl, 'open'):.1f} ms | {med(impl, 'decrypt'):.1f} ms | "
          f"{med(impl, 'close'):.2f} ms | {med(impl, 'growth'):.2f} MiB (max {worst:.2f}) | "
          f"{main} | {at_main} | {med(impl, 'peak'):.1f} MiB |")
PY
  rm -rf "$work/s$sessions"
done
echo "(in process: Kotlin and Swift from main through close; native from open through close."
echo " Kotlin's open includes loading the library, the first call through the bindings. Peak"
echo " growth: VmHWM at the end minus the RSS just before open, or at main; process CPU and"
echo " peak RSS: the child's user+system time and ru_maxrss. Every run: $out/extension.jsonl)"

if has native && [ "${PROTEUS_EXTENSION_NATIVE_BENCH:-1}" = 1 ]; then
  echo "== proteus-bench --extension --runs $runs"
  "$cargo_target/release/proteus-bench" --extension --runs "$runs"
fi
