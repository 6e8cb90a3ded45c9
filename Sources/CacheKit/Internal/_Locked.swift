import Synchronization

/// A `Synchronization.Mutex` around a `Sendable` state, with the lock's happens-before edges
/// reported to ThreadSanitizer (see ``_ThreadSanitizer``).
///
/// The small locks outside the cache's hot path (``ManualClock``, ``ExpirationTrigger``) use it so
/// that `swift test --sanitize=thread` checks the code they guard instead of reporting every
/// access as a race.
@usableFromInline
final class _Locked<State: Sendable>: Sendable {
    @usableFromInline let mutex: Mutex<State>

    @usableFromInline
    init(_ state: State) { mutex = Mutex(state) }

    /// Runs `body` with the state while holding the lock.
    @inlinable
    func withLock<R: Sendable>(_ body: (inout State) throws -> R) rethrows -> R {
        try mutex.withLock { state in
            let address = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
            _ThreadSanitizer.acquire?(address)
            defer { _ThreadSanitizer.release?(address) }
            return try body(&state)
        }
    }
}
