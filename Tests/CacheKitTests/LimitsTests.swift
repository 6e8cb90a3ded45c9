import CacheKit
import Testing

@Suite("Limits")
struct LimitsTests {
    @Test("the cost limit evicts others, never the entry just written", arguments: allConfigurations)
    func costLimit(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, totalCostLimit: 10, policy: policy)
        cache.setValue(1, forKey: 1, cost: 4)
        cache.setValue(2, forKey: 2, cost: 4)
        #expect(cache.totalCost == 8)
        cache.setValue(3, forKey: 3, cost: 9)
        #expect(cache.keys == [3])
        #expect(cache.totalCost == 9)
    }

    @Test("replacing a value updates the total cost", arguments: allConfigurations)
    func replacingUpdatesCost(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, policy: policy)
        cache.setValue(1, forKey: 1, cost: 5)
        cache.setValue(2, forKey: 1, cost: 2)
        #expect(cache.totalCost == 2)
        cache.setValue(3, forKey: 1, cost: 0)
        #expect(cache.totalCost == 0)
    }

    @Test("an entry costlier than the whole limit is rejected and drops the old value", arguments: CacheKind.allCases)
    func oversizedEntry(kind: CacheKind) {
        let cache = kind.make(String.self, Int.self, totalCostLimit: 10)
        let log = RemovalLog<String, Int>()
        cache.onRemoval { log.append($0) }
        cache.setValue(1, forKey: "k", cost: 3)
        cache.setValue(5, forKey: "other", cost: 3)
        let result = cache.setValue(2, forKey: "k", cost: 11)
        #expect(result.outcome == .rejected(.costExceedsLimit))
        #expect(!result.isStored)
        #expect(cache["k"] == nil, "never answer with a value older than the last write")
        #expect(cache["other"] == 5, "nothing else is disturbed")
        #expect(cache.totalCost == 3)
        #expect(log.all == [CacheRemoval(key: "k", value: 1, reason: .replaced)])
        #expect(cache.setValue(3, forKey: "k", cost: 10).isStored, "a cost equal to the limit fits")
    }

    @Test(
        "a replacement whose total fits the limit never overflows on the way, with a limit above Int.max / 2",
        arguments: CacheKind.allCases
    )
    func replaceNearIntMax(kind: CacheKind) {
        // The old costs leave the total before the new one joins it: counted the other way
        // round, the total would pass Int.max and trap, though the result fits.
        for limit in [Int.max, Int.max / 2 + 10] {
            let cache = kind.make(Int.self, Int.self, totalCostLimit: limit, policy: .lru)
            cache.setValue(1, forKey: 1, cost: limit - 5)
            cache.setValue(2, forKey: 2, cost: 5)  // the total is the limit
            let result = cache.setValue(3, forKey: 2, cost: limit)  // alone it fits: key 1 goes
            #expect(result.isStored && !result.isOverLimit)
            #expect(cache.keys == [2] && cache.totalCost == limit)
            cache._checkInvariants()
        }
    }

    @Test("lowering a limit evicts at once; raising it keeps everything", arguments: allConfigurations)
    func changingLimits(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, policy: policy)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval { log.append($0) }
        for i in 0..<10 { cache.setValue(i, forKey: i, cost: 2) }
        cache.countLimit = 6
        #expect(cache.count == 6)
        #expect(log.take().map(\.reason) == Array(repeating: .evictedForCount, count: 4))
        cache.totalCostLimit = 8
        #expect(cache.count == 4 && cache.totalCost == 8)
        #expect(log.take().map(\.reason) == [.evictedForCost, .evictedForCost])
        cache.countLimit = 0
        cache.totalCostLimit = 0
        for i in 100..<200 { cache[i] = i }
        #expect(cache.count == 104, "0 means no limit")
        cache.countLimit = 1
        #expect(cache.keys.count == 1)
        cache._checkInvariants()
    }

    @Test("negative limits and costs stop with a message naming the parameter")
    func negativeInputs() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Cache<Int, Int>(countLimit: -1)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("countLimit")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = SerialCache<Int, Int>(totalCostLimit: -5)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("totalCostLimit")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Cache<Int, Int>().setValue(1, forKey: 1, cost: -1)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("cost")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Cache<Int, Int>().countLimit = -2
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("countLimit")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryPressureAction.trim(toFraction: 1.5)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("fraction")) }
        // Costs whose sum passes Int.max stop with a message, not an anonymous overflow trap.
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let cache = Cache<Int, Int>()
            cache.setValue(1, forKey: 1, cost: .max - 1)
            cache.setValue(2, forKey: 2, cost: 2)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("total cost")) }
    }
}
