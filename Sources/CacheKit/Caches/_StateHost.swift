/// The behaviour both `SerialCache` and `Cache` share, written once over how each reaches its state.
///
/// `_withState` is the only way in: `Cache` takes its mutex there, `SerialCache` does not. Every
/// operation here runs the engine inside one `_withState` call and then, outside it, reports
/// removals to the handler and asks the eviction veto. So no hook runs inside the critical
/// section, and a hook may call back into the same cache.
@usableFromInline
protocol _StateHost: AnyObject {
    associatedtype Key: Hashable
    associatedtype Value

    /// Runs `body` with exclusive access to the state.
    func _withState<R: ~Copyable>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R

    /// The cache's clock.
    var _timekeeper: _Timekeeper { get }

    /// Consulted before a value is stored; `nil` stores everything.
    var _insertionPolicy: ((Key, Value, Int) -> Bool)? { get }
}

/// When a store happens.
@usableFromInline
enum _StoreCondition {
    /// Always.
    case always
    /// Only when the key has no entry (otherwise the existing value is kept and returned).
    case ifAbsent
    /// Like `ifAbsent`, and only if `isCurrent()`, asked inside the critical section, still holds
    /// (a memoized call stores nothing when its function was expired while it ran).
    case ifAbsentAndCurrent(() -> Bool)
    /// Only when the load `id` is still the key's load (no write, removal or `expireAll`
    /// detached it); it is retired in the same critical section. A refresh (`refreshing` is the
    /// slot it reloads, else -1) also needs that slot to still hold the key at `version`: it
    /// never brings back an entry that expired, was evicted or was overwritten meanwhile.
    case ifLoadCurrent(id: UInt64, refreshing: Int32, version: UInt64?)
}

extension _StateHost {
    /// Runs `body` in one critical section after removing the entries expired by `now`, then
    /// reports what left (the sweep's removals and any `body` appended) outside it.
    @inlinable
    func _withSweptState<R>(
        now: Int64,
        _ body: (inout _CacheState<Key, Value>, inout _Removals<Key, Value>) throws -> R
    ) rethrows -> R {
        typealias Handler = ((CacheRemoval<Key, Value>) -> Void)?
        let (result, removals, handler) = try _withState { state -> (R, _Removals<Key, Value>, Handler) in
            var removals = _Removals<Key, Value>()
            state.core.removeExpired(now: now, removals: &removals)
            let result = try body(&state, &removals)
            state.core._debugCheckInvariants()
            return (result, removals, removals.isEmpty ? nil : state.removalHandler)
        }
        Self._report(removals, to: handler)
        return result
    }

    /// Reads the state after removing expired entries: what every query sees.
    @inlinable
    func _withSweptState<R>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R {
        try _withSweptState(now: _timekeeper.now()) { state, _ in try body(&state) }
    }

    @inlinable
    func _value(forKey key: Key) -> Value? {
        let now = _timekeeper.now()
        let (value, observer) = _withSweptState(now: now) { state, _ in
            (state.core.value(forKey: key, now: now), state.activityObserver)
        }
        if let observer { observer(value == nil ? .miss(key: key) : .hit(key: key)) }
        return value
    }

    @inlinable
    func _peekValue(forKey key: Key) -> Value? {
        _withSweptState { $0.core.peekValue(forKey: key) }
    }

    @inlinable
    func _contains(_ key: Key) -> Bool {
        _withSweptState { $0.core.slot(of: key) >= 0 }
    }

    @inlinable
    func _setValue(_ value: Value, forKey key: Key, cost: Int, expiresAfter: Duration? = nil) -> WriteResult {
        _store(value, forKey: key, cost: cost, expiresAfter: expiresAfter, when: .always).result
    }

    /// Removes every entry that has expired, now rather than at the next operation.
    @inlinable
    func _removeExpired() {
        _withSweptState { _ in }
    }

