/// When a `SharedCache`'s background drain runs: a state machine with no lock, clock or queue of
/// its own. The cache keeps it under its write queue's lock and runs the action each transition
/// returns after unlocking.
///
/// Writers usually apply the queue themselves (a writer that finds 128 writes queued drains
/// first); the background drain applies what stays queued once writes pause. There is at most
/// one scheduled at a time however many writes arrive, and while writers keep draining it does
/// not take the lock, but looks again later:
///
/// ```
///            writeQueued: .schedule          fired(writers drained, writes queued): .schedule
///   idle ─────────────────────────▶ scheduled ◀──────────────────────────────────┐
///    ▲                                   │  └───────────────────────────────────┘
///    └──── fired(otherwise): .drain ─────┘
///   any ── stop() ──▶ off   (writes wait for a read, flush() or a bulk operation)
/// ```
@usableFromInline
struct _DrainScheduler: Sendable, Equatable {
    @usableFromInline
    enum State: Sendable, Equatable {
        /// None is scheduled: the next write schedules one.
        case idle
        /// One is scheduled; writes leave it be.
        case scheduled
        /// None is ever scheduled (the package's tests hold writes in the queue this way).
        case off
    }

    /// What the owner does after unlocking.
    @usableFromInline
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Schedule the background drain to fire a moment from now.
        case schedule
        /// Apply the queued writes now.
        case drain
    }

    @usableFromInline private(set) var state = State.idle

    @inlinable
    init() {}

    /// A write was queued.
    @inlinable
    mutating func writeQueued() -> Action {
        guard state == .idle else { return .none }
        state = .scheduled
        return .schedule
    }

    /// The scheduled drain's moment came. `writersDrained`: a drain applied writes since it was
    /// scheduled; `queueIsEmpty`: no write waits now. While writers drain and writes wait, it
    /// looks again later rather than take the lock from them; otherwise it drains (also when
    /// stopped meanwhile: it was scheduled before).
    @inlinable
    mutating func fired(writersDrained: Bool, queueIsEmpty: Bool) -> Action {
        if writersDrained && !queueIsEmpty { return .schedule }
        if state == .scheduled { state = .idle }
        return .drain
    }

    /// Schedules no background drain from now on.
    @inlinable
    mutating func stop() { state = .off }
}
