// swift-tools-version:6.1
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
    // The levels and tools that bring a dependency are opt-in traits, so that a package depending on
    // CacheKit resolves nothing else unless it asks for one: a package's dependencies are left
    // unresolved when every reference to them is guarded by a trait that is off. `swift test` and
    // `swift run cachekit` with the default traits (none) build the core, the simulator and the tool;
    // `--enable-all-traits` builds and tests everything.
    traits: [
        .trait(name: "SQLite", description: "CacheKitSQLite: SQLiteStore, on the system's libsqlite3."),
        .trait(name: "Redis", description: "CacheKitRedis: RedisStore and RedisClient, on SwiftNIO."),
        .trait(name: "Macros", description: "CacheKitMacros: the @Memoized macro, on swift-syntax."),
        .trait(name: "Observability", description: "CacheKitObservability: swift-log and swift-metrics."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        // Documentation only (`swift package generate-documentation`); no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // CacheKitObservability only: the core CacheKit target stays dependency-free.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // CacheKitMacros only (the @Memoized macro's implementation): CacheKit itself does not
        // depend on swift-syntax.
        // Any swift-syntax from 600 (Swift 6.0) on, so that an app whose other macro packages take
        // swift-syntax 600, 601, 602 or 603 still resolves: the macro and its tests build without
        // warnings against 600.0.1, 602.0.0 and 603.0.1.
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"700.0.0"),
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
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Observability"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Observability"])),
            ]
        ),
        // The @Memoized macro: its declaration (CacheKitMacros, the product) and its compiler plugin
        // (CacheKitMacrosPlugin), kept out of CacheKit so that only users of the macro build
        // swift-syntax.
        .macro(
            name: "CacheKitMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftDiagnostics", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax", condition: .when(traits: ["Macros"])),
            ]
        ),
        .target(
            name: "CacheKitMacros",
            dependencies: ["CacheKit", .target(name: "CacheKitMacrosPlugin", condition: .when(traits: ["Macros"]))]
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
            dependencies: ["CacheKit", .target(name: "CSQLite", condition: .when(traits: ["SQLite"]))]
        ),
        // A Redis client (RESP3 with a RESP2 fallback, pipelined connections, a small pool and a push
        // connection for invalidations and pub/sub), in its own target so that only its users build
        // SwiftNIO.
        .target(
            name: "CacheKitRedis",
            dependencies: [
                "CacheKit",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Redis"])),
            ]
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
                "CacheKit", "CacheKitSimulator", "CacheKitBenchSupport", "_CacheKitToolShims",
                .target(name: "CacheKitSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "CSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "CacheKitRedis", condition: .when(traits: ["Redis"])),
                .target(name: "CacheKitTestSupport", condition: .when(traits: ["Redis"])),
            ]
        ),
        // Instruments that explain the performance figures (minimal LRU sketches, thread scaling,
        // cache-line transfer time): `swift run -c release CacheKitLab`. Not a product.
        .executableTarget(
            name: "CacheKitLab",
            dependencies: ["CacheKit", "CacheKitSimulator", "CacheKitBenchSupport", "_CacheKitShims"]
        ),
        // The second processes the tests drive or kill (crash loops of persistence and both stores,
        // a near cache over Redis), as subcommands of one executable (not a product).
        .executableTarget(
            name: "CacheKitTestHelper",
            dependencies: [
                "CacheKit", "CacheKitSimulator",
                .target(name: "CacheKitSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "CacheKitRedis", condition: .when(traits: ["Redis"])),
            ]
        ),
        // What the tests and the level benchmarks share: a redis-server of their own, the lookup
        // and running of built executables, the crash loop, the seeded generator (not a product).
        .target(
            name: "CacheKitTestSupport",
            dependencies: ["CacheKitSimulator", .target(name: "CacheKitRedis", condition: .when(traits: ["Redis"]))]
        ),
        .testTarget(
            name: "CacheKitTests",
            // The helper is a dependency only so that SwiftPM builds it before the tests.
            dependencies: ["CacheKit", "CacheKitTestHelper", "CacheKitTestSupport", "_CacheKitShims"]
        ),
        .testTarget(
            name: "CacheKitSimulatorTests",
            // `cachekit` and `CacheKitLab` are dependencies only so that SwiftPM builds them before
            // the tests that run them.
            dependencies: ["CacheKitSimulator", "CacheKit", "CacheKitTool", "CacheKitLab", "CacheKitTestSupport"]
        ),
        .testTarget(
            name: "CacheKitSQLiteTests",
            // The helper is a dependency only so that SwiftPM builds it before the tests.
            dependencies: ["CacheKitSQLite", "CacheKit", "CacheKitTestHelper", "CacheKitTestSupport"]
        ),
        .testTarget(
            name: "CacheKitRedisTests",
            // The helper is a dependency only so that SwiftPM builds it before the tests.
            dependencies: [
                "CacheKitTestHelper",
                "CacheKitTestSupport",
                "CacheKitRedis",
                "CacheKit",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Redis"])),
            ]
        ),
        .testTarget(
            name: "CacheKitObservabilityTests",
            dependencies: [
                "CacheKitObservability",
                "CacheKit",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Observability"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Observability"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Observability"])),
            ]
        ),
        .testTarget(
            name: "CacheKitMacrosTests",
            dependencies: [
                "CacheKitMacros",
                .target(name: "CacheKitMacrosPlugin", condition: .when(traits: ["Macros"])),
                "CacheKit",
                .product(name: "SwiftSyntax", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax", condition: .when(traits: ["Macros"])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
