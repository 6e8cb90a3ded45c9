import CacheKit
import Testing

/// The README's quick start, line for line, so the README stays true.
@Suite("README")
struct ReadmeTests {
    @Test("the quick start does what the README says")
    func quickStart() {
        let cache = Cache<String, String>(countLimit: 3, totalCostLimit: 100)
        cache["a"] = "apple"
        cache.setValue("banana", forKey: "b", cost: 40)
        cache.setValue("cherry", forKey: "c", cost: 40)
        _ = cache["a"]
        let log = RemovalLog<String, String>()
        cache.removalHandler = { removal in log.append(removal) }
        cache.evictionVeto = { key, _, _ in key != "b" }
        cache.setValue("date", forKey: "d", cost: 10)
        #expect(log.take() == [CacheRemoval(key: "c", value: "cherry", reason: .evictedForCount)])
        #expect(cache.keys == ["b", "a", "d"])
        let result = cache.setValue("elephant", forKey: "e", cost: 500)
        #expect(result.outcome == .rejected(.costExceedsLimit))
        cache.memoryPressureAction = .trim(toFraction: 0.5)
        cache.handleMemoryPressure()
        #expect(cache.keys == ["b"], "a goes; b is vetoed, so d goes too")
        let local = SerialCache<Int, [UInt8]>(countLimit: 10_000, policy: .lfu)
        #expect(local.policy == .lfu)
    }
}
