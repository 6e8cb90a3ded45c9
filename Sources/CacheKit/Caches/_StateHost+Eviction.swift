/// Evicting outside the write path: new limits, memory pressure, and trims that ask the eviction
/// veto in rounds (see `_VetoTrim`).
extension _StateHost {
    /// Enforces the limits after `change` (run first, in the same critical section): a new
    /// limit, or nothing after a write that evicted nothing because a veto was installed. Inline
    /// when no veto is installed (or it was removed meanwhile), else asking it outside the
    /// critical section (unless `askingVeto` is false: it has just refused every candidate).
    /// Never evicts `protectedKey`. Returns whether the cache is still over its limits. Out of
    /// line: neither a limit change nor a write with a veto is on the hot path.
    @usableFromInline
    @inline(never)
    func _trimToLimits(
        protecting protectedKey: Key?,
        askingVeto: Bool,
        after change: (inout _CacheCore<Key, Value>) -> Void = { _ in }
    ) -> Bool {
        // Swept first: an expired entry leaves as expired, and never makes a live one go.
        let (veto, isOverLimit) = _withSweptState(now: _timekeeper.now()) { state, removals in
            change(&state.core)
            let veto = state.evictionVeto
            if veto == nil {
                let protected = protectedKey.map { state.core.slot(of: $0) } ?? -1
                state.core.trim(to: state.core.limits, protecting: protected, removals: &removals)
            }
            return (veto, state.core.isOverLimit)
        }
        guard let veto, askingVeto else { return isOverLimit }
        return _trim(askingVeto: veto, protecting: protectedKey) { $0.limits }
    }

    /// With a veto installed, evicts what storing `key` with `cost` needs room for, asking the
    /// veto; out of line, as the write path without a veto never comes here.
    /// Returns whether room is still lacking (every candidate vetoed).
    @usableFromInline
    @inline(never)
    func _makeRoom(forNewKey key: Key, cost: Int) -> Bool {
        guard let veto = _withState({ $0.evictionVeto }) else { return false }
        return _trim(askingVeto: veto, protecting: nil) { $0.room(forNewKey: key, cost: cost) }
    }

    /// Evicts toward `target` asking `veto` about each candidate outside the critical section,
    /// in the rounds `_VetoTrim` decides: under the lock, remove what expired and copy out
    /// candidates (never the key just written); outside it, ask the veto in eviction order until
    /// the approved ones would meet the target; under the lock again, evict the approved
    /// candidates that did not change meanwhile, each with the reason the veto was given.
    /// Returns whether the cache is still above the target (every remaining candidate vetoed).
    @inlinable
    func _trim(
        askingVeto veto: (Key, Value, RemovalReason) -> Bool,
        protecting protectedKey: Key?,
        target: (borrowing _CacheCore<Key, Value>) -> _TrimTarget
    ) -> Bool {
        _trimCountingRounds(askingVeto: veto, protecting: protectedKey, target: target).isOverLimit
    }

    /// `_trim`, also returning how many rounds it took (for tests of its cost).
    @inlinable
    func _trimCountingRounds(
        askingVeto veto: (Key, Value, RemovalReason) -> Bool,
        protecting protectedKey: Key?,
        target: (borrowing _CacheCore<Key, Value>) -> _TrimTarget
    ) -> (isOverLimit: Bool, rounds: Int) {
        var trim = _VetoTrim<Key, Value>()
        var action = trim.start
        while true {
            switch action {
            case .propose:
                let vetoed = trim.vetoed
                let (candidates, goal, count, cost) = _withSweptState(now: _timekeeper.now()) { state, _ in
                    let goal = target(state.core)
                    let protected = protectedKey.map { state.core.slot(of: $0) } ?? -1
                    let candidates = state.core.candidates(
                        for: goal,
                        protecting: protected,
                        skipping: vetoed,
                        extra: vetoed.count
                    )
                    return (candidates, goal, state.core.count, state.core.totalCost)
                }
                action = trim.proposed(candidates, goal: goal, count: count, cost: cost)
            case .ask(let candidate):
                action = trim.answered(veto(candidate.key, candidate.value, candidate.reason))
            case .evict(let approved):
                _withSweptState(now: _timekeeper.now()) { state, removals in
                    // The target as it is now: the veto, unlocked, may have changed a limit (or
                    // another thread may have), and an approval is no reason to go below it.
                    state.core.evict(approved, target: target(state.core), removals: &removals)
                }
                action = trim.evicted()
            case .finish:
                let isOverLimit = _withSweptState {
                    target($0.core).reasonToEvict(count: $0.core.count, cost: $0.core.totalCost) != nil
                }
                return (isOverLimit, trim.rounds)
            }
        }
    }

    /// Sets a limit and enforces it at once.
    @inlinable
    func _setLimit(_ apply: (inout _CacheCore<Key, Value>) -> Void) {
        _ = _trimToLimits(protecting: nil, askingVeto: true, after: apply)
    }

    @inlinable
    func _handleMemoryPressure() {
        _handleMemoryPressure(_withState { $0.memoryPressureAction })
    }
}
