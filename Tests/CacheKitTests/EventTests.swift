import Foundation
import Testing

@testable import CacheKit

@Suite("Removal events, veto and memory pressure")
struct EventTests {
    @Test("the handler hears every removal with its reason", arguments: CacheKind.allCases)
    func reasons(kind: CacheKind) {
        let cache = kind.make(Int.self, String.self, countLimit: 2, totalCostLimit: 10)
        let log = RemovalLog<Int, String>()
        cache.onRemoval { log.append($0) }
        cache[1] = nil
        cache.setValue("a", forKey: 1, cost: 1)
        cache.setValue("b", forKey: 2, cost: 1)
        cache.setValue("c", forKey: 3, cost: 1)
        cache.setValue("c2", forKey: 3, cost: 10)
        cache.removeValue(forKey: 3)
        cache.setValue("d", forKey: 4, cost: 0)
        cache.setValue("e", forKey: 5, cost: 0)
        cache.memoryPressureAction = .removeAll
        cache.handleMemoryPressure()
        cache.setValue("f", forKey: 6, cost: 0)
        cache.removeAll()
        #expect(
            log.all == [
                CacheRemoval(key: 1, value: "a", reason: .evictedForCount),
                CacheRemoval(key: 3, value: "c", reason: .replaced),
                CacheRemoval(key: 2, value: "b", reason: .evictedForCost),
                CacheRemoval(key: 3, value: "c2", reason: .removed),
                CacheRemoval(key: 4, value: "d", reason: .memoryPressure),
                CacheRemoval(key: 5, value: "e", reason: .memoryPressure),
                CacheRemoval(key: 6, value: "f", reason: .removedAll),
            ]
        )
    }

    @Test("evicted, replaced and removed values are released", arguments: allConfigurations)
    func valuesAreReleased(kind: CacheKind, policy: EvictionPolicy) {
        let tracker = LifetimeTracker()
        do {
            let cache = kind.make(Int.self, Tracked.self, countLimit: 10, policy: policy)
            for i in 0..<100 { cache[i % 30] = tracker.instance(i) }
            #expect(tracker.liveCount == 10)
            cache.removeValue(forKey: cache.keys[0])
            #expect(tracker.liveCount == 9)
            cache.countLimit = 3
            #expect(tracker.liveCount == 3)
            cache.handleMemoryPressure()
            #expect(tracker.liveCount == 0)
            for i in 0..<5 { cache[i] = tracker.instance(i) }
            cache.removeAll()
            #expect(tracker.liveCount == 0)
            for i in 0..<5 { cache[i] = tracker.instance(i) }
        }
        #expect(tracker.liveCount == 0, "a cache releases its values when it goes away")
    }

    @Test("a vetoed entry stays and the next candidate goes", arguments: allConfigurations)
    func veto(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, countLimit: 3, policy: policy)
        let asked = Locked<[Int]>([])
        cache.veto { key, _, reason in
            #expect(reason == .evictedForCount)
            let first = asked.mutate { list -> Bool in
                list.append(key)
                return list.count == 1
            }
            return !first  // refuse the first candidate, accept the next
        }
        for i in 1...4 { cache[i] = i }
        let candidates = asked.value
        #expect(candidates.count == 2)
        if candidates.count == 2 {
            #expect(cache.contains(candidates[0]) && !cache.contains(candidates[1]))
        }
        if classicPolicies.contains(policy) { #expect(candidates == [1, 2]) }
        #expect(cache.count == 3 && cache.contains(4))
        #expect(!cache.isOverLimit)
        cache._checkInvariants()
    }

    @Test("when every candidate vetoes, the cache stays over its limit and says so", arguments: CacheKind.allCases)
    func allVetoed(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, countLimit: 2)
        let keep = Locked(true)
        cache.veto { _, _, _ in !keep.value }
        cache[1] = 1
        cache[2] = 2
        let result = cache.setValue(3, forKey: 3, cost: 0)
        #expect(result.isStored && result.isOverLimit)
        #expect(cache.isOverLimit && cache.count == 3)
        keep.mutate { $0 = false }
        cache[4] = 4
        #expect(!cache.isOverLimit)
        #expect(cache.keys == [3, 4])
        cache.veto(nil)
        cache.countLimit = 1
        #expect(cache.keys == [4])
        cache._checkInvariants()
    }

    @Test(
        "the veto also guards cost and memory-pressure evictions, not explicit removals",
        arguments: CacheKind.allCases
    )
    func vetoScope(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, totalCostLimit: 10)
        let reasons = Locked<[RemovalReason]>([])
        cache.veto { key, _, reason in
            reasons.mutate { $0.append(reason) }
            return key != 0
        }
        for i in 0..<6 { cache.setValue(i, forKey: i, cost: 2) }
        #expect(cache.keys == [0, 2, 3, 4, 5])
        cache.memoryPressureAction = .trim(toFraction: 0.4)
        cache.handleMemoryPressure()
        #expect(cache.keys == [0, 5])
        cache.removeValue(forKey: 0)
        cache.removeAll()
        #expect(reasons.value == [.evictedForCost, .evictedForCost] + Array(repeating: .memoryPressure, count: 4))
    }

    @Test(
        "a write made while a veto was installed still meets the limits if the veto is removed before its trim",
        arguments: CacheKind.allCases
    )
    func vetoRemovedBeforeTheTrim(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, totalCostLimit: 10)
        let box = UncheckedBox(cache)
        let asked = Locked(0)
        cache.veto { _, _, _ in
            asked.mutate { $0 += 1 }
            return true
        }
        // The replaced value is reported between the write's critical section and its trim:
        // the handler takes the veto away there, so the trim finds none and evicts inline.
        cache.onRemoval { removal in if removal.reason == .replaced { box.cache.veto(nil) } }
        cache.setValue(1, forKey: 1, cost: 4)
        cache.setValue(2, forKey: 2, cost: 4)
        let result = cache.setValue(10, forKey: 1, cost: 8)
        #expect(result.isStored && !result.isOverLimit)
        #expect(cache.keys == [1] && cache.totalCost == 8)
        #expect(asked.value == 0)
        cache._checkInvariants()
    }

    @Test(
        "once the veto that kept a cache over its limits is gone, the next write of any kind meets them",
        arguments: CacheKind.allCases
    )
    func limitsHoldAgainAfterTheVeto(kind: CacheKind) {
        // Every kind of write trims: a replacement and a rejected write too, so none leaves the
        // cache over its count limit, nor reports it within them while it is over.
        for write in ["replace", "rejected for cost", "new key"] {
            let cache = kind.make(Int.self, Int.self, countLimit: 2, totalCostLimit: 10, policy: .lru)
            cache.veto { _, _, _ in false }
            for key in 1...3 { cache[key] = key }
            #expect(cache.isOverLimit && cache.count == 3)
            cache.veto(nil)
            let result =
                switch write {
                case "replace": cache.setValue(30, forKey: 3)
                case "rejected for cost": cache.setValue(4, forKey: 4, cost: 11)
                default: cache.setValue(4, forKey: 4)
                }
            #expect(cache.count == 2 && !cache.isOverLimit, "\(write)")
            #expect(!result.isOverLimit, "\(write)")
            cache._checkInvariants()
        }
    }

    @Test(
        "an approved eviction happens only while the cache is over its limits as they are once the veto has answered",
        arguments: CacheKind.allCases
    )
    func approvalsMeetTheCurrentLimit(kind: CacheKind) {
        // The veto raises the limit while it is asked: the eviction goes by the limit as it is
        // once the veto has answered, not by a target worked out before asking.
        let cache = kind.make(Int.self, Int.self, countLimit: 2, policy: .lru)
        let box = UncheckedBox(cache)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval(log.append)
        let first = Locked(true)
        cache.veto { _, _, _ in
            if first.mutate({ first in
                defer { first = false }
                return first
            }) {
                box.cache.countLimit = 10
            }
            return true
        }
        for key in 1...3 { cache[key] = key }
        #expect(cache.countLimit == 10 && cache.count == 3)
        #expect(log.all.isEmpty)
        cache._checkInvariants()
    }

    @Test(
        "a write whose room the veto refused meets the limits if the veto is removed before its trim",
        arguments: CacheKind.allCases
    )
    func vetoRemovedAfterRefusingRoom(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, totalCostLimit: 10)
        let box = UncheckedBox(cache)
        cache.veto { _, _, _ in false }
        cache.setValue(1, forKey: 1, cost: 8)
        // The observer hears the write after its critical section, before its trim: the trim
        // asks again whether there is a veto, so a cache left without one meets its limits.
        cache.onActivity { activity in
            if case .write(let key, _) = activity, key == 2 { box.cache.veto(nil) }
        }
        let result = cache.setValue(2, forKey: 2, cost: 8)
        #expect(result.isStored && !result.isOverLimit)
        #expect(cache.keys == [2] && cache.totalCost == 8)
        cache._checkInvariants()
    }

    @Test("hooks may call back into the same cache", arguments: CacheKind.allCases)
    func reentrantHooks(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, countLimit: 3)
        let box = UncheckedBox(cache)
        let seen = Locked<[Int]>([])
        cache.onRemoval { removal in
            // Reads, counts and writes from inside the handler: a deadlock or corruption here fails.
            seen.mutate { $0.append(box.cache.count) }
            if removal.key < 100 { box.cache[removal.key + 100] = removal.value }
        }
        cache.veto { key, _, _ in box.cache.peekValue(forKey: key) != nil }
        for i in 0..<6 { cache[i] = i }
        #expect(cache.count == 3)
        #expect(!seen.value.isEmpty)
        cache._checkInvariants()
    }

    @Test("an entry that changes while the veto is asked is not evicted on that answer")
    func staleCandidate() {
        // LRU, so that 1 is the first candidate (W-TinyLFU, the default, would pick 2 first).
        let cache = Cache<Int, Int>(countLimit: 2, policy: .lru)
        let rewrite = Locked(true)
        cache.evictionVeto = { [unowned cache] key, _, _ in
            if key == 1
                && rewrite.mutate({ flag in
                    defer { flag = false }
                    return flag
                })
            {
                cache[1] = 100  // rewrites the candidate: the answer was about the old value
            }
            return true
        }
        cache[1] = 1
        cache[2] = 2
        cache[3] = 3
        #expect(cache.count == 2)
        #expect(cache[1] == 100, "the rewritten entry survived; the next candidate went instead")
        cache._checkInvariants()
    }

    @Test("an approval given before removeAll never evicts the entry that took its slot since")
    func approvalAcrossRemoveAll() {
        let cache = Cache<String, Int>(countLimit: 1, policy: .fifo)
        let log = RemovalLog<String, Int>()
        cache.removalHandler = log.append
        let refused = Locked<[String]>([])
        let first = Locked(true)
        cache.evictionVeto = { [unowned cache] key, _, _ in
            if key == "A"
                && first.mutate({ flag in
                    defer { flag = false }
                    return flag
                })
            {
                cache.removeAll()
                cache["C"] = 3  // slot 0 of fresh storage, generation 1: what "A" had
                cache["D"] = 4  // over the limit: the veto is asked about "C", and refuses
                return true  // approves "A", which is gone
            }
            refused.mutate { $0.append(key) }
            return false
        }
        cache["A"] = 1
        cache["B"] = 2  // over the limit: the veto is asked about "A"
        #expect(refused.value.contains("C"))
        #expect(log.all.filter { $0.reason == .evictedForCount }.isEmpty)
        #expect(cache["C"] == 3 && cache["D"] == 4)  // every candidate vetoed: over the limit
        cache._checkInvariants()
    }

    @Test("the reason the veto is told is the reason the handler hears", arguments: CacheKind.allCases)
    func vetoReasonMatchesRemoval(kind: CacheKind) {
        let cache = kind.make(String.self, Int.self, countLimit: 3, totalCostLimit: 10, policy: .lru)
        let log = RemovalLog<String, Int>()
        cache.onRemoval(log.append)
        let told = Locked<[String: RemovalReason]>([:])
        cache.veto { key, _, reason in
            told.mutate { $0[key] = reason }
            return key != "a"
        }
        cache.setValue(0, forKey: "a", cost: 0)
        cache.setValue(0, forKey: "b", cost: 6)
        cache.setValue(0, forKey: "c", cost: 0)
        // Count 4 > 3 and cost 11 > 10: "a" is proposed for count and refused; "b" is then asked
        // about for count (what would still be over), approved, and reported so.
        cache.setValue(0, forKey: "d", cost: 5)
        let evicted = log.all.filter(\.reason.isEviction)
        #expect(evicted.map(\.key) == ["b"])
        for removal in evicted { #expect(told.value[removal.key] == removal.reason) }
        cache._checkInvariants()
    }

    @Test("a veto that refuses everything costs a few walks in eviction order, not one per refusal")
    func vetoRoundsStayFew() {
        let n = 2_000
        let cache = SerialCache<Int, Int>(countLimit: n, policy: .lru)
        for i in 0..<n { cache[i] = i }
        let asked = Locked(0)
        cache.evictionVeto = { _, _, _ in
            asked.mutate { $0 += 1 }
            return false
        }
        cache[n] = n  // one over the limit; every candidate refuses
        #expect(cache.isOverLimit)
        #expect(asked.value == n)  // each entry but the new one, asked once
        // The same trim again, counting its rounds: each proposes at least as many candidates as
        // were refused before it, so they grow geometrically (a round per refusal before).
        let refuse: (Int, Int, RemovalReason) -> Bool = { _, _, _ in false }
        let (overLimit, rounds) = cache._trimCountingRounds(askingVeto: refuse, protecting: nil) { $0.limits }
        #expect(overLimit)
        #expect(rounds <= 2 + Int(log2(Double(n))), "\(rounds) rounds")
    }

    @Test("memory pressure trims to a fraction in eviction order", arguments: allConfigurations)
    func memoryPressureTrim(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, policy: policy)
        for i in 0..<10 { cache[i] = i }
        let order = cache.keys
        cache.memoryPressureAction = .trim(toFraction: 0.3)
        cache.handleMemoryPressure()
        #expect(cache.keys == Array(order.suffix(3)))
    }
}

/// Lets a hook capture the cache it is installed on (tests only: these run on one thread).
final class UncheckedBox<Key: Hashable, Value>: @unchecked Sendable {
    let cache: any CacheUnderTest<Key, Value>
    init(_ cache: any CacheUnderTest<Key, Value>) { self.cache = cache }
}
