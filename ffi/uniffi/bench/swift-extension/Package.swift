// swift-tools-version:5.9
// A notification extension's path from Swift (issue 35, item 7): an executable that opens an
// existing store, decrypts one message, closes it, and prints one JSON line of times and memory.
// ffi/uniffi/bench/extension.sh builds it (release) in the Swift suite's Debian 13 chroot and
// starts it once per run, on a new copy of the store. Not part of the Proteus package, so that
// nothing it builds or tests changes.
import PackageDescription

let package = Package(
    name: "ExtensionBench",
    dependencies: [.package(name: "Proteus", path: "../../swift")],
    targets: [
        .executableTarget(
            name: "ExtensionBench",
            dependencies: [.product(name: "Proteus", package: "Proteus")],
            path: "Sources/ExtensionBench"
        ),
    ]
)
