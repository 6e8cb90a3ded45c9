import CacheKitTestSupport
import Synchronization
import Testing

@testable import CacheKit

/// `EvictionPolicy.adaptive`: the live policy follows the miniature simulations' winner, keeps
/// every entry across a switch, and decides the same way on the same requests.
@Suite("Adaptive selection")
struct AdaptiveSelectionTests {
    /// Keys with a fixed hash, whatever the process's seed: the sample and the decisions then
    /// depend on the requests alone.
    typealias FixedKey = FixedHashKey

    static let capacity = 500

    /// Hot sets of `capacity / 2` keys that move on every `20 × capacity` requests, each
    /// request going to the hot set or, half the time, to a key never seen again: recency pays,
    /// and an admission filter that waits for a second use turns the hot set away.
    static func shiftingHotSets(count: Int, seed: UInt64, capacity: Int = capacity) -> [Int] {
        var rng = SeededGenerator(seed: seed)
        var keys: [Int] = []
        var first = 1_000_000
        while keys.count < count {
            let hot = first..<first + capacity / 2
            first += capacity / 2
            for _ in 0..<20 * capacity where keys.count < count {
                keys.append(Bool.random(using: &rng) ? Int.random(in: hot, using: &rng) : 100_000_000 + keys.count)
            }
        }
        return keys
    }

    /// A loop over 20% more keys than the cache holds: recency-based policies hit nothing,
    /// W-TinyLFU's frequency filter keeps most of the loop.
    static func loop(count: Int, capacity: Int = capacity) -> [Int] {
        (0..<count).map { $0 % (capacity * 6 / 5 + 1) }
    }

    /// Replays `keys` as the simulator does (a miss inserts) and returns the hits.
    static func replay(_ keys: [Int], _ cache: SerialCache<FixedKey, Bool>) -> Int {
        cache._replay(keys.lazy.map { FixedKey(id: $0) }, insertingOnMiss: true)
    }

    static func hits(_ keys: [Int], policy: EvictionPolicy) -> Int {
        replay(keys, SerialCache(countLimit: capacity, policy: policy))
    }

    @Test(
        "a phase that W-TinyLFU loses moves the cache off it, and a loop brings it back within 10 × capacity requests"
    )
    func followsThePhases() {
        let phase = 60_000
        let keys = Self.shiftingHotSets(count: phase, seed: 11) + Self.loop(count: phase)
        let cache = SerialCache<FixedKey, Bool>(countLimit: Self.capacity, policy: .adaptive)
        let hits = Self.replay(keys, cache)
        let switches = cache._policySwitches
        let away = switches.first { $0.from == .wTinyLFU }
        #expect(away != nil && away!.request < phase, "switches: \(switches)")
        let back = switches.last { $0.to == .wTinyLFU }
        #expect(back != nil && back!.request > phase && back!.request <= phase + 10 * Self.capacity, "\(switches)")
        #expect(cache._livePolicy == .wTinyLFU)
        // Following the phases beats every fixed candidate on the whole run.
        for policy in _MiniatureSimulations.candidates {
            #expect(hits >= Self.hits(keys, policy: policy), "\(policy)")
        }
    }

    @Test("on one workload the cache stays with the policy that wins it and hits exactly as that policy does")
    func staysWithTheWinner() {
        let keys = Self.loop(count: 60_000)
        let cache = SerialCache<FixedKey, Bool>(countLimit: Self.capacity, policy: .adaptive)
        #expect(Self.replay(keys, cache) == Self.hits(keys, policy: .wTinyLFU))
        #expect(cache._policySwitches.isEmpty)
    }

    @Test("the same requests give the same hits, switches and entries in every run")
    func deterministic() {
        let keys = Self.shiftingHotSets(count: 40_000, seed: 3) + Self.loop(count: 40_000)
        let first = SerialCache<FixedKey, Bool>(countLimit: Self.capacity, policy: .adaptive)
        let second = SerialCache<FixedKey, Bool>(countLimit: Self.capacity, policy: .adaptive)
        #expect(Self.replay(keys, first) == Self.replay(keys, second))
        #expect(!first._policySwitches.isEmpty)
        #expect(first._policySwitches == second._policySwitches)
        #expect(first.keys == second.keys)
    }

