/// The rounds of a trim that asks an eviction veto (`_StateHost._trim`): a state machine with no
/// lock, cache or closure of its own. Its owner runs each action it returns: proposes candidates
/// under the cache's lock, asks the veto about one candidate outside it, evicts the approved ones
/// under the lock again, or finishes.
///
/// ```
///   start ─▶ propose ──proposed(none)──────────────────────────────────────▶ finish
///               ▲  └─proposed(candidates)─▶ ask ◀─answered─┐
///               │                            │  └──────────┘
///               │       goal met or candidates exhausted: │
///               ├──── none approved, some newly refused ◀─┤
///               │                                          ├─ none approved, none refused ─▶ finish
///               └──────── evicted ◀── evict(approved) ◀────┘
/// ```
///
/// Each round proposes, beyond the candidates that would meet the target if all went, as many
/// more as have been refused so far, skipping every refused one: a veto that refuses many
/// entries costs O(log *v*) rounds for *v* refusals, each a walk in eviction order, rather than
/// one round per refusal.
@usableFromInline
struct _VetoTrim<Key, Value> {
    /// What the owner does next.
    @usableFromInline
    enum Action {
        /// Under the lock: remove what expired, then propose candidates for the target
        /// (skipping ``vetoed``, and ``vetoed``'s count more), and call `proposed`.
        case propose
        /// Outside the lock: ask the veto about `candidate` (its `reason` is set), and call
        /// `answered`.
        case ask(_Candidate<Key, Value>)
        /// Under the lock: evict the approved candidates that did not change meanwhile, down to
        /// the target as it is then, and call `evicted`.
        case evict([_Candidate<Key, Value>])
        /// Done: the owner reports whether the cache is still above the target.
        case finish
    }

    /// The round's candidates, while the veto is asked about them.
    @usableFromInline
    struct Round {
        @usableFromInline var candidates: [_Candidate<Key, Value>]
        @usableFromInline var next = 0
        @usableFromInline var goal: _TrimTarget
        /// The count and cost that stay if the approved candidates go.
        @usableFromInline var remainingCount: Int
        @usableFromInline var remainingCost: Int
        @usableFromInline var approved: [_Candidate<Key, Value>] = []
        /// How many entries had been refused when the round began.
        @usableFromInline var refusedBefore: Int

        @inlinable
        init(_ candidates: [_Candidate<Key, Value>], goal: _TrimTarget, count: Int, cost: Int, refusedBefore: Int) {
            self.candidates = candidates
            self.goal = goal
            self.remainingCount = count
            self.remainingCost = cost
            self.refusedBefore = refusedBefore
        }
    }

    @usableFromInline
    enum State {
        case proposing
        case asking(Round)
        case evicting
        case finished
    }

    /// Every entry version the veto refused so far.
    @usableFromInline private(set) var vetoed = Set<_SlotVersion>()
    /// Rounds begun (for tests of the trim's cost).
    @usableFromInline private(set) var rounds = 1
    @usableFromInline private(set) var state = State.proposing

    /// A trim about to propose its first round.
    @inlinable
    init() {}

    /// The first action: `.propose`.
    @inlinable
    var start: Action { .propose }

    /// The round's candidates, the target and the cache's count and total cost, read under the
    /// lock.
    @inlinable
    mutating func proposed(_ candidates: [_Candidate<Key, Value>], goal: _TrimTarget, count: Int, cost: Int) -> Action {
        guard case .proposing = state else { preconditionFailure("proposed(...) outside a proposal") }
        guard !candidates.isEmpty else {
            state = .finished
            return .finish
        }
        return nextQuestion(Round(candidates, goal: goal, count: count, cost: cost, refusedBefore: vetoed.count))
    }

    /// The veto's answer about the candidate of the last `.ask`.
    @inlinable
    mutating func answered(_ allowed: Bool) -> Action {
        guard case .asking(var round) = state else { preconditionFailure("answered(_:) without a question") }
        let candidate = round.candidates[round.next]
        round.next += 1
        if allowed {
            round.remainingCount -= 1
            round.remainingCost -= candidate.cost
            round.approved.append(candidate)
        } else {
            vetoed.insert(candidate.identity)
        }
        return nextQuestion(round)
    }

    /// The approved candidates were evicted (those still unchanged): the next round begins.
    @inlinable
    mutating func evicted() -> Action {
        guard case .evicting = state else { preconditionFailure("evicted() without an eviction") }
        return proposeAgain()
    }

    /// Asks about the round's next candidate while the target is not met; then evicts what was
    /// approved, or proposes again if only refusals came (new ones: the next round walks past
    /// more), or finishes.
    @inlinable
    mutating func nextQuestion(_ round: Round) -> Action {
        var round = round
        if round.next < round.candidates.count,
            let reason = round.goal.reasonToEvict(count: round.remainingCount, cost: round.remainingCost)
        {
            round.candidates[round.next].reason = reason
            let candidate = round.candidates[round.next]
            state = .asking(round)
            return .ask(candidate)
        }
        if !round.approved.isEmpty {
            state = .evicting
            return .evict(round.approved)
        }
        if vetoed.count == round.refusedBefore {
            state = .finished
            return .finish
        }
        return proposeAgain()
    }

    @inlinable
    mutating func proposeAgain() -> Action {
        rounds += 1
        state = .proposing
        return .propose
    }
}
