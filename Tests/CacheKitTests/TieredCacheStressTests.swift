import CacheKit
import Foundation
import Testing

/// Tasks mixing reads, loads, writes and removals of a few keys; run under ThreadSanitizer in
/// CI. Afterwards the levels must agree: whatever memory holds, the store holds too.
@Suite("TieredCacheStressTests")
struct TieredCacheStressTests {
    @Test(arguments: [TieredCache<Int, Int>.WriteMode.writeThrough, .writeBehind(maximumPending: 4)])
    func levelsAgreeAfterConcurrentTraffic(writeMode: TieredCache<Int, Int>.WriteMode) async throws {
        let clock = ManualClock()
        let store = InMemoryStore(clock: .manual(clock))
        let cache = TieredCache<Int, Int>(
            countLimit: 6,
            policy: .lru,
            store: store,
            writeMode: writeMode,
            clock: .manual(clock)
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var random = SeededGenerator(seed: UInt64(worker + 1))
                    for step in 0..<400 {
                        let key = Int(random.next() % 12)
                        switch random.next() % 5 {
                        case 0, 1: try await cache.setValue(worker * 10_000 + step, forKey: key)
                        case 2: _ = await cache.value(forKey: key)
                        case 3: _ = try await cache.value(forKey: key) { $0 * 1_000 }
                        default: try await cache.removeValue(forKey: key)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        await cache.flush()
        let entries = await store.entries
        for key in 0..<12 {
            guard let inMemory = cache.memory.peekValue(forKey: key) else { continue }
            let stored = try entries["\(key)"].map { try JSONDecoder().decode(Int.self, from: $0.value) }
            #expect(stored == inMemory, "key \(key): memory \(inMemory), store \(String(describing: stored))")
        }
    }
}
