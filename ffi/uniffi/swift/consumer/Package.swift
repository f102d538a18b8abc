// swift-tools-version:5.9
// A package of someone else's that depends on the Proteus package and runs a session through
// it. scripts/suites/swift.sh copies this folder out of the repository and points
// PROTEUS_SWIFT_PACKAGE at ffi/uniffi/swift (an app would use the package's git URL).
import Foundation
import PackageDescription

let proteus = ProcessInfo.processInfo.environment["PROTEUS_SWIFT_PACKAGE"] ?? "../proteus/ffi/uniffi/swift"

let package = Package(
    name: "Consumer",
    dependencies: [.package(name: "Proteus", path: proteus)],
    targets: [
        .executableTarget(
            name: "Consumer",
            dependencies: [.product(name: "Proteus", package: "Proteus")],
            path: "Sources/Consumer"
        ),
    ]
)
