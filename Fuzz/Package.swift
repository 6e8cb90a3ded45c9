// swift-tools-version:6.1
// libFuzzer targets for what CacheKit reads from files it did not write. A separate package, so
// the library's own builds never take the fuzzer flags. See README.md for the commands.
import PackageDescription

let package = Package(
    name: "CacheKitFuzz",
    platforms: [.macOS(.v15)],
    // The Redis trait, for the RESP decoder's target: the other targets use the core alone.
    dependencies: [.package(name: "CacheKit", path: "..", traits: ["Redis"])],
    targets: [
        // The entry point both fuzzers hand to libFuzzer's driver.
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "PersistenceFuzzer",
            dependencies: ["FuzzDriver", .product(name: "CacheKit", package: "CacheKit")]
        ),
        .executableTarget(
            name: "DiskStoreFuzzer",
            dependencies: ["FuzzDriver", .product(name: "CacheKit", package: "CacheKit")]
        ),
        .executableTarget(
            name: "RESPDecoderFuzzer",
            dependencies: ["FuzzDriver", .product(name: "CacheKitRedis", package: "CacheKit")]
        ),
        .executableTarget(
            name: "TraceFuzzer",
            dependencies: ["FuzzDriver", .product(name: "CacheKitSimulator", package: "CacheKit")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
