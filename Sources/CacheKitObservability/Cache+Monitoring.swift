#if Observability
import CacheKit

extension Cache: MonitorableCache {
    /// An activity observer that logs and counts each activity through `monitor`, updates its
    /// size meters from this cache (held weakly), and then calls `observer`. It runs on whichever
    /// thread used the cache, after the cache's lock is released.
    ///
    /// - Parameters:
    ///   - monitor: What to log and count.
    ///   - observer: Called last with each activity; `nil` calls nothing more.
    public func observer(
        reportingTo monitor: CacheMonitor,
        forwardingTo observer: (@Sendable (CacheActivity<Key>) -> Void)?
    ) -> @Sendable (CacheActivity<Key>) -> Void {
        SendableMonitorObserver(monitor: monitor, cache: self, observer: observer).report
    }
}

/// The observer `Cache` installs for a monitor, as a method of a `Sendable` class rather than a
/// closure, so that it uses none of `Key`'s conformances in the closure's isolation: it works for
/// keys whose conformances are isolated to an actor too.
final class SendableMonitorObserver<Key>: Sendable {
    private let monitor: CacheMonitor
    private let cache: WeakCacheReference
    private let observer: (@Sendable (CacheActivity<Key>) -> Void)?

    init(monitor: CacheMonitor, cache: some CacheSize, observer: (@Sendable (CacheActivity<Key>) -> Void)?) {
        self.monitor = monitor
        self.cache = WeakCacheReference(cache)
        self.observer = observer
    }

    @Sendable func report(_ activity: CacheActivity<Key>) {
        monitor.report(activity, sizeOf: cache.object)
        observer?(activity)
    }
}
#endif
