import CacheKit
import Testing

/// A door that loaders wait at until the test opens it.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private(set) var arrivals = 0

    func wait() async {
        arrivals += 1
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for w in waiters { w.resume() }
        waiters = []
    }
}

struct LoadFailed: Error, Equatable {
    let attempt: Int
}

/// Waits (yielding) until `condition` holds; for ordering concurrent test steps, never timing.
///
/// A condition still false after a minute of wall time (a bug: every use waits for something
/// that happens within milliseconds) is recorded as a failure at the caller's line, and the
/// wait ends, so a broken test fails instead of hanging the run.
func eventually(
    _ condition: () async -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let giveUp = ContinuousClock.now.advanced(by: .seconds(60))
    while !(await condition()) {
        if ContinuousClock.now > giveUp {
            Issue.record("the condition did not become true within a minute", sourceLocation: sourceLocation)
            return
        }
        await Task.yield()
    }
}

@Suite("Loading and statistics")
struct LoadingTests {
    @Test("with a veto, a load detached by a removal evicts nothing when it finishes")
    func detachedLoadEvictsNothing() async throws {
        let cache = Cache<String, String>(countLimit: 2, policy: .lru)
        let log = RemovalLog<String, String>()
        cache.removalHandler = log.append
        cache.evictionVeto = { _, _, _ in true }
        let gate = Gate()
        let load = Task {
            try await cache.value(forKey: "k") { _ in
                await gate.wait()
                return "loaded"
            }
        }
        await eventually { await gate.arrivals == 1 }
        cache.removeValue(forKey: "k")  // detaches the load: it will store nothing
        cache["a"] = "a"
        cache["b"] = "b"
        await gate.open()
        #expect(try await load.value == "loaded")
        #expect(Set(cache.keys) == ["a", "b"])
        #expect(log.all.isEmpty)
    }

    @Test("a value stored by orInsert while a load of the key runs is not overwritten by that load")
    func orInsertWinsOverLoad() async throws {
        let cache = Cache<String, String>()
        let gate = Gate()
        let load = Task {
            try await cache.value(forKey: "k") { _ in
                await gate.wait()
                return "loaded"
            }
        }
        await eventually { await gate.arrivals == 1 }
        #expect(cache.value(forKey: "k", orInsert: { "inserted" }) == "inserted")
        await gate.open()
        #expect(try await load.value == "loaded")  // the load's caller gets what it loaded
        #expect(cache.peekValue(forKey: "k") == "inserted")
    }