    /// The value for `key`, or else `make()`'s, stored (outside the critical section `make` runs;
    /// if another caller stored a value meanwhile, that one is kept and returned).
    @inlinable
    func _value(
        forKey key: Key,
        cost: Int,
        expiresAfter: Duration? = nil,
        orInsert make: () throws -> Value
    ) rethrows -> Value {
        if let value = _value(forKey: key) { return value }
        let clock = ContinuousClock()
        let start = clock.now
        let value: Value
        do {
            value = try make()
        } catch {
            _recordLoad(forKey: key, time: clock.now - start, error: error)
            throw error
        }
        _recordLoad(forKey: key, time: clock.now - start, error: nil)
        return _store(value, forKey: key, cost: cost, expiresAfter: expiresAfter, when: .ifAbsent).stored
    }

    /// Counts a load and tells the activity observer (`underLock` runs in the same critical section).
    @inlinable
    func _recordLoad(
        forKey key: Key,
        time: Duration,
        error: (any Error)?,
        underLock: (inout _CacheState<Key, Value>) -> Void = { _ in }
    ) {
        let observer = _withState { state in
            underLock(&state)
            state.core.stats.recordLoad(succeeded: error == nil, time: time)
            return state.activityObserver
        }
        observer?(.load(key: key, duration: time, error: error))
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
        let accepted = admitted && (_insertionPolicy.map { $0(key, value, cost) } ?? true)
        let now = expiresAfter == nil ? _timekeeper.now() : _timekeeper.activate()
        typealias Veto = ((Key, Value, RemovalReason) -> Bool)?
        var observer: ((CacheActivity<Key>) -> Void)?
        let (outcome, existing, veto) = _withSweptState(now: now) {
            state,
            removals -> (WriteResult.Outcome, Value?, Veto) in
            underLock(&state)
            observer = state.activityObserver
            switch condition {
            case .always:
                // A newer write: a load running for the key must not overwrite it.
                state.detachLoad(forKey: key)
            case .ifAbsent:
                if let existing = state.core.peekValue(forKey: key) { return (.replaced, existing, nil) }
            case .ifAbsentAndCurrent(let isCurrent):
                guard isCurrent() else { return (.replaced, value, nil) }
                if let existing = state.core.peekValue(forKey: key) { return (.replaced, existing, nil) }
            case .ifLoadCurrent(let id, let refreshing, let version):
                // A load that was detached answers its waiters with what it loaded, storing nothing.
                guard state.loads[key]?.id == id else { return (.replaced, value, nil) }
                state.loads[key] = nil
                if refreshing >= 0 {
                    let current = state.core.slot(of: key)
                    guard current == refreshing, version != nil, state.core.version(of: current) == version else {
                        return (.replaced, current >= 0 ? state.core.entries[Int(current)].value : value, nil)
                    }
                }
            }
            guard accepted else {
                if let old = state.core.removeValue(forKey: key, reason: .replaced) { removals.append(old) }
                return (.rejected(.insertionPolicy), nil, nil)
            }
            if expiresAfter != nil { state.core.enableExpiry() }
            let veto = state.evictionVeto
            let outcome = state.core.setValue(
                value,
                forKey: key,
                cost: cost,
                now: now,
                timeToLive: expiresAfter?._nanoseconds,
                evictInline: veto == nil,
                removals: &removals
            )
            return (outcome, nil, veto)
        }
        if let observer, existing == nil, outcome != .rejected(.costExceedsLimit),
            outcome != .rejected(.insertionPolicy)
        {
            observer(.write(key: key, cost: cost))
        }
        if let existing { return (WriteResult(outcome: outcome), existing) }
        guard let veto else { return (WriteResult(outcome: outcome), value) }
        if case .rejected = outcome { return (WriteResult(outcome: outcome, isOverLimit: _isOverLimit), value) }
        let isOverLimit = _trim(askingVeto: veto, protecting: key) { $0.limits }
        return (WriteResult(outcome: outcome, isOverLimit: isOverLimit), value)
    }

