import Foundation
import Synchronization
import Testing

@testable import CacheKit

/// Every expiry test runs on a `ManualClock`: time moves only when the test says so.
@Suite("Expiration")
struct ExpirationTests {
    @Test("after write: an entry lives its time to live, a rewrite starts it again", arguments: CacheKind.allCases)
    func timeToLive(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(String.self, Int.self, expiration: .afterWrite(.seconds(60)), clock: clock)
        let log = RemovalLog<String, Int>()
        cache.onRemoval(log.append)
        cache["a"] = 1
        cache["b"] = 2
        clock.advance(by: .seconds(59))
        #expect(cache["a"] == 1)  // reading does not extend a time to live
        cache["b"] = 20  // rewriting does
        clock.advance(by: .seconds(1))
        #expect(cache["a"] == nil)
        #expect(cache.count == 1)
        #expect(cache["b"] == 20)
        #expect(log.all.filter { $0.reason == .expired } == [CacheRemoval(key: "a", value: 1, reason: .expired)])
        clock.advance(by: .seconds(59))
        #expect(cache["b"] == nil)
        #expect(cache.count == 0)
        cache._checkInvariants()
    }

    @Test(
        "after access: a read through value(forKey:) extends the entry, a peek does not",
        arguments: CacheKind.allCases
    )
    func timeToIdle(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(String.self, Int.self, expiration: .afterAccess(.seconds(60)), clock: clock)
        cache["a"] = 1
        clock.advance(by: .seconds(50))
        #expect(cache.value(forKey: "a") == 1)  // now lives until 110
        clock.advance(by: .seconds(50))
        #expect(cache.peekValue(forKey: "a") == 1)  // 100: alive; the peek does not extend
        #expect(cache.contains("a"))
        clock.advance(by: .seconds(9))
        #expect(cache.keys == ["a"])
        clock.advance(by: .seconds(1))  // 110
        #expect(cache.peekValue(forKey: "a") == nil)
        #expect(cache.count == 0)
        cache._checkInvariants()
    }

    @Test(
        "expired entries leave as expired before a limit change, memory pressure or removeAll weighs the rest",
        arguments: CacheKind.allCases
    )
    func expiredLeaveFirst(kind: CacheKind) {
        func make(veto: Bool = false) -> (any CacheUnderTest<String, Int>, ManualClock, RemovalLog<String, Int>) {
            let clock = ManualClock()
            let cache = kind.make(String.self, Int.self, countLimit: 4, policy: .lru, clock: clock)
            let log = RemovalLog<String, Int>()
            cache.onRemoval(log.append)
            cache.setValue(1, forKey: "a", cost: 0, expiresAfter: nil)
            cache.setValue(2, forKey: "b", cost: 0, expiresAfter: nil)
            cache.setValue(3, forKey: "c", cost: 0, expiresAfter: .seconds(1))
            cache.setValue(4, forKey: "d", cost: 0, expiresAfter: .seconds(1))
            clock.advance(by: .seconds(2))
            return (cache, clock, log)
        }
        // Lowering the limit to the two live entries evicts nothing.
        let (lowered, _, loweredLog) = make()
        lowered.countLimit = 2
        #expect(Set(lowered.keys) == ["a", "b"])
        #expect(loweredLog.all.map(\.reason) == [.expired, .expired])
        // Trimming to half keeps half of the live entries.
        let (trimmed, _, _) = make()
        trimmed.memoryPressureAction = .trim(toFraction: 0.5)
        trimmed.handleMemoryPressure()
        #expect(trimmed.keys == ["b"])
        // With a veto, it is never asked about an expired entry.
        let (vetoed, _, vetoedLog) = make()
        let asked = Locked<[String]>([])
        vetoed.veto { key, _, _ in
            asked.mutate { $0.append(key) }
            return true
        }
        vetoed.countLimit = 1
        #expect(asked.value == ["a"])
        #expect(vetoedLog.all.map(\.reason) == [.expired, .expired, .evictedForCount])
        // removeAll reports what had expired as expired.
        let (emptied, _, emptiedLog) = make()
        emptied.removeAll()
        #expect(emptiedLog.all.map(\.reason) == [.expired, .expired, .removedAll, .removedAll])
        #expect(emptied.statistics.removalCounts == [.expired: 2, .removedAll: 2])
    }

