import CacheKit
import Dispatch
import Foundation
import Synchronization
import Testing

/// Several threads hammering one `Cache` with every kind of operation. Run in CI under
/// `swift test --sanitize=thread`; the end state is checked against what the handler reported.
@Suite("Stress")
struct StressTests {
    @Test(
        "mixed operations from many threads keep the cache consistent",
        arguments: EvictionPolicy.allCases,
        [false, true]
    )
    func hammer(policy: EvictionPolicy, sharedReads: Bool) async {
        let cache = Cache<Int, Int>(countLimit: 200, totalCostLimit: 2_000, policy: policy)
        if sharedReads { cache._shareReads() }
        let inserted = Atomic<Int>(0)
        let left = Atomic<Int>(0)  // removals of a key (every reason but `.replaced`)
        cache.removalHandler = { removal in
            if removal.reason != .replaced { left.add(1, ordering: .relaxed) }
            #expect(removal.value >= 0)
        }
        let threads = 4
        let operations = 20_000
        await runOnThreads(threads) { thread in
            var rng = SeededGenerator(seed: UInt64(thread) + 1)
            for i in 0..<operations {
                let key = Int.random(in: 0..<500, using: &rng)
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<45:
                    _ = cache[key]
                case 45..<85:
                    let result = cache.setValue(i, forKey: key, cost: Int.random(in: 0...20, using: &rng))
                    if result.outcome == .inserted { inserted.add(1, ordering: .relaxed) }
                case 85..<93:
                    _ = cache.removeValue(forKey: key)
                case 93..<96:
                    cache.removeValues(forKeys: [key, key + 1, key + 2])
                case 96..<98:
                    _ = cache.entries.count
                    _ = cache.peekValue(forKey: key)
                case 98:
                    cache.countLimit = Int.random(in: 50...300, using: &rng)
                default:
                    cache.handleMemoryPressure()
                }
            }
        }
        cache._checkInvariants()
        #expect(cache.count <= cache.countLimit)
        #expect(cache.totalCost <= 2_000)
        #expect(cache.count == inserted.load(ordering: .relaxed) - left.load(ordering: .relaxed))
    }

    @Test("the veto path under contention never loses or double-counts an entry")
    func hammerWithVeto() async {
        let cache = Cache<Int, Int>(countLimit: 100)
        let inserted = Atomic<Int>(0)
        let left = Atomic<Int>(0)
        cache.removalHandler = { removal in
            if removal.reason != .replaced { left.add(1, ordering: .relaxed) }
        }
        cache.evictionVeto = { key, _, _ in key % 7 != 0 }  // multiples of 7 stay
        await runOnThreads(4) { thread in
            var rng = SeededGenerator(seed: UInt64(thread) + 100)
            for i in 0..<2_500 {
                let key = Int.random(in: 0..<400, using: &rng)
                if Int.random(in: 0..<10, using: &rng) < 7 {
                    if cache.setValue(i, forKey: key).outcome == .inserted { inserted.add(1, ordering: .relaxed) }
                } else {
                    _ = cache[key]
                }
            }
        }
        cache._checkInvariants()
        #expect(cache.count == inserted.load(ordering: .relaxed) - left.load(ordering: .relaxed))
        let protected = (0..<400).filter { $0 % 7 == 0 }.count
        #expect(cache.count <= max(100, protected))
        for key in cache.keys where key % 7 != 0 && cache.count > 100 {
            Issue.record("key \(key) survives while the cache is over its limit")
        }
    }

    /// The async loads of `loadingStress` running, and the removals it issues, by key. One load
    /// per key at a time: a second load of a key may start while one runs only if a removal of
    /// the key began after the running load's caller called (the removal detached that load).
    final class LoadLedger: Sendable {
        private struct KeyState: Sendable {
            /// For each running load, the removals of the key finished when its caller called.
            var running: [Int] = []
            var removalsBegun = 0
            var removalsFinished = 0
        }

        private let keys = Locked<[Int: KeyState]>([:])
        /// Loads that started while another load of their key ran that no removal detached.
        let overlaps = Atomic<Int>(0)

        /// Called before asking the cache for `key`; returns what `loadBegins` needs.
        func callBegins(_ key: Int) -> Int { keys.mutate { $0[key, default: KeyState()].removalsFinished } }

        func loadBegins(_ key: Int, removalsFinishedAtCall: Int) {
            let overlapping = keys.mutate { keys -> Bool in
                defer { keys[key, default: KeyState()].running.append(removalsFinishedAtCall) }
                let state = keys[key, default: KeyState()]
                return state.running.contains { $0 == state.removalsBegun }
            }
            if overlapping { overlaps.add(1, ordering: .relaxed) }
        }

        func loadEnds(_ key: Int, removalsFinishedAtCall: Int) {
            keys.mutate { keys in
                if let index = keys[key]?.running.firstIndex(of: removalsFinishedAtCall) {
                    keys[key]?.running.remove(at: index)
                }
            }
        }

        func remove(_ key: Int, from cache: Cache<Int, Int>) {
            keys.mutate { $0[key, default: KeyState()].removalsBegun += 1 }
            cache.removeValue(forKey: key)
            keys.mutate { $0[key, default: KeyState()].removalsFinished += 1 }
        }
    }

    @Test("async loads and orInsert from many tasks agree with what was loaded, one load per key at a time")
    func loadingStress() async throws {
        let cache = Cache<Int, Int>(countLimit: 64)
        let asyncLoads = Locked(0)
        let syncLoads = Locked(0)
        let ledger = LoadLedger()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<6 {
                group.addTask {
                    var rng = SeededGenerator(seed: UInt64(t) + 10)
                    for _ in 0..<1_500 {
                        let key = Int.random(in: 0..<100, using: &rng)
                        let removals = ledger.callBegins(key)
                        let loaded = try await cache.value(forKey: key) { k in
                            ledger.loadBegins(k, removalsFinishedAtCall: removals)
                            asyncLoads.mutate { $0 += 1 }
                            // Suspends, so that other tasks miss the key while its load runs.
                            await Task.yield()
                            ledger.loadEnds(k, removalsFinishedAtCall: removals)
                            return k * 2
                        }
                        #expect(loaded == key * 2)
                        let made = cache.value(forKey: key + 1_000) {
                            syncLoads.mutate { $0 += 1 }
                            return key * 3
                        }
                        #expect(made == key * 3)
                        if Int.random(in: 0..<8, using: &rng) == 0 { ledger.remove(key, from: cache) }
                    }
                }
            }
            try await group.waitForAll()
        }
        cache._checkInvariants()
        #expect(cache.count <= 64)
        let stats = cache.statistics
        #expect(stats.loadSuccessCount == asyncLoads.value + syncLoads.value)
        #expect(stats.requestCount == 6 * 1_500 * 2)
        #expect(ledger.overlaps.load(ordering: .relaxed) == 0, "a key was loaded twice at once")
        // Every orInsert miss runs its closure; an async miss while the key's load runs waits
        // for that load instead of running its own.
        let asyncMisses = stats.missCount - syncLoads.value
        #expect(asyncLoads.value < asyncMisses, "\(asyncLoads.value) loads for \(asyncMisses) misses: no miss waited")
    }

    @Test(
        "expiry, refresh, sweeps, triggers and loads mixed from many tasks keep the cache consistent",
        // A bound against hangs, not a speed check: under TSan, beside every level's stress
        // suites on two cores, this test's tasks have taken over four minutes.
        .timeLimit(.minutes(10))
    )
    func expiryStress() async throws {
        let clock = ManualClock()
        let cache = Cache<Int, Int>(
            countLimit: 80,
            expiration: Expiration(
                afterWrite: .seconds(30),
                afterAccess: .seconds(10),
                refreshAfterWrite: .seconds(5),
                sweepInterval: .seconds(3)
            ),
            clock: clock
        )
        // Without a cost limit or insertion policy, every write adds one entry or replaces one
        // (reported as a removal), so count = writes - removals once everything has settled.
        let writes = Atomic<Int>(0)
        let removals = Atomic<Int>(0)
        cache.removalHandler = { removal in #expect(removal.value % 1_000 == removal.key) }
        cache.activityObserver = { activity in
            switch activity {
            case .write: writes.add(1, ordering: .relaxed)
            case .removal: removals.add(1, ordering: .relaxed)
            default: break
            }
        }
        let (events, trigger) = AsyncStream.makeStream(of: Void.self)
        cache.expireAll(whenever: events)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var rng = SeededGenerator(seed: UInt64(t) + 77)
                    for i in 0..<1_500 {
                        let key = Int.random(in: 0..<120, using: &rng)
                        switch Int.random(in: 0..<100, using: &rng) {
                        case 0..<30:
                            let value = try await cache.value(forKey: key) { k in k + 1_000 * (i % 50) }
                            #expect(value % 1_000 == key)
                        case 30..<55:
                            if let value = cache[key] { #expect(value % 1_000 == key) }
                        case 55..<80:
                            let ttl: Duration? =
                                Bool.random(using: &rng) ? .seconds(Int64.random(in: 1...20, using: &rng)) : nil
                            cache.setValue(key + 1_000 * (i % 50), forKey: key, expiresAfter: ttl)
                        case 80..<88:
                            cache.removeValue(forKey: key)
                        case 88..<94:
                            clock.advance(by: .seconds(Int64.random(in: 0...2, using: &rng)))
                        case 94..<97:
                            cache.removeExpired()
                        case 97:
                            trigger.yield()
                        default:
                            _ = cache.entries.count
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        trigger.finish()
        // Background refreshes may still be storing: wait for the books to balance.
        await eventually {
            cache.count == writes.load(ordering: .relaxed) - removals.load(ordering: .relaxed)
        }
        cache._checkInvariants()
        #expect(cache.count <= 80)
        #expect(cache.statistics.loadSuccessCount > 0)
    }

    @Test(
        "SharedCache: reads, async writes, bulk operations, purges and change batches from many threads",
        arguments: [0, 150]
    )
    func sharedCacheStress(countLimit: Int) async {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(
            countLimit: countLimit,
            policy: .lru,
            expiration: Expiration(afterWrite: .seconds(30)),
            clock: clock,
            evictionDecider: { _, value, _ in value % 7 == 0 }
        )
        cache.notificationInterval = .seconds(1)
        let batches = Atomic<Int>(0)
        // The batches, applied in order, rebuild the cache's contents.
        let mirror = Locked<[Int: Int]>([:])
        let changes = cache.changes  // subscribed before the first write
        let listener = Task {
            for await batch in changes {
                mirror.mutate { mirror in
                    for key in batch.removed { mirror[key] = nil }
                    mirror.merge(batch.updated) { _, new in new }
                }
                batches.add(1, ordering: .relaxed)
            }
        }
        let removed = Atomic<Int>(0)
        cache.removalHandler = { removal in
            if removal.reason != .replaced { removed.add(1, ordering: .relaxed) }
        }
        let requests = Atomic<Int>(0)
        await runOnThreads(4) { thread in
            var rng = SeededGenerator(seed: UInt64(thread) + 11)
            for i in 0..<6_000 {
                let key = Int.random(in: 0..<300, using: &rng)
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<70:
                    _ = cache[key]
                    requests.add(1, ordering: .relaxed)
                case 70..<85:
                    cache[key] = i
                case 85..<89:
                    cache.removeValue(forKey: key)
                case 89..<92:
                    cache.addEntries(from: [key: i, key + 1: i])
                case 92..<94:
                    _ = cache.values(forKeys: [key, key + 1])
                case 94:
                    _ = cache.allItems().count
                case 95:
                    cache.purgeEvictableItems()
                case 96:
                    clock.advance(by: .seconds(1))
                case 97:
                    cache.publishChanges()
                case 98:
                    _ = cache.statistics
                default:
                    cache.flush()
                }
            }
        }
        cache.flush()
        cache._checkInvariants()
        #expect(countLimit == 0 || cache.count <= countLimit)
        #expect(cache.allItems().count == cache.count)
        #expect(removed.load(ordering: .relaxed) > 0)
        // Readers count hits and misses in their stripes' lock words: none may be lost.
        let stats = cache.statistics
        #expect(stats.hitCount + stats.missCount == requests.load(ordering: .relaxed))
        cache.publishChanges()
        let contents = cache.allItems()
        await eventually { mirror.value == contents }
        #expect(mirror.value == contents, "the change batches lost or reordered a change")
        #expect(batches.load(ordering: .relaxed) > 0)
        listener.cancel()
    }

    @Test(
        "SharedCache: a reader on another thread that saw a write's call return reads that write or a later one",
        arguments: [0, 1_000_000]
    )
    func sharedCacheCrossThreadReads(countLimit: Int) async {
        let cache = SharedCache<Int, Int>(countLimit: countLimit, policy: .lru)
        let keyCount = 4_096
        // For each key, the latest value whose write call has returned, published with a
        // release store after the call; a reader loads it (acquire) before reading the cache.
        let published = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: keyCount)
        for i in 0..<keyCount { (published + i).initialize(to: Atomic(0)) }
        defer { published.deallocate() }
        let shared = Handoff(published)
        let stale = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        let writersDone = Atomic<Int>(0)
        // Readers spin until the writers finish: all four threads run at once.
        await runOnThreads(4) { thread in
            let published = shared.value
            var rng = SeededGenerator(seed: UInt64(thread) + 77)
            if thread < 2 {
                // Writer `thread` owns the keys of its parity, so its values per key only grow.
                for i in 1...20_000 {
                    let key = Int.random(in: 0..<(keyCount / 2), using: &rng) * 2 + thread
                    if i % 97 == 0 {
                        let keys = (0..<8).map { (key + 2 * $0 * 131) % keyCount }
                        cache.addEntries(from: Dictionary(uniqueKeysWithValues: keys.map { ($0, i) }))
                        for k in keys { published[k].store(i, ordering: .releasing) }
                    } else {
                        cache[key] = i
                        published[key].store(i, ordering: .releasing)
                    }
                }
                writersDone.add(1, ordering: .releasing)
            } else {
                while writersDone.load(ordering: .acquiring) < 2 {
                    let key = Int.random(in: 0..<keyCount, using: &rng)
                    if Int.random(in: 0..<50, using: &rng) == 0 {
                        let keys = (0..<4).map { (key + $0 * 977) % keyCount }
                        let before = keys.map { published[$0].load(ordering: .acquiring) }
                        let got = cache.values(forKeys: keys)
                        for (k, floor) in zip(keys, before) where (got[k] ?? 0) < floor {
                            stale.add(1, ordering: .relaxed)
                        }
                    } else {
                        let floor = published[key].load(ordering: .acquiring)
                        let value =
                            Bool.random(using: &rng) ? (cache[key] ?? 0) : (cache.peekValue(forKey: key) ?? 0)
                        if value < floor { stale.add(1, ordering: .relaxed) }
                    }
                    reads.add(1, ordering: .relaxed)
                }
            }
        }
        cache.flush()
        cache._checkInvariants()
        #expect(reads.load(ordering: .relaxed) > 0)
        #expect(stale.load(ordering: .relaxed) == 0, "stale reads: \(stale.load(ordering: .relaxed))")
    }

    @Test("memoized functions sharing a cache: sync and async calls, switches and expireAll from many tasks")
    func memoizationStress() async throws {
        let shared = MemoCache(countLimit: 50, policy: .lru)
        let double = MemoizedFunction<Int>("double", cache: shared)
        let triple = MemoizedFunction<Int>("triple", cache: shared, expiresAfter: .seconds(60))
        let runs = Locked(0)
        let uncachedCalls = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<6 {
                group.addTask {
                    var rng = SeededGenerator(seed: UInt64(t) + 30)
                    for _ in 0..<1_500 {
                        let x = Int.random(in: 0..<80, using: &rng)
                        try await callDoubleAndTriple(x, double: double, triple: triple, runs: runs)
                        switch Int.random(in: 0..<100, using: &rng) {
                        case 0: triple.expireAll()
                        case 1: double.isEnabled.toggle()
                        case 2:
                            uncachedCalls.mutate { $0 += 1 }
                            let direct = Memoization.withCachingDisabled { () -> Int in
                                double.call(arguments: x) { () -> Int in
                                    runs.mutate { $0 += 1 }
                                    return x * 2
                                }
                            }
                            #expect(direct == x * 2)
                        default: break
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        shared._checkInvariants()
        #expect(shared.count <= 50)
        let stats = [double.statistics, triple.statistics]
        // Every run was on a miss or with caching off.
        #expect(stats.map { $0.runCount + $0.bypassCount }.reduce(0, +) == runs.value)
        let calls = 6 * 1_500 * 2 + uncachedCalls.value
        #expect(stats.map { $0.hitCount + $0.missCount + $0.bypassCount }.reduce(0, +) == calls)
    }

    @Test("memoized functions on storages of their own: sync and async calls and expireAll from many tasks")
    func memoStorageStress() async throws {
        let shared = SharedCache<MemoKey, MemoValue>(countLimit: 50, policy: .lru)
        let dictionary = DictionaryStorage()
        let clock = ManualClock()
        let double = MemoizedFunction<Int>("double", storage: shared)
        let triple = MemoizedFunction<Int>("triple", storage: dictionary, expiresAfter: .seconds(60), clock: clock)
        let runs = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<6 {
                group.addTask {
                    var rng = SeededGenerator(seed: UInt64(t) + 60)
                    for _ in 0..<1_000 {
                        let x = Int.random(in: 0..<80, using: &rng)
                        try await callDoubleAndTriple(x, double: double, triple: triple, runs: runs)
                        switch Int.random(in: 0..<100, using: &rng) {
                        case 0: triple.expireAll()
                        case 1: double.expireAll()
                        case 2: clock.advance(by: .seconds(7))
                        default: break
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        shared.flush()
        shared._checkInvariants()
        #expect(shared.count <= 50)
        // Every stored result is right for its key.
        func check(_ items: [MemoKey: MemoValue], factor: Int) {
            for (key, value) in items {
                let argument = key.arguments as? Int ?? -1
                #expect(value.value as? Int == argument * factor, "\(key)")
            }
        }
        check(shared.allItems(), factor: 2)
        check(dictionary.values.value, factor: 3)
        let stats = [double.statistics, triple.statistics]
        #expect(stats.map(\.runCount).reduce(0, +) == runs.value)
        let lookups: Int = stats.map { $0.hitCount + $0.missCount }.reduce(0, +)
        #expect(lookups == 12_000)  // 6 tasks, 1,000 rounds, 2 calls
        #expect(stats.allSatisfy { $0.hitCount > 0 })
    }

    /// One round of the memoization stress tests: `double` called synchronously and `triple`
    /// asynchronously with `x`, each run counted in `runs`, each result checked.
    private func callDoubleAndTriple(
        _ x: Int,
        double: MemoizedFunction<Int>,
        triple: MemoizedFunction<Int>,
        runs: Locked<Int>
    ) async throws {
        let doubled = double.call(arguments: x) { () -> Int in
            runs.mutate { $0 += 1 }
            return x * 2
        }
        #expect(doubled == x * 2)
        let tripled = try await triple.call(arguments: x) { @Sendable () async throws -> Int in
            runs.mutate { $0 += 1 }
            return x * 3
        }
        #expect(tripled == x * 3)
    }
}
