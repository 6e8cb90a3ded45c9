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
