/// A standing order to act when a ``MemoryPressureMonitor`` reports pressure, returned by
/// ``MemoryPressureMonitor/subscribe(at:_:)`` and `Cache.respond(to:at:with:)`.
///
/// It lasts until ``cancel()`` is called or, for a cache's subscription, the cache is
/// deinitialized (which cancels it; the subscription never keeps its cache alive). If the monitor
/// goes away first, the subscription stays uncancelled but is never called again.
public final class MemoryPressureSubscription: Sendable {
    /// The cancellation token; the same type a cache keeps for its expiration triggers, so the
    /// cache's `deinit` cancels it along with them.
    let _token: ExpirationTrigger

    init(token: ExpirationTrigger) { _token = token }

    /// Stops the subscription: no reading calls it after this returns, except that a reading on
    /// another thread that was already calling the subscribers may still call it once, if its
    /// turn was decided before the cancel (a handler already running finishes too). Cancelled
    /// from a handler of the same reading, or with no reading under way, it is exact. Calling
    /// it again does nothing.
    ///
    /// (Waiting for such a call to finish would deadlock a handler that cancels its own
    /// subscription, so the handler should tolerate one late call, as a cache's does.)
    public func cancel() { _token.cancel() }

    /// Whether ``cancel()`` was called or the subscribing cache went away.
    public var isCancelled: Bool { _token.isCancelled }
}
