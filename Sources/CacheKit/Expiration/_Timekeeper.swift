import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        if C.self == ContinuousClock.self, let coarse = Self.coarseReader() {
            read = coarse
        } else {
            let start = clock.now
            read = { Swift.max(0, start.duration(to: clock.now)._nanoseconds) }
        }
        sleep = { try await clock.sleep(for: $0) }
        self.active = Atomic(active)
    }

    /// A fast reader for the default clock: the kernel's coarse monotonic clock, when its
    /// resolution is 10 ms or finer (typically 1-4 ms). Reading `ContinuousClock` costs ~90 ns
    /// here, the coarse clock ~8 ns, and an expiring cache reads the time on every operation.
    /// Unlike `ContinuousClock` (`CLOCK_BOOTTIME`), it stops while the machine is suspended, so
    /// time asleep does not age entries (documented in the README).
    static func coarseReader() -> (@Sendable () -> Int64)? {
        #if os(Linux)
        var resolution = timespec()
        guard clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0,
            resolution.tv_sec == 0, resolution.tv_nsec <= 10_000_000
        else { return nil }
        @Sendable func nanoseconds() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
            return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
        }
        let start = nanoseconds()
        return { nanoseconds() &- start }
        #else
        return nil
        #endif
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
