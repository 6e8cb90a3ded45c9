#if Observability
import CacheKit

extension SerialCache: MonitorableCache {
    /// An activity observer that logs and counts each activity through `monitor`, updates its
    /// size meters from this cache (held weakly), and then calls `observer`.
    ///
    /// - Parameters:
    ///   - monitor: What to log and count.
    ///   - observer: Called last with each activity; `nil` calls nothing more.
    public func observer(
        reportingTo monitor: CacheMonitor,
        forwardingTo observer: ((CacheActivity<Key>) -> Void)?
    ) -> (CacheActivity<Key>) -> Void {
        { [weak self] activity in
            monitor.report(activity, sizeOf: self)
            observer?(activity)
        }
    }
}
#endif