    @Test("after write and after access together: whichever comes first", arguments: CacheKind.allCases)
    func both(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(
            String.self,
            Int.self,
            expiration: Expiration(afterWrite: .seconds(100), afterAccess: .seconds(30)),
            clock: clock
        )
        cache["kept warm"] = 1
        cache["left alone"] = 2
        for _ in 0..<4 {
            clock.advance(by: .seconds(20))
            #expect(cache["kept warm"] == 1)
        }
        // 80 s: the idle one went at 30 s; the warm one is still within its 100 s.
        #expect(cache.peekValue(forKey: "left alone") == nil)
        clock.advance(by: .seconds(19))
        #expect(cache["kept warm"] == 1)
        clock.advance(by: .seconds(1))  // 100 s: its time to live is up, however often it is read
        #expect(cache["kept warm"] == nil)
        cache._checkInvariants()
    }

    @Test(
        "a per-entry expiresAfter replaces the cache's time to live, shorter or longer",
        arguments: CacheKind.allCases
    )
    func perEntry(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(String.self, Int.self, expiration: .afterWrite(.seconds(60)), clock: clock)
        cache.setValue(1, forKey: "short", cost: 0, expiresAfter: .seconds(10))
        cache.setValue(2, forKey: "long", cost: 0, expiresAfter: .seconds(600))
        cache["default"] = 3
        clock.advance(by: .seconds(10))
        #expect(cache.keys.sorted() == ["default", "long"])
        clock.advance(by: .seconds(50))
        #expect(cache.keys == ["long"])
        clock.advance(by: .seconds(539))
        #expect(cache["long"] == 2)
        clock.advance(by: .seconds(1))
        #expect(cache["long"] == nil)
        // Rewriting without a duration gives the entry the cache's again.
        cache.setValue(4, forKey: "k", cost: 0, expiresAfter: .seconds(1_000))
        cache["k"] = 5
        clock.advance(by: .seconds(60))
        #expect(cache["k"] == nil)
        cache._checkInvariants()
    }

    @Test("per-entry expiry in a cache with no expiration; other entries never expire", arguments: CacheKind.allCases)
    func perEntryInPlainCache(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(String.self, Int.self, clock: clock)
        cache["before"] = 0  // written before any expiry existed
        cache.setValue(1, forKey: "temp", cost: 0, expiresAfter: .milliseconds(1_500))
        cache["after"] = 2
        clock.advance(by: .seconds(1))
        #expect(cache["temp"] == 1)
        clock.advance(by: .milliseconds(500))
        #expect(cache["temp"] == nil)
        clock.advance(by: .seconds(1_000_000))
        #expect(cache.keys.sorted() == ["after", "before"])
        cache._checkInvariants()
    }

    @Test("a lifetime of less than a nanosecond is one nanosecond, not zero", arguments: CacheKind.allCases)
    func subNanosecondLifetime(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(String.self, Int.self, countLimit: 2, clock: clock)
        cache["old"] = 0
        cache.setValue(1, forKey: "a", cost: 0, expiresAfter: Duration(secondsComponent: 0, attosecondsComponent: 1))
        #expect(cache.peekValue(forKey: "a") == 1, "the clock has not moved")
        #expect(cache.peekValue(forKey: "old") == 0)
        clock.advance(by: .nanoseconds(1))
        #expect(cache.peekValue(forKey: "a") == nil)
        let idle = Cache<String, Int>(expiration: .afterAccess(.nanoseconds(1) / 2), clock: clock)
        idle["k"] = 1
        #expect(idle.peekValue(forKey: "k") == 1)
    }

    @Test("an entry that never expires outlives a clock that has run for 292 years")
    func clockSaturation() {
        let clock = ManualClock()
        let cache = Cache<String, Int>(clock: clock)
        cache.setValue(1, forKey: "forever", expiresAfter: .seconds(Int64.max))  // saturates: never
        cache.setValue(2, forKey: "plain")
        cache.setValue(3, forKey: "short", expiresAfter: .seconds(1))
        clock.advance(by: .seconds(Int64.max / 1_000_000_000 + 1))  // readings saturate here
        #expect(cache["forever"] == 1)
        #expect(cache["plain"] == 2)
        #expect(cache["short"] == nil)
    }