    @Test(
        "orInsert runs the closure on a miss only, stores its value, and stores nothing when it throws",
        arguments: CacheKind.allCases
    )
    func orInsert(kind: CacheKind) throws {
        let cache = kind.make(String.self, Int.self, countLimit: 10, policy: .lru)
        var calls = 0
        #expect(
            cache.value(
                forKey: "a",
                orInsert: {
                    calls += 1
                    return 1
                }
            ) == 1
        )
        #expect(
            cache.value(
                forKey: "a",
                orInsert: {
                    calls += 1
                    return 2
                }
            ) == 1
        )
        #expect(calls == 1)
        #expect(cache.peekValue(forKey: "a") == 1)
        #expect(throws: LoadFailed(attempt: 1)) {
            try cache.value(forKey: "b", orInsert: { throw LoadFailed(attempt: 1) })
        }
        #expect(!cache.contains("b"))
        // The closure may use the cache; a value it stores for the same key wins.
        let v = cache.value(forKey: "c") {
            cache.setValue(7, forKey: "c")
            return 8
        }
        #expect(v == 7 && cache.peekValue(forKey: "c") == 7)
        let stats = cache.statistics
        #expect(stats.hitCount == 1 && stats.missCount == 3)
        #expect(stats.loadSuccessCount == 2 && stats.loadFailureCount == 1)
    }

    @Test("statistics agree with a replayed trace and with the removal handler", arguments: allConfigurations)
    func statisticsAgree(kind: CacheKind, policy: EvictionPolicy) {
        let cache = kind.make(Int.self, Int.self, countLimit: 50, totalCostLimit: 400, policy: policy)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval { log.append($0) }
        var rng = SeededGenerator(seed: 77)
        var hits = 0
        var requests = 0
        for step in 0..<5_000 {
            let key = Int(Double.random(in: 0..<1, using: &rng) * Double.random(in: 0..<1, using: &rng) * 300)
            switch step % 10 {
            case 0: _ = cache.removeValue(forKey: key)
            case 1: cache.setValue(step, forKey: key, cost: Int.random(in: 0...30, using: &rng))
            default:
                requests += 1
                if cache.value(forKey: key) != nil { hits += 1 } else { cache.setValue(step, forKey: key) }
            }
        }
        cache.handleMemoryPressure()
        let stats = cache.statistics
        #expect(stats.requestCount == requests)
        #expect(stats.hitCount == hits)
        var byReason: [RemovalReason: Int] = [:]
        for removal in log.all { byReason[removal.reason, default: 0] += 1 }
        #expect(stats.removalCounts == byReason)
        #expect(stats.evictionCount == byReason.filter { $0.key.isEviction }.values.reduce(0, +))
        #expect(abs(stats.hitRatio - Double(hits) / Double(requests)) < 1e-12)

        cache.resetStatistics()
        #expect(cache.statistics == CacheStatistics())
        cache.isRecordingStatistics = false
        _ = cache.value(forKey: 1)
        cache.setValue(1, forKey: 1)
        cache.removeAll()
        #expect(cache.statistics == CacheStatistics())
        cache.isRecordingStatistics = true
        _ = cache.value(forKey: 1)
        #expect(cache.statistics.missCount == 1)
    }

    @Test("concurrent callers for one missing key share one load")
    func singleFlight() async throws {
        let cache = Cache<Int, String>(countLimit: 100)
        let gate = Gate()
        let loads = Locked(0)
        let callers = 50
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    try await cache.value(forKey: 1) { key in
                        loads.mutate { $0 += 1 }
                        await gate.wait()
                        return "value \(key)"
                    }
                }
            }
            // Opened once a load runs and every caller has missed: each has joined that load or,
            // were there no single flight, started its own, so a second load shows at once.
            await eventually { await gate.arrivals >= 1 && cache.statistics.missCount == callers }
            await gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "value 1", count: callers))
        #expect(loads.value == 1)
        #expect(cache.peekValue(forKey: 1) == "value 1")
        #expect(cache.statistics.loadSuccessCount == 1)
        #expect(cache.statistics.missCount + cache.statistics.hitCount == callers)
    }

    @Test("every waiter gets the same error, and the error is not cached")
    func sharedError() async throws {
        let cache = Cache<Int, Int>()
        let gate = Gate()
        let attempts = Locked(0)
        let loader: @Sendable (Int) async throws -> Int = { _ in
            let attempt = attempts.mutate { n -> Int in
                n += 1
                return n
            }
            await gate.wait()
            if attempt == 1 { throw LoadFailed(attempt: attempt) }
            return 42
        }
        let errors = await withTaskGroup(of: LoadFailed?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await cache.value(forKey: 5, loader: loader)
                        return nil
                    } catch {
                        return error as? LoadFailed
                    }
                }
            }
            // Opened once a load runs and every caller has missed (see `singleFlight`).
            await eventually { await gate.arrivals >= 1 && cache.statistics.missCount == 10 }
            await gate.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(errors == Array(repeating: LoadFailed(attempt: 1), count: 10))
        #expect(!cache.contains(5))
        #expect(try await cache.value(forKey: 5, loader: loader) == 42)
        #expect(attempts.value == 2)
        #expect(cache.statistics.loadFailureCount == 1 && cache.statistics.loadSuccessCount == 1)
    }

    @Test("cancelling one waiter does not cancel the load for the others")
    func cancellation() async throws {
        let cache = Cache<Int, Int>()
        let gate = Gate()
        let loads = Locked(0)
        let loader: @Sendable (Int) async throws -> Int = { key in
            loads.mutate { $0 += 1 }
            await gate.wait()
            try Task.checkCancellation()  // would throw if the load itself were cancelled
            return key * 10
        }
        let first = Task { try await cache.value(forKey: 3, loader: loader) }
        await eventually { await gate.arrivals == 1 }
        let second = Task { try await cache.value(forKey: 3, loader: loader) }
        await eventually { cache.statistics.missCount == 2 }  // the second caller has joined
        first.cancel()
        await gate.open()
        #expect(try await second.value == 30)
        #expect(try await first.value == 30)
        #expect(loads.value == 1)
        #expect(cache.peekValue(forKey: 3) == 30)
    }

    /// What can happen to a key while its load runs.
    enum Invalidation: String, CaseIterable, Sendable {
        case removeValue, removeValues, removeAll, expireAll, write
    }

    @Test(
        "a write or removal during a load wins: the load answers its waiters but stores nothing",
        arguments: Invalidation.allCases
    )
    func invalidatedLoad(invalidation: Invalidation) async throws {
        let cache = Cache<Int, Int>()
        let gate = Gate()
        let calls = Locked(0)
        let loader: @Sendable (Int) async throws -> Int = { key in
            let call = calls.mutate { n -> Int in
                n += 1
                return n
            }
            if call == 1 { await gate.wait() }
            return key * 10 + call
        }
        let first = Task { try await cache.value(forKey: 4, loader: loader) }
        await eventually { await gate.arrivals == 1 }
        switch invalidation {
        case .removeValue: cache.removeValue(forKey: 4)
        case .removeValues: cache.removeValues(forKeys: [4])
        case .removeAll: cache.removeAll()
        case .expireAll: cache.expireAll()
        case .write: cache[4] = 99
        }
        await gate.open()
        #expect(try await first.value == 41)  // its waiters still get what it loaded
        #expect(cache.peekValue(forKey: 4) == (invalidation == .write ? 99 : nil))
        if invalidation != .write {
            // The old load no longer stands for the key: the next miss loads afresh.
            #expect(try await cache.value(forKey: 4, loader: loader) == 42)
        }
    }

    @Test("memory pressure does not detach a load: its value is stored when it finishes")
    func loadSurvivesMemoryPressure() async throws {
        let cache = Cache<Int, Int>()
        cache[1] = 1
        let gate = Gate()
        let load = Task {
            try await cache.value(forKey: 4) { key in
                await gate.wait()
                return key
            }
        }
        await eventually { await gate.arrivals == 1 }
        cache.handleMemoryPressure()
        #expect(cache.count == 0)
        await gate.open()
        #expect(try await load.value == 4)
        #expect(cache.peekValue(forKey: 4) == 4)
    }

    @Test("a loader may load other keys, and asking for its own key is an error, not a deadlock")
    func reentrantLoads() async throws {
        let cache = Cache<Int, Int>()
        let value = try await cache.value(forKey: 1) { key in
            let other = try await cache.value(forKey: 2) { $0 * 100 }
            return key + other
        }
        #expect(value == 201 && cache.peekValue(forKey: 2) == 200)
        await #expect(throws: CacheLoadError.recursiveLoad(key: "7")) {
            try await cache.value(forKey: 7) { key in
                try await cache.value(forKey: 8) { _ in
                    try await cache.value(forKey: key) { $0 }  // 7 again, two loads deep
                }
            }
        }
        #expect(!cache.contains(7) && !cache.contains(8))
    }
}
