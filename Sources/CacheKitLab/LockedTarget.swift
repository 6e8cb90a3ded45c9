import CacheKit
import CacheKitBenchSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A target behind CacheKit's lock (`_Lock`), taken for each operation as `Cache` takes its
/// own: what the lock alone adds to a sketch or to `Dictionary`.
final class LockedTarget<Target: BenchTarget>: BenchTarget, @unchecked Sendable {
    // Unchecked: every access to `target` is inside `lock`.
    private let target: Target
    private let lock = _Lock()

    init(_ target: Target) { self.target = target }

    func get(_ key: Int) -> Int? {
        target.prefetch(key)
        return lock.withLock { target.get(key) }
    }

    func set(_ value: Int, _ key: Int) {
        target.prefetch(key)
        lock.withLock { target.set(value, key) }
    }
}

/// A target behind the standard library's `Synchronization.Mutex`, taken for each operation: on
/// Linux a priority-inheritance futex, whose release hands the lock to a sleeping waiter.
final class MutexLockedTarget<Target: BenchTarget>: BenchTarget, @unchecked Sendable {
    // Unchecked: every access to `target` is inside `lock`.
    private let target: Target
    private let lock = Mutex<Void>(())

    init(_ target: Target) { self.target = target }

    func get(_ key: Int) -> Int? {
        target.prefetch(key)
        return lock.withLock { _ in target.get(key) }
    }

    func set(_ value: Int, _ key: Int) {
        target.prefetch(key)
        lock.withLock { _ in target.set(value, key) }
    }
}

/// A target behind a test-and-test-and-set spin lock whose unlock is a releasing store, which
/// on x86 is a plain `mov`: what `LockedTarget` would cost with a lock that, unlike CacheKit's
/// (whose unlock is a locked subtraction, so that it can tell whether a waiter sleeps in the
/// kernel), does not wait out the critical section's cache misses
/// on the way out. A measurement, not a recommendation: a lock that never sleeps burns a core
/// while it waits and lets a descheduled holder stall every waiter, which a general-purpose
/// cache must not do.
final class SpinLockedTarget<Target: BenchTarget>: BenchTarget, @unchecked Sendable {
    // Unchecked: every access to `target` is between `lock()` and `unlock()`.
    private let target: Target
    private let held = Atomic<Bool>(false)

    init(_ target: Target) { self.target = target }

    @inline(__always)
    private func lock() {
        while held.exchange(true, ordering: .acquiring) {
            while held.load(ordering: .relaxed) { sched_yield() }
        }
    }

    @inline(__always)
    private func unlock() { held.store(false, ordering: .releasing) }

    func get(_ key: Int) -> Int? {
        target.prefetch(key)
        lock()
        defer { unlock() }
        return target.get(key)
    }

    func set(_ value: Int, _ key: Int) {
        target.prefetch(key)
        lock()
        defer { unlock() }
        target.set(value, key)
    }
}
