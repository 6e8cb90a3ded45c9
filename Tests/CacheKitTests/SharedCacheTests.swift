import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CacheKit

@Suite("SharedCache")
struct SharedCacheTests {
    @Test("the YMCache synopsis: writes are seen by the next read, bulk operations, allItems, removeAll")
    func synopsis() {
        let cache = SharedCache<String, Int>(name: "my-object-cache")
        cache["Key1"] = 1
        #expect(cache["Key1"] == 1)  // the read applies the queued write first
        cache.addEntries(from: ["Key2": 2, "Key3": 3])
        #expect(cache.values(forKeys: ["Key1", "Key3", "none"]) == ["Key1": 1, "Key3": 3])
        let all = cache.allItems()
        cache.removeAll()
        #expect(all == ["Key1": 1, "Key2": 2, "Key3": 3])
        #expect(cache.allItems().isEmpty && cache.count == 0)
        cache["Key1"] = 5
        cache["Key1"] = nil
        #expect(!cache.contains("Key1"))
        cache.removeValues(forKeys: ["Key2"])
        #expect(cache.name == "my-object-cache")
    }

    @Test("the queue's key filter has twice the capacity in buckets, from 4,096 to 65,536, and finds what it counted")
    func pendingFilterSize() {
        #expect(_PendingFilter(capacity: 10).bucketCount == 4_096)
        #expect(_PendingFilter(capacity: 10_000).bucketCount == 32_768)
        #expect(_PendingFilter(capacity: 50_000).bucketCount == 65_536)
        #expect(_PendingFilter(capacity: 0).bucketCount == 65_536)
        let filter = _PendingFilter(capacity: 50_000)
        let hash = 0x1_2345_6789
        let write = _SharedWrite<Int, Int>.set(1, 1, cost: 0, timeToLive: nil, now: -1, hash: hash)
        filter.count(write, 1)
        #expect(filter.mayTouch(hash: hash) && !filter.mayTouch(hash: hash + 1))
        // The bucket is the hash's low 16 bits: a hash that differs only above them shares it.
        #expect(filter.mayTouch(hash: hash ^ 1 << 16) && !filter.mayTouch(hash: hash ^ 1 << 15))
        filter.count(write, -1)
        #expect(!filter.mayTouch(hash: hash))
    }

    @Test("writes return before they are applied, and a background drain applies them")
    func writesAreAsynchronous() async {
        let cache = SharedCache<Int, Int>()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache[1] = 1
        cache[1] = 2  // replaces 1: the handler hears it once the drain runs, without any read
        await eventually { log.all.count == 1 }
        #expect(log.all == [CacheRemoval(key: 1, value: 1, reason: .replaced)])
    }

    @Test("a writer that finds 128 writes queued applies them, then queues its own")
    func writersDrainALongQueue() {
        let cache = SharedCache<Int, Int>()
        cache._stopBackgroundDrains()  // writer drains only
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        for key in 0..<128 { cache[key] = key }
        #expect(cache._pendingCount.load(ordering: .relaxed) == 128)
        #expect(cache._state.pointee.core.count == 0)
        cache[0] = -1  // finds 128 queued
        #expect(cache._state.pointee.core.count == 128)
        #expect(cache._pendingCount.load(ordering: .relaxed) == 1)
        #expect(log.all.isEmpty, "the writer's own write (replacing 0) was applied before its call returned")
        #expect(cache[0] == -1)  // answered from the queue
        cache[1] = -1
        #expect(cache._pendingCount.load(ordering: .relaxed) == 2)
        // The writer that applies the queue tells the handler what it removed, before it returns.
        for key in 2..<128 { cache[key] = -1 }  // 128 queued now
        #expect(log.all.isEmpty)
        cache[200] = 200
        #expect(log.all.map(\.key) == Array(0..<128))
        #expect(log.all.allSatisfy { $0.reason == .replaced && $0.value == $0.key })
        #expect(cache._pendingCount.load(ordering: .relaxed) == 1)

        let held = SharedCache<Int, Int>()
        held._applyWritesOnlyWhenAsked()
        for key in 0..<300 { held[key] = key }
        #expect(held._pendingCount.load(ordering: .relaxed) == 300)
        #expect(held._state.pointee.core.count == 0)
    }

    /// Runs a write that finds 128 writes queued, issued at 4 s while "a" (written at 0 s, time
    /// to live 5 s) lives, on a clock that reads 6 s by the time the writer's drain reads it;
    /// with the writer drain or with none (the writes applied by `flush()`). Returns the
    /// removals the handler heard, the expired count, and "a" at the end. `restoring`: the
    /// write is a restore of "a" from a file (skipped, since "a" has an entry when issued).
    func writeThatDrains(writersDrain: Bool, restoring: Bool) -> (log: [String], expired: Int, a: Int?) {
        let clock = SteppingClock()
        let cache = SharedCache<String, Int>(expiration: .afterWrite(.seconds(5)), clock: clock)
        if writersDrain {
            cache._stopBackgroundDrains()  // no other clock reading
        } else {
            cache._applyWritesOnlyWhenAsked()
        }
        let log = RemovalLog<String, Int>()
        cache.removalHandler = log.append
        cache["a"] = 1
        cache.flush()
        clock.advance(by: .seconds(4))
        for i in 0..<128 { cache["f\(i)"] = i }
        clock.advanceAfterNextReading(by: .seconds(2))
        if restoring { cache.restore([PersistedEntry(key: "a", value: 100)]) } else { cache["a"] = 2 }
        cache.flush()
        return (
            log.all.filter { $0.key == "a" }.map { "\($0.key) \($0.value) \($0.reason)" },
            cache.statistics.removalCounts[.expired, default: 0], cache["a"]
        )
    }

