#!/usr/bin/env bash
# Builds the native library for this machine (release: the Kotlin benchmark and the jar use it)
# and generates the Kotlin and Swift sources from it, into target/uniffi/ (gitignored):
#
#   target/uniffi/kotlin/proteus/proteus.kt                        Kotlin (package `proteus`)
#   target/uniffi/swift/{Proteus.swift,ProteusFFI.h,...}           Swift (module `Proteus`)
#   target/uniffi/jvm-resources/linux-x86-64/libproteus_uniffi.so  for the jar (JNA's resource path)
#   target/uniffi/jvm-resources/linux-aarch64/libproteus_uniffi.so  the same for arm64 Linux,
#       cross-compiled with Debian's toolchain (scripts/lib/aarch64.sh installs it when missing)
#
# The jar carries what jvm-resources holds. On a machine that is not x86_64 Linux, or with
# PROTEUS_JVM_AARCH64=0, only this machine's library is built (under its JNA prefix).
#
# uniffi-bindgen is built in a profile of its own, unoptimised and without debug info: its
# hundred dependencies then compile in about 2 minutes on 2 cores instead of 5 to 9 with the
# workspace's dev profile (which optimises every dependency), and it still generates the
# bindings in a fraction of a second. Incremental: a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/../../.."

out=target/uniffi
# Cargo's output where CARGO_TARGET_DIR says (the generated sources still go to target/uniffi).
cargo_target=${CARGO_TARGET_DIR:-target}
lib=$cargo_target/release/libproteus_uniffi.so

echo "== cargo build --release -p proteus-uniffi"
cargo build --locked --release -p proteus-uniffi
echo "== uniffi-bindgen (Kotlin, Swift)"
cargo build --locked -p proteus-uniffi-bindgen --profile uniffi-bindgen \
  --config 'profile.uniffi-bindgen.inherits="dev"' \
  --config 'profile.uniffi-bindgen.debug=false' \
  --config 'profile.uniffi-bindgen.package."*".opt-level=0'
bindgen=$cargo_target/uniffi-bindgen/uniffi-bindgen
rm -rf "$out/kotlin" "$out/swift"
"$bindgen" generate --no-format "$lib" --language kotlin --out-dir "$out/kotlin"
"$bindgen" generate --no-format "$lib" --language swift --out-dir "$out/swift"
# The one edit of generated code, kept for what it measurably saves (issue 33 allows it only so).
# JNA attaches a native thread to the JVM for each callback and detaches it afterwards unless the
# callback has an initializer saying otherwise, read when the callback is first handed to native
# code, and UniFFI offers no hook that runs before its library initializer hands over the
# callback vtables. The call added there registers ours (kotlin/src/main/kotlin/proteus/
# CallbackThreads.kt). Paired, BatchOverheadBench in memory: 1.66–2.08 ms per 1000-message
# decryptBatch without it, 1.37–1.47 ms with it (docs/benchmarks.md, "Kotlin: the cost of
# crossing the boundary"). The check fails the build if UniFFI's output stops matching.
kt="$out/kotlin/proteus/proteus.kt"
awk '!done && /^ *uniffiCallbackInterface[A-Za-z]+\.register\(this\)$/ {
  match($0, /^ */); print substr($0, 1, RLENGTH) "keepCallbackThreadsAttached()"; done = 1
} { print }' "$kt" > "$kt.tmp" && mv "$kt.tmp" "$kt"
if [ "$(grep -c -E '^ *keepCallbackThreadsAttached\(\)$' "$kt")" != 1 ] \
  || ! awk '/\.register\(this\)$/ { print prev; exit } { prev = $0 }' "$kt" | grep -q -E '^ *keepCallbackThreadsAttached\(\)$'; then
  echo "keepCallbackThreadsAttached() was not added before the callback vtables' registration"; exit 1
fi
# JNA's resource prefix of this machine (com.sun.jna.Platform.RESOURCE_PREFIX).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) prefix=linux-x86-64 ;;
  Linux-aarch64) prefix=linux-aarch64 ;;
  Darwin-arm64) prefix=darwin-aarch64 ;;
  Darwin-x86_64) prefix=darwin-x86-64 ;;
  *) echo "no JNA resource prefix known for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
rm -rf "$out/jvm-resources"
mkdir -p "$out/jvm-resources/$prefix"
cp "$lib" "$out/jvm-resources/$prefix/libproteus_uniffi.so"

if [ "$prefix" = linux-x86-64 ] && [ "${PROTEUS_JVM_AARCH64:-1}" != 0 ]; then
  # shellcheck source=../../../scripts/lib/install.sh
  . scripts/lib/install.sh
  # shellcheck source=../../../scripts/lib/aarch64.sh
  . scripts/lib/aarch64.sh
  aarch64_install_system
  aarch64_install_target
  aarch64_env
  echo "== cargo build --release -p proteus-uniffi --target $AARCH64_TARGET"
  cargo build --locked --release -p proteus-uniffi --target "$AARCH64_TARGET"
  arm_lib=$cargo_target/$AARCH64_TARGET/release/libproteus_uniffi.so
  check_elf "$arm_lib" AArch64
  mkdir -p "$out/jvm-resources/linux-aarch64"
  cp "$arm_lib" "$out/jvm-resources/linux-aarch64/libproteus_uniffi.so"
fi
