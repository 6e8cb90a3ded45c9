#if os(Linux)
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The time for caches on the default clock, on Linux: a reading of `CLOCK_MONOTONIC` that one
/// process-wide background thread refreshes every millisecond, so that an expiring cache reads
/// the time with one relaxed atomic load on every operation instead of a call into the vDSO (the
/// coarse clock this replaced: ~8 ns, plus a retain and a release of the closure that read it).
/// Measured with `cachekit bench --subjects Cache,Cache+ttl --policies lru --threads 1`, three
/// runs alternating with the build before: a time to live cost +3–11% on a hit instead of
/// +17–27%, +8–13% on a miss instead of +24–31%.
///
/// Idle, it costs nothing: after `parkAfter` ticks (a second) the thread parks, and the next
/// reader finds it parked, reads the clock itself, publishes that reading and wakes it (readers
/// racing it take its reading). Under steady use that happens once a second. So a reading is the time
/// of the last tick or wake-up: at most 1 ms old while the thread gets the CPU when it asks (on a
/// machine so busy that it waits, up to that wait longer), never ahead of the time. Published
/// readings never go backwards: only the ticking thread and the one reader that wakes it publish,
/// and the thread is blocked while that reader does.
///
/// The reading and the parked flag share one atomic word (`reading << 1 | parked`), so a reader
/// cannot pair a stale reading with a fresh flag, whatever the memory ordering.
///
/// The thread starts at the first reading, so a process whose caches never expire anything has
/// none; it never exits (parked, it sleeps). A child forked without exec has no thread: a fork
/// handler parks its ticker, so that the child's first reading starts a new one. Tests build
/// tickers without a thread and call `tick()` themselves.
@usableFromInline
final class _Ticker: @unchecked Sendable {
    /// What readers load, behind a pointer: a method call on the ticker (a class) costs a retain
    /// and a release, which a load through a pointer that `_Timekeeper` keeps does not.
    /// Allocated with the ticker and freed with it; the shared one lives as long as the process.
    @usableFromInline let cells: UnsafeMutablePointer<Cells>
    let wakeUps = DispatchSemaphore(value: 0)
    let parkAfter: Int
    /// Ticks since the thread last woke; touched by the ticking thread only.
    let ticksSinceWake = Atomic<Int>(0)
    /// The thread's pause between ticks in nanoseconds, or `nil` for a ticker that tests drive.
    let interval: Int?
    let threadStarted = Atomic<Bool>(false)

    /// The one that caches use. Its thread starts at the first reading.
    @usableFromInline static let shared = _Ticker(intervalNanoseconds: 1_000_000, parkAfter: 1000)

    /// A parked ticker whose thread (with an interval) starts at the first reading.
    init(intervalNanoseconds interval: Int?, parkAfter: Int) {
        precondition(parkAfter > 0, "parkAfter must be positive (got \(parkAfter))")
        if let interval { precondition(interval > 0, "interval must be positive (got \(interval))") }
        self.interval = interval
        self.parkAfter = parkAfter
        cells = .allocate(capacity: 1)
        cells.initialize(to: Cells(state: Atomic(Self.clock() << 1 | 1)))
    }

    deinit {
        cells.deinitialize(count: 1)
        cells.deallocate()
    }

    @usableFromInline
    struct Cells: ~Copyable {
        /// The last published reading (nanoseconds of `CLOCK_MONOTONIC`) shifted left by one, and
        /// in the low bit whether the thread is parked (readers then read the clock themselves).
        @usableFromInline let state: Atomic<Int64>

        init(state: consuming Atomic<Int64>) {
            self.state = state
        }
    }

    /// The last published reading (not a reading of the clock).
    var lastReading: Int64 { cells.pointee.state.load(ordering: .relaxed) >> 1 }
    var isParked: Bool { cells.pointee.state.load(ordering: .relaxed) & 1 != 0 }

    /// Now, from the last tick while the thread runs; otherwise read from the clock, and the
    /// thread woken.
    ///
    /// - Complexity: O(1): one relaxed atomic load while the thread runs.
    @inlinable
    @inline(__always)
    func now() -> Int64 { Self.now(cells, orWake: self) }

    /// `ticker.now()` for a caller that keeps `ticker.cells`: no reference counting while the
    /// thread runs.
    @inlinable
    @inline(__always)
    static func now(_ cells: UnsafeMutablePointer<Cells>, orWake ticker: _Ticker) -> Int64 {
        let state = cells.pointee.state.load(ordering: .relaxed)
        return state & 1 == 0 ? state >> 1 : ticker.wake(parked: state)
    }

    /// Reads the clock; the caller that moves the ticker out of the parked `state` publishes that
    /// reading and wakes the thread (or starts it, the first time). A caller that another beat to
    /// it returns what that one published (had it returned its own, later reading, its next read of
    /// the published one would go back in time); if the ticker parked again meanwhile, it tries
    /// again with that state.
    @usableFromInline
    @inline(never)
    func wake(parked state: Int64) -> Int64 {
        var expected = state
        while true {
            let now = Self.clock()
            let (woke, current) = cells.pointee.state.compareExchange(
                expected: expected,
                desired: now << 1,
                ordering: .relaxed
            )
            if woke {
                if let interval, !threadStarted.exchange(true, ordering: .relaxed) {
                    startThread(intervalNanoseconds: interval)
                } else {
                    wakeUps.signal()
                }
                return now
            }
            if current & 1 == 0 { return current >> 1 }
            expected = current
        }
    }

    /// Publishes a fresh reading; after `parkAfter` of them since the last wake-up, publishes it
    /// parked and returns `false` (the caller then waits for `waitForWake`). For the ticking
    /// thread only.
    @discardableResult
    func tick() -> Bool {
        let ticks = ticksSinceWake.load(ordering: .relaxed) + 1
        let parks = ticks >= parkAfter
        ticksSinceWake.store(parks ? 0 : ticks, ordering: .relaxed)
        cells.pointee.state.store(Self.clock() << 1 | (parks ? 1 : 0), ordering: .relaxed)
        return !parks
    }

    /// Blocks until a reader wakes the ticker (at once if one already has since it parked), or
    /// until `timeout`; returns whether it was woken.
    @discardableResult
    func waitForWake(timeout: DispatchTime = .distantFuture) -> Bool {
        wakeUps.wait(timeout: timeout) == .success
    }

    /// Parks the ticker in a child forked without exec, where its thread does not exist.
    func resetAfterFork() {
        threadStarted.store(false, ordering: .relaxed)
        ticksSinceWake.store(0, ordering: .relaxed)
        cells.pointee.state.store(Self.clock() << 1 | 1, ordering: .relaxed)
    }

    private func startThread(intervalNanoseconds interval: Int) {
        if self === Self.shared { Self.installForkHandler }
        let thread = Thread { [self] in
            while true {
                var pause = timespec(tv_sec: interval / 1_000_000_000, tv_nsec: interval % 1_000_000_000)
                var left = timespec()
                while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
                if !tick() { waitForWake() }
            }
        }
        thread.name = "CacheKit clock"
        thread.start()
    }

    /// Registered once, with the shared ticker's first thread.
    private static let installForkHandler: Void = {
        pthread_atfork(nil, nil) { _Ticker.shared.resetAfterFork() }
    }()

    /// `CLOCK_MONOTONIC` in nanoseconds.
    static func clock() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }
}
#endif
