/// A clock that moves only when told to: for testing code that uses expiring caches.
///
/// ```swift
/// let clock = ManualClock()
/// let cache = Cache<String, Int>(expiration: .afterWrite(.seconds(60)), clock: clock)
/// cache["a"] = 1
/// clock.advance(by: .seconds(61))
/// cache["a"]  // nil: expired
/// ```
///
/// `sleep(until:)` suspends until ``advance(by:)`` reaches the deadline (or the task is
/// cancelled), so background work scheduled on this clock runs exactly when a test advances it.
public final class ManualClock: Clock, Sendable {
    /// A moment on a ``ManualClock``: the time since the clock was created.
    public struct Instant: InstantProtocol, Sendable {
        /// The time since the clock was created.
        public var offset: Duration

        /// Creates the instant `offset` after the clock's start.
        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        public func duration(to other: Instant) -> Duration { other.offset - offset }

        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        /// Sleeps started but not yet registered, and those of them cancelled meanwhile.
        var starting: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
    }

    private let state = _Locked(State())
    /// This clock's timeline, for memoized results in a ``MemoStorage`` (see `MemoStorageBacking`):
    /// functions on one manual clock read it from the same zero, so they share one.
    let timeline = MemoStorageBacking.newTimeline()

    /// Creates a clock reading zero.
    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// The number of tasks sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock forward, waking every sleeper whose deadline has come.
    ///
    /// - Precondition: `duration` is not negative.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock.advance(by:) needs a non-negative duration (got \(duration))")
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.starting.insert(state.nextID)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    state.starting.remove(id)
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let i = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    // Not registered yet: refuse it when it registers. (Already woken: nothing to do.)
                    if state.starting.contains(id) { state.cancelled.insert(id) }
                    return nil
                }
                return state.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
