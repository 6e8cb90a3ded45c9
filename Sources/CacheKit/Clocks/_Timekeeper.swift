import Synchronization

/// A cache's clock, type-erased, reading nanoseconds since about when the cache was created (on
/// the default clock, since the last reading `_Ticker` had published by then).
///
/// The clock is read outside the cache's lock (an injected clock is user code), and only while
/// `isActive`: from creation if the cache's ``Expiration`` has any duration, otherwise from the
/// first write with a per-entry `expiresAfter`. A cache that never expires anything never reads
/// its clock. An operation that raced with that first write may read "unknown" (`-1`): it then
/// sweeps nothing and extends no deadline, as if it had run just before the write.
///
/// Not API: public only as the type of `_StateHost._timekeeper`; every member is internal.
public final class _Timekeeper: Sendable {
    @usableFromInline let read: @Sendable () -> Int64
    @usableFromInline let sleep: @Sendable (Duration) async throws -> Void
    @usableFromInline let active: Atomic<Bool>
    #if os(Linux)
    /// Whether the clock is the default one, read through `ticker` (see `_Ticker`) minus `start`.
    @usableFromInline let readsTicker: Bool
    @usableFromInline let ticker: _Ticker
    /// `ticker.cells`, read without reference counting (see `_Ticker.cells`).
    /// Immutable, and the cells it points to are atomics.
    @usableFromInline nonisolated(unsafe) let tickerCells: UnsafeMutablePointer<_Ticker.Cells>
    @usableFromInline let start: Int64
    #endif

    convenience init<C: Clock>(_ clock: C, active: Bool) where C.Duration == Duration {
        #if os(Linux)
        if C.self == ContinuousClock.self {
            self.init(ticker: .shared, active: active)
            return
        }
        #endif
        let start = clock.now
        self.init(
            active: active,
            sleep: { try await clock.sleep(for: $0) },
            // Below Int64.max, which deadlines use for "never": a reading saturated there (a
            // clock ~292 years past the cache's start) would expire entries that never expire.
            read: { Swift.min(Swift.max(0, start.duration(to: clock.now)._nanoseconds), Int64.max - 1) }
        )
    }

    /// A timekeeper reading `read`.
    init(
        active: Bool,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        read: @escaping @Sendable () -> Int64
    ) {
        self.read = read
        self.sleep = sleep
        self.active = Atomic(active)
        #if os(Linux)
        ticker = .shared
        tickerCells = ticker.cells
        start = 0
        readsTicker = false
        #endif
    }

    #if os(Linux)
    /// A timekeeper on the default clock, reading `ticker` (the shared one, but for tests).
    init(ticker: _Ticker, active: Bool) {
        // The last published reading, not `ticker.now()`, which would start the ticking for a
        // cache that may never expire.
        let start = ticker.lastReading
        self.ticker = ticker
        tickerCells = ticker.cells
        self.start = start
        readsTicker = true
        // Not called: `reading()` loads the ticker itself, without this closure's reference counting.
        read = { Swift.max(0, ticker.now() &- start) }
        sleep = { try await ContinuousClock().sleep(for: $0) }
        self.active = Atomic(active)
    }
    #endif

    @inlinable
    var isActive: Bool { active.load(ordering: .relaxed) }

    /// Now, or -1 ("unknown") while the cache has nothing that expires.
    @inlinable
    @inline(__always)
    func now() -> Int64 { isActive ? reading() : -1 }

    /// Now, whether or not the cache has anything that expires.
    @inlinable
    @inline(__always)
    func reading() -> Int64 {
        #if os(Linux)
        // Published readings only grow, so this is never below `start`; the clamp keeps a reading
        // from ever meaning "unknown" (-1) all the same.
        if readsTicker { return Swift.max(0, _Ticker.now(tickerCells, orWake: ticker) &- start) }
        #endif
        return read()
    }

    /// A task that runs `body` every `interval` (measured by `sleep`) until `body` returns
    /// `false` or the task is cancelled. A task cancelled while it sleeps does not run `body`
    /// again, even when its sleep ended before the cancellation (a manual clock advanced just
    /// before `stopAutosave()`, say): a stopped autosave or monitor must not act after the call
    /// that stopped it returned.
    static func repeating(
        every interval: Duration,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        _ body: @escaping @Sendable () -> Bool
    ) -> Task<Void, Never> {
        Task.detached {
            while true {
                do { try await sleep(interval) } catch { return }
                guard !Task.isCancelled, body() else { return }
            }
        }
    }

    /// Now; from here on, every operation reads the clock.
    @inlinable
    func activate() -> Int64 {
        if !isActive { active.store(true, ordering: .sequentiallyConsistent) }
        return reading()
    }
}
