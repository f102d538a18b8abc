#!/usr/bin/env bash
# Android AAR of the Proteus client: the Kotlin bindings (classes.jar) and the native library for
# the four Android ABIs (jni/<abi>/libproteus_uniffi.so), built with cargo-ndk.
#
# Needs the Android NDK (ANDROID_NDK_HOME), `cargo install cargo-ndk`, the four Rust targets
# (added below) and Maven; it cannot run on the project's machines, which have no NDK.
# Apps add JNA's AAR next to this one: implementation("net.java.dev.jna:jna:5.19.1@aar"), and
# kotlinx-coroutines (every call is a suspend fun): implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.10.2").
#
# Output: target/uniffi/android/proteus.aar
set -euo pipefail
cd "$(dirname "$0")/../../.."
: "${ANDROID_NDK_HOME:?set ANDROID_NDK_HOME to the Android NDK}"
out=target/uniffi/android
api=${ANDROID_API:-24}

rustup target add aarch64-linux-android armv7-linux-androideabi i686-linux-android x86_64-linux-android
rm -rf "$out" && mkdir -p "$out/aar/jni"
# panic=unwind is kept (the workspace's release profile): a panic becomes an exception.
# 16 KB pages: Google Play requires the native libraries of apps targeting Android 15+ to have
# their LOAD segments aligned for 16 KB pages; the NDK's linker aligns to 4 KB unless told.
RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,-z,max-page-size=16384 -C link-arg=-Wl,-z,common-page-size=16384" \
  cargo ndk --platform "$api" -t arm64-v8a -t armeabi-v7a -t x86 -t x86_64 -o "$out/aar/jni" \
  build --locked --release -p proteus-uniffi
# Check it: every LOAD segment of every library aligned to 2**14 or more.
if command -v llvm-readelf >/dev/null || [ -x "$ANDROID_NDK_HOME/toolchains/llvm/prebuilt/linux-x86_64/bin/llvm-readelf" ]; then
  readelf=$(command -v llvm-readelf || echo "$ANDROID_NDK_HOME/toolchains/llvm/prebuilt/linux-x86_64/bin/llvm-readelf")
  for so in "$out"/aar/jni/*/libproteus_uniffi.so; do
    "$readelf" -lW "$so" | awk '$1 == "LOAD" { print $NF }' | while read -r align; do
      [ $((align)) -ge 16384 ] || { echo "$so: a LOAD segment is aligned to $align, below 16 KB" >&2; exit 1; }
    done
  done
fi

# The Kotlin sources are the same for Android and the JVM; generate them and compile them with
# the JVM build (its tests need the host library, so build that first).
bash ffi/uniffi/scripts/build.sh
mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml -DskipTests package
cp ffi/uniffi/kotlin/target/proteus-jvm-*.jar "$out/aar/classes.jar"
# The JVM jar's Linux libraries (Android's are in jni/): out of the AAR's classes.
zip -q -d "$out/aar/classes.jar" 'linux-x86-64/*' 'linux-aarch64/*'

cat > "$out/aar/AndroidManifest.xml" <<XML
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="proteus">
  <uses-sdk android:minSdkVersion="$api" />
</manifest>
XML
: > "$out/aar/R.txt"
# R8/ProGuard rules applied to apps that use the AAR: JNA finds the generated bindings' structures,
# callbacks and native methods by reflection and by name, so neither may be renamed or removed.
cat > "$out/aar/proguard.txt" <<'PRO'
-keep class com.sun.jna.** { *; }
-keepclassmembers class * extends com.sun.jna.** { public *; }
-keep class proteus.** { *; }
-dontwarn java.awt.**
PRO
(cd "$out/aar" && zip -q -r ../proteus.aar AndroidManifest.xml R.txt proguard.txt classes.jar jni)
echo "$out/proteus.aar"
