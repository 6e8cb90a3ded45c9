import CacheKit
import Testing

@Suite("Cache behaviour")
struct CacheBehaviourTests {
    @Test("a cache has a settable name, empty by default (NSCache's name)")
    func names() {
        let cache = Cache<Int, Int>()
        let serial = SerialCache<Int, Int>()
        #expect(cache.name.isEmpty && serial.name.isEmpty)
        cache.name = "images"
        serial.name = "thumbnails"
        #expect(cache.name == "images")
        #expect(serial.name == "thumbnails")
    }

    @Test("basic reads and writes", arguments: allConfigurations)
    func basics(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(String.self, Int.self, policy: policy)
        #expect(cache.value(forKey: "a") == nil)
        cache["a"] = 1
        #expect(cache.setValue(2, forKey: "b", cost: 0).outcome == .inserted)
        #expect(cache.setValue(3, forKey: "b", cost: 0).outcome == .replaced)
        #expect(cache["a"] == 1)
        #expect(cache.value(forKey: "b") == 3)
        #expect(cache.contains("a") && !cache.contains("z"))
        #expect(cache.count == 2)
        #expect(cache.removeValue(forKey: "a") == 1)
        #expect(cache.removeValue(forKey: "a") == nil)
        cache["b"] = nil
        #expect(cache.count == 0)
        cache._checkInvariants()
    }

