import Testing

@testable import CacheKit

/// The engine prefetches the next eviction's memory from `_AnyPolicy.upcomingVictim`. A wrong
/// hint would change no result, only waste the prefetch, so nothing else would catch it.
@Suite("Prefetch hints")
struct PrefetchHintTests {
    @Test(
        "LRU, FIFO and LFU name the entry their next eviction takes; the others name none",
        arguments: EvictionPolicy.allCases
    )
    func upcomingVictim(policy: EvictionPolicy) {
        let cache = SerialCache<Int, Int>(countLimit: 64, policy: policy)
        var evicted: [Int] = []
        cache.removalHandler = { if $0.reason == .evictedForCount { evicted.append($0.key) } }
        var rng = SeededGenerator(seed: 24)
        var checked = 0
        for _ in 0..<5_000 {
            let key = Int.random(in: 0..<200, using: &rng)
            if Bool.random(using: &rng) {
                _ = cache.value(forKey: key)
                continue
            }
            let named = cache._withState { state -> Int? in
                let slot = state.core.policy.upcomingVictim(links: state.core.links)
                return slot < 0 ? nil : state.core.entries[Int(slot)].key
            }
            let full = cache.count == cache.countLimit
            let before = evicted.count
            cache[key] = key
            guard [.lru, .fifo, .lfu].contains(policy) else {
                #expect(named == nil)
                continue
            }
            if full && cache.count == cache.countLimit && evicted.count == before + 1 {
                #expect(named == evicted.last, "step \(checked): named \(String(describing: named))")
                checked += 1
            }
        }
        if [.lru, .fifo, .lfu].contains(policy) { #expect(checked > 500) }
    }
}
