// swift-tools-version:6.0
import PackageDescription

// CacheKit's adapters for server frameworks, in a package of their own so that building or testing
// CacheKit never builds Vapor, Hummingbird or their dependencies.
let package = Package(
    name: "CacheKitIntegrations",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "CacheKitVapor", targets: ["CacheKitVapor"]),
        .library(name: "CacheKitHummingbird", targets: ["CacheKitHummingbird"]),
        .library(name: "CacheKitServiceLifecycle", targets: ["CacheKitServiceLifecycle"]),
        .executable(name: "CacheKitExampleServer", targets: ["CacheKitExampleServer"]),
    ],
    dependencies: [
        .package(name: "CacheKit", path: ".."),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The background work a cache needs (expiry sweeps, memory-pressure monitoring, autosave
        // with a final save, closing a tiered cache's store) as one swift-service-lifecycle Service.
        .target(
            name: "CacheKitServiceLifecycle",
            dependencies: [
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Vapor's `Cache` protocol over a CacheKit cache: `app.caches.use(.cachekit(...))`.
        .target(
            name: "CacheKitVapor",
            dependencies: [
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        // Hummingbird's `PersistDriver` over a CacheKit cache.
        .target(
            name: "CacheKitHummingbird",
            dependencies: [
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A Hummingbird server reading through a TieredCache, for the load figures (not API).
        .executableTarget(
            name: "CacheKitExampleServer",
            dependencies: [
                "CacheKitHummingbird",
                "CacheKitServiceLifecycle",
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "CacheKitVaporTests",
            dependencies: [
                "CacheKitVapor",
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"),
            ]
        ),
        .testTarget(
            name: "CacheKitHummingbirdTests",
            dependencies: [
                "CacheKitHummingbird",
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
            ]
        ),
        .testTarget(
            name: "CacheKitServiceLifecycleTests",
            dependencies: [
                "CacheKitServiceLifecycle",
                .product(name: "CacheKit", package: "CacheKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