    @Test("the count limit holds when the write returns (YapCache's strict limit)", arguments: allConfigurations)
    func strictCountLimit(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, countLimit: 4, policy: policy)
        for i in 1...5 { cache[i] = i }
        #expect(cache.count == 4)
        if policy == .wTinyLFU || policy == .adaptive {
            // The admission filter keeps the older entry: 4, moved out of the window, has no
            // more recorded uses than 1, and ties go against the newcomer. (The adaptive policy
            // starts as W-TinyLFU.)
            #expect(cache.contains(1) && !cache.contains(4))
        } else {
            #expect(!cache.contains(1), "the oldest entry leaves under these policies")
        }
        #expect(cache.contains(5), "a new entry never evicts itself")
    }

    @Test("generations are odd for slots in use and even for free ones, from when they are first kept")
    func generationParity() {
        // SharedCache skips a buffered read whose slot's generation changed; a read of an entry in
        // use carries an odd generation, so it can never match a free slot, even in a fresh
        // engine after removeAll (whose generations count from 0 again).
        let cache = SerialCache<Int, Int>(countLimit: 30, policy: .lru)
        for key in 0..<20 { cache[key] = key }
        cache.removeValue(forKey: 3)
        cache.evictionVeto = { key, _, _ in key % 7 != 0 }  // starts keeping generations
        var random = SeededGenerator(seed: 0x6E4)
        for step in 0..<3_000 {
            let key = Int.random(in: 0..<60, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: cache.removeValue(forKey: key)
            case 1: _ = cache[key]
            default: cache[key] = step
            }
            if step % 100 == 0 { cache._checkInvariants() }
            if step == 1_500 { cache.removeAll() }
        }
        cache._checkInvariants()
        #expect(cache.count > 0)
    }

    @Test("a count limit as large as Int.max works with every policy", arguments: EvictionPolicy.allCases)
    func hugeCountLimit(policy: EvictionPolicy) {
        let serial = SerialCache<Int, Int>(countLimit: .max, policy: policy)
        let cache = Cache<Int, Int>(countLimit: .max, policy: policy)
        for key in 0..<100 {
            serial[key] = key
            cache[key] = key
        }
        #expect(serial.count == 100 && cache.count == 100)
        #expect((0..<100).allSatisfy { serial[$0] == $0 && cache[$0] == $0 })
        serial.countLimit = 40
        #expect(serial.count == 40)
        serial.countLimit = .max
        for key in 100..<200 { serial[key] = key }
        #expect(serial.count == 140)
        serial._checkInvariants()
    }

    @Test(
        "the simulator's one-probe replay agrees with a read then a write, hooks or not",
        arguments: EvictionPolicy.allCases
    )
    func replayAgreesWithReadThenWrite(policy: EvictionPolicy) {
        let fast = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        let hooked = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        var evicted = 0
        hooked.removalHandler = { _ in evicted += 1 }  // takes the two-call path
        let plain = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        var random = SeededGenerator(seed: 0x5EED)
        var hits = (fast: 0, hooked: 0, plain: 0)
        for _ in 0..<5_000 {
            let key = Int.random(in: 0..<200, using: &random) % (Bool.random(using: &random) ? 40 : 200)
            if fast._replay(key, insertingOnMiss: key) { hits.fast += 1 }
            if hooked._replay(key, insertingOnMiss: key) { hits.hooked += 1 }
            if plain.value(forKey: key) != nil { hits.plain += 1 } else { plain[key] = key }
        }
        #expect(hits.fast == hits.plain && hits.hooked == hits.plain)
        #expect(hits.plain > 500 && hits.plain < 4_500, "a mix of hits and misses (\(hits.plain))")
        #expect(Array(fast.keys) == Array(plain.keys) && Array(hooked.keys) == Array(plain.keys))
        #expect(evicted == 5_000 - hits.hooked - 50)
        #expect(
            fast.statistics.hitCount == plain.statistics.hitCount
                && fast.statistics.missCount == plain.statistics.missCount
        )
        #expect(fast.statistics.removalCounts == plain.statistics.removalCounts)
        fast._checkInvariants()

        // The batch form, on both paths, answers as the single requests did.
        let keys = (0..<5_000).map { _ in Int.random(in: 0..<200, using: &random) % 60 }
        let batchFast = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        let batchHooked = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        var batchEvicted = 0
        batchHooked.removalHandler = { _ in batchEvicted += 1 }
        let single = SerialCache<Int, Int>(countLimit: 50, policy: policy)
        let singleHits = keys.filter { single._replay($0, insertingOnMiss: $0) }.count
        #expect(batchFast._replay(keys, insertingOnMiss: 0) == singleHits)
        #expect(batchHooked._replay(keys, insertingOnMiss: 0) == singleHits)
        #expect(Array(batchFast.keys) == Array(single.keys) && Array(batchHooked.keys) == Array(single.keys))
        #expect(batchEvicted == keys.count - singleHits - 50)
        #expect(batchFast.statistics.hitCount == singleHits)
    }

    @Test("LRU: reads refresh, peek and contains do not")
    func lruRecency() {
        for kind in CacheKind.allCases {
            let cache = kind.make(Int.self, String.self, countLimit: 3)
            cache[1] = "a"
            cache[2] = "b"
            cache[3] = "c"
            #expect(cache.keys == [1, 2, 3], "least recently used first")
            _ = cache[1]
            #expect(cache.keys == [2, 3, 1])
            _ = cache.peekValue(forKey: 2)
            _ = cache.contains(2)
            #expect(cache.keys == [2, 3, 1])
            cache[4] = "d"
            #expect(cache.keys == [3, 1, 4])
            #expect(cache.entries.map(\.value) == ["c", "a", "d"])
        }
    }

    @Test("FIFO ignores reads; LFU keeps the popular entry")
    func fifoAndLFU() {
        for kind in CacheKind.allCases {
            let fifo = kind.make(Int.self, Int.self, countLimit: 2, policy: .fifo)
            fifo[1] = 1
            fifo[2] = 2
            _ = fifo[1]
            fifo[3] = 3
            #expect(fifo.keys == [2, 3])

            let lfu = kind.make(Int.self, Int.self, countLimit: 2, policy: .lfu)
            lfu[1] = 1
            lfu[2] = 2
            _ = lfu[1]
            _ = lfu[1]
            _ = lfu[2]
            lfu[3] = 3
            #expect(lfu.keys == [3, 1], "2 (used twice) leaves before 1 (used three times); 3 is new")
            lfu[4] = 4
            #expect(lfu.keys == [4, 1], "ties go to the least recently used")
        }
    }

    @Test("enumeration can stop early and is a snapshot", arguments: CacheKind.allCases)
    func enumeration(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self)
        for i in 0..<10 { cache[i] = i * i }
        var seen: [Int] = []
        for (key, value) in cache.entries {
            #expect(value == key * key)
            cache[key + 100] = 0  // changes made while enumerating do not disturb it
            seen.append(key)
            if seen.count == 3 { break }
        }
        #expect(seen == [0, 1, 2])
        #expect(cache.count == 13)
    }

    @Test("values(forKeys:) reads what is held and not expired, in one section, telling no one")
    func bulkRead() async {
        let clock = ManualClock()
        let cache = Cache<Int, Int>(countLimit: 10, policy: .lru, expiration: .afterWrite(.seconds(10)), clock: clock)
        let serial = SerialCache<Int, Int>(
            countLimit: 10,
            policy: .lru,
            expiration: .afterWrite(.seconds(10)),
            clock: clock
        )
        for key in 0..<4 {
            cache[key] = key * 10
            serial[key] = key * 10
        }
        clock.advance(by: .seconds(5))
        cache[4] = 40
        serial[4] = 40
        clock.advance(by: .seconds(6))  // 0...3 have expired, 4 has not
        #expect(cache.values(forKeys: [0, 4, 9]) == [4: 40])
        #expect(serial.values(forKeys: [0, 4, 9]) == [4: 40])
        cache[5] = 50
        serial[5] = 50
        _ = cache.values(forKeys: [4])
        _ = serial.values(forKeys: [4])
        #expect(cache.keys == [4, 5], "a bulk read moves nothing")
        #expect(serial.keys == [4, 5])
        #expect(cache.statistics.requestCount == 0)
        #expect(serial.statistics.requestCount == 0)
    }

    @Test("removeValues and removeAll", arguments: allConfigurations)
    func bulkRemoval(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, policy: policy)
        for i in 0..<100 { cache.setValue(i, forKey: i, cost: 1) }
        cache.removeValues(forKeys: [1, 2, 3, 500])
        #expect(cache.count == 97)
        #expect(cache.totalCost == 97)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0 && cache.keys.isEmpty)
        cache[7] = 7
        #expect(cache[7] == 7, "the cache works after removeAll")
        cache._checkInvariants()
    }

    @Test("freed slots are reused: a full cache stops growing", arguments: allConfigurations)
    func slotReuse(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, countLimit: 64, policy: policy)
        for i in 0..<10_000 {
            cache[i] = i
            if i % 3 == 0 { cache[i - 1] = nil }
        }
        #expect(cache.count <= 64)
        cache._checkInvariants()
    }
}

