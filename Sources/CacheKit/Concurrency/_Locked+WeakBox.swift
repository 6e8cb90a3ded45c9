/// A `Sendable` state guarded by a ``_Lock``, in an object of its own that can be shared.
///
/// The small locks outside the cache's hot path (``ManualClock``, ``ExpirationTrigger``,
/// SharedCache's write queue) use it.
@usableFromInline
final class _Locked<State: Sendable>: @unchecked Sendable {
    @usableFromInline let lock = _Lock()
    @usableFromInline var state: State

    @usableFromInline
    init(_ state: State) { self.state = state }

    /// Runs `body` with the state while holding the lock.
    @inlinable
    func withLock<R: Sendable>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// A weak reference that may cross tasks: background sweeps, expiration triggers, memory-pressure
/// subscriptions and a shared cache's intervals hold their cache this way, so that they never
/// keep it alive.
final class WeakBox<Object: AnyObject>: @unchecked Sendable {
    // Written once in `init`; reading a weak reference is thread-safe, and the caches it holds
    // take their own locks.
    weak var object: Object?

    init(_ object: Object) { self.object = object }
}