    @Test("the write that drains still reaches an entry alive when it was issued")
    func writerDrainSweepsOnlyToItsWrite() {
        for writersDrain in [false, true] {
            let replaced = writeThatDrains(writersDrain: writersDrain, restoring: false)
            #expect(replaced.log == ["a 1 replaced"], "writers drain: \(writersDrain)")
            #expect(replaced.expired == 0 && replaced.a == 2, "writers drain: \(writersDrain)")
            // A restore issued while "a" lived skips it; "a" = 1 then expires at 5 s.
            let restored = writeThatDrains(writersDrain: writersDrain, restoring: true)
            #expect(restored.a == nil, "writers drain: \(writersDrain)")
        }
    }

    @Test("what stays queued after writers drained is applied by the background drain")
    func backgroundDrainAppliesWhatWritersLeft() async {
        let cache = SharedCache<Int, Int>()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        for key in 0..<1_000 { cache[key] = key }
        for key in 0..<1_000 { cache[key] = -key }
        await eventually { cache._pendingCount.load(ordering: .relaxed) == 0 }
        await eventually { log.all.count == 1_000 }
        #expect(log.all.map(\.key) == Array(0..<1_000))
        #expect(cache._state.pointee.core.count == 1_000)
    }

    @Test("reads are buffered for the policy only when it is bounded and orders by reads (not FIFO)")
    func readsTrackedOnlyWhereTheyMatter() {
        func tracks(_ cache: SharedCache<Int, Int>) -> Bool { cache._tracksReads.load(ordering: .relaxed) }
        let fifo = SharedCache<Int, Int>(policy: .fifo)
        let lru = SharedCache<Int, Int>(policy: .lru)
        #expect(!tracks(fifo))
        #expect(!tracks(lru))
        fifo.countLimit = 10
        lru.countLimit = 10
        fifo.flush()
        lru.flush()
        #expect(!tracks(fifo))
        #expect(tracks(lru))
        #expect(!tracks(SharedCache<Int, Int>(countLimit: 10, policy: .fifo)))
        #expect(tracks(SharedCache<Int, Int>(totalCostLimit: 10, policy: .sieve)))
    }

    @Test(
        "a bounded cache evicts like its policy, reads included, compared with a reference model",
        arguments: [EvictionPolicy.lru, .fifo, .lfu]
    )
    func boundedMatchesModel(policy: EvictionPolicy) {
        for seed in modelSeeds(default: 1) {
            boundedMatchesModel(policy: policy, seed: 7 &* seed)
        }
    }

    private func boundedMatchesModel(policy: EvictionPolicy, seed: UInt64) {
        let cache = SharedCache<Int, Int>(countLimit: 20, totalCostLimit: 150, policy: policy)
        var model = ReferenceModel(policy: policy, countLimit: 20, totalCostLimit: 150)
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        var rng = SeededGenerator(seed: seed)
        for step in 0..<3_000 {
            let key = Int.random(in: 0..<40, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                #expect(cache[key] == model.value(forKey: key), "seed \(seed) step \(step)")
            case 4..<8:
                let cost = Int.random(in: 0...20, using: &rng)
                cache.setValue(step, forKey: key, cost: cost)
                _ = model.setValue(step, forKey: key, cost: cost)
            case 8:
                cache.removeValue(forKey: key)
                _ = model.removeValue(forKey: key)
            default:
                let limit = Int.random(in: 5...30, using: &rng)
                cache.countLimit = limit
                model.setLimits(countLimit: limit, totalCostLimit: 150)
            }
            cache.flush()
            #expect(cache.entries.map(\.key) == model.keys, "seed \(seed) step \(step)")
            #expect(cache.totalCost == model.totalCost)
            #expect(log.take() == model.takeRemovals(), "seed \(seed) step \(step)")
        }
        cache._checkInvariants()
    }

    @Test("a reader never sees a state older than one it saw, and every thread reads its own writes")
    func readYourWrites() async {
        let cache = SharedCache<Int, Int>(countLimit: 1_000)
        let threads = 4
        let writes = 3_000
        await runOnThreads(threads) { thread in
            // Thread t writes key t with increasing values and reads every key.
            var latestSeen = [Int](repeating: -1, count: threads)
            for i in 0..<writes {
                cache[thread] = i
                #expect(cache[thread] == i)  // its own write, at once
                for other in 0..<threads {
                    let seen = cache[other] ?? -1
                    #expect(seen >= latestSeen[other], "thread \(thread) saw key \(other) go back")
                    latestSeen[other] = seen
                }
            }
        }
        cache.flush()
        #expect(cache.allItems() == Dictionary(uniqueKeysWithValues: (0..<threads).map { ($0, writes - 1) }))
    }

    @Test(
        "every read of a key sees the writes to it issued before, whatever else is queued (random ops vs a dictionary)"
    )
    func pointReadsSeeQueuedWritesToTheirKey() {
        // Unbounded, so nothing is evicted and the dictionary is an exact model. Reads of one key
        // drain only when a queued write may touch that key; this checks that none is missed:
        // single-key writes, multi-key removals, merges and removeAll, in random order.
        let cache = SharedCache<Int, Int>(name: "model")
        var model: [Int: Int] = [:]
        var rng = SeededGenerator(seed: 99)
        for step in 0..<20_000 {
            let key = Int.random(in: 0..<3_000, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<30:
                cache[key] = step
                model[key] = step
            case 30..<36:
                cache.removeValue(forKey: key)
                model[key] = nil
            case 36..<38:
                let keys = (0..<Int.random(in: 1..<100, using: &rng)).map { _ in Int.random(in: 0..<3_000, using: &rng)
                }
                cache.removeValues(forKeys: keys)
                for k in keys { model[k] = nil }
            case 38..<40:
                let entries = (0..<20).map { i in (key: (key + i * 7) % 3_000, value: -step - i) }
                cache.addEntries(from: entries)
                for entry in entries { model[entry.key] = entry.value }
            case 40:
                cache.removeAll()
                model = [:]
            case 41..<70:
                #expect(cache.contains(key) == (model[key] != nil), "step \(step)")
            default:
                #expect(cache[key] == model[key], "step \(step)")
            }
        }
        #expect(cache.allItems() == model)
    }