    @inlinable
    func _removeValue(forKey key: Key) -> Value? {
        _withSweptState(now: _timekeeper.now()) { state, removals in
            state.detachLoad(forKey: key)
            guard let removal = state.core.removeValue(forKey: key, reason: .removed) else { return nil }
            removals.append(removal)
            return removal.value
        }
    }

    @inlinable
    func _removeValues<S: Sequence>(forKeys keys: S) where S.Element == Key {
        // Collected first: iterating the caller's sequence (a lazy one may run any code, this
        // cache's methods included) must not happen under the lock.
        let keys = Array(keys)
        _withSweptState(now: _timekeeper.now()) { state, removals in
            for key in keys {
                state.detachLoad(forKey: key)
                if let removal = state.core.removeValue(forKey: key, reason: .removed) { removals.append(removal) }
            }
        }
    }

    /// Removes, with `reason`, every entry whose key satisfies `predicate`, and detaches the
    /// loads of such keys, in one critical section. `predicate` runs under the lock: internal
    /// callers only, with a predicate that calls nothing of the user's.
    ///
    /// - Complexity: O(n) in the entries and loads.
    func _removeValues(where predicate: (Key) -> Bool, reason: RemovalReason) {
        _withSweptState(now: _timekeeper.now()) { state, removals in
            var keys: [Key] = []
            state.core.forEachSlotInEvictionOrder { slot in
                let key = state.core.entries[Int(slot)].key
                if predicate(key) { keys.append(key) }
                return true
            }
            for key in keys {
                if let removal = state.core.removeValue(forKey: key, reason: reason) { removals.append(removal) }
            }
            for key in state.loads.keys where predicate(key) { state.loads[key] = nil }
        }
    }

    // Not inlinable: it destroys a `_CacheCore`, whose deinit is not inlinable (and inlining it
    // into client code crashes the 6.3 optimizer).
    @usableFromInline
    func _removeAll(reason: RemovalReason) {
        var handler: ((CacheRemoval<Key, Value>) -> Void)?
        let old = _withState { state in
            handler = state.removalHandler
            // Emptying to free memory leaves loads attached; removing or expiring everything
            // invalidates what they loaded.
            if reason != .memoryPressure { state.loads.removeAll() }
            let old = state.takeAll()
            state.core.stats.recordRemovals(reason, count: old.count)
            return old
        }
        guard let handler else { return }
        old.forEachSlotInEvictionOrder { slot in
            handler(CacheRemoval(key: old.entries[Int(slot)].key, value: old.entries[Int(slot)].value, reason: reason))
            return true
        }
    }

    @inlinable
    var _count: Int { _withSweptState { $0.core.count } }

    @inlinable
    var _statistics: CacheStatistics { _withState { $0.core.stats.snapshot } }

    @inlinable
    var _isRecordingStatistics: Bool {
        get { _withState { $0.core.stats.isRecording } }
        set { _withState { $0.core.stats.isRecording = newValue } }
    }

    @inlinable
    func _resetStatistics() { _withState { $0.core.stats.reset() } }

    @inlinable
    var _totalCost: Int { _withSweptState { $0.core.totalCost } }

    @inlinable
    var _isOverLimit: Bool { _withSweptState { $0.core.isOverLimit } }

    /// Sets a limit and enforces it at once.
    @inlinable
    func _setLimit(_ apply: (inout _Core<Key, Value>) -> Void) {
        let (removals, handler, veto) = _withState { state in
            apply(&state.core)
            var removals = _Removals<Key, Value>()
            let veto = state.evictionVeto
            if veto == nil { state.core.trim(to: state.core.limits, protecting: -1, removals: &removals) }
            state.core._debugCheckInvariants()
            return (removals, removals.isEmpty ? nil : state.removalHandler, veto)
        }
        Self._report(removals, to: handler)
        if let veto { _ = _trim(askingVeto: veto, protecting: nil) { $0.limits } }
    }

    @inlinable
    func _handleMemoryPressure() {
        _handleMemoryPressure(_withState { $0.memoryPressureAction })
    }

