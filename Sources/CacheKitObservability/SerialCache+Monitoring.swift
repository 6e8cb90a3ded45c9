import CacheKit
import Logging
import Metrics

extension SerialCache {
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
        forwardingTo observer: ((CacheActivity<Key>) -> Void)? = nil
    ) {
        guard !monitor.isEmpty else {
            activityObserver = observer
            return
        }
        monitor.metrics?.recordSize(count: count, totalCost: totalCost)
        activityObserver = monitor.observer(for: self, forwardingTo: observer)
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
        enableMonitoring(
            CacheMonitor(label: label, logger: logger, keys: keys, metrics: metrics, metricsFactory: metricsFactory)
        )
    }

    /// Removes the activity observer, whether a monitor or your own: the same as setting
    /// `activityObserver` to `nil`.
    public func disableMonitoring() {
        activityObserver = nil
    }
}
