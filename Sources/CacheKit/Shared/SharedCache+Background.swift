// What a `SharedCache` runs in the background (sweeps, the eviction decider's interval, change
// batches), each task holding the cache weakly and cancelled when it goes.

extension SharedCache {
    /// A task that calls `body` with the cache every `interval` of its clock, until the cache
    /// goes or the task is cancelled.
    func repeating(
        every interval: Duration,
        _ body: @escaping @Sendable (SharedCache) -> Void
    ) -> Task<Void, Never> {
        let cache = WeakBox(self)
        return _Timekeeper.repeating(every: interval, sleep: clockSleep) {
            guard let strong = cache.object else { return false }
            body(strong)
            return true
        }
    }
}

/// The background tasks of a `SharedCache`, cancelled when it goes.
struct BackgroundTasks: Sendable {
    var sweep: Task<Void, Never>?
    var eviction: Task<Void, Never>?
    var notification: Task<Void, Never>?
    var evictionInterval: Duration?
    var notificationInterval: Duration?

    func cancelAll() {
        sweep?.cancel()
        eviction?.cancel()
        notification?.cancel()
    }
}
