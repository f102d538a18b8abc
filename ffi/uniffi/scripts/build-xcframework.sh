#!/usr/bin/env bash
# iOS and macOS XCFramework of the Proteus client, with a Swift package that uses it: static
# libraries for iOS devices, the iOS simulator (arm64 + x86_64) and macOS (arm64 + x86_64), the
# generated C header and module map (module ProteusFFI), and the generated Swift sources.
#
# Needs macOS with Xcode (xcodebuild, lipo); it cannot run on the project's machines (Linux).
#
# Output: target/uniffi/apple/ — Package.swift, ProteusFFI.xcframework, Sources/Proteus/*.swift
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=target/uniffi/apple
targets=(aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios aarch64-apple-darwin x86_64-apple-darwin)

rustup target add "${targets[@]}"
for t in "${targets[@]}"; do
  cargo build --locked --release -p proteus-uniffi --target "$t"
done
lib() { echo "target/$1/release/libproteus_uniffi.a"; }

# The Swift sources and header come from the host build (they do not depend on the target).
cargo build --locked --release -p proteus-uniffi
cargo run --locked -q -p proteus-uniffi-bindgen -- generate --no-format \
  target/release/libproteus_uniffi.dylib --language swift --out-dir "$out/generated"

rm -rf "$out/headers" "$out/fat" "$out/ProteusFFI.xcframework" "$out/Sources"
mkdir -p "$out/headers" "$out/fat/sim" "$out/fat/macos" "$out/Sources/Proteus"
cp "$out/generated/ProteusFFI.h" "$out/headers/"
cat > "$out/headers/module.modulemap" <<'MAP'
module ProteusFFI {
    header "ProteusFFI.h"
    export *
}
MAP
lipo -create "$(lib aarch64-apple-ios-sim)" "$(lib x86_64-apple-ios)" -output "$out/fat/sim/libproteus_uniffi.a"
lipo -create "$(lib aarch64-apple-darwin)" "$(lib x86_64-apple-darwin)" -output "$out/fat/macos/libproteus_uniffi.a"
xcodebuild -create-xcframework \
  -library "$(lib aarch64-apple-ios)" -headers "$out/headers" \
  -library "$out/fat/sim/libproteus_uniffi.a" -headers "$out/headers" \
  -library "$out/fat/macos/libproteus_uniffi.a" -headers "$out/headers" \
  -output "$out/ProteusFFI.xcframework"

cp "$out/generated/Proteus.swift" ffi/uniffi/swift/Sources/Proteus/ProteusError+Code.swift "$out/Sources/Proteus/"
cat > "$out/Package.swift" <<'SWIFT'
// swift-tools-version:5.9
import PackageDescription

let package = Package(
    name: "Proteus",
    platforms: [.iOS(.v13), .macOS(.v10_15)],
    products: [.library(name: "Proteus", targets: ["Proteus"])],
    targets: [
        .binaryTarget(name: "ProteusFFI", path: "ProteusFFI.xcframework"),
        .target(name: "Proteus", dependencies: ["ProteusFFI"], path: "Sources/Proteus"),
    ]
)
SWIFT
echo "$out (Package.swift, ProteusFFI.xcframework)"