    @Test("an expired entry is never returned, counted, costed or enumerated", arguments: CacheKind.allCases)
    func neverSeen(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(Int.self, Int.self, countLimit: 100, expiration: .afterWrite(.seconds(100)), clock: clock)
        for i in 1...10 { cache.setValue(i, forKey: i, cost: i, expiresAfter: .seconds(Int64(i))) }
        for t in 1...10 {
            clock.advance(by: .seconds(1))
            let alive = Array((t + 1)..<11)
            #expect(cache.count == alive.count)
            #expect(cache.totalCost == alive.reduce(0, +))
            #expect(cache.keys.sorted() == alive)
            #expect(cache.entries.map(\.value).sorted() == alive)
            #expect(!cache.contains(t))
            #expect(cache.peekValue(forKey: t) == nil)
            #expect(cache.isOverLimit == false)
        }
        cache._checkInvariants()
    }

    @Test("removeExpired frees expired entries without any read, reporting each", arguments: CacheKind.allCases)
    func sweepWithoutReads(kind: CacheKind) {
        let clock = ManualClock()
        let tracker = LifetimeTracker()
        let cache = kind.make(Int.self, Tracked.self, expiration: .afterWrite(.seconds(10)), clock: clock)
        let reasons = Locked<[Int: RemovalReason]>([:])
        cache.onRemoval { removal in reasons.mutate { $0[removal.key] = removal.reason } }
        for i in 0..<100 { cache[i] = tracker.instance(i) }
        clock.advance(by: .seconds(5))
        for i in 100..<150 { cache[i] = tracker.instance(i) }
        #expect(tracker.liveCount == 150)
        clock.advance(by: .seconds(5))
        cache.removeExpired()
        #expect(tracker.liveCount == 50)
        #expect(reasons.value.count == 100)
        #expect(reasons.value.values.allSatisfy { $0 == .expired })
        #expect(Set(reasons.value.keys) == Set(0..<100))
        #expect(cache.statistics.removalCounts[.expired] == 100)
        clock.advance(by: .seconds(5))
        cache.removeExpired()
        #expect(tracker.liveCount == 0)
        cache._checkInvariants()
    }

    @Test("a write sweeps what expired before storing", arguments: CacheKind.allCases)
    func writeSweeps(kind: CacheKind) {
        let clock = ManualClock()
        let cache = kind.make(Int.self, Int.self, countLimit: 3, expiration: .afterWrite(.seconds(10)), clock: clock)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval(log.append)
        cache[1] = 1
        cache[2] = 2
        clock.advance(by: .seconds(5))
        cache[3] = 3
        clock.advance(by: .seconds(5))
        cache[4] = 4  // 1 and 2 have expired: they leave as expired, nothing is evicted for count
        #expect(log.all.map(\.reason) == [.expired, .expired])
        #expect(Set(log.all.map(\.key)) == [1, 2])
        #expect(cache.keys.sorted() == [3, 4])
    }

    @Test("the background sweep removes expired entries on its interval, and stops with the cache")
    func backgroundSweep() async {
        let clock = ManualClock()
        let log = RemovalLog<String, Int>()
        weak var weakCache: Cache<String, Int>?
        do {
            let cache = Cache<String, Int>(
                expiration: Expiration(afterWrite: .seconds(5), sweepInterval: .seconds(10)),
                clock: clock
            )
            weakCache = cache
            cache.removalHandler = log.append
            cache["a"] = 1
            await eventually { clock.sleeperCount == 1 }
            clock.advance(by: .seconds(9))
            #expect(log.all.isEmpty)  // expired at 5 s, but nothing has asked yet
            clock.advance(by: .seconds(1))
            await eventually { log.all.count == 1 }
            #expect(log.all == [CacheRemoval(key: "a", value: 1, reason: .expired)])
            await eventually { clock.sleeperCount == 1 }  // the next round is scheduled
        }
        #expect(weakCache == nil)  // the sweep does not keep the cache alive
        await eventually { clock.sleeperCount == 0 }  // and it ends with the cache
    }

