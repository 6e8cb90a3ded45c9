/// How a write goes when an eviction veto may be installed (`_StateHost._store`): a state machine
/// with no lock of its own. The write's critical section reports what it found; when it needed
/// room, the owner makes room (unlocked) and runs the section again; when it wrote, the owner
/// runs the action returned, outside the lock.
///
/// ```
///   section ──a veto, no room for the new key (first time only): neededRoom()──▶ make room
///      ▲                                                                             │
///      └──────────────────────────────── roomMade(refused:) ────────────────────────┘
///   section ──wrote(...)──▶ finish                 (no veto, or the cache kept a value)
///                      ├──▶ finishCheckingLimits   (rejected with a veto installed)
///                      └──▶ trim(askingVeto:)      (stored with a veto: trim unlocked)
/// ```
///
/// With a veto, room for a new key is made before it is stored, so that the policy picks its
/// victims by its own rules, never weighing the new entry. After a refused attempt to make room,
/// the trim after the write does not ask the same entries again: it would only repeat the
/// refusals (but if the veto is gone meanwhile, the limits hold again).
@usableFromInline
struct _VetoedWrite {
    /// What the owner does once the write's section wrote.
    @usableFromInline
    enum Action: Equatable {
        /// Return the write's result.
        case finish
        /// Return the write's result with whether the cache is over a limit.
        case finishCheckingLimits
        /// Trim to the limits outside the lock, asking the veto if `askingVeto`, and return the
        /// result with whether the cache is still over a limit.
        case trim(askingVeto: Bool)
    }

    /// Whether room was made once already (it is made at most once per write).
    @usableFromInline private(set) var madeRoom = false
    /// Whether the veto refused every candidate while making room.
    @usableFromInline private(set) var roomRefused = false

    @inlinable
    init() {}

    /// Whether the write's section may stop, changing nothing, to have room made first.
    @inlinable
    var mayStopForRoom: Bool { !madeRoom }

    /// The section found a veto and no room for the new key, and changed nothing: the owner
    /// makes room (`_StateHost._makeRoom`), calls `roomMade(refused:)` and runs it again.
    @inlinable
    mutating func neededRoom() { madeRoom = true }

    /// Room was made (`refused`: the veto refused every candidate).
    @inlinable
    mutating func roomMade(refused: Bool) { roomRefused = refused }

    /// The section wrote (or kept a value, or rejected the write). `deferredTrim`: a veto is
    /// installed, so the section evicted nothing.
    @inlinable
    func wrote(keptValue: Bool, rejected: Bool, deferredTrim: Bool) -> Action {
        if keptValue || !deferredTrim { return .finish }
        if rejected { return .finishCheckingLimits }
        return .trim(askingVeto: !roomRefused)
    }
}
