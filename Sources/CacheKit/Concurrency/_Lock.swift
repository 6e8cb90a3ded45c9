import Synchronization
import _CacheKitShims

/// The one lock CacheKit takes: a mutual-exclusion lock that keeps its throughput when more
/// threads contend for it than there are cores.
///
/// On Linux it is one 32-bit word over a plain futex: bit 0 says the lock is held, bit 1 that a
/// sleeper has been woken and not yet run, and the bits above count the threads registered to
/// sleep on it.
/// - Taking a free lock is one compare-and-exchange. A thread that finds it held spins a bounded
///   number of times (``spinLimit``) and takes it the moment it is free; only then does it
///   register and sleep on the futex.
/// - Releasing it is one atomic subtraction; when threads sleep on it and none has been woken
///   already, the release wakes one (`FUTEX_WAKE`, a system call).
/// - A released lock goes to whichever thread takes it first, usually one that is running, never
///   to a sleeper chosen in advance; a woken sleeper that finds it taken again goes back to sleep
///   without waking another. So a lock contended by more threads than there are cores keeps
///   handing itself between running threads, and the system calls stay few.
///
/// `Synchronization.Mutex` on Linux locks with `FUTEX_LOCK_PI`, a priority-inheritance futex whose
/// release hands the lock to a waiting thread: every contended release then waits for that thread
/// to be scheduled, and throughput falls by orders of magnitude once threads outnumber cores.
///
/// Elsewhere it is `Synchronization.Mutex` (on Apple platforms an `os_unfair_lock`, which also lets
/// a running thread take a released lock).
///
/// The word lives in memory of its own, so a `_Lock` may be moved; the memory goes with the lock.
/// Every lock and unlock is an atomic operation that ThreadSanitizer sees, and ``lock()`` and
/// ``unlock()`` also report the edge under the lock's address (see ``_ThreadSanitizer``), since the
/// futex's waiting is not instrumented.
@usableFromInline
package struct _Lock: ~Copyable, @unchecked Sendable {
    #if os(Linux)
    @usableFromInline let word: UnsafeMutablePointer<Atomic<UInt32>>
    #else
    @usableFromInline let mutex: UnsafeMutablePointer<Mutex<Void>>
    #endif
    @usableFromInline let tsanAcquire = _ThreadSanitizer.acquire
    @usableFromInline let tsanRelease = _ThreadSanitizer.release

    /// The word's bits (Linux): held, a sleeper woken, and one registered sleeper.
    @usableFromInline static var held: UInt32 { 1 }
    @usableFromInline static var woken: UInt32 { 2 }
    @usableFromInline static var sleeper: UInt32 { 4 }

    /// How many times a thread that finds the lock held checks it again before it sleeps: long
    /// enough to outlast a critical section of a few hundred nanoseconds, short enough that a
    /// thread whose holder is descheduled soon gives up its core.
    @usableFromInline static var spinLimit: Int { 100 }

    /// A free lock.
    @inlinable
    package init() {
        #if os(Linux)
        word = .allocate(capacity: 1)
        word.initialize(to: Atomic(0))
        #else
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: Mutex(()))
        #endif
    }

    deinit {
        #if os(Linux)
        word.deinitialize(count: 1)
        word.deallocate()
        #else
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        #endif
    }

    /// The address ThreadSanitizer's annotations name.
    @inlinable
    var address: UnsafeRawPointer {
        #if os(Linux)
        UnsafeRawPointer(word)
        #else
        UnsafeRawPointer(mutex)
        #endif
    }

    /// Takes the lock, waiting as long as another thread holds it. Not reentrant.
    ///
    /// - Complexity: O(1) when free: one compare-and-exchange.
    @inlinable
    @inline(__always)
    package borrowing func lock() {
        #if os(Linux)
        if !word.pointee.compareExchange(expected: 0, desired: Self.held, ordering: .acquiring).exchanged {
            lockContended()
        }
        #else
        mutex.pointee._unsafeLock()
        #endif
        tsanAcquire?(address)
    }

    /// Takes the lock, as ``lock()`` does; returns whether it had to wait for another thread.
    ///
    /// - Complexity: O(1) when free: one compare-and-exchange.
    @inlinable
    @inline(__always)
    package borrowing func lockNotingContention() -> Bool {
        #if os(Linux)
        var contended = false
        if !word.pointee.compareExchange(expected: 0, desired: Self.held, ordering: .acquiring).exchanged {
            lockContended()
            contended = true
        }
        tsanAcquire?(address)
        return contended
        #else
        if tryLock() { return false }
        lock()
        return true
        #endif
    }

    /// Takes the lock if it is free; returns whether it did. Never waits.
    @inlinable
    package borrowing func tryLock() -> Bool {
        #if os(Linux)
        var state = word.pointee.load(ordering: .relaxed)
        while state & Self.held == 0 {
            let (exchanged, current) = word.pointee.compareExchange(
                expected: state,
                desired: state | Self.held,
                ordering: .acquiring
            )
            if exchanged {
                tsanAcquire?(address)
                return true
            }
            state = current
        }
        return false
        #else
        guard mutex.pointee._unsafeTryLock() else { return false }
        tsanAcquire?(address)
        return true
        #endif
    }

    /// Releases the lock, which the calling thread holds.
    ///
    /// - Complexity: O(1): one atomic subtraction, and a futex wake only when a thread sleeps on
    ///   the lock and none has been woken yet.
    @inlinable
    @inline(__always)
    package borrowing func unlock() {
        tsanRelease?(address)
        #if os(Linux)
        let state = word.pointee.subtract(Self.held, ordering: .releasing).newValue
        if state >= Self.sleeper { wakeSleeper(state) }
        #else
        mutex.pointee._unsafeUnlock()
        #endif
    }

    /// Runs `body` while holding the lock.
    @inlinable
    @inline(__always)
    package borrowing func withLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    #if os(Linux)
    /// The lock was held: spin a little, then register as a sleeper and sleep until it is free.
    @usableFromInline
    borrowing func lockContended() {
        var state = word.pointee.load(ordering: .relaxed)
        for _ in 0..<Self.spinLimit {
            if state & Self.held == 0 {
                let (exchanged, current) = word.pointee.compareExchange(
                    expected: state,
                    desired: state | Self.held,
                    ordering: .acquiring
                )
                if exchanged { return }
                state = current
                continue
            }
            _cachekit_spin_hint()
            state = word.pointee.load(ordering: .relaxed)
        }
        state = word.pointee.add(Self.sleeper, ordering: .relaxed).newValue
        while true {
            if state & Self.held == 0 {
                // Take it, leave the sleepers, and consume any wake: this thread is running.
                let (exchanged, current) = word.pointee.compareExchange(
                    expected: state,
                    desired: (state - Self.sleeper) & ~Self.woken | Self.held,
                    ordering: .acquiring
                )
                if exchanged { return }
                state = current
                continue
            }
            if state & Self.woken != 0 {
                // This thread is awake, so the wake is consumed: the next release wakes another,
                // which it must, since this thread is about to sleep.
                let (exchanged, current) = word.pointee.compareExchange(
                    expected: state,
                    desired: state & ~Self.woken,
                    ordering: .relaxed
                )
                state = current
                guard exchanged else { continue }
                state &= ~Self.woken
            }
            // Sleeps only while the word still says held, no wake pending: any release changes it.
            _cachekit_futex_wait(UnsafeRawPointer(word), state)
            state = word.pointee.load(ordering: .relaxed)
        }
    }

    /// After a release that left `state` (free, with registered sleepers): wakes one sleeper
    /// unless one is awake already or another thread has taken the lock (its release wakes).
    @usableFromInline
    borrowing func wakeSleeper(_ state: UInt32) {
        var state = state
        while state >= Self.sleeper && state & (Self.held | Self.woken) == 0 {
            let (exchanged, current) = word.pointee.compareExchange(
                expected: state,
                desired: state | Self.woken,
                ordering: .relaxed
            )
            if exchanged {
                _cachekit_futex_wake_one(UnsafeRawPointer(word))
                return
            }
            state = current
        }
    }
    #endif
}

/// A value guarded by a ``_Lock``: `Synchronization.Mutex`'s shape (the value is reached only
/// inside `withLock`), over CacheKit's lock.
@usableFromInline
package struct _Mutex<Value: ~Copyable>: ~Copyable {
    @usableFromInline let lock = _Lock()
    @usableFromInline let value: UnsafeMutablePointer<Value>

    /// A lock guarding `initialValue`.
    @inlinable
    package init(_ initialValue: consuming sending Value) {
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    @inlinable
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value.pointee)
    }
}

extension _Mutex: @unchecked Sendable where Value: ~Copyable {}
