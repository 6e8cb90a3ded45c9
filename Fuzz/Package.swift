// swift-tools-version:6.0
// libFuzzer targets for what CacheKit reads from files it did not write. A separate package, so
// the library's own builds never take the fuzzer flags. See README.md for the commands.
import PackageDescription

let package = Package(
    name: "CacheKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "CacheKit", path: "..")],
    targets: [
        .executableTarget(
            name: "PersistenceFuzzer",
            dependencies: [.product(name: "CacheKit", package: "CacheKit")]
        ),
        .executableTarget(
            name: "TraceFuzzer",
            dependencies: [.product(name: "CacheKitSimulator", package: "CacheKit")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
