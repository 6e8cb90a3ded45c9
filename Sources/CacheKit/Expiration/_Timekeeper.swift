import Synchronization

/// A cache's clock, type-erased, reading nanoseconds since the cache was created.
///
/// The clock is read outside the cache's lock (an injected clock is user code), and only while
/// `isActive`: from creation if the cache's ``Expiration`` has any duration, otherwise from the
/// first write with a per-entry `expiresAfter`. A cache that never expires anything never reads
/// its clock. An operation that raced with that first write may read "unknown" (`-1`): it then
/// sweeps nothing and extends no deadline, as if it had run just before the write.
@usableFromInline
final class _Timekeeper: Sendable {
    @usableFromInline let read: @Sendable () -> Int64
    @usableFromInline let sleep: @Sendable (Duration) async throws -> Void
    @usableFromInline let active: Atomic<Bool>

    init<C: Clock>(_ clock: C, active: Bool) where C.Duration == Duration {
        let start = clock.now
        read = { Swift.max(0, start.duration(to: clock.now)._nanoseconds) }
        sleep = { try await clock.sleep(for: $0) }
        self.active = Atomic(active)
    }

    @inlinable
    var isActive: Bool { active.load(ordering: .relaxed) }

    /// Now, or -1 ("unknown") while the cache has nothing that expires.
    @inlinable
    func now() -> Int64 { isActive ? read() : -1 }

    /// A task that runs `body` every `interval` (measured by `sleep`) until `body` returns
    /// `false` or the task is cancelled.
    static func repeating(
        every interval: Duration,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        _ body: @escaping @Sendable () -> Bool
    ) -> Task<Void, Never> {
        Task.detached {
            while true {
                do { try await sleep(interval) } catch { return }
                guard body() else { return }
            }
        }
    }

    /// Now; from here on, every operation reads the clock.
    @inlinable
    func activate() -> Int64 {
        if !isActive { active.store(true, ordering: .sequentiallyConsistent) }
        return read()
    }
}
