// swift-tools-version:6.1
// Wall-time and malloc benchmarks for CacheKit on ordo-one/benchmark. A separate package, so the
// library's own `swift test` never builds the benchmark tooling.
// Run: cd Benchmarks && swift package --disable-sandbox benchmark
import PackageDescription

let package = Package(
    name: "CacheKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "CacheKit", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CacheKitBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CacheKit", package: "CacheKit"),
            ],
            path: "Benchmarks/CacheKitBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