    /// A snapshot of the entries in eviction order, next victim first.
    @inlinable
    var _entries: [(key: Key, value: Value)] {
        _withSweptState { state in
            var result: [(key: Key, value: Value)] = []
            result.reserveCapacity(state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                result.append((state.core.entries[Int(slot)].key, state.core.entries[Int(slot)].value))
                return true
            }
            return result
        }
    }

    /// A snapshot of the keys in eviction order, next victim first.
    @inlinable
    var _keys: [Key] {
        _withSweptState { state in
            var result: [Key] = []
            result.reserveCapacity(state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                result.append(state.core.entries[Int(slot)].key)
                return true
            }
            return result
        }
    }

    /// Installs a removal handler, returning the old one so it is released outside the critical
    /// section (releasing a closure can run a captured object's `deinit`).
    @inlinable
    func _exchangeRemovalHandler(
        _ handler: ((CacheRemoval<Key, Value>) -> Void)?
    ) -> ((CacheRemoval<Key, Value>) -> Void)? {
        _withState { state in
            let old = state.userRemovalHandler
            state.userRemovalHandler = handler
            state.combineRemovalHooks()
            return old
        }
    }

    /// Installs an activity observer, returning the old one (released outside the critical section).
    @inlinable
    func _exchangeActivityObserver(
        _ observer: ((CacheActivity<Key>) -> Void)?
    ) -> ((CacheActivity<Key>) -> Void)? {
        _withState { state in
            let old = state.activityObserver
            state.activityObserver = observer
            state.combineRemovalHooks()
            return old
        }
    }

    /// Installs an eviction veto (starting generation tracking), returning the old one.
    @inlinable
    func _exchangeEvictionVeto(
        _ veto: ((Key, Value, RemovalReason) -> Bool)?
    ) -> ((Key, Value, RemovalReason) -> Bool)? {
        _withState { state in
            let old = state.evictionVeto
            state.evictionVeto = veto
            if veto != nil { state.core.trackGenerations() }
            return old
        }
    }

    /// Calls `handler` with each removal; the removed values are released when this returns.
    @inlinable
    static func _report(_ removals: _Removals<Key, Value>, to handler: ((CacheRemoval<Key, Value>) -> Void)?) {
        guard let handler else { return }
        removals.forEach(handler)
    }

    /// Evicts toward `target` asking `veto` about each candidate outside the critical section.
    ///
    /// Rounds: under the lock, copy out the candidates that would meet the target (skipping the
    /// key just written and every entry already vetoed); outside it, ask the veto; under the lock
    /// again, evict the approved candidates that did not change meanwhile. Repeats until the
    /// target is met or no candidate is left. Returns whether the cache is still above the
    /// target (every remaining candidate vetoed).
    @inlinable
    func _trim(
        askingVeto veto: (Key, Value, RemovalReason) -> Bool,
        protecting protectedKey: Key?,
        target: (borrowing _Core<Key, Value>) -> _TrimTarget
    ) -> Bool {
        var vetoed = Set<_SlotVersion>()
        while true {
            let (candidates, goal) = _withState { state in
                let goal = target(state.core)
                let protected = protectedKey.map { state.core.slot(of: $0) } ?? -1
                return (state.core.candidates(for: goal, protecting: protected, skipping: vetoed), goal)
            }
            if candidates.isEmpty { break }
            var approved: [_Candidate<Key, Value>] = []
            for candidate in candidates {
                if veto(candidate.key, candidate.value, candidate.reason) {
                    approved.append(candidate)
                } else {
                    vetoed.insert(candidate.identity)
                }
            }
            if approved.isEmpty { continue }
            let (removals, handler) = _withState { state in
                var removals = _Removals<Key, Value>()
                state.core.evict(approved, target: goal, removals: &removals)
                state.core._debugCheckInvariants()
                return (removals, removals.isEmpty ? nil : state.removalHandler)
            }
            Self._report(removals, to: handler)
        }
        return _withState { target($0.core).reasonToEvict(count: $0.core.count, cost: $0.core.totalCost) != nil }
    }
}