    @Test("a read of one key answers from the queued writes to it, without applying the queue")
    func pointReadsAnswerFromTheQueue() {
        let cache = SharedCache<Int, Int>(totalCostLimit: 10)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache[1] = 1
        cache[2] = 2
        cache.flush()
        cache[1] = 10
        cache.removeValue(forKey: 2)
        cache.setValue(30, forKey: 3, cost: 11)  // costs more than the limit: never stored
        cache.setValue(40, forKey: 4, cost: 10)
        #expect(cache[1] == 10 && cache.peekValue(forKey: 1) == 10 && cache.contains(1))
        #expect(cache[2] == nil && cache.peekValue(forKey: 2) == nil && !cache.contains(2))
        #expect(cache[3] == nil && !cache.contains(3))
        #expect(cache[4] == 40)
        #expect(log.all.isEmpty, "a read applied the queue")
        #expect(cache.statistics.hitCount == 2 && cache.statistics.missCount == 2)
        // A bulk write may touch any key: a read after it applies the queue first, even of a key
        // written after it (a bulk write may change a limit that decides whether that is stored).
        cache.removeAll()
        #expect(cache[4] == nil)
        #expect(log.all.count == 4)  // 1 replaced, 2 removed, then 1 and 4 by removeAll
        cache[5] = 5
        cache.addEntries(from: [6: 6])
        cache[5] = 50
        #expect(cache[5] == 50 && log.all.count == 5)  // 5 replaced: the queue was applied
        #expect(cache[6] == 6)
        cache._checkInvariants()
    }

    @Test(
        "the policy hears of a read answered from the queue right after the write, and a write applied expired is swept"
    )
    func queuedReadsReachThePolicyInOrder() {
        let clock = ManualClock()
        let cache = SharedCache<String, Int>(countLimit: 4, policy: .lru, clock: clock)
        cache._applyWritesOnlyWhenAsked()
        cache["a"] = 1
        cache["b"] = 2
        #expect(cache["a"] == 1)  // answered from the queue
        cache["c"] = 3
        cache.setValue(4, forKey: "d", expiresAfter: .seconds(5))
        clock.advance(by: .seconds(5))  // "d" expires while queued
        #expect(cache.entries.map(\.key) == ["b", "a", "c"])
        #expect(cache.count == 3)
        cache._checkInvariants()
    }

    @Test("a write that expired while queued evicts nothing: it replaces the old value and expires at once")
    func writesExpiredInTheQueueEvictNothing() {
        let clock = ManualClock()
        let cache = SharedCache<String, Int>(countLimit: 2, policy: .lru, clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<String, Int>()
        cache.removalHandler = log.append
        cache["a"] = 1
        cache["b"] = 2
        cache.setValue(3, forKey: "b", expiresAfter: .seconds(5))
        cache.flush()
        cache.setValue(4, forKey: "d", expiresAfter: .seconds(5))
        cache.setValue(5, forKey: "b", expiresAfter: .seconds(5))
        clock.advance(by: .seconds(6))
        cache.flush()
        #expect(cache.entries.map(\.key) == ["a"])
        #expect(
            log.all == [
                CacheRemoval(key: "b", value: 2, reason: .replaced),
                CacheRemoval(key: "d", value: 4, reason: .expired),  // not stored: "a" stays
                // Issued at 0 s, when "b" = 3 lived: it replaces it (a sweep at the drain's time
                // before applying it would report "b" = 3 expired), then expires itself.
                CacheRemoval(key: "b", value: 3, reason: .replaced),
                CacheRemoval(key: "b", value: 5, reason: .expired),
            ]
        )
        cache._checkInvariants()
    }

    @Test(
        "a queued write answers as it will be once applied, whether or not the cache has expiry state yet",
        arguments: [false, true]
    )
    func queuedDeadlinesWithoutExpiryState(earlierTimeToLive: Bool) {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let second: Int64 = 1_000_000_000
        if earlierTimeToLive {
            cache.setValue(0, forKey: 0, expiresAfter: .seconds(100))  // creates expiry when applied
        } else {
            _ = cache._timekeeper.activate()  // reads know the time; nothing queued expires yet
        }
        // Queued out of time order, as writers on two threads can: key 1 read the clock first.
        cache._enqueue(.set(2, 2, cost: 0, timeToLive: nil, now: 5 * second, hash: _KeyHash.hash(2)))
        cache._enqueue(.set(1, 1, cost: 0, timeToLive: 10 * second, now: 1 * second, hash: _KeyHash.hash(1)))
        clock.advance(by: .seconds(12))
        let queued = cache.peekValue(forKey: 1)
        cache.flush()
        #expect(queued == cache.peekValue(forKey: 1))
        #expect(queued == (earlierTimeToLive ? 1 : nil))
    }

    @Test("a queued limit change makes a read apply the queue: the limit decides whether a queued write is stored")
    func queuedLimitChangesApplyFirst() {
        let cache = SharedCache<Int, Int>()
        cache._applyWritesOnlyWhenAsked()
        cache.totalCostLimit = 10
        cache.setValue(1, forKey: 1, cost: 100)
        #expect(cache[1] == nil && !cache.contains(1))
        cache.totalCostLimit = 0
        cache.setValue(2, forKey: 2, cost: 100)
        #expect(cache[2] == 2 && cache.peekValue(forKey: 2) == 2)
        cache.flush()
        #expect(cache[1] == nil && cache[2] == 2)
    }

