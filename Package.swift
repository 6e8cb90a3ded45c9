// swift-tools-version:6.0
import CompilerPluginSupport
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
        .library(name: "CacheKitObservability", targets: ["CacheKitObservability"]),
        .library(name: "CacheKitMacros", targets: ["CacheKitMacros"]),
        .library(name: "CacheKitSQLite", targets: ["CacheKitSQLite"]),
        .library(name: "CacheKitRedis", targets: ["CacheKitRedis"]),
        .executable(name: "cachekit", targets: ["CacheKitTool"]),
    ],
    dependencies: [
        // Documentation only (`swift package generate-documentation`); no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // CacheKitObservability only: the core CacheKit target stays dependency-free.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // CacheKitMacros only (the @Memoized macro's implementation): CacheKit itself does not
        // depend on swift-syntax.
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.0"..<"604.0.0"),
        // CacheKitRedis only (the Redis client's connections): CacheKit itself does not depend on
        // SwiftNIO.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // A prefetch hint for the engine (C, header-only): Swift has none of its own. Built by the
        // toolchain like the rest, so CacheKit still depends on nothing outside it.
        .target(name: "_CacheKitShims"),
        .target(
            name: "CacheKit",
            dependencies: ["_CacheKitShims"],
            swiftSettings: internalChecks
        ),
        // Trace reading, synthetic workloads, replay and the OPT bound: what `cachekit simulate`
        // runs, as a library so it is tested and reusable. Depends on CacheKit and Foundation only.
        .target(
            name: "CacheKitSimulator",
            dependencies: ["CacheKit"]
        ),
        // Bridges CacheKit's activity observer to swift-log and swift-metrics, in its own target so
        // that CacheKit itself depends on nothing.
        .target(
            name: "CacheKitObservability",
            dependencies: [
                "CacheKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The @Memoized macro: its declaration (CacheKitMacros, the product) and its compiler plugin
        // (CacheKitMacrosPlugin), kept out of CacheKit so that only users of the macro build
        // swift-syntax.
        .macro(
            name: "CacheKitMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(
            name: "CacheKitMacros",
            dependencies: ["CacheKit", "CacheKitMacrosPlugin"]
        ),
        // The system's SQLite (libsqlite3), for CacheKitSQLite only: CacheKit itself never needs it.
        // Apple's SDKs ship it; elsewhere pkg-config finds it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // SQLiteStore: a CacheStore keeping many small values in one SQLite database.
        .target(
            name: "CacheKitSQLite",
            dependencies: ["CacheKit", "CSQLite"]
        ),
        // A Redis client (RESP3 with a RESP2 fallback, pipelined connections, a small pool and a push
        // connection for invalidations and pub/sub), in its own target so that only its users build
        // SwiftNIO.
        .target(
            name: "CacheKitRedis",
            dependencies: [
                "CacheKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // A second process with a near cache over Redis, driven by the Redis tests a line at a time,
        // and the writer and reader of their chaos run (not a product).
        .executableTarget(
            name: "CacheKitRedisHelper",
            dependencies: ["CacheKit", "CacheKitRedis"]
        ),
        // Writes and removes entries of a SQLiteStore until killed: the SQLite crash test runs it
        // (not a product).
        .executableTarget(
            name: "CacheKitSQLiteCrashHelper",
            dependencies: ["CacheKit", "CacheKitSQLite"]
        ),
        // What `cachekit` needs from C and Swift cannot import (Linux's `prctl`).
        .target(name: "_CacheKitToolShims"),
        // What `cachekit bench` and `CacheKitLab` share: the argument parser, the workloads, the
        // timed rounds and the tables (not a product).
        .target(
            name: "CacheKitBenchSupport",
            dependencies: ["CacheKit", "CacheKitSimulator"]
        ),
        // `cachekit`, the command-line tool: `simulate` and `bench`.
        .executableTarget(
            name: "CacheKitTool",
            dependencies: [
                "CacheKit", "CacheKitSimulator", "CacheKitBenchSupport", "_CacheKitToolShims", "CacheKitSQLite",
                "CSQLite", "CacheKitRedis",
            ]
        ),
        // Instruments that explain the performance figures (minimal LRU sketches, thread scaling,
        // cache-line transfer time): `swift run -c release CacheKitLab`. Not a product.
        .executableTarget(
            name: "CacheKitLab",
            dependencies: ["CacheKit", "CacheKitSimulator", "CacheKitBenchSupport", "_CacheKitShims"]
        ),
        // Saves a cache in a loop until killed: the persistence crash test runs it (not a product).
        .executableTarget(
            name: "CacheKitCrashHelper",
            dependencies: ["CacheKit"]
        ),
        // Writes and removes DiskStore entries in a loop until killed: the store's crash test runs
        // it (not a product).
        .executableTarget(
            name: "CacheKitStoreCrashHelper",
            dependencies: ["CacheKit"]
        ),
        .testTarget(
            name: "CacheKitTests",
            // The crash helpers are dependencies only so that SwiftPM builds them before the tests.
            dependencies: ["CacheKit", "CacheKitCrashHelper", "CacheKitStoreCrashHelper", "_CacheKitShims"]
        ),
        .testTarget(
            name: "CacheKitSimulatorTests",
            // `cachekit` and `CacheKitLab` are dependencies only so that SwiftPM builds them before
            // the tests that run them.
            dependencies: ["CacheKitSimulator", "CacheKit", "CacheKitTool", "CacheKitLab"]
        ),
        .testTarget(
            name: "CacheKitSQLiteTests",
            // The crash helper is a dependency only so that SwiftPM builds it before the tests.
            dependencies: ["CacheKitSQLite", "CacheKit", "CacheKitSQLiteCrashHelper"]
        ),
        .testTarget(
            name: "CacheKitRedisTests",
            // The helper is a dependency only so that SwiftPM builds it before the tests.
            dependencies: [
                "CacheKitRedisHelper",
                "CacheKitRedis",
                "CacheKit",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "CacheKitObservabilityTests",
            dependencies: [
                "CacheKitObservability",
                "CacheKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "CacheKitMacrosTests",
            dependencies: [
                "CacheKitMacros",
                "CacheKitMacrosPlugin",
                "CacheKit",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
