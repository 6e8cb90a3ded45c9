// swift-tools-version:6.0
// A libFuzzer target for CacheKitSimulator's trace readers. A separate package, so the library's
// own builds never take the fuzzer flags. See README.md for the commands.
import PackageDescription

let package = Package(
    name: "CacheKitTraceFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "CacheKit", path: "..")],
    targets: [
        .executableTarget(
            name: "TraceFuzzer",
            dependencies: [.product(name: "CacheKitSimulator", package: "CacheKit")]
        )
    ],
    swiftLanguageModes: [.v6]
)
