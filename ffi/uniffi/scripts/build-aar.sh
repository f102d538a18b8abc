#!/usr/bin/env bash
# Android AAR of the Proteus client: the Kotlin bindings (classes.jar) and the native library for
# the four Android ABIs (jni/<abi>/libproteus_uniffi.so), built with cargo-ndk.
#
# Needs the Android NDK (ANDROID_NDK_HOME), `cargo install cargo-ndk`, the four Rust targets
# (added below) and Maven; it cannot run on the project's machines, which have no NDK.
# Apps add JNA's AAR next to this one: implementation("net.java.dev.jna:jna:5.19.1@aar").
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
cargo ndk --platform "$api" -t arm64-v8a -t armeabi-v7a -t x86 -t x86_64 -o "$out/aar/jni" \
  build --locked --release -p proteus-uniffi

# The Kotlin sources are the same for Android and the JVM; generate them and compile them with
# the JVM build (its tests need the host library, so build that first).
bash ffi/uniffi/scripts/build.sh
mvn -B -ntp -q -f ffi/uniffi/kotlin/pom.xml -DskipTests package
cp ffi/uniffi/kotlin/target/proteus-jvm-*.jar "$out/aar/classes.jar"
zip -q -d "$out/aar/classes.jar" 'linux-x86-64/*'

cat > "$out/aar/AndroidManifest.xml" <<XML
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="proteus">
  <uses-sdk android:minSdkVersion="$api" />
</manifest>
XML
: > "$out/aar/R.txt"
(cd "$out/aar" && zip -q -r ../proteus.aar AndroidManifest.xml R.txt classes.jar jni)
echo "$out/proteus.aar"