    @Test("expireAll expires every entry, reporting each as expired", arguments: CacheKind.allCases)
    func expireAll(kind: CacheKind) {
        let cache = kind.make(Int.self, Int.self, countLimit: 10)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval(log.append)
        for i in 0..<5 { cache[i] = i }
        cache.expireAll()
        #expect(cache.count == 0)
        #expect(log.all.count == 5)
        #expect(log.all.allSatisfy { $0.reason == .expired })
        #expect(cache.statistics.removalCounts[.expired] == 5)
        cache[9] = 9  // the cache still works
        #expect(cache[9] == 9)
    }

    @Test("the insertion policy refuses values; a refused write stores nothing and drops the old value")
    func insertionPolicy() async throws {
        for kind in CacheKind.allCases {
            let cache = kind.make(String.self, Int.self, insertionPolicy: { _, _, cost in cost <= 30 })
            let log = RemovalLog<String, Int>()
            cache.onRemoval(log.append)
            #expect(cache.setValue(1, forKey: "small", cost: 30).outcome == .inserted)
            #expect(cache.setValue(2, forKey: "big", cost: 31).outcome == .rejected(.insertionPolicy))
            #expect(cache.setValue(2, forKey: "big", cost: 31).isStored == false)
            #expect(cache["big"] == nil)
            #expect(cache.setValue(3, forKey: "small", cost: 40).outcome == .rejected(.insertionPolicy))
            #expect(cache["small"] == nil)
            #expect(log.all == [CacheRemoval(key: "small", value: 1, reason: .replaced)])
            // orInsert returns the value it made, even when it may not be stored.
            #expect(cache.value(forKey: "made", cost: 99, orInsert: { 7 }) == 7)
            #expect(cache.count == 0)
        }
        // Loaded values: returned to the caller, not stored.
        let cache = Cache<String, Int>(insertionPolicy: { _, value, _ in value >= 0 })
        let calls = Locked(0)
        let loader: @Sendable (String) async throws -> Int = { _ in
            calls.mutate { $0 += 1 }
            return -1
        }
        #expect(try await cache.value(forKey: "k", loader: loader) == -1)
        #expect(try await cache.value(forKey: "k", loader: loader) == -1)
        #expect(calls.value == 2)
        #expect(cache.insertionPolicy?("k", 1, 0) == true)
    }

    @Test("statistics count expiries as removals, and hits plus misses equal reads")
    func statistics() {
        let clock = ManualClock()
        let cache = SerialCache<Int, Int>(expiration: .afterAccess(.seconds(10)), clock: clock)
        for i in 0..<10 { cache[i] = i }
        var reads = 0
        for step in 0..<30 {
            clock.advance(by: .seconds(1))
            _ = cache[step % 12]
            reads += 1
        }
        let stats = cache.statistics
        #expect(stats.hitCount + stats.missCount == reads)
        #expect(stats.removalCounts[.expired] == 10 - cache.count)
        // Keys 0 to 8 are read at 1 s to 9 s, before their idle deadline at 10 s: hits. Key 9,
        // read at 10 s, has just expired; every later read comes 12 s after the key's last, and
        // keys 10 and 11 were never written: misses.
        #expect(stats.hitCount == 9 && stats.missCount == 21)
        #expect(cache.count == 0)
    }

    @Test("invalid expiration settings stop with a message naming the parameter")
    func invalidConfiguration() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Cache<Int, Int>(expiration: .afterWrite(.zero))
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("afterWrite")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = SerialCache<Int, Int>(expiration: Expiration(afterAccess: .seconds(-1)))
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("afterAccess")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Cache<Int, Int>(expiration: Expiration(sweepInterval: .zero))
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("sweepInterval")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Cache<Int, Int>().setValue(1, forKey: 1, expiresAfter: .zero)
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("expiresAfter")) }
    }
}

@Suite("Refresh after write")
struct RefreshTests {
    /// A loader that returns `"v1"`, `"v2"`, … and, while `gate` is set, waits at it first.
    final class Source: Sendable {
        let calls = Locked(0)
        let failing = Locked(false)
        let gate = Locked<Gate?>(nil)