    @Test("a queued write's deadlines count from the latest time of the writes queued before it, and idle time counts")
    func queuedWriteDeadlines() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(expiration: .afterWrite(.seconds(10)), clock: clock)
        cache._applyWritesOnlyWhenAsked()
        // Writers read the clock before queueing, so a write can be queued after a later one.
        let second: Int64 = 1_000_000_000
        cache._enqueue(.set(2, 2, cost: 0, timeToLive: nil, now: 5 * second, hash: _KeyHash.hash(2)))
        cache._enqueue(.set(1, 1, cost: 0, timeToLive: nil, now: 1 * second, hash: _KeyHash.hash(1)))
        clock.advance(by: .seconds(12))
        // Applied in order, key 1's deadline counts from 5 s (the floor key 2 left), not 1 s.
        #expect(cache.peekValue(forKey: 1) == 1)
        cache.flush()
        #expect(cache.peekValue(forKey: 1) == 1)
        clock.advance(by: .seconds(3))
        #expect(cache.peekValue(forKey: 1) == nil)

        let idle = SharedCache<Int, Int>(expiration: .afterAccess(.seconds(1)), clock: clock)
        idle._applyWritesOnlyWhenAsked()
        idle[1] = 1
        #expect(idle.contains(1))
        clock.advance(by: .seconds(2))
        #expect(!idle.contains(1) && idle.peekValue(forKey: 1) == nil)
    }

    @Test(
        "a queued write or removal that reached a live entry reports replaced or removed, though it expired since"
    )
    func queuedWritesReachLiveEntries() {
        // Before applying a write, the drain sweeps what had expired when the write was issued,
        // not what has expired by its own later time: an entry the write reached alive is
        // replaced or removed by it, not reported expired.
        let clock = ManualClock()
        let cache = SharedCache<String, Int>(expiration: .afterWrite(.seconds(5)), clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<String, Int>()
        cache.removalHandler = log.append
        cache["a"] = 1
        cache["b"] = 1
        cache["c"] = 1
        cache.flush()
        clock.advance(by: .seconds(3))
        cache["a"] = 2  // "a" = 1 lives until 5 s: replaced
        cache.removeValue(forKey: "b")  // removed
        clock.advance(by: .seconds(3))  // 6 s: "c" has expired; the writes are still queued
        cache.flush()
        #expect(log.all.map { "\($0.key) \($0.reason)" } == ["a replaced", "b removed", "c expired"])
        #expect(cache["a"] == 2)
        #expect(cache.statistics.removalCounts[.expired] == 1)
    }

    @Test("a write too costly to store whose time runs out in the queue is rejected, not reported stored and expired")
    func costlyWriteExpiredInTheQueue() async {
        // The cost check comes before the check for a write that expired in the queue: such a
        // write is rejected, whenever it drains, so it is neither logged as added then removed,
        // nor heard by the removal handler as expired, nor counted as an expiry.
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(totalCostLimit: 10, clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache.notificationInterval = .seconds(3600)
        var batches = cache.changes.makeAsyncIterator()
        cache.setValue(1, forKey: 1, cost: 20, expiresAfter: .seconds(1))  // over the cost limit
        clock.advance(by: .seconds(2))  // and out of time before it drains
        cache.flush()
        #expect(cache[1] == nil)
        cache.publishChanges()  // nothing changed: no batch
        cache[2] = 2
        cache.publishChanges()
        let batch = await batches.next()
        #expect(batch?.removed == [])
        #expect(batch?.updated == [2: 2])
        #expect(log.all.isEmpty)
        #expect(cache.statistics.removalCounts[.expired, default: 0] == 0)
    }

    @Test("a queued write that its cost will have rejected still sets the deadlines' floor, queued and applied alike")
    func rejectedWriteFloor() {
        // Readers and the drain agree on the floor: were a rejected write's time counted in it by
        // readers only, a read would answer from the queue with a value that the drain then drops
        // as expired.
        let second: Int64 = 1_000_000_000
        for cacheExpires in [true, false] {
            let clock = ManualClock()
            let cache = SharedCache<Int, Int>(
                totalCostLimit: 10,
                expiration: cacheExpires ? .afterWrite(.seconds(10)) : .never,
                clock: clock
            )
            cache._applyWritesOnlyWhenAsked()
            _ = cache._timekeeper.activate()
            // Without expiry of its own, the cache gets it from the writes' own time to live.
            let timeToLive: Int64? = cacheExpires ? nil : 10 * second
            cache._enqueue(.set(1, 1, cost: 100, timeToLive: timeToLive, now: 5 * second, hash: _KeyHash.hash(1)))
            cache._enqueue(.set(2, 2, cost: 0, timeToLive: timeToLive, now: 1 * second, hash: _KeyHash.hash(2)))
            clock.advance(by: .seconds(12))
            // Key 2's deadline counts from 5 s (the floor the rejected write left), not 1 s.
            #expect(cache.peekValue(forKey: 2) == 2, "queued, cache expires: \(cacheExpires)")
            cache.flush()
            #expect(cache.peekValue(forKey: 2) == 2, "applied, cache expires: \(cacheExpires)")
            #expect(cache.peekValue(forKey: 1) == nil)
            clock.advance(by: .seconds(3))
            #expect(cache.peekValue(forKey: 2) == nil)
        }
    }

    @Test("a queued write answers with its time to live, the cache's or its own, on the injected clock")
    func queuedWritesExpire() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(expiration: .afterWrite(.seconds(10)), clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache[1] = 1
        cache.setValue(2, forKey: 2, expiresAfter: .seconds(3))
        clock.advance(by: .seconds(3))
        #expect(cache[1] == 1 && cache[2] == nil && !cache.contains(2))
        clock.advance(by: .seconds(7))
        #expect(cache[1] == nil && cache.peekValue(forKey: 1) == nil)
        #expect(log.all.isEmpty, "a read applied the queue")
        // Without a time to live of its own, a per-entry one still applies before the first drain.
        let plain = SharedCache<Int, Int>(clock: clock)
        plain._applyWritesOnlyWhenAsked()
        plain.setValue(1, forKey: 1, expiresAfter: .seconds(5))
        plain[2] = 2
        clock.advance(by: .seconds(5))
        #expect(plain[1] == nil && plain[2] == 2)
    }

    @Test("no reader sees half of a bulk write")
    func bulkAtomicity() async {
        let cache = SharedCache<Int, Int>()
        let keys = Array(0..<200)
        cache.addEntries(from: Dictionary(uniqueKeysWithValues: keys.map { ($0, 0) }))
        let rounds = 300
        await runOnThreads(3) { thread in
            if thread == 0 {
                for round in 1...rounds {
                    cache.addEntries(from: Dictionary(uniqueKeysWithValues: keys.map { ($0, round) }))
                    if round % 50 == 0 { cache.removeValues(forKeys: keys) }
                }
            } else {
                for _ in 0..<rounds {
                    let values = Set(cache.values(forKeys: keys).values)
                    #expect(values.count <= 1, "a read saw \(values.count) different bulk writes")
                    let all = cache.allItems()
                    #expect(all.isEmpty || all.count == keys.count)
                    #expect(Set(all.values).count <= 1)
                }
            }
        }
    }

    @Test("the eviction decider purges on demand, with a context, reason purged")
    func purge() {
        let cache = SharedCache<Int, Int>(evictionDecider: { _, value, context in
            value % ((context as? Int) ?? 2) == 0
        })
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache.addEntries(from: Dictionary(uniqueKeysWithValues: (0..<10).map { ($0, $0) }))
        #expect(cache.purgeEvictableItems() == 5)
        // Synchronous, as YMCache's: applied and reported when the call returns.
        #expect(log.all.map(\.key).sorted() == [0, 2, 4, 6, 8])
        #expect(cache.allItems().keys.sorted() == [1, 3, 5, 7, 9])
        #expect(cache.purgeEvictableItems(context: 3) == 2)  // 3 and 9
        #expect(cache.allItems().keys.sorted() == [1, 5, 7])
        #expect(Set(log.all.map(\.reason)) == [.purged])
        #expect(cache.statistics.removalCounts[.purged] == 7)
        #expect(SharedCache<Int, Int>().purgeEvictableItems() == 0)  // no decider: nothing
    }

    @Test("a purge never waits for a removal handler running on another thread (it may be waiting for the purge)")
    func purgeDoesNotWaitForOtherDeliveries() async {
        let cache = SharedCache<Int, Int>(evictionDecider: { _, _, _ in true })
        let owner = DispatchQueue(label: "owner")
        let handlerEntered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let heard = Locked<[Int]>([])
        cache.removalHandler = { removal in
            heard.mutate { $0.append(removal.key) }
            if removal.key == 1 {
                handlerEntered.signal()
                release.wait()
                owner.sync {}  // the handler's bookkeeping on the owner's queue
            }
        }
        cache.addEntries(from: [1: 1, 2: 2])
        cache.flush()
        // A thread removes 1 and delivers that removal: its handler holds the delivery while it
        // waits for the owner's queue, where the purge runs.
        startThread { cache.removeValue(forKey: 1) }
        handlerEntered.wait()
        let purged = Atomic<Int>(-1)
        owner.async {
            purged.store(cache.purgeEvictableItems(), ordering: .relaxed)
            release.signal()
        }
        await eventually { purged.load(ordering: .relaxed) >= 0 }
        // Deadlocked (`eventually` recorded it): stop here, as any further use of the cache would wait too.
        guard purged.load(ordering: .relaxed) >= 0 else { return }
        #expect(purged.load(ordering: .relaxed) == 1)
        #expect(cache.allItems().isEmpty)
        // The thread that was delivering tells the handler of the purge too.
        cache.flush()
        #expect(heard.value == [1, 2])
    }

    @Test("an entry rewritten after the decider chose it is not purged")
    func purgeSkipsRewrittenEntries() {
        let cache = SharedCache<Int, Int>(evictionDecider: { key, value, context in
            // While deciding, another write replaces the value the decider is looking at.
            if key == 1 && value == 1 { (context as? SharedCache<Int, Int>)?.setValue(100, forKey: 1) }
            return true
        })
        cache.addEntries(from: [1: 1, 2: 2])
        cache.flush()
        #expect(cache.purgeEvictableItems(context: cache) == 2)
        #expect(cache.allItems() == [1: 100])
    }

    @Test("the eviction interval runs the decider on the cache's clock")
    func evictionInterval() async {
        let clock = ManualClock()
        let stale = Locked<Set<Int>>([])
        let cache = SharedCache<Int, Int>(clock: clock, evictionDecider: { key, _, _ in stale.value.contains(key) })
        cache.evictionInterval = .seconds(60)
        #expect(cache.evictionInterval == .seconds(60))
        cache.addEntries(from: [1: 1, 2: 2, 3: 3])
        stale.mutate { $0 = [1, 3] }
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(59))
        #expect(cache.count == 3)
        clock.advance(by: .seconds(1))
        await eventually { cache.peekValue(forKey: 1) == nil }
        #expect(cache.allItems() == [2: 2])
        cache.evictionInterval = nil
        stale.mutate { $0 = [2] }
        await eventually { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(600))
        #expect(cache.allItems() == [2: 2])
    }

    @Test("changes are coalesced by key: added then removed is removed, removed then added is added")
    func coalescing() async {
        let cache = SharedCache<String, Int>(countLimit: 10)
        cache.notificationInterval = .seconds(1)
        let changes = cache.changes
        var iterator = changes.makeAsyncIterator()
        cache["kept"] = 1
        cache["kept"] = 2
        cache["gone"] = 1
        cache["gone"] = nil
        cache["back"] = 1
        cache.flush()
        cache.publishChanges()
        var batch = await iterator.next()
        #expect(batch?.updated == ["kept": 2, "back": 1])
        #expect(batch?.removed == ["gone"])
        cache.publishChanges()  // nothing changed: no batch
        cache["back"] = nil
        cache["back"] = 3
        cache.removeAll()
        cache["new"] = 4
        cache.publishChanges()
        batch = await iterator.next()
        #expect(batch?.updated == ["new": 4])
        #expect(batch?.removed == ["kept", "back"])
    }

    @Test("batches arrive once per interval, to every subscriber and as a notification")
    func notificationInterval() async throws {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(clock: clock)
        cache.notificationInterval = .milliseconds(500)
        let first = cache.changes
        let second = cache.changes
        let posted = Locked<[SharedCacheChanges<Int, Int>]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: .sharedCacheDidChange,
            object: cache,
            queue: nil
        ) { note in
            let updated = note.userInfo?[SharedCacheUserInfoKey.updatedItems] as? [Int: Int] ?? [:]
            let removed = note.userInfo?[SharedCacheUserInfoKey.removedKeys] as? Set<Int> ?? []
            posted.mutate { $0.append(SharedCacheChanges(updated: updated, removed: removed)) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        cache[1] = 1
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .milliseconds(500))
        var a = first.makeAsyncIterator()
        var b = second.makeAsyncIterator()
        #expect(await a.next()?.updated == [1: 1])
        #expect(await b.next()?.updated == [1: 1])
        await eventually { posted.value.count == 1 }
        #expect(posted.value.first?.updated == [1: 1])
        // An interval without a change sends nothing; the next change comes in the next batch.
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .milliseconds(500))
        await eventually { clock.sleeperCount == 1 }
        cache[2] = 2
        cache[1] = nil
        cache.flush()
        clock.advance(by: .milliseconds(500))
        let next = await a.next()
        #expect(next?.updated == [2: 2] && next?.removed == [1])
        #expect(await b.next()?.removed == [1])
        await eventually { posted.value.count == 2 }
    }

    @Test("a slow subscriber loses nothing")
    func slowSubscriber() async {
        let cache = SharedCache<Int, Int>()
        cache.notificationInterval = .seconds(3600)
        let changes = cache.changes
        for i in 0..<100 {
            cache[i] = i
            cache.publishChanges()
        }
        var seen: [Int: Int] = [:]
        var iterator = changes.makeAsyncIterator()
        for _ in 0..<100 {
            for (key, value) in await iterator.next()?.updated ?? [:] { seen[key] = value }
        }
        #expect(seen.count == 100)
    }

    @Test("entries expire by time and are never returned, counted or listed")
    func expiry() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(expiration: .afterWrite(.seconds(10)), clock: clock)
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache[1] = 1
        cache.setValue(2, forKey: 2, expiresAfter: .seconds(30))
        clock.advance(by: .seconds(10))
        #expect(cache[1] == nil && !cache.contains(1) && cache.peekValue(forKey: 1) == nil)
        #expect(cache.allItems() == [2: 2] && cache.entries.map(\.key) == [2])
        #expect(cache.count == 1)
        #expect(log.all == [CacheRemoval(key: 1, value: 1, reason: .expired)])
        clock.advance(by: .seconds(20))
        #expect(cache.values(forKeys: [1, 2]).isEmpty)
    }

    @Test("expireAll expires every entry issued before it, whatever its deadline, and none written after it")
    func expireAll() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(countLimit: 10, expiration: .afterWrite(.seconds(60)), clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        for key in 0..<4 { cache[key] = key }
        cache.setValue(4, forKey: 4, expiresAfter: .seconds(3_600))
        cache.flush()
        clock.advance(by: .seconds(1))
        cache.expireAll()
        cache[9] = 9
        #expect(log.all.isEmpty)  // queued: applied by the next flush, in order with the write of 9
        cache.flush()
        #expect(log.all.map(\.key) == [0, 1, 2, 3, 4])
        #expect(log.all.allSatisfy { $0.reason == .expired && $0.value == $0.key })
        #expect(cache.allItems() == [9: 9])
        #expect(cache.statistics.removalCounts == [.expired: 5])
        // 9 keeps its own deadline, 60 s from its write at 1 s.
        clock.advance(by: .seconds(59))
        #expect(cache[9] == 9)
        clock.advance(by: .seconds(1))
        #expect(cache[9] == nil)
    }

    @Test("removeExpired removes what expired by the clock's time, at once, and nothing that lives")
    func removeExpired() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(expiration: .afterWrite(.seconds(10)), clock: clock)
        cache._applyWritesOnlyWhenAsked()
        let log = RemovalLog<Int, Int>()
        cache.removalHandler = log.append
        cache[1] = 1
        clock.advance(by: .seconds(5))
        cache[2] = 2
        cache.setValue(3, forKey: 3, expiresAfter: .seconds(60))
        cache.flush()
        clock.advance(by: .seconds(5))  // 1 expires at 10 s, 2 at 15 s, 3 at 65 s
        #expect(log.all.isEmpty)  // nothing has asked yet
        cache.removeExpired()
        #expect(log.all == [CacheRemoval(key: 1, value: 1, reason: .expired)])
        clock.advance(by: .seconds(4))
        cache.removeExpired()
        #expect(log.all.count == 1)  // 2 lives until 15 s
        clock.advance(by: .seconds(1))
        cache.removeExpired()
        #expect(log.all.map(\.key) == [1, 2])
        #expect(cache.peekValue(forKey: 3) == 3)
        #expect(cache.statistics.removalCounts == [.expired: 2])
    }

    @Test("settle applies the queued writes and returns once the handler heard their removals, on any thread")
    func settle() async {
        let cache = SharedCache<Int, Int>()
        cache._applyWritesOnlyWhenAsked()
        let heard = Locked<[Int]>([])
        let handlerEntered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        cache.removalHandler = { removal in
            heard.mutate { $0.append(removal.key) }
            if removal.key == 1 {
                handlerEntered.signal()
                release.wait()
            }
        }
        cache.addEntries(from: [1: 1, 2: 2])
        cache.flush()
        // Another thread applies the removal of 1 and delivers it: the handler holds that delivery.
        cache.removeValue(forKey: 1)
        startThread { cache.flush() }
        handlerEntered.wait()
        cache.removeValue(forKey: 2)
        #expect(cache._pendingCount.load(ordering: .relaxed) == 1)
        let settled = Task(executorPreference: ThreadPerJobExecutor()) { () -> [Int] in
            await cache.settle()
            return heard.value
        }
        // settle applied the removal of 2 and left it to the thread delivering: it waits for it.
        await eventually { cache.outbox.withLock { $0.posted } == 2 }
        #expect(cache._pendingCount.load(ordering: .relaxed) == 0)
        release.signal()
        #expect(await settled.value == [1, 2])
    }

    @Test("the sweep interval removes expired entries on the cache's clock, and ends with the cache")
    func sweepInterval() async {
        let clock = ManualClock()
        let log = RemovalLog<String, Int>()
        weak var weakCache: SharedCache<String, Int>?
        do {
            let cache = SharedCache<String, Int>(
                expiration: Expiration(afterWrite: .seconds(5), sweepInterval: .seconds(10)),
                clock: clock
            )
            weakCache = cache
            cache._applyWritesOnlyWhenAsked()  // no drain but the sweep's
            cache.removalHandler = log.append
            cache["a"] = 1
            cache.setValue(2, forKey: "b", expiresAfter: .seconds(15))
            cache.flush()
            await eventually { clock.sleeperCount == 1 }
            clock.advance(by: .seconds(9))
            #expect(log.all.isEmpty)  // "a" expired at 5 s, but no sweep has run
            clock.advance(by: .seconds(1))
            await eventually { log.all.count == 1 }
            #expect(log.all == [CacheRemoval(key: "a", value: 1, reason: .expired)])
            await eventually { clock.sleeperCount == 1 }  // the next round is scheduled
            clock.advance(by: .seconds(10))
            await eventually { log.all.count == 2 }
            #expect(log.all.last == CacheRemoval(key: "b", value: 2, reason: .expired))
        }
        #expect(weakCache == nil)  // the sweep does not keep the cache alive
        await eventually { clock.sleeperCount == 0 }  // and it ends with the cache
    }

    @Test("a time to idle is extended by reads (reads then take the lock exclusively)")
    func timeToIdle() {
        let clock = ManualClock()
        let cache = SharedCache<Int, Int>(expiration: .afterAccess(.seconds(10)), clock: clock)
        cache[1] = 1
        for _ in 0..<5 {
            clock.advance(by: .seconds(9))
            #expect(cache[1] == 1)
        }
        clock.advance(by: .seconds(10))
        #expect(cache[1] == nil)
    }

    @Test("memory pressure removes everything or trims to a fraction")
    func memoryPressure() {
        let cache = SharedCache<Int, Int>(countLimit: 100, policy: .lru)
        for i in 0..<10 { cache[i] = i }
        cache.handleMemoryPressure(.trim(toFraction: 0.5))
        #expect(cache.allItems().keys.sorted() == [5, 6, 7, 8, 9])
        cache.handleMemoryPressure()
        #expect(cache.count == 0)
        #expect(cache.statistics.removalCounts[.memoryPressure] == 10)
    }

    @Test("a memory-pressure monitor runs the decider, or the action given, on a subscribed SharedCache")
    func pressureMonitor() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        // The decider is told the level: here it purges more when pressure is critical.
        let decided = SharedCache<Int, Int>(evictionDecider: { _, value, context in
            value >= (context as? MemoryPressureLevel == .critical ? 3 : 5)
        })
        let plain = SharedCache<Int, Int>()
        let trimmed = SharedCache<Int, Int>(countLimit: 100, policy: .fifo)
        for cache in [decided, plain, trimmed] {
            for i in 0..<10 { cache[i] = i }  // in order: FIFO evicts 0 first
        }
        decided.respond(to: monitor)
        plain.respond(to: monitor)
        let subscription = trimmed.respond(to: monitor, with: .trim(toFraction: 0.3))
        source.level = .warning
        try monitor.check()
        #expect(decided.allItems().keys.sorted() == [0, 1, 2, 3, 4])
        #expect(decided.statistics.removalCounts[.purged] == 5)
        #expect(plain.count == 0)
        #expect(trimmed.allItems().keys.sorted() == [7, 8, 9])
        subscription.cancel()
        trimmed[1] = 1
        source.level = .critical
        try monitor.check()
        #expect(trimmed.count == 4)
        #expect(decided.allItems().keys.sorted() == [0, 1, 2])
    }

    @Test("statistics count requests from every stripe; a handler may write to the cache")
    func statisticsAndReentrantHandler() async {
        let cache = SharedCache<Int, Int>(countLimit: 2, policy: .fifo)
        let evicted = Locked<[Int]>([])
        cache.removalHandler = { removal in
            if removal.reason == .evictedForCount { evicted.mutate { $0.append(removal.key) } }
            if removal.reason == .evictedForCount && removal.key < 100 { cache[removal.key + 100] = removal.value }
        }
        cache[1] = 1
        cache[2] = 2
        // Evicts 1; the handler writes 101, which evicts 2; 102 evicts 3; 103 evicts 101, whose
        // eviction writes nothing.
        cache[3] = 3
        cache.flush()
        _ = cache[1]
        _ = cache[102]
        let stats = cache.statistics
        #expect(stats.hitCount + stats.missCount == 2)
        cache.resetStatistics()
        #expect(cache.statistics.requestCount == 0)
        cache.flush()
        #expect(cache.count == 2)
        // Each step of the cascade is a write the handler issues while a drain delivers.
        await eventually {
            cache.flush()
            return evicted.value.count >= 4
        }
        cache.flush()
        #expect(evicted.value == [1, 2, 3, 101])
        #expect(cache.allItems() == [102: 2, 103: 3])
    }

    @Test("a purge decided before removeAll leaves an entry written after it, in the same slot")
    func purgeAfterRemoveAll() {
        // The decider empties the cache and writes key 1 again: the fresh storage puts it in
        // slot 0 with the generation the old entry had, so only the storage's epoch tells the
        // two apart.
        let cache = SharedCache<Int, Int>(evictionDecider: { key, value, context in
            if key == 1 && value == 1, let cache = context as? SharedCache<Int, Int> {
                cache.removeAll()
                cache.setValue(100, forKey: 1)
            }
            return true
        })
        cache._applyWritesOnlyWhenAsked()
        cache[1] = 1
        cache.flush()
        #expect(cache.purgeEvictableItems(context: cache) == 1)
        cache.flush()
        #expect(cache.allItems() == [1: 100])
    }

    @Test("change batches arrive in the order they were taken, when a handler publishes inside a publish")
    func publishOrder() async {
        let cache = SharedCache<Int, Int>()
        cache._applyWritesOnlyWhenAsked()
        cache.notificationInterval = .seconds(3600)
        var iterator = cache.changes.makeAsyncIterator()
        cache[1] = 1
        cache.publishChanges()
        #expect(await iterator.next()?.updated == [1: 1])
        let once = Locked(false)
        let weak = WeakBox(cache)
        cache.removalHandler = { removal in
            guard removal.reason == .replaced,
                !once.mutate({ done in
                    defer { done = true }
                    return done
                })
            else {
                return
            }
            // Runs after the publish below took its batch and before it delivered it: this
            // second batch must come after the first.
            let cache = weak.object
            cache?.removeValue(forKey: 1)
            cache?.publishChanges()
        }
        cache[1] = 2
        cache.publishChanges()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.updated == [1: 2] && first?.removed == [])
        #expect(second?.updated == [:] && second?.removed == [1])
        cache.flush()
        #expect(cache.allItems() == [:])
    }

    @Test("values(forKeys:) collects a lazy sequence before taking the lock")
    func sequenceOutsideLock() {
        let cache = SharedCache<Int, Int>()
        cache[1] = 1
        cache.flush()
        let heldDuringIteration = Locked(false)
        let keys = [1, 2].lazy.map { key -> Int in
            let word = cache._lock.currentStripe.state.pointee.load(ordering: .relaxed)
            if word & _StripedLock.readerMask != 0 { heldDuringIteration.mutate { $0 = true } }
            // A sequence that reads the cache would deadlock under a pending writer otherwise.
            _ = cache.count
            return key
        }
        #expect(cache.values(forKeys: keys) == [1: 1])
        #expect(!heldDuringIteration.value)
    }

    @Test("the cache goes away with its background tasks, and its change sequences end after its last write")
    func lifetime() async {
        let clock = ManualClock()
        var cache: SharedCache<Int, Int>? = SharedCache(
            expiration: Expiration(afterWrite: .seconds(5), sweepInterval: .seconds(1)),
            clock: clock,
            evictionDecider: { _, _, _ in true }
        )
        weak let weakCache = cache
        cache!.evictionInterval = .seconds(1)
        cache!.notificationInterval = .seconds(1)
        let changes = cache!.changes
        cache![1] = 1
        cache = nil
        await eventually { weakCache == nil }  // a queued background drain may hold it briefly
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.updated == [1: 1])
        #expect(await iterator.next() == nil)
    }
}

/// A manual clock that can be told to move on right after its next reading: it stands for the
/// time that passes between a writer's clock reading (in `setValue`) and the clock reading of
/// the drain that writer runs (`tryLockExclusive` waiting for readers, replaying, applying 128
/// writes), which a real clock always shows.
final class SteppingClock: Clock, Sendable {
    typealias Instant = ManualClock.Instant
    let base = ManualClock()
    private let step = Mutex<Duration?>(nil)

    var now: Instant {
        let reading = base.now
        if let step = step.withLock({ s -> Duration? in
            defer { s = nil }
            return s
        }) {
            base.advance(by: step)
        }
        return reading
    }
    var minimumResolution: Duration { base.minimumResolution }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
    func advance(by duration: Duration) { base.advance(by: duration) }
    func advanceAfterNextReading(by duration: Duration) { step.withLock { $0 = duration } }
}