/// The names `Cache`, `SerialCache` and `SharedCache` share for bulk writes and memory pressure.
@Suite("One vocabulary")
struct SharedVocabularyTests {
    @Test("addEntries writes each pair as setValue would: in order, within the limits, each eviction reported")
    func addEntries() {
        let cache = Cache<Int, String>(countLimit: 3, policy: .lru)
        let serial = SerialCache<Int, String>(countLimit: 3, policy: .lru)
        let log = RemovalLog<Int, String>()
        cache.removalHandler = { log.append($0) }
        cache.addEntries(from: [(key: 1, value: "a"), (key: 2, value: "b"), (key: 3, value: "c"), (key: 4, value: "d")])
        serial.addEntries(from: [
            (key: 1, value: "a"), (key: 2, value: "b"), (key: 3, value: "c"), (key: 4, value: "d"),
        ])
        #expect(cache.keys == [2, 3, 4] && serial.keys == [2, 3, 4])
        #expect(log.all.map(\.key) == [1] && log.all.first?.reason == .evictedForCount)
        cache.addEntries(from: [2: "B"])
        serial.addEntries(from: [2: "B"])
        #expect(cache[2] == "B" && serial[2] == "B")
        #expect(log.all.last?.reason == .replaced)
        #expect(cache.count == 3 && serial.count == 3)
    }

    @Test("handleMemoryPressure(_:) applies the action given, whatever memoryPressureAction holds")
    func handleMemoryPressureWithAction() {
        let cache = Cache<Int, Int>(countLimit: 100, policy: .lru)
        let shared = SharedCache<Int, Int>(countLimit: 100, policy: .lru)
        for i in 0..<10 {
            cache[i] = i
            shared.setValue(i, forKey: i)
        }
        cache.memoryPressureAction = .removeAll
        cache.handleMemoryPressure(.trim(toFraction: 0.5))
        shared.handleMemoryPressure(.trim(toFraction: 0.5))
        #expect(cache.count == 5 && shared.count == 5)
        #expect(cache.keys == Array(5..<10))
        cache.memoryPressureAction = .trim(toFraction: 0.5)
        cache.handleMemoryPressure(.removeAll)
        #expect(cache.count == 0)
    }
}