        func load(_ key: String) async throws -> String {
            let n = calls.mutate { n -> Int in
                n += 1
                return n
            }
            if let gate = gate.value { await gate.wait() }
            if failing.value { throw LoadFailed(attempt: n) }
            return "\(key)\(n)"
        }
    }

    func makeCache(_ clock: ManualClock) -> Cache<String, String> {
        Cache(expiration: Expiration(afterWrite: .seconds(100), refreshAfterWrite: .seconds(10)), clock: clock)
    }

    @Test("an old value is returned at once and reloaded once in the background")
    func refreshes() async throws {
        let clock = ManualClock()
        let cache = makeCache(clock)
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(9))
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        #expect(source.calls.value == 1)  // not old enough yet
        clock.advance(by: .seconds(1))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        for _ in 0..<5 {  // every read returns the current value; only one reload starts
            #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        }
        await eventually { await gate.arrivals == 1 }
        await gate.open()
        await eventually { cache.peekValue(forKey: "k") == "k2" }
        #expect(source.calls.value == 2)
        #expect(cache.statistics.loadSuccessCount == 2)
        // The refreshed value's age starts again, and so does its time to live.
        clock.advance(by: .seconds(95))
        #expect(cache["k"] == "k2")
    }

    @Test("a refresh started inside another key's load may read that key: nothing waits for the refresh")
    func refreshInsideLoadHasItsOwnChain() async throws {
        let clock = ManualClock()
        let cache = Cache<String, Int>(expiration: Expiration(refreshAfterWrite: .seconds(10)), clock: clock)
        cache["b"] = 1
        clock.advance(by: .seconds(11))  // "b" is due for a refresh
        let refreshError = Locked<String?>(nil)
        @Sendable func loader(_ key: String) async throws -> Int {
            switch key {
            case "a":  // reads "b": its old value at once, and b's refresh starts
                return try await cache.value(forKey: "b", loader: loader) + 100
            default:  // b's refresh reads "a" once a is stored; a's load never waits for it
                do {
                    while cache.peekValue(forKey: "a") == nil { await Task.yield() }
                    return try await cache.value(forKey: "a", loader: loader) + 1
                } catch {
                    refreshError.mutate { $0 = "\(error)" }
                    throw error
                }
            }
        }
        #expect(try await cache.value(forKey: "a", loader: loader) == 101)
        await eventually { cache.peekValue(forKey: "b") != 1 || refreshError.value != nil }
        #expect(refreshError.value == nil)
        #expect(cache.peekValue(forKey: "b") == 102)
    }

    @Test("a failed refresh keeps the old value, and the next read tries again")
    func failedRefresh() async throws {
        let clock = ManualClock()
        let cache = makeCache(clock)
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        source.failing.mutate { $0 = true }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        await eventually { cache.statistics.loadFailureCount == 1 }
        #expect(cache["k"] == "k1")
        source.failing.mutate { $0 = false }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        await eventually { cache.peekValue(forKey: "k") == "k3" }
    }

    @Test("a refresh does not overwrite a value written while it loaded")
    func refreshYieldsToWrites() async throws {
        let clock = ManualClock()
        let cache = makeCache(clock)
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        await eventually { await gate.arrivals == 1 }
        cache["k"] = "written"
        await gate.open()
        await eventually { cache.statistics.loadSuccessCount == 2 }
        #expect(cache["k"] == "written")
    }

    /// How an entry can leave while its refresh loads.
    enum Departure: String, CaseIterable, Sendable {
        case removed, expiredAll, expiredByTime, evicted
    }

    @Test("a refresh never brings back an entry that left while it loaded", arguments: Departure.allCases)
    func refreshDoesNotResurrect(departure: Departure) async throws {
        let clock = ManualClock()
        let cache = Cache<String, String>(
            countLimit: 1,
            expiration: Expiration(afterWrite: .seconds(100), refreshAfterWrite: .seconds(10)),
            clock: clock
        )
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")  // starts the refresh
        await eventually { await gate.arrivals == 1 }
        switch departure {
        case .removed: cache.removeValue(forKey: "k")
        case .expiredAll: cache.expireAll()
        case .expiredByTime: clock.advance(by: .seconds(90))
        case .evicted: cache["other"] = "x"  // the count limit of 1 evicts "k"
        }
        #expect(cache.peekValue(forKey: "k") == nil)
        await gate.open()
        await eventually { cache.statistics.loadSuccessCount == 2 }
        #expect(cache.peekValue(forKey: "k") == nil)
    }
}

