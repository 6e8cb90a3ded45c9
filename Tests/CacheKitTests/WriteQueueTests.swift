import Testing

@testable import CacheKit

/// The write queue behind a cache-wide time to live is lazy (a rewrite or removal leaves a stale
/// record behind), so these tests check what that could break: its size stays bounded, and the
/// sweep still finds every expired entry, in order, after compactions.
@Suite("Write queue")
struct WriteQueueTests {
    func queueCapacity(_ cache: Cache<Int, Int>) -> Int {
        cache._withState { $0.core.expiry!.pointee.queueCapacity }
    }

    @Test("rewriting the same keys forever keeps the queue at its first size")
    func rewritesStayBounded() {
        let clock = ManualClock()
        let cache = Cache<Int, Int>(expiration: .afterWrite(.seconds(3_600)), clock: clock)
        for i in 0..<100_000 {
            cache[i % 10] = i
            clock.advance(by: .milliseconds(1))  // every write gets a new deadline: a new record
        }
        #expect(cache.count == 10)
        #expect(queueCapacity(cache) == 64)
        cache._checkInvariants()
    }

    @Test("removing and re-adding a key while the clock stands still keeps the queue bounded")
    func removalsStayBounded() {
        let clock = ManualClock()
        let cache = Cache<Int, Int>(expiration: .afterWrite(.seconds(3_600)), clock: clock)
        for i in 0..<100_000 {
            cache[i % 7] = i
            cache.removeValue(forKey: (i + 3) % 7)
        }
        #expect(queueCapacity(cache) == 64)
        cache._checkInvariants()
        clock.advance(by: .seconds(3_600))
        #expect(cache.count == 0)
    }

    @Test("after rewrites and compactions, entries expire exactly at their latest write's deadline")
    func exactOrderAfterCompaction() {
        let clock = ManualClock()
        let ttl: Int64 = 1_000
        let cache = Cache<Int, Int>(expiration: .afterWrite(.seconds(ttl)), clock: clock)
        var deadlines: [Int: Int64] = [:]
        var now: Int64 = 0
        var random = SeededGenerator(seed: 0x9E_11)
        // 2,000 keys written once, then 6,000 rewrites of random keys: far more records than
        // live entries, so the queue compacts several times.
        for step in 0..<8_000 {
            let key = step < 2_000 ? step : Int.random(in: 0..<2_000, using: &random)
            cache[key] = step
            deadlines[key] = now + ttl
            if step % 4 == 0 {
                clock.advance(by: .seconds(1))
                now += 1
            }
        }
        cache._checkInvariants()
        #expect(queueCapacity(cache) <= 4 * 2_048)
        while now <= 2_000 + ttl {
            clock.advance(by: .seconds(7))
            now += 7
            cache.removeExpired()
            let alive = Set(deadlines.filter { $0.value > now }.keys)
            #expect(cache.count == alive.count, "at \(now)")
            #expect(Set(cache.keys) == alive, "at \(now)")
        }
        #expect(cache.count == 0)
        cache._checkInvariants()
    }
}
