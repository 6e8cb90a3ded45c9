import CacheKit
import Foundation
import Synchronization
import Testing

/// `Cache`'s shared read path against concurrent writers: recorded histories checked for
/// linearizability, and the switch to shared reads under contention. Run in CI under
/// `swift test --sanitize=thread` with the other stress suites.
@Suite("Shared reads")
struct SharedReadStressTests {
    /// One operation of a recorded history: what it did, and the logical times (from one
    /// counter every thread increments) just before it was called and just after it returned.
    struct Operation: Sendable {
        enum Kind: Sendable { case read, set, remove }
        var kind: Kind
        var key: Int
        /// The value written, or the value read (`nil`: a miss).
        var value: Int?
        var start: Int
        var end: Int
    }

    /// Runs `threads` threads of random reads (`value(forKey:)`, `peekValue(forKey:)`,
    /// `contains(_:)`), sets of values no other set writes, and removes over a few keys, and
    /// returns every operation with its times.
    func record(
        _ cache: Cache<Int, Int>,
        threads: Int,
        operations: Int,
        keys: Int
    ) async -> [Operation] {
        let clock = Atomic<Int>(0)
        let histories = Locked<[[Operation]]>([])
        await runOnThreads(threads) { thread in
            var rng = SeededGenerator(seed: UInt64(thread) &* 31 &+ 7)
            var history: [Operation] = []
            history.reserveCapacity(operations)
            for sequence in 0..<operations {
                let key = Int.random(in: 0..<keys, using: &rng)
                let choice = Int.random(in: 0..<100, using: &rng)
                let start = clock.add(1, ordering: .sequentiallyConsistent).newValue
                var operation = Operation(kind: .read, key: key, value: nil, start: start, end: 0)
                switch choice {
                case 0..<40:
                    operation.value = cache.value(forKey: key)
                case 40..<50:
                    operation.value = cache.peekValue(forKey: key)
                case 50..<60:
                    // `contains` says only whether: recorded as a read of "some value" or a miss.
                    operation.value = cache.contains(key) ? -1 : nil
                case 60..<90:
                    let value = thread << 32 | sequence
                    cache.setValue(value, forKey: key)
                    operation.kind = .set
                    operation.value = value
                default:
                    cache.removeValue(forKey: key)
                    operation.kind = .remove
                }
                operation.end = clock.add(1, ordering: .sequentiallyConsistent).newValue
                history.append(operation)
            }
            histories.mutate { $0.append(history) }
        }
        return histories.value.flatMap { $0 }
    }

    /// The violations of a register's linearizability in `history`, per key: a read returned a
    /// value no set wrote, a value from a set that began after the read ended, or a value that
    /// a later write replaced before the read began; and, where `missesMeanAbsent` (no
    /// evictions), a miss although a set had completed before the read began and no remove
    /// could have come between them.
    func violations(in history: [Operation], missesMeanAbsent: Bool) -> [String] {
        var problems: [String] = []
        let byKey = Dictionary(grouping: history, by: \.key)
        for (key, operations) in byKey {
            let writes = operations.filter { $0.kind != .read }
            var sets: [Int: Operation] = [:]
            for write in writes where write.kind == .set { sets[write.value!] = write }
            for read in operations where read.kind == .read {
                switch read.value {
                case .some(-1):
                    // `contains` found an entry: some set must have begun before it ended.
                    if !writes.contains(where: { $0.kind == .set && $0.start < read.end }) {
                        problems.append("key \(key): contains was true before any set began (\(read))")
                    }
                case let value?:
                    guard let written = sets[value] else {
                        problems.append("key \(key): read \(value), which no set wrote")
                        continue
                    }
                    if written.start > read.end {
                        problems.append("key \(key): read \(value) before its set began (\(read), \(written))")
                    }
                    if let later = writes.first(where: { $0.start > written.end && $0.end < read.start }) {
                        problems.append("key \(key): read \(value), replaced by \(later) before the read \(read)")
                    }
                case nil:
                    guard missesMeanAbsent else { continue }
                    let stale = writes.first { set in
                        set.kind == .set && set.end < read.start
                            && !writes.contains { $0.kind == .remove && $0.end > set.start && $0.start < read.end }
                    }
                    if let stale {
                        problems.append("key \(key): missed although \(stale) completed before \(read)")
                    }
                }
            }
        }
        return problems
    }

    @Test(
        "reads beside writers return only values a set wrote and no later write replaced",
        arguments: [EvictionPolicy.lru, .wTinyLFU, .s3fifo, .fifo]
    )
    func readsAreLinearizable(policy: EvictionPolicy) async {
        // Unbounded: a miss can only mean no set, or a remove.
        let unbounded = Cache<Int, Int>(policy: policy)
        unbounded._shareReads()
        let history = await record(unbounded, threads: 4, operations: 3_000, keys: 6)
        let problems = violations(in: history, missesMeanAbsent: true)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        unbounded._checkInvariants()

        // Bounded below the keys: evictions make misses, never stale or invented values.
        let bounded = Cache<Int, Int>(countLimit: 3, policy: policy)
        bounded._shareReads()
        let evicting = await record(bounded, threads: 4, operations: 3_000, keys: 6)
        let evictingProblems = violations(in: evicting, missesMeanAbsent: false)
        #expect(evictingProblems.isEmpty, "\(evictingProblems.prefix(5))")
        bounded._checkInvariants()
        #expect(bounded.count <= 3)
    }

