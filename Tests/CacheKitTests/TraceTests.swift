import CacheKit
import Testing

/// Exact miss counts on a real trace: the figures in `../shared/traces/README.md`, computed by
/// libCacheSim and cross-checked independently. An LRU or FIFO that differs by one request fails.
@Suite("Real traces", .enabled(if: Traces.isPresent("OLTP.lis"), "../shared/traces/OLTP.lis is absent; skipped"))
struct TraceTests {
    static let expected: [(policy: EvictionPolicy, size: Int, misses: Int)] = [
        (.lru, 1000, 614_023),
        (.lru, 2000, 525_910),
        (.fifo, 1000, 653_340),
        (.fifo, 2000, 571_918),
    ]

    @Test("OLTP.lis replays to the reference miss counts", arguments: expected)
    func oltp(policy: EvictionPolicy, size: Int, misses: Int) throws {
        let keys = try Traces.arcKeys("OLTP.lis")
        #expect(keys.count == 914_145)
        let cache = SerialCache<Int, Bool>(countLimit: size, policy: policy)
        var missCount = 0
        for key in keys where cache[key] == nil {
            missCount += 1
            cache[key] = true
        }
        #expect(missCount == misses)
        #expect(cache.count == size)
        cache._checkInvariants()
    }

    @Test("Cache and SerialCache agree on the trace")
    func threadSafeCacheAgrees() throws {
        let keys = try Traces.arcKeys("OLTP.lis").prefix(200_000)
        let serial = SerialCache<Int, Bool>(countLimit: 1000)
        let shared = Cache<Int, Bool>(countLimit: 1000)
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