extension RefreshTests {
    @Test(
        "a miss during a refresh whose entry left waits for it, and the refreshed value is stored",
        arguments: [Departure.expiredByTime, .evicted]
    )
    func missJoinsRefresh(departure: Departure) async throws {
        let clock = ManualClock()
        let cache = Cache<String, String>(
            countLimit: 1,
            expiration: Expiration(afterWrite: .seconds(100), refreshAfterWrite: .seconds(10)),
            clock: clock
        )
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")  // starts the refresh
        await eventually { await gate.arrivals == 1 }
        switch departure {
        case .expiredByTime: clock.advance(by: .seconds(90))
        default: cache["other"] = "x"  // the count limit of 1 evicts "k"
        }
        #expect(cache.peekValue(forKey: "k") == nil)
        async let missed = cache.value(forKey: "k", loader: source.load)
        await eventually { cache.statistics.missCount == 2 }  // the miss found the refresh running
        await gate.open()
        #expect(try await missed == "k2")
        #expect(cache.peekValue(forKey: "k") == "k2")
        #expect(source.calls.value == 2)  // no third load
    }
}

extension RefreshTests {
    @Test("with a veto, a refresh whose entry left evicts nothing for a value it will not store")
    func refreshThatCannotStoreEvictsNothing() async throws {
        let clock = ManualClock()
        let cache = Cache<String, String>(
            countLimit: 2,
            policy: .lru,
            expiration: Expiration(afterWrite: .seconds(100), refreshAfterWrite: .seconds(10)),
            clock: clock
        )
        let log = RemovalLog<String, String>()
        cache.removalHandler = log.append
        cache.evictionVeto = { _, _, _ in true }
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")  // starts the refresh
        await eventually { await gate.arrivals == 1 }
        cache["a"] = "a"
        cache["b"] = "b"  // evicts "k" (LRU)
        await gate.open()
        await eventually { cache.statistics.loadSuccessCount == 2 }
        #expect(cache.peekValue(forKey: "k") == nil)
        #expect(log.all.map(\.key) == ["k"])  // "a" stays: nothing was stored that needed room
        #expect(Set(cache.keys) == ["a", "b"])
    }

    @Test("a miss joined to a refresh stores the refreshed value even if a restore put the key back")
    func joinedRefreshWinsOverRestore() async throws {
        let clock = ManualClock()
        let cache = Cache<String, String>(
            countLimit: 1,
            expiration: Expiration(afterWrite: .seconds(100), refreshAfterWrite: .seconds(10)),
            clock: clock
        )
        let source = Source()
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")
        clock.advance(by: .seconds(10))
        let gate = Gate()
        source.gate.mutate { $0 = gate }
        #expect(try await cache.value(forKey: "k", loader: source.load) == "k1")  // starts the refresh
        await eventually { await gate.arrivals == 1 }
        cache["other"] = "x"  // evicts "k"
        async let missed = cache.value(forKey: "k", loader: source.load)
        await eventually { cache.statistics.missCount == 2 }
        // A restore (older than anything loaded now) leaves loads attached, as for a plain load.
        cache.restore([PersistedEntry(key: "k", value: "old")])
        await gate.open()
        #expect(try await missed == "k2")
        #expect(cache.peekValue(forKey: "k") == "k2")
    }
}

@Suite("Expiration model")
struct ExpirationModelTests {
    /// What an unbounded cache with expiry must hold: each key's value and the two deadlines.
    struct Model {
        var entries: [Int: (value: Int, writeDeadline: Int64, deadline: Int64)] = [:]
        let ttl: Int64?
        let tti: Int64?

        mutating func sweep(now: Int64) { entries = entries.filter { $0.value.deadline > now } }

        mutating func write(_ value: Int, key: Int, now: Int64, perEntry: Int64?) {
            sweep(now: now)
            let writeDeadline = (perEntry ?? ttl).map { now + $0 } ?? .max
            let idle = tti.map { now + $0 } ?? .max
            entries[key] = (value, writeDeadline, min(writeDeadline, idle))
        }