    @Test("the checker finds a stale read, an invented value and a lost write")
    func checkerFindsViolations() {
        typealias Op = Operation
        let stale: [Op] = [
            Op(kind: .set, key: 1, value: 10, start: 1, end: 2),
            Op(kind: .set, key: 1, value: 11, start: 3, end: 4),
            Op(kind: .read, key: 1, value: 10, start: 5, end: 6),
        ]
        #expect(violations(in: stale, missesMeanAbsent: true).count == 1)
        let invented: [Op] = [Op(kind: .read, key: 2, value: 99, start: 1, end: 2)]
        #expect(violations(in: invented, missesMeanAbsent: true).count == 1)
        let lost: [Op] = [
            Op(kind: .set, key: 3, value: 30, start: 1, end: 2),
            Op(kind: .read, key: 3, value: nil, start: 3, end: 4),
        ]
        #expect(violations(in: lost, missesMeanAbsent: true).count == 1)
        #expect(violations(in: lost, missesMeanAbsent: false).isEmpty)
        let concurrent: [Op] = [
            Op(kind: .set, key: 4, value: 40, start: 1, end: 2),
            Op(kind: .set, key: 4, value: 41, start: 3, end: 8),
            Op(kind: .remove, key: 4, value: nil, start: 4, end: 9),
            Op(kind: .read, key: 4, value: 40, start: 5, end: 6),
            Op(kind: .read, key: 4, value: 41, start: 5, end: 7),
            Op(kind: .read, key: 4, value: nil, start: 5, end: 7),
        ]
        #expect(violations(in: concurrent, missesMeanAbsent: true).isEmpty)
    }

    @Test(
        "on one thread, shared reads leave every policy's order exactly as SerialCache's",
        arguments: EvictionPolicy.allCases
    )
    func sharedReadsKeepTheOrder(policy: EvictionPolicy) {
        var rng = SeededGenerator(seed: 41)
        let cache = Cache<Int, Int>(countLimit: 40, policy: policy)
        cache._shareReads()
        let serial = SerialCache<Int, Int>(countLimit: 40, policy: policy)
        for step in 0..<20_000 {
            // Zipf-like keys over 0..<120: a small hot set read many times between writes, so
            // that stripes' buffers fill and are replayed by readers, not only by writers.
            let key = Int(Double(120) * pow(Double.random(in: 0..<1, using: &rng), 3))
            if Int.random(in: 0..<100, using: &rng) < 85 {
                #expect(cache.value(forKey: key) == serial.value(forKey: key))
            } else {
                #expect(cache.setValue(step, forKey: key).outcome == serial.setValue(step, forKey: key).outcome)
            }
            if step % 97 == 0 {
                #expect(cache.keys == serial.keys, "\(policy) step \(step)")
                if cache.keys != serial.keys { return }
            }
        }
        #expect(cache.statistics.hitCount == serial.statistics.hitCount)
    }

    @Test("threads contending for a cache make its reads shared; every read still sees its thread's writes")
    func contentionSharesReads() async {
        let cache = Cache<Int, Int>(policy: .lru)
        #expect(!cache._readsAreShared)
        // Bounded: two threads on two cores meet on the writers' lock within thousands of
        // operations; each thread stops soon after the switch.
        await runOnThreads(4) { thread in
            for round in 0..<200_000 {
                let key = thread * 1_000_000 + round % 500
                cache.setValue(round, forKey: key)
                #expect(cache.value(forKey: key) == round)
                if round % 1_000 == 999 && cache._readsAreShared { break }
            }
        }
        #expect(cache._readsAreShared)
        cache._checkInvariants()
    }

    @Test("a cache with a time to idle keeps its reads exclusive however threads contend for it")
    func idleExpiryKeepsReadsExclusive() async {
        let cache = Cache<Int, Int>(expiration: .afterAccess(.seconds(60)), clock: ManualClock())
        let twin = Cache<Int, Int>()
        await runOnThreads(4) { thread in
            for round in 0..<20_000 {
                for target in [cache, twin] {
                    target.setValue(round, forKey: thread * 1_000 + round % 100)
                    _ = target.value(forKey: thread * 1_000 + round % 100)
                }
            }
        }
        // The same traffic moved the cache without a time to idle: the threads did contend.
        #expect(twin._readsAreShared)
        #expect(!cache._readsAreShared)
    }

    @Test("statistics count every read on either path", arguments: [false, true])
    func statisticsCountSharedReads(shared: Bool) async {
        let cache = Cache<Int, Int>(countLimit: 100, policy: .lru)
        if shared { cache._shareReads() }
        for key in 0..<50 { cache[key] = key }
        await runOnThreads(4) { _ in
            for key in 0..<100 { _ = cache.value(forKey: key) }
        }
        #expect(cache.statistics.hitCount == 200)
        #expect(cache.statistics.missCount == 200)
        cache.isRecordingStatistics = false
        _ = cache.value(forKey: 1)
        _ = cache.value(forKey: 500)
        #expect(cache.statistics.hitCount == 200)
        cache.isRecordingStatistics = true
        cache.resetStatistics()
        _ = cache.value(forKey: 1)
        #expect(cache.statistics.hitCount == 1)
        #expect(cache.statistics.missCount == 0)
    }
}