    @Test("a switch keeps every entry and value, in the old policy's eviction order where the new one evicts first")
    func switchKeepsEntries() {
        let cache = SerialCache<FixedKey, Int>(countLimit: Self.capacity, policy: .adaptive)
        var model: [FixedKey: Int] = [:]
        cache.removalHandler = { removal in
            #expect(removal.reason == .evictedForCount)
            model[removal.key] = nil
        }
        var switchesSeen = 0
        for (i, id) in (Self.shiftingHotSets(count: 30_000, seed: 5) + Self.loop(count: 30_000)).enumerated() {
            let key = FixedKey(id: id)
            if cache.value(forKey: key) == nil {
                cache[key] = i
                model[key] = i
            }
            let switches = cache._policySwitches.count
            if switches != switchesSeen {
                switchesSeen = switches
                cache._checkInvariants()
                #expect(cache.count == model.count)
                for (key, value) in model { #expect(cache.peekValue(forKey: key) == value) }
            }
        }
        #expect(switchesSeen >= 2)
        cache._checkInvariants()
        #expect(Dictionary(uniqueKeysWithValues: cache.entries.map { ($0.key, $0.value) }) == model)
    }

    @Test(
        "random operations agree with a map that drops exactly the reported evictions, across switches",
        arguments: [8, 40, 200]
    )
    func modelBased(countLimit: Int) {
        for seed in modelSeeds(default: 3) {
            var rng = SeededGenerator(seed: seed &* 131 &+ UInt64(countLimit))
            let cache = SerialCache<FixedKey, Int>(countLimit: countLimit, policy: .adaptive)
            let evicted = Mutex<[FixedKey]>([])
            cache.removalHandler = { removal in
                if removal.reason.isEviction { evicted.withLock { $0.append(removal.key) } }
            }
            var model: [FixedKey: Int] = [:]
            var limit = countLimit
            var switched = false
            func dropEvicted(at step: Int) {
                for key in evicted.withLock({ list in
                    defer { list.removeAll() }
                    return list
                }) {
                    #expect(model.removeValue(forKey: key) != nil, "step \(step): \(key) evicted twice")
                }
            }
            // A phase of fresh keys with a moving hot set, then a loop a little larger than the
            // cache: the live policy changes. Other operations come between the requests.
            let ids =
                Self.shiftingHotSets(count: 15_000, seed: seed, capacity: countLimit)
                + Self.loop(count: 15_000, capacity: countLimit)
            for (step, id) in ids.enumerated() {
                let key = FixedKey(id: id)
                if step % 6_000 == 5_999 {
                    limit = Swift.max(1, countLimit + Int.random(in: -countLimit / 4...countLimit / 4, using: &rng))
                    cache.countLimit = limit
                    dropEvicted(at: step)
                }
                if step % 500 == 0 && !cache._policySwitches.isEmpty { switched = true }
                if step == 20_000 {
                    // Forgets everything, what the simulations learned included.
                    cache.removeAll()
                    model.removeAll()
                }
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<70:
                    if let value = cache.value(forKey: key) {
                        #expect(model[key] == value, "step \(step)")
                    } else {
                        #expect(model[key] == nil, "step \(step): \(key) lost without an eviction")
                        cache[key] = step
                        model[key] = step
                    }
                case 70..<92:
                    cache[key] = step
                    model[key] = step
                default:
                    #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key), "step \(step)")
                }
                dropEvicted(at: step)
                #expect(cache.count == model.count && cache.count <= limit, "step \(step)")
                if step % 97 == 0 { cache._checkInvariants() }
            }
            cache._checkInvariants()
            #expect(Dictionary(uniqueKeysWithValues: cache.entries.map { ($0.key, $0.value) }) == model)
            #expect(switched, "countLimit \(countLimit), seed \(seed)")
        }
    }

    @Test("without a count limit the miniatures are scaled to the entries held at the first eviction")
    func costLimited() {
        let cache = SerialCache<FixedKey, Bool>(totalCostLimit: Self.capacity, policy: .adaptive)
        for (i, id) in (Self.shiftingHotSets(count: 30_000, seed: 9) + Self.loop(count: 30_000)).enumerated() {
            let key = FixedKey(id: id)
            if cache.value(forKey: key) == nil { cache.setValue(true, forKey: key, cost: 1) }
            #expect(cache.totalCost <= Self.capacity, "request \(i)")
        }
        cache._checkInvariants()
        #expect(!cache._policySwitches.isEmpty)
        #expect(cache._livePolicy == .wTinyLFU)
    }
}
