import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CacheKit

/// The thread-safe types around the caches, hammered from several threads at once: the
/// memory-pressure monitor, persistence with autosave, the manual clock and expiration triggers.
/// Run in CI under `swift test --sanitize=thread` (the suite's name matches the CI's filter).
@Suite("Service stress", .timeLimit(.minutes(10)))
struct ServiceStressTests {
    /// A source whose level moves through normal, warning and critical, one step per reading,
    /// for the first 60 readings, and then stays normal: at most 62 levels reach a stream, so its
    /// buffer of 64 never drops one, and the order check below holds however late it reads.
    final class CyclingSource: MemoryPressureSource {
        let readings = Atomic<Int>(0)
        static let cycle: [MemoryPressureLevel] = [.normal, .warning, .critical, .warning, .normal, .critical]

        func currentLevel() throws -> MemoryPressureLevel {
            let n = readings.add(1, ordering: .relaxed).newValue
            return n < 60 ? Self.cycle[n % Self.cycle.count] : .normal
        }
    }

    @Test("monitor: checks, subscriptions, cancellations, a responding cache and a level stream at once")
    func monitorUnderContention() async throws {
        let clock = ManualClock()  // never advanced: only the manual checks below read the source
        let monitor = MemoryPressureMonitor(source: CyclingSource(), interval: .seconds(1), clock: clock)
        let cache = Cache<Int, Int>(countLimit: 1_000, policy: .lru)
        cache.respond(to: monitor, with: .trim(toFraction: 0.5))
        let levels = monitor.levels  // registered now, so it hears the checks below
        let listener = Task {
            var seen: [MemoryPressureLevel] = []
            for await level in levels { seen.append(level) }
            return seen
        }
        let wrongLevel = Atomic<Int>(0)
        let calls = Atomic<Int>(0)
        // A class, not a `Mutex`: a noncopyable local captured by the threads' escaping closure is
        // accessed as a variable, and TSan reports two threads' `withLock` calls as a race on it.
        let kept = Locked<[MemoryPressureSubscription]>([])
        // Every thread does every kind of operation, so the checks below hold whatever overlap
        // the scheduler gives.
        await runOnThreads(4) { worker in
            for round in 0..<400 {
                _ = try? monitor.check()
                let threshold: MemoryPressureLevel = round.isMultiple(of: 2) ? .warning : .critical
                let subscription = monitor.subscribe(at: threshold) { level in
                    calls.add(1, ordering: .relaxed)
                    if level < threshold { wrongLevel.add(1, ordering: .relaxed) }
                }
                if round.isMultiple(of: 3) {
                    kept.mutate { $0.append(subscription) }
                } else {
                    subscription.cancel()
                    #expect(subscription.isCancelled)
                }
                for i in 0..<10 {
                    let key = (worker * 4_000 + round * 10 + i) % 3_000
                    cache[key] = round
                    _ = cache[(key * 7) % 3_000]
                }
                if round.isMultiple(of: 50) { _ = monitor.level }
            }
        }
        #expect(wrongLevel.load(ordering: .relaxed) == 0)
        #expect(calls.load(ordering: .relaxed) > 0)
        // The cache's subscription and every kept one remain; every cancelled one is gone.
        #expect(monitor.subscriberCount == 1 + kept.value.count)
        cache._checkInvariants()
        #expect(cache.count <= 1_000)
        monitor.stop()
        let seen = await listener.value
        #expect(!seen.isEmpty)
        // Levels are reported in the order they were read, and only changes: no two in a row equal.
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 != $1 })
        for subscription in kept.value { subscription.cancel() }
        #expect(monitor.subscriberCount == 1)
    }

    @Test("persistence: saves, autosaves and writes from several threads leave one loadable file")
    func persistenceUnderContention() async throws {
        let directory = try PersistenceTests.Directory()
        let url = directory.file()
        let clock = ManualClock()
        let cache = Cache<Int, Int>(countLimit: 500, policy: .lru)
        let persistence = CachePersistence(cache: cache, fileURL: url)
        let errors = Mutex<[CachePersistenceError]>([])
        persistence.onError = { error in errors.withLock { $0.append(error) } }
        persistence.startAutosave(every: .milliseconds(10), clock: clock)
        await runOnThreads(4) { worker in
            for round in 0..<1_000 {
                cache[worker * 10_000 + round % 800] = round
                if round.isMultiple(of: 97) { cache.removeValue(forKey: worker * 10_000 + (round / 2) % 800) }
                if round.isMultiple(of: 50) { #expect(throws: Never.self) { try persistence.save() } }
                if round.isMultiple(of: 10) { clock.advance(by: .milliseconds(10)) }  // autosaves
            }
        }
        #expect(throws: Never.self) { try persistence.close() }
        #expect(!persistence.isAutosaving)
        #expect(errors.withLock { $0.isEmpty })
        // `close()` saved last: the file holds exactly what the cache holds, in its order.
        let restored = Cache<Int, Int>(countLimit: 500, policy: .lru)
        #expect(try CachePersistence(cache: restored, fileURL: url).load() == cache.count)
        #expect(restored.persistableEntries() == cache.persistableEntries())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
    }

    /// Counters shared with escaping closures.
    final class Flags: Sendable {
        let early = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let stopped = Atomic<Int>(0)
    }

    @Test("manual clock: sleepers on many tasks wake at or after their deadlines while threads advance it")
    func clockUnderContention() async throws {
        let clock = ManualClock()
        let flags = Flags()
        // Two threads of their own advance the clock until every sleeper is done (not tasks, nor
        // Dispatch's global queues, whose threads on Linux are also the tasks' threads: spinning
        // there would hold them from the sleepers).
        defer { flags.done.store(true, ordering: .relaxed) }  // also if a sleeper throws
        for _ in 0..<2 {
            startThread {
                while !flags.done.load(ordering: .relaxed) {
                    clock.advance(by: .milliseconds(1))
                    _ = clock.sleeperCount
                }
                flags.stopped.add(1, ordering: .relaxed)
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for round in 1...20 {
                        let deadline = clock.now.advanced(by: .milliseconds(task % 4 + round))
                        try await clock.sleep(until: deadline)
                        if clock.now < deadline { flags.early.add(1, ordering: .relaxed) }
                    }
                }
            }
            try await group.waitForAll()
        }
        flags.done.store(true, ordering: .relaxed)
        await eventually { flags.stopped.load(ordering: .relaxed) == 2 }
        #expect(flags.early.load(ordering: .relaxed) == 0)
        #expect(clock.sleeperCount == 0)
    }

    @Test("manual clock: sleepers cancelled while threads advance it either wake on time or throw, and none is left")
    func clockCancellationUnderContention() async throws {
        let clock = ManualClock()
        let flags = Flags()
        defer { flags.done.store(true, ordering: .relaxed) }
        startThread {
            while !flags.done.load(ordering: .relaxed) { clock.advance(by: .microseconds(50)) }
            flags.stopped.add(1, ordering: .relaxed)
        }
        for round in 0..<10 {
            // Each sleeper sleeps once; every other one is cancelled by a thread at some moment:
            // before it registers, while it sleeps, or after it woke.
            let sleepers = (0..<64).map { i in
                Task { () -> (woke: Bool, early: Bool, cancelled: Bool) in
                    let deadline = clock.now.advanced(by: .microseconds(50 * (i % 8 + round)))
                    do {
                        try await clock.sleep(until: deadline)
                        return (true, clock.now < deadline, Task.isCancelled)
                    } catch {
                        return (false, false, Task.isCancelled && error is CancellationError)
                    }
                }
            }
            let handles = Handoff(sleepers)
            await runOnThreads(2) { thread in
                for (i, sleeper) in handles.value.enumerated() where i % 4 == thread * 2 {
                    sleeper.cancel()
                    if i % 3 == 0 { sched_yield() }
                }
            }
            for (i, sleeper) in sleepers.enumerated() {
                let outcome = await sleeper.value
                #expect(!outcome.early, "sleeper \(i) of round \(round) woke before its deadline")
                if !outcome.woke {
                    #expect(outcome.cancelled, "sleeper \(i) of round \(round) threw without being cancelled")
                    #expect(i % 2 == 0)
                }
            }
        }
        flags.done.store(true, ordering: .relaxed)
        await eventually { flags.stopped.load(ordering: .relaxed) == 1 }
        #expect(clock.sleeperCount == 0)
    }

    @Test("expiration triggers: events, writes and cancellation racing leave a consistent cache")
    func triggersUnderContention() async throws {
        let cache = Cache<Int, Int>(countLimit: 2_000, policy: .lru)
        let removed = Atomic<Int>(0)
        let expired = Atomic<Int>(0)
        cache.removalHandler = { removal in
            removed.add(1, ordering: .relaxed)
            if removal.reason == .expired { expired.add(1, ordering: .relaxed) }
        }
        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        let trigger = cache.expireAll(whenever: events)
        let inserted = Atomic<Int>(0)
        let extras = Locked<[ExpirationTrigger]>([])  // not a `Mutex`: see `kept` above
        await runOnThreads(4) { worker in
            for i in 0..<5_000 {
                if cache.setValue(i, forKey: worker * 100_000 + i).isStored { inserted.add(1, ordering: .relaxed) }
                if i.isMultiple(of: 20) { continuation.yield() }
                if worker == 0 && i == 2_500 {
                    // The trigger expires entries while the other threads write: the stream has
                    // held events since the first round, and the cache entries since then.
                    let giveUp = ContinuousClock.now.advanced(by: .seconds(60))
                    while expired.load(ordering: .relaxed) == 0 && ContinuousClock.now < giveUp { sched_yield() }
                }
                if i.isMultiple(of: 50) {
                    let extra = cache.expireAll(whenever: AsyncStream<Void> { $0.finish() })
                    if i.isMultiple(of: 100) { extra.cancel() }
                    extras.mutate { $0.append(extra) }
                }
            }
        }
        // Triggers whose sequence ended stop by themselves, whether or not they were also cancelled.
        await eventually { extras.value.allSatisfy(\.isCancelled) }
        #expect(extras.value.count == 4 * 100)
        trigger.cancel()
        #expect(trigger.isCancelled)
        continuation.finish()
        cache._checkInvariants()
        // Every stored entry is either still there or was reported removed (expired or evicted).
        await eventually { removed.load(ordering: .relaxed) + cache.count == inserted.load(ordering: .relaxed) }
        #expect(expired.load(ordering: .relaxed) > 0, "the trigger expired no entry")
    }
}
