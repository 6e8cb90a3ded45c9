import Synchronization

/// The switches that turn memoization off everywhere, or for the current task only.
///
/// ClearCache's "turn off caching for unit or integration testing": with caching off, every
/// memoized function runs its body on every call and neither reads nor writes its cache, so the
/// code behaves exactly as it would without memoization.
///
/// ```swift
/// @Test func forecastIsFresh() async throws {
///     try await Memoization.withCachingDisabled { () async throws in
///         #expect(try await service.forecast(for: paris) == expected)  // never served from a cache
///     }
/// }
/// ```
public enum Memoization {
    private static let enabled = Atomic<Bool>(true)
    private static let instances = Atomic<UInt64>(0)

    /// `base` made unique, as `base#N`: the identity `@Memoized` gives an instance method's
    /// function when its cache is shared (`cache:`), so that one instance never gets another's
    /// results and expiring one instance's results leaves the others'. The results of an instance
    /// that is gone stay in the shared cache until its limits or expiry remove them.
    public static func instanceIdentity(_ base: String) -> String {
        "\(base)#\(instances.add(1, ordering: .relaxed).newValue)"
    }

    /// Whether memoized functions cache at all (`true` by default): the process-wide switch.
    /// Tests that run in parallel should prefer ``withCachingDisabled(_:)-(()->R)``, which
    /// affects only their own task.
    public static var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    @TaskLocal static var _disabledInTask = false

    /// Whether caching is on for the current task (`false` inside ``withCachingDisabled(_:)-(()->R)``
    /// and in the tasks it creates).
    public static var isEnabledForCurrentTask: Bool { !_disabledInTask }

    /// Runs `body` with memoization off for the current task and the child tasks it creates;
    /// other tasks and threads keep caching.
    public static func withCachingDisabled<R>(_ body: () throws -> R) rethrows -> R {
        try $_disabledInTask.withValue(true, operation: body)
    }

    /// Runs `body` with memoization off for the current task and the child tasks it creates;
    /// other tasks and threads keep caching.
    public static func withCachingDisabled<R>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> R
    ) async rethrows -> R {
        try await $_disabledInTask.withValue(true, operation: body, isolation: isolation)
    }
}

/// What a memoized function has counted since it was created or reset.
public struct MemoStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Calls answered with a stored result.
    public var hitCount: Int
    /// Calls that found no stored result (including callers that waited for another's run).
    public var missCount: Int
    /// Calls made while caching was off, which ran the function directly.
    public var bypassCount: Int
    /// Runs of the function on a miss that returned a result.
    public var runCount: Int
    /// Runs of the function on a miss that threw.
    public var failureCount: Int
    /// Time spent running the function on misses.
    public var runTime: Duration
    /// The time hits saved: for each hit, how long computing the stored result took.
    public var timeSaved: Duration

    /// Creates statistics (for tests; memoized functions make their own).
    public init(
        hitCount: Int = 0,
        missCount: Int = 0,
        bypassCount: Int = 0,
        runCount: Int = 0,
        failureCount: Int = 0,
        runTime: Duration = .zero,
        timeSaved: Duration = .zero
    ) {
        self.hitCount = hitCount
        self.missCount = missCount
        self.bypassCount = bypassCount
        self.runCount = runCount
        self.failureCount = failureCount
        self.runTime = runTime
        self.timeSaved = timeSaved
    }

    /// Hits over hits plus misses; `0` before the first cached call.
    public var hitRatio: Double {
        hitCount + missCount == 0 ? 0 : Double(hitCount) / Double(hitCount + missCount)
    }

    public var description: String {
        let ratio = (hitRatio * 10_000).rounded() / 100
        return "hits \(hitCount), misses \(missCount) (hit ratio \(ratio)%), runs \(runCount), "
            + "failures \(failureCount), bypassed \(bypassCount), run time \(runTime), saved \(timeSaved)"
    }
}

/// A memoized function's counters: atomics, so counting takes no lock.
final class MemoCounters: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let bypasses = Atomic<Int>(0)
    private let runs = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let runNanoseconds = Atomic<Int64>(0)
    private let savedNanoseconds = Atomic<Int64>(0)

    func recordHit(saving time: Duration) {
        hits.add(1, ordering: .relaxed)
        savedNanoseconds.add(time._nanoseconds, ordering: .relaxed)
    }

    func recordMiss() { misses.add(1, ordering: .relaxed) }

    func recordBypass() { bypasses.add(1, ordering: .relaxed) }

    func recordRun(time: Duration, failed: Bool) {
        if failed { failures.add(1, ordering: .relaxed) } else { runs.add(1, ordering: .relaxed) }
        runNanoseconds.add(time._nanoseconds, ordering: .relaxed)
    }

    var snapshot: MemoStatistics {
        MemoStatistics(
            hitCount: hits.load(ordering: .relaxed),
            missCount: misses.load(ordering: .relaxed),
            bypassCount: bypasses.load(ordering: .relaxed),
            runCount: runs.load(ordering: .relaxed),
            failureCount: failures.load(ordering: .relaxed),
            runTime: .nanoseconds(runNanoseconds.load(ordering: .relaxed)),
            timeSaved: .nanoseconds(savedNanoseconds.load(ordering: .relaxed))
        )
    }

    func reset() {
        hits.store(0, ordering: .relaxed)
        misses.store(0, ordering: .relaxed)
        bypasses.store(0, ordering: .relaxed)
        runs.store(0, ordering: .relaxed)
        failures.store(0, ordering: .relaxed)
        runNanoseconds.store(0, ordering: .relaxed)
        savedNanoseconds.store(0, ordering: .relaxed)
    }
}
