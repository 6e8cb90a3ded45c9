// Statistics/: the counters caches keep and report. Counts what the engine and caches tell it;
// decides nothing about entries.

/// What a cache has counted since it was created or since ``Cache/resetStatistics()``.
///
/// Caches count while ``Cache/isRecordingStatistics`` is `true` (the default). The counters are
/// plain integers updated inside the cache's existing critical section, so counting takes no lock
/// of its own. Reading them takes the cache's lock once and returns a snapshot.
///
/// A *request* is a read that records a use: the subscript's getter, `value(forKey:)`, and the
/// loading reads (`value(forKey:orInsert:)`, `value(forKey:loader:)`). `peekValue` and `contains`
/// are not requests.
public struct CacheStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Requests that found a value.
    public var hitCount: Int
    /// Requests that found none.
    public var missCount: Int
    /// Entries that left, by reason.
    public var removalCounts: [RemovalReason: Int]
    /// Loads (`orInsert` closures and async loaders) that produced a value.
    public var loadSuccessCount: Int
    /// Loads that threw.
    public var loadFailureCount: Int
    /// Time spent in loads, successful or not.
    public var totalLoadTime: Duration

    /// Creates statistics (for tests and bridges; caches make their own).
    public init(
        hitCount: Int = 0,
        missCount: Int = 0,
        removalCounts: [RemovalReason: Int] = [:],
        loadSuccessCount: Int = 0,
        loadFailureCount: Int = 0,
        totalLoadTime: Duration = .zero
    ) {
        self.hitCount = hitCount
        self.missCount = missCount
        self.removalCounts = removalCounts
        self.loadSuccessCount = loadSuccessCount
        self.loadFailureCount = loadFailureCount
        self.totalLoadTime = totalLoadTime
    }

    /// Hits plus misses.
    public var requestCount: Int { hitCount + missCount }

    /// Hits over requests; `0` before the first request.
    public var hitRatio: Double { requestCount == 0 ? 0 : Double(hitCount) / Double(requestCount) }

    /// Entries the cache chose to remove (for count, cost or memory pressure).
    public var evictionCount: Int {
        removalCounts.reduce(0) { $0 + ($1.key.isEviction ? $1.value : 0) }
    }

    /// The mean time of a load; `.zero` before the first.
    public var averageLoadTime: Duration {
        let loads = loadSuccessCount + loadFailureCount
        return loads == 0 ? .zero : totalLoadTime / loads
    }

    public var description: String {
        let ratio = (hitRatio * 10_000).rounded() / 100
        return "hits \(hitCount), misses \(missCount) (hit ratio \(ratio)%), evictions \(evictionCount), "
            + "loads \(loadSuccessCount) ok / \(loadFailureCount) failed in \(totalLoadTime)"
    }
}

/// The counters a cache keeps inside its critical section.
@usableFromInline
struct _StatisticsCounters {
    @usableFromInline var isRecording = true
    @usableFromInline var hits = 0
    @usableFromInline var misses = 0
    /// Indexed by `RemovalReason.allCases` order.
    @usableFromInline var removals = (0, 0, 0, 0, 0, 0, 0, 0)
    @usableFromInline var loadSuccesses = 0
    @usableFromInline var loadFailures = 0
    @usableFromInline var loadTime = Duration.zero

    @inlinable
    init() {}

    @inlinable
    @inline(__always)
    mutating func recordRequest(hit: Bool) {
        guard isRecording else { return }
        if hit { hits &+= 1 } else { misses &+= 1 }
    }

    /// Takes back one miss: for a read that its caller has already counted.
    mutating func retractMiss() {
        guard isRecording else { return }
        misses &-= 1
    }

    @inlinable
    @inline(__always)
    mutating func recordRemovals(_ reason: RemovalReason, count: Int = 1) {
        guard isRecording else { return }
        switch reason {
        case .evictedForCount: removals.0 &+= count
        case .evictedForCost: removals.1 &+= count
        case .replaced: removals.2 &+= count
        case .removed: removals.3 &+= count
        case .removedAll: removals.4 &+= count
        case .memoryPressure: removals.5 &+= count
        case .expired: removals.6 &+= count
        case .purged: removals.7 &+= count
        }
    }

    @inlinable
    mutating func recordLoad(succeeded: Bool, time: Duration) {
        guard isRecording else { return }
        if succeeded { loadSuccesses &+= 1 } else { loadFailures &+= 1 }
        loadTime += time
    }

    /// Zeroes the counts, keeping `isRecording`.
    @inlinable
    mutating func reset() {
        let recording = isRecording
        self = _StatisticsCounters()
        isRecording = recording
    }

    @usableFromInline
    var snapshot: CacheStatistics {
        let counts = [
            removals.0, removals.1, removals.2, removals.3, removals.4, removals.5, removals.6, removals.7,
        ]
        var byReason: [RemovalReason: Int] = [:]
        for (reason, n) in zip(RemovalReason.allCases, counts) where n > 0 { byReason[reason] = n }
        return CacheStatistics(
            hitCount: hits,
            missCount: misses,
            removalCounts: byReason,
            loadSuccessCount: loadSuccesses,
            loadFailureCount: loadFailures,
            totalLoadTime: loadTime
        )
    }
}
