#if Observability
import CacheKit
import Logging
import Metrics

/// A cache that a ``CacheMonitor`` can watch: `Cache` and `SerialCache` conform.
///
/// The monitoring operations, `enableMonitoring(_:forwardingTo:)`,
/// ``enableMonitoring(label:logger:keys:metrics:metricsFactory:)`` and ``disableMonitoring()``,
/// are written once here for both caches. The two differ only in their observer's type: a
/// `Cache`'s is `@Sendable`, because it runs on whichever thread used the cache, and a
/// `SerialCache`'s is a plain closure.
public protocol MonitorableCache: AnyObject {
    /// The type of the cache's keys.
    associatedtype Key: Hashable
    /// The type of the cache's activity observer: `@Sendable (CacheActivity<Key>) -> Void` for a
    /// `Cache`, `(CacheActivity<Key>) -> Void` for a `SerialCache`.
    associatedtype ActivityObserver

    /// The cache's one activity observer, called after each hit, miss, write, removal and load,
    /// outside the cache's lock.
    var activityObserver: ActivityObserver? { get set }
    /// The number of entries in the cache.
    var count: Int { get }
    /// The sum of the costs of the cache's entries.
    var totalCost: Int { get }

    /// An activity observer that logs and counts each activity through `monitor`, updates its
    /// size meters from this cache (held weakly) after a write or a removal, and then calls
    /// `observer`: what `enableMonitoring(_:forwardingTo:)` installs.
    ///
    /// - Parameters:
    ///   - monitor: What to log and count.
    ///   - observer: Called last with each activity; `nil` calls nothing more.
    func observer(reportingTo monitor: CacheMonitor, forwardingTo observer: ActivityObserver?) -> ActivityObserver
}

extension MonitorableCache {
    /// Installs `monitor` as this cache's activity observer (replacing any observer) and sets its
    /// size meters to the cache's current `count` and `totalCost`; an empty monitor installs
    /// `observer` alone.
    func install(_ monitor: CacheMonitor, forwardingTo observer: ActivityObserver?) {
        guard !monitor.isEmpty else {
            activityObserver = observer
            return
        }
        monitor.metrics?.recordSize(count: count, totalCost: totalCost)
        activityObserver = self.observer(reportingTo: monitor, forwardingTo: observer)
    }

    /// Logs this cache's activity to `logger` and records its metrics, both under `label`,
    /// through one activity observer (replacing any observer).
    ///
    /// ```swift
    /// images.enableMonitoring(label: "images", logger: logger)
    /// // hits, misses and writes at trace, evictions and loads at debug, failed loads at warning;
    /// // cachekit_hits_total{cache="images"}, cachekit_entries{cache="images"}, ...
    /// ```
    ///
    /// Shorthand for `enableMonitoring(CacheMonitor(label:logger:keys:metrics:metricsFactory:))`;
    /// see ``CacheActivityLogger`` for the messages and ``CacheActivityMetrics`` for the metrics.
    ///
    /// - Parameters:
    ///   - label: The cache's name in messages (`cache` metadata) and metrics (`cache` dimension).
    ///   - logger: Where activity is logged; `nil` (the default) logs nothing.
    ///   - keys: Whether messages carry the key. Defaults to ``CacheActivityLogger/KeyLogging/logged``.
    ///   - metrics: Whether to record metrics (default `true`).
    ///   - metricsFactory: Where the metrics are created; `nil` (the default) uses
    ///     `MetricsSystem.factory`.
    public func enableMonitoring(
        label: String,
        logger: Logger? = nil,
        keys: CacheActivityLogger.KeyLogging = .logged,
        metrics: Bool = true,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        install(
            CacheMonitor(label: label, logger: logger, keys: keys, metrics: metrics, metricsFactory: metricsFactory),
            forwardingTo: nil
        )
    }

    /// Removes the activity observer, whether a monitor or your own: the same as setting
    /// `activityObserver` to `nil`.
    public func disableMonitoring() {
        activityObserver = nil
    }
}

// `enableMonitoring(_:forwardingTo:)` is declared once for each observer type, so that the
// observer can be written as a trailing closure.

extension MonitorableCache where ActivityObserver == @Sendable (CacheActivity<Key>) -> Void {
    /// Installs `monitor` as this cache's activity observer (replacing any observer) and sets its
    /// size meters to the cache's current `count` and `totalCost`.
    ///
    /// ```swift
    /// let metrics = CacheActivityMetrics(label: "images", dimensions: [("service", "api")])
    /// images.enableMonitoring(CacheMonitor(logging: nil, metrics: metrics)) { activity in
    ///     audit(activity)                                  // your own observer, called last
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - monitor: What to log and count. An empty monitor installs `observer` alone.
    ///   - observer: Called after the monitor with each activity; `nil` (the default) calls
    ///     nothing more.
    public func enableMonitoring(
        _ monitor: CacheMonitor,
        forwardingTo observer: (@Sendable (CacheActivity<Key>) -> Void)? = nil
    ) {
        install(monitor, forwardingTo: observer)
    }
}

extension MonitorableCache where ActivityObserver == (CacheActivity<Key>) -> Void {
    /// Installs `monitor` as this cache's activity observer (replacing any observer) and sets its
    /// size meters to the cache's current `count` and `totalCost`; see the `Cache` form for an
    /// example. An empty monitor installs `observer` alone; `observer` (default `nil`) is called
    /// after the monitor with each activity.
    public func enableMonitoring(
        _ monitor: CacheMonitor,
        forwardingTo observer: ((CacheActivity<Key>) -> Void)? = nil
    ) {
        install(monitor, forwardingTo: observer)
    }
}
#endif
