/// A cache that a ``MemoryPressureMonitor`` subscription can act on: the extension point for
/// every kind of cache and every way of freeing memory.
///
/// `Cache` conforms (see `Cache+MemoryPressure.swift`). A cache with a notion of its own, such as a
/// shared cache whose eviction decider picks what may be purged (YMCache's
/// `purgeEvictableItems`), conforms by doing that in ``_respondToMemoryPressure(_:at:)`` when the
/// action is `nil` (or for an action case of its own), and gets its public `respond(to:at:with:)`
/// from ``_subscribe(to:at:with:)``.
protocol MemoryPressureResponder: AnyObject {
    /// Frees memory as `action` says; `nil` means the cache's own default (for `Cache`, its
    /// `memoryPressureAction`). `level` is the level the monitor reported.
    func _respondToMemoryPressure(_ action: MemoryPressureAction?, at level: MemoryPressureLevel)

    /// Tokens cancelled when the cache is deinitialized (its expiration triggers' list).
    var _triggers: Triggers { get }
}

extension MemoryPressureResponder {
    /// Subscribes this cache to `monitor`: `action` runs on each rise to `level` or higher, until
    /// the subscription is cancelled or the cache is deinitialized.
    ///
    /// The caller makes sure the cache may be used from the monitor's task (it is `Sendable`).
    func _subscribe(
        to monitor: MemoryPressureMonitor,
        at level: MemoryPressureLevel,
        with action: MemoryPressureAction?
    ) -> MemoryPressureSubscription {
        // Held weakly and type-erased: the subscription must neither keep the cache alive nor
        // capture the cache's type.
        let cache = WeakBox<AnyObject>(self)
        let subscription = monitor.subscribe(at: level) { reported in
            (cache.object as? any MemoryPressureResponder)?._respondToMemoryPressure(action, at: reported)
        }
        _triggers.add(subscription._token)
        return subscription
    }
}