        mutating func read(_ key: Int, now: Int64) -> Int? {
            sweep(now: now)
            guard var entry = entries[key] else { return nil }
            if let tti { entry.deadline = max(entry.deadline, min(entry.writeDeadline, now + tti)) }
            entries[key] = entry
            return entry.value
        }
    }

    @Test(
        "random writes, reads, removals and clock moves agree with a plain model",
        arguments: CacheKind.allCases,
        [(Int64?.some(50), Int64?.none), (nil, 20), (60, 15), (nil, nil)]
    )
    func model(kind: CacheKind, times: (ttl: Int64?, tti: Int64?)) {
        let clock = ManualClock()
        let cache = kind.make(
            Int.self,
            Int.self,
            expiration: Expiration(
                afterWrite: times.ttl.map { .seconds($0) },
                afterAccess: times.tti.map { .seconds($0) }
            ),
            clock: clock
        )
        var model = Model(ttl: times.ttl, tti: times.tti)
        var random = SeededGenerator(seed: 0xE4_1D)
        var now: Int64 = 0
        for step in 0..<6_000 {
            let key = Int.random(in: 0..<64, using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<35:
                let perEntry: Int64? = Bool.random(using: &random) ? Int64.random(in: 1...80, using: &random) : nil
                cache.setValue(step, forKey: key, cost: 0, expiresAfter: perEntry.map { .seconds($0) })
                model.write(step, key: key, now: now, perEntry: perEntry)
            case 35..<70:
                #expect(cache.value(forKey: key) == model.read(key, now: now), "step \(step)")
            case 70..<78:
                model.sweep(now: now)
                #expect(cache.removeValue(forKey: key) == model.entries.removeValue(forKey: key)?.value, "step \(step)")
            case 78..<80:
                cache.removeExpired()
                model.sweep(now: now)
            default:
                let dt = Int64.random(in: 0...6, using: &random)
                clock.advance(by: .seconds(dt))
                now += dt
            }
            if step % 16 == 0 {
                model.sweep(now: now)
                #expect(cache.count == model.entries.count, "step \(step)")
                #expect(Set(cache.keys) == Set(model.entries.keys), "step \(step)")
                cache._checkInvariants()
            }
        }
    }
}

@Suite("Expiration triggers")
struct ExpirationTriggerTests {
    @Test("an async sequence expires the cache on each element, until cancelled")
    func asyncSequence() async {
        let cache = Cache<Int, Int>()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        let trigger = cache.expireAll(whenever: events)
        cache[1] = 1
        cache[2] = 2
        continuation.yield()
        await eventually { cache.count == 0 }
        #expect(log.all.map(\.reason) == [.expired, .expired])
        cache[3] = 3
        continuation.yield()
        await eventually { cache.count == 0 }
        trigger.cancel()
        #expect(trigger.isCancelled)
        cache[4] = 4
        continuation.yield()
        // After cancellation the element is never consumed for the cache: nothing expires.
        for _ in 0..<1_000 { await Task.yield() }
        #expect(cache[4] == 4)
    }

    /// A sequence that ignores task cancellation (as any sequence may): each `next()` waits
    /// for `emit()`, and an element emitted while no one waits is kept for the next call.
    final class ManualEvents: AsyncSequence, Sendable {
        typealias Element = Int
        let pending = Mutex<(waiter: CheckedContinuation<Int?, Never>?, queued: [Int])>((nil, []))
        var hasWaiter: Bool { pending.withLock { $0.waiter != nil } }

        func emit(_ element: Int) {
            let waiter = pending.withLock { state -> CheckedContinuation<Int?, Never>? in
                if let waiter = state.waiter {
                    state.waiter = nil
                    return waiter
                }
                state.queued.append(element)
                return nil
            }
            waiter?.resume(returning: element)
        }

        struct AsyncIterator: AsyncIteratorProtocol {
            let owner: ManualEvents
            mutating func next() async -> Int? {
                await withCheckedContinuation { continuation in
                    let queued = owner.pending.withLock { state -> Int? in
                        if !state.queued.isEmpty { return state.queued.removeFirst() }
                        state.waiter = continuation
                        return nil
                    }
                    if let queued { continuation.resume(returning: queued) }
                }
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(owner: self) }
    }

