#if Observability
import CacheKit
import Metrics

/// Turns cache activity into swift-metrics counters, a load timer and size gauges.
///
/// ```swift
/// let metrics = CacheActivityMetrics(label: "images")          // MetricsSystem's factory
/// cache.enableMonitoring(CacheMonitor(metrics: metrics))
/// ```
///
/// ## Metrics
/// With the default prefix `cachekit`, every metric has the dimension `cache=<label>` followed by
/// the extra `dimensions` given at creation:
///
/// | name | kind | more dimensions | counts or shows |
/// | --- | --- | --- | --- |
/// | `cachekit_hits_total` | `Counter` | | reads that found their key |
/// | `cachekit_misses_total` | `Counter` | | reads that did not |
/// | `cachekit_writes_total` | `Counter` | | values stored |
/// | `cachekit_removals_total` | `Counter` | `reason` | entries that left, by `RemovalReason` raw value |
/// | `cachekit_loads_total` | `Counter` | `outcome` | loads, `success` or `failure` |
/// | `cachekit_load_duration_seconds` | `Timer` | `outcome` | each load's duration, in nanoseconds |
/// | `cachekit_entries` | `Meter` | | the cache's `count` |
/// | `cachekit_total_cost` | `Meter` | | the cache's `totalCost` |
///
/// `reason` is `evictedForCount`, `evictedForCost`, `replaced`, `removed`, `removedAll`,
/// `memoryPressure` or `expired`; the timer asks backends to display seconds. ``names`` holds the
/// full names for another prefix. Every metric is created once, here; after
/// that, recording an activity is one handler call (two for a load).
///
/// ## Gauges
/// The two meters are set by ``recordSize(count:totalCost:)``. ``CacheMonitor`` calls it after
/// every write and removal with the cache's `count` and `totalCost`, read from the observer. The
/// meters are `Meter`s (a value that goes up and down); backends without native meters get
/// swift-metrics' fallback to a gauge. On a `Cache` used from several threads at once, two
/// observers may read the size and set the meters in either order, so a meter may briefly show
/// the size before the latest write; the next write or removal corrects it.
///
/// ## Factory
/// Pass a `MetricsFactory` to record somewhere other than `MetricsSystem.factory` (read once, at
/// creation): tests pass a `TestMetrics` and need no global bootstrap.
public final class CacheActivityMetrics: Sendable {
    /// The full name of each metric, for a prefix.
    public struct Names: Hashable, Sendable {
        /// `<prefix>_hits_total`: a counter of reads that found their key.
        public var hits: String
        /// `<prefix>_misses_total`: a counter of reads that did not.
        public var misses: String
        /// `<prefix>_writes_total`: a counter of values stored.
        public var writes: String
        /// `<prefix>_removals_total`: a counter of entries that left, with dimension `reason`.
        public var removals: String
        /// `<prefix>_loads_total`: a counter of loads, with dimension `outcome`.
        public var loads: String
        /// `<prefix>_load_duration_seconds`: a timer of load durations, with dimension `outcome`.
        public var loadDuration: String
        /// `<prefix>_entries`: a meter of the cache's `count`.
        public var entries: String
        /// `<prefix>_total_cost`: a meter of the cache's `totalCost`.
        public var totalCost: String

        /// The names for `prefix`, joined to each name with `_`; an empty prefix adds nothing.
        public init(prefix: String = "cachekit") {
            func name(_ suffix: String) -> String { prefix.isEmpty ? suffix : "\(prefix)_\(suffix)" }
            hits = name("hits_total")
            misses = name("misses_total")
            writes = name("writes_total")
            removals = name("removals_total")
            loads = name("loads_total")
            loadDuration = name("load_duration_seconds")
            entries = name("entries")
            totalCost = name("total_cost")
        }
    }

    /// The dimension that names the cache: `cache`.
    public static let cacheDimension = "cache"
    /// The dimension of removals that holds the `RemovalReason`'s raw value: `reason`.
    public static let reasonDimension = "reason"
    /// The dimension of loads that holds `success` or `failure`: `outcome`.
    public static let outcomeDimension = "outcome"

    /// The cache's name, the value of the `cache` dimension.
    public let label: String
    /// The name of each metric.
    public let names: Names

    private let hits: Counter
    private let misses: Counter
    private let writes: Counter
    private let removals: [RemovalReason: Counter]
    private let successfulLoads: Counter
    private let failedLoads: Counter
    private let successfulLoadDuration: Timer
    private let failedLoadDuration: Timer
    private let entries: Meter
    private let totalCost: Meter

    /// Creates the metrics of one cache.
    ///
    /// - Parameters:
    ///   - label: The cache's name, the value of the `cache` dimension.
    ///   - prefix: What every metric name starts with, before `_`. Defaults to `cachekit`.
    ///   - dimensions: More dimensions for every metric, after `cache` (for example
    ///     `[("service", "api")]`).
    ///   - factory: Where the metrics are created. `nil` (the default) uses
    ///     `MetricsSystem.factory` as it is now.
    public init(
        label: String,
        prefix: String = "cachekit",
        dimensions: [(String, String)] = [],
        factory: (any MetricsFactory)? = nil
    ) {
        let factory = factory ?? MetricsSystem.factory
        let names = Names(prefix: prefix)
        let base = [(Self.cacheDimension, label)] + dimensions
        func counter(_ name: String, _ more: [(String, String)] = []) -> Counter {
            Counter(label: name, dimensions: base + more, factory: factory)
        }
        func timer(outcome: String) -> Timer {
            Timer(
                label: names.loadDuration,
                dimensions: base + [(Self.outcomeDimension, outcome)],
                preferredDisplayUnit: .seconds,
                factory: factory
            )
        }
        self.label = label
        self.names = names
        hits = counter(names.hits)
        misses = counter(names.misses)
        writes = counter(names.writes)
        var removals: [RemovalReason: Counter] = [:]
        for reason in RemovalReason.allCases {
            removals[reason] = counter(names.removals, [(Self.reasonDimension, reason.rawValue)])
        }
        self.removals = removals
        successfulLoads = counter(names.loads, [(Self.outcomeDimension, "success")])
        failedLoads = counter(names.loads, [(Self.outcomeDimension, "failure")])
        successfulLoadDuration = timer(outcome: "success")
        failedLoadDuration = timer(outcome: "failure")
        entries = Meter(label: names.entries, dimensions: base, factory: factory)
        totalCost = Meter(label: names.totalCost, dimensions: base, factory: factory)
    }

    /// Counts one activity (and times it, for a load). Does not touch the size meters.
    ///
    /// - Complexity: O(1).
    public func record<Key>(_ activity: CacheActivity<Key>) {
        switch activity {
        case .hit:
            hits.increment()
        case .miss:
            misses.increment()
        case .write:
            writes.increment()
        case .removal(_, let reason):
            // Every reason has its counter; `RemovalReason.allCases` was counted at creation.
            removals[reason]?.increment()
        case .load(_, let duration, let error):
            if error == nil {
                successfulLoads.increment()
                successfulLoadDuration.record(duration: duration)
            } else {
                failedLoads.increment()
                failedLoadDuration.record(duration: duration)
            }
        }
    }

    /// Sets the size meters: `<prefix>_entries` to `count`, `<prefix>_total_cost` to `totalCost`.
    public func recordSize(count: Int, totalCost: Int) {
        entries.set(count)
        self.totalCost.set(totalCost)
    }
}
#endif
