// swift-tools-version:6.0
import PackageDescription

// Invariant checks after every mutation of the engine (counts, costs, lists and index agree).
// Off by default: they make every operation O(n). Tests call the checks explicitly; set
// CACHEKIT_INTERNAL_CHECKS=1 to have the engine run them after every mutation as well.
let internalChecks: [SwiftSetting] =
    Context.environment["CACHEKIT_INTERNAL_CHECKS"] == "1" ? [.define("CACHEKIT_INTERNAL_CHECKS")] : []

let package = Package(
    name: "CacheKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "CacheKit", targets: ["CacheKit"]),
        .library(name: "CacheKitSimulator", targets: ["CacheKitSimulator"]),
        .executable(name: "cachekit", targets: ["cachekit"]),
    ],
    dependencies: [
        // Documentation only (`swift package generate-documentation`); no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        .target(
            name: "CacheKit",
            swiftSettings: internalChecks
        ),
        // Trace reading, synthetic workloads, replay and the OPT bound: what `cachekit simulate`
        // runs, as a library so it is tested and reusable. Depends on CacheKit and Foundation only.
        .target(
            name: "CacheKitSimulator",
            dependencies: ["CacheKit"]
        ),
        .executableTarget(
            name: "cachekit",
            dependencies: ["CacheKit", "CacheKitSimulator"]
        ),
        .testTarget(
            name: "CacheKitTests",
            dependencies: ["CacheKit"]
        ),
        .testTarget(
            name: "CacheKitSimulatorTests",
            dependencies: ["CacheKitSimulator", "CacheKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