    @Test("a cancelled trigger expires nothing, even on a sequence that ignores cancellation")
    func cancelledTriggerOnStubbornSequence() async {
        let cache = Cache<String, Int>()
        let events = ManualEvents()
        let trigger = cache.expireAll(whenever: events)
        await eventually { events.hasWaiter }  // the trigger listens
        trigger.cancel()
        #expect(trigger.isCancelled)
        cache["a"] = 1
        events.emit(1)  // the waiting `next()` returns it: cancelling the task did not stop that
        await eventually { !events.hasWaiter && events.pending.withLock { $0.queued.isEmpty } }
        for _ in 0..<1_000 { await Task.yield() }
        #expect(cache["a"] == 1)
    }

    @Test("a trigger whose sequence ends or throws stops by itself")
    func sequenceEnds() async {
        let cache = Cache<Int, Int>()
        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        let trigger = cache.expireAll(whenever: events)
        cache[1] = 1
        continuation.yield()
        await eventually { cache.count == 0 }
        #expect(!trigger.isCancelled)
        continuation.finish()
        await eventually { trigger.isCancelled }
        let (failing, failure) = AsyncThrowingStream.makeStream(of: Void.self)
        let second = cache.expireAll(whenever: failing)
        failure.finish(throwing: LoadFailed(attempt: 1))
        await eventually { second.isCancelled }
        cache[2] = 2
        #expect(cache[2] == 2)
    }

    @Test("a trigger holds its cache weakly and is cancelled with it")
    func weakAndCancelledWithCache() async {
        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        weak var weakCache: Cache<Int, Int>?
        let trigger: ExpirationTrigger
        do {
            let cache = Cache<Int, Int>()
            weakCache = cache
            trigger = cache.expireAll(whenever: events)
            cache[1] = 1
        }
        #expect(weakCache == nil)
        #expect(trigger.isCancelled)
        continuation.yield()  // no cache to expire; must not crash
        continuation.finish()
    }

    @Test("a NotificationCenter name expires the cache when posted, from its object only")
    func notification() {
        let center = NotificationCenter()
        let name = Notification.Name("CacheKitTests.configReloaded")
        let sender = NSObject()
        let cache = Cache<String, Int>()
        let trigger = cache.expireAll(on: name, object: sender, center: center)
        cache["a"] = 1
        center.post(name: name, object: NSObject())  // someone else: ignored
        #expect(cache["a"] == 1)
        center.post(name: name, object: sender)
        #expect(cache["a"] == nil)
        #expect(cache.statistics.removalCounts[.expired] == 1)
        trigger.cancel()
        cache["b"] = 2
        center.post(name: name, object: sender)
        #expect(cache["b"] == 2)
        // Any sender, while the cache lives; none once it is gone.
        var other: Cache<String, Int>? = Cache()
        other!.expireAll(on: name, center: center)
        other!["c"] = 3
        center.post(name: name, object: nil)
        #expect(other!.count == 0)
        other = nil
        center.post(name: name, object: nil)
    }
}

@Suite("Repeating tasks")
struct RepeatingTaskTests {
    final class Counts: Sendable {
        let sleeps = Atomic<Int>(0)
        let runs = Atomic<Int>(0)
    }

    @Test("a repeating task cancelled while it sleeps never runs its body again, even if the sleep returns")
    func cancelledWhileSleeping() async {
        let gate = Gate()
        let counts = Counts()
        let task = _Timekeeper.repeating(every: .seconds(1)) { _ in
            // The first sleep ends normally once the gate opens, after the cancellation, as a
            // manual clock's sleeper woken just before the cancel does; any later one throws.
            guard counts.sleeps.add(1, ordering: .relaxed).newValue == 1 else { throw CancellationError() }
            await gate.wait()
        } _: {
            counts.runs.add(1, ordering: .relaxed)
            return true
        }
        await eventually { await gate.arrivals == 1 }
        task.cancel()
        await gate.open()
        await task.value
        #expect(counts.runs.load(ordering: .relaxed) == 0)
    }
}
