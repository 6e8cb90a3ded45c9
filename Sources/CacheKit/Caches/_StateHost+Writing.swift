/// Writing: the insertion policy, room made with the veto, the store under the lock, the
/// write's report and the trim after it (see `_VetoedWrite`).
extension _StateHost {
    @inlinable
    func _setValue(_ value: Value, forKey key: Key, cost: Int, expiresAfter: Duration? = nil) -> WriteResult {
        _store(value, forKey: key, cost: cost, expiresAfter: expiresAfter, when: .always).result
    }

    /// Stores `value` if `condition` allows, the caller `admitted` it and the insertion policy
    /// accepts it (a refused value is treated as the insertion policy's rejection), then reports
    /// removals and trims with the veto outside the critical section. Returns the write's result
    /// and the value the cache now holds for `key` (the existing one when `.ifAbsent` kept it).
    ///
    /// `underLock` runs inside the write's critical section, before the write (a load counts
    /// itself there; it retires in the same section, so no caller sees neither the load nor its
    /// value).
    @inlinable
    @inline(__always)
    func _store(
        _ value: Value,
        forKey key: Key,
        cost: Int,
        expiresAfter: Duration? = nil,
        when condition: _StoreCondition,
        admitted: Bool = true,
        underLock: (inout _CacheState<Key, Value>) -> Void = { _ in }
    ) -> (result: WriteResult, stored: Value) {
        precondition(cost >= 0, "cost must not be negative (got \(cost))")
        if let expiresAfter {
            precondition(expiresAfter > .zero, "expiresAfter must be positive (got \(expiresAfter))")
        }
        let hash = _prefetchIndex(for: key)
        let accepted = admitted && (_insertionPolicy.map { $0(key, value, cost) } ?? true)
        let now = expiresAfter == nil ? _timekeeper.now() : _timekeeper.activate()
        var observer: ((CacheActivity<Key>) -> Void)?  // copied only if installed (see `_value(forKey:)`)
        // With a veto, room for a new key is made before it is stored (see `_VetoedWrite`): the
        // write's section finds no room, changes nothing, and room is made outside the lock.
        // (Checked inside the write's own section: a write takes the lock once.)
        var write = _VetoedWrite()
        while true {
            var needsRoom = false  // plain flags: the write path (no veto) creates nothing to release
            // `deferredTrim`: a veto is installed, so the write evicted nothing and the trim asks
            // the veto outside the lock. (A flag, not the veto: copying the closure out cost
            // every write a retain and a release, even of `nil`.)
            let (outcome, existing, deferredTrim) = _withSweptState(now: now) {
                state,
                removals -> (WriteResult.Outcome, Value?, Bool) in
                if write.mayStopForRoom, accepted, state.evictionVeto != nil,
                    state.core.needsRoom(forNewKey: key, cost: cost),
                    Self._valueKept(insteadOf: value, forKey: key, when: condition, in: state) == nil
                {
                    needsRoom = true
                    return (.inserted, nil, false)  // nothing changed; the caller makes room and comes back
                }
                underLock(&state)
                if state.isObserved { observer = state.activityObserver }
                if let kept = Self._valueKept(insteadOf: value, forKey: key, when: condition, in: state) {
                    // A load that may not store retires all the same (if it is still the key's load).
                    if case .ifLoadCurrent(let id, _, _) = condition, state.loads[key]?.id == id {
                        state.loads[key] = nil
                    }
                    return (.replaced, kept, false)
                }
                switch condition {
                case .always, .ifAbsent:
                    // A newer write (or the caller's own, for `orInsert`): a load running for the
                    // key must not overwrite it.
                    state.detachLoad(forKey: key)
                case .ifLoadCurrent:
                    state.loads[key] = nil  // retires
                case .ifAbsentAndCurrent, .restore:
                    break
                }
                guard accepted else {
                    if let old = state.core.removeValue(forKey: key, reason: .replaced) { removals.append(old) }
                    // Over the limits only if a veto kept entries: with it gone they hold again.
                    if state.evictionVeto == nil {
                        state.core.trim(to: state.core.limits, protecting: -1, removals: &removals)
                    }
                    return (.rejected(.insertionPolicy), nil, state.evictionVeto != nil)
                }
                if expiresAfter != nil { state.core.enableExpiry() }
                let deferredTrim = state.evictionVeto != nil
                let outcome = state.core.setValue(
                    value,
                    forKey: key,
                    hash: hash,
                    cost: cost,
                    now: now,
                    timeToLive: expiresAfter?._lifetimeNanoseconds,
                    evictInline: !deferredTrim,
                    removals: &removals
                )
                return (outcome, nil, deferredTrim)
            }
            if needsRoom {
                write.neededRoom()
                write.roomMade(refused: _makeRoom(forNewKey: key, cost: cost))
                continue
            }
            if let observer, existing == nil, outcome != .rejected(.costExceedsLimit),
                outcome != .rejected(.insertionPolicy)
            {
                observer(.write(key: key, cost: cost))
            }
            var rejected = false
            if case .rejected = outcome { rejected = true }
            switch write.wrote(keptValue: existing != nil, rejected: rejected, deferredTrim: deferredTrim) {
            case .finish:
                return (WriteResult(outcome: outcome), existing ?? value)
            case .finishCheckingLimits:
                return (WriteResult(outcome: outcome, isOverLimit: _isOverLimit), value)
            case .trim(let askingVeto):
                let isOverLimit = _trimToLimits(protecting: key, askingVeto: askingVeto)
                return (WriteResult(outcome: outcome, isOverLimit: isOverLimit), value)
            }
        }
    }

    /// What the cache answers with instead of storing `value` under `condition`, or `nil` when
    /// `condition` lets the store go ahead. Read-only: a write asks before making room (so that
    /// a store that will not happen evicts nothing for it), and again in the section that stores.
    /// - `.ifAbsent`, `.ifAbsentAndCurrent`: the value the key already has; for the latter also
    ///   `value` itself after an explicit removal or when `isCurrent()` no longer holds.
    /// - `.ifLoadCurrent`: `value` when the load was detached; for a refresh, unless a miss waits
    ///   for it (then it is that miss's load, and stores like one), the value the key now has
    ///   (or `value`) when the refreshed entry was written, removed, evicted or expired meanwhile.
    /// - `.restore`: the value the key already has, or `value` itself when its cost cannot be
    ///   counted beside the total (`_CacheCore.totalCostCanTake`).
    @inlinable
    @inline(__always)
    static func _valueKept(
        insteadOf value: Value,
        forKey key: Key,
        when condition: _StoreCondition,
        in state: borrowing _CacheState<Key, Value>
    ) -> Value? {
        switch condition {
        case .always:
            return nil
        case .ifAbsent:
            return state.core.peekValue(forKey: key)
        case .restore(let cost):
            if let existing = state.core.peekValue(forKey: key) { return existing }
            return state.core.totalCostCanTake(cost) ? nil : value
        case .ifAbsentAndCurrent(let since, let isCurrent):
            guard state.invalidations == since, isCurrent() else { return value }
            return state.core.peekValue(forKey: key)
        case .ifLoadCurrent(let id, let refreshing, let version):
            guard let load = state.loads[key], load.id == id else { return value }
            guard refreshing >= 0, !load.answersMiss else { return nil }
            let current = state.core.slot(of: key)
            if current == refreshing, version != nil, state.core.version(of: current) == version { return nil }
            return current >= 0 ? state.core.entries[Int(current)].value : value
        }
    }
}
