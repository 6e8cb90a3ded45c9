#if Observability
import CacheKit
import Logging
import Metrics

/// Logging and metrics for one cache, installed together as its single activity observer.
///
/// A cache has one `activityObserver`. A monitor fans each activity out to a
/// ``CacheActivityLogger``, to ``CacheActivityMetrics`` and, if you pass one, to an observer of
/// your own, in that order; after a write or a removal it reads the cache's `count` and
/// `totalCost` into the metrics' size meters.
///
/// ```swift
/// let monitor = CacheMonitor(label: "images", logger: logger, keys: .redacted)
/// images.enableMonitoring(monitor)
///
/// // or, for the common case, in one call:
/// images.enableMonitoring(label: "images", logger: logger)
/// ```
///
/// The observer it builds holds the cache weakly (the cache holds the observer), runs on the
/// thread that caused the activity after the cache's lock is released, and keeps no state of its
/// own. Give each cache its own monitor: caches that share one add up in the counters, but the
/// size meters would show whichever cache changed last.
public struct CacheMonitor: Sendable {
    /// Where activity is logged; `nil` logs nothing.
    public var logging: CacheActivityLogger?
    /// Where activity is counted; `nil` records no metrics.
    public var metrics: CacheActivityMetrics?

    /// Creates a monitor from its parts.
    ///
    /// - Parameters:
    ///   - logging: Where activity is logged; `nil` (the default) logs nothing.
    ///   - metrics: Where activity is counted; `nil` (the default) records no metrics.
    public init(logging: CacheActivityLogger? = nil, metrics: CacheActivityMetrics? = nil) {
        self.logging = logging
        self.metrics = metrics
    }

    /// Creates a monitor that logs to `logger` and records metrics, both under `label`.
    ///
    /// - Parameters:
    ///   - label: The cache's name: the `cache` metadata value of each message and the `cache`
    ///     dimension of each metric.
    ///   - logger: Where activity is logged, at the levels of ``CacheActivityLogger/Levels/default``;
    ///     `nil` (the default) logs nothing.
    ///   - keys: Whether messages carry the key. Defaults to ``CacheActivityLogger/KeyLogging/logged``.
    ///   - metrics: Whether to record metrics (default `true`), named as in
    ///     ``CacheActivityMetrics`` with the prefix `cachekit`.
    ///   - metricsFactory: Where the metrics are created; `nil` (the default) uses
    ///     `MetricsSystem.factory`. Ignored when `metrics` is `false`.
    public init(
        label: String,
        logger: Logger? = nil,
        keys: CacheActivityLogger.KeyLogging = .logged,
        metrics: Bool = true,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.logging = logger.map { CacheActivityLogger(label: label, logger: $0, keys: keys) }
        self.metrics = metrics ? CacheActivityMetrics(label: label, factory: metricsFactory) : nil
    }

    /// Whether the monitor does nothing: neither logging nor metrics.
    public var isEmpty: Bool { logging == nil && metrics == nil }

    /// An activity observer for `cache` that logs, counts, updates the size meters and then calls
    /// `observer`. Install it as `cache.activityObserver`, or use `cache.enableMonitoring(_:forwardingTo:)`,
    /// which also sets the size meters at once.
    ///
    /// - Parameters:
    ///   - cache: The cache whose size the meters show. Held weakly.
    ///   - observer: Called last with each activity, so that the cache can keep an observer of
    ///     your own. `nil` (the default) calls nothing more.
    public func observer<Monitored: MonitorableCache>(
        for cache: Monitored,
        forwardingTo observer: Monitored.ActivityObserver? = nil
    ) -> Monitored.ActivityObserver {
        cache.observer(reportingTo: self, forwardingTo: observer)
    }

    /// Logs and counts `activity`, and updates the size meters from `cache` (if it is still
    /// there) when the activity may have changed its size.
    func report<Key>(_ activity: CacheActivity<Key>, sizeOf cache: (any CacheSize)?) {
        logging?.log(activity)
        guard let metrics else { return }
        metrics.record(activity)
        if activity.changesSize, let cache {
            metrics.recordSize(count: cache.count, totalCost: cache.totalCost)
        }
    }
}

extension CacheActivity {
    /// Whether the activity may have changed the cache's count or total cost.
    var changesSize: Bool {
        switch self {
        case .write, .removal: true
        case .hit, .miss, .load: false
        }
    }
}
#endif
