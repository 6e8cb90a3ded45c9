import CacheKit
import Foundation
import Testing

/// Exact miss counts on real traces: the figures in `../shared/traces/README.md`, computed by
/// libCacheSim and cross-checked independently. An LRU, FIFO or SIEVE that differs by one request
/// fails.
@Suite(
    "Real traces",
    .enabled("../shared/traces/OLTP.lis is absent; skipped (with CI=true, a failure)") {
        try Traces.required("OLTP.lis")
    }
)
struct TraceTests {
    /// `../shared/traces/README.md`'s reference table: trace, size, requests, and the exact LRU,
    /// FIFO and SIEVE miss counts.
    static let reference: [(trace: String, size: Int, requests: Int, lru: Int, fifo: Int, sieve: Int)] = [
        ("OLTP.lis", 1000, 914_145, 614_023, 653_340, 616_519),
        ("OLTP.lis", 2000, 914_145, 525_910, 571_918, 537_648),
        ("gli.trace", 1000, 6015, 5341, 5345, 4130),
        ("gli.trace", 2000, 6015, 2562, 3134, 2562),
        ("loop.trace", 1000, 505_500, 505_500, 505_500, 505_500),
        ("sprite.trace", 708, 133_996, 18071, 24182, 24215),
        ("multi2.trace", 568, 26311, 16596, 18473, 16796),
        ("2_pools.trace", 994, 100_000, 45619, 50097, 45675),
        ("cloudPhysicsIO.csv", 4897, 113_872, 91657, 91716, 90040),
        ("cloudPhysicsIO.oracleGeneral.bin", 4897, 113_872, 91657, 91716, 90040),
        ("web12.keys", 1376, 95607, 30124, 33899, 27072),
    ]

    static let expected: [(trace: String, size: Int, requests: Int, policy: EvictionPolicy, misses: Int)] =
        reference.flatMap { row in
            [(EvictionPolicy.lru, row.lru), (.fifo, row.fifo), (.sieve, row.sieve)].map {
                (row.trace, row.size, row.requests, $0.0, $0.1)
            }
        }

    @Test("every reference trace replays to the exact LRU, FIFO and SIEVE miss counts", arguments: expected)
    func referenceMisses(trace: String, size: Int, requests: Int, policy: EvictionPolicy, misses: Int) throws {
        let keys = try Traces.keys(trace)
        #expect(keys.count == requests)
        let cache = SerialCache<Int, Bool>(countLimit: size, policy: policy)
        var missCount = 0
        for key in keys where cache[key] == nil {
            missCount += 1
            cache[key] = true
        }
        #expect(missCount == misses, "\(policy) on \(trace) at \(size)")
        #expect(cache.count == min(size, Set(keys).count))
        cache._checkInvariants()
    }

    @Test("Cache and SerialCache agree on the trace", arguments: EvictionPolicy.allCases, [false, true])
    func threadSafeCacheAgrees(policy: EvictionPolicy, sharedReads: Bool) throws {
        let keys = try Traces.arcKeys("OLTP.lis").prefix(100_000)
        let serial = SerialCache<Int, Bool>(countLimit: 1000, policy: policy)
        let shared = Cache<Int, Bool>(countLimit: 1000, policy: policy)
        if sharedReads { shared._shareReads() }
        var disagreements = 0
        for key in keys {
            if (serial[key] == nil) != (shared[key] == nil) { disagreements += 1 }
            if serial.peekValue(forKey: key) == nil { serial[key] = true }
            if shared.peekValue(forKey: key) == nil { shared[key] = true }
        }
        #expect(disagreements == 0)
        #expect(serial.keys == shared.keys)
    }
}

@Suite("Trace suites' condition")
struct TraceRequirementTests {
    @Test("a trace suite runs when its trace is present; absent, it skips, or fails with CI=true, naming the file")
    func condition() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("CacheKitTraces-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try Traces.required("t.lis", in: folder, environment: [:]) == false)
        #expect(try Traces.required("t.lis", in: folder, environment: ["CI": "false"]) == false)
        let error = #expect(throws: Traces.Missing.self) {
            try Traces.required("t.lis", in: folder, environment: ["CI": "true"])
        }
        #expect(error?.path == folder.appendingPathComponent("t.lis").path)
        #expect(error?.description.contains("CI=true") == true)
        try Data("1 1 0 0\n".utf8).write(to: folder.appendingPathComponent("t.lis"))
        #expect(try Traces.required("t.lis", in: folder, environment: ["CI": "true"]))
        #expect(try Traces.required("t.lis", in: folder, environment: [:]))
    }
}
