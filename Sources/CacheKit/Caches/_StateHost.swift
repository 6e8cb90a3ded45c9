/// The behaviour both `SerialCache` and `Cache` share, written once over how each reaches its state.
///
/// `_withState` is the only way in: `Cache` takes its mutex there, `SerialCache` does not. Every
/// operation here runs the engine inside one `_withState` call and then, outside it, reports
/// removals to the handler and asks the eviction veto. So no hook runs inside the critical
/// section, and a hook may call back into the same cache.
///
/// Not API. Public, with its requirements, only so that the operations both caches offer are
/// written once, in `@inlinable` extensions (`_StateHost+Operations.swift`) that specialize in
/// the caller's module; its requirements take internal types, so nothing outside CacheKit can
/// do anything with them.
public protocol _StateHost: AnyObject {
    associatedtype Key: Hashable
    associatedtype Value

    /// Runs `body` with exclusive access to the state.
    func _withState<R: ~Copyable>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R

    /// The cache's clock.
    var _timekeeper: _Timekeeper { get }

    /// Consulted before a value is stored; `nil` stores everything.
    var _insertionPolicy: ((Key, Value, Int) -> Bool)? { get }

    /// Starts loading `key`'s index bucket into the CPU's cache before `_withState` is entered
    /// (`Cache`; nothing for `SerialCache`, which takes no lock). Returns the key's hash
    /// (`_CacheCore.hash(of:)`) if it took it, so that the engine need not take it again.
    func _prefetchIndex(for key: Key) -> Int?
}

/// When a store happens.
@usableFromInline
enum _StoreCondition {
    /// Always.
    case always
    /// Only when the key has no entry (otherwise the existing value is kept and returned). The
    /// store is a write of the caller's (`orInsert`), so a load running for the key must not
    /// overwrite it: it is detached.
    case ifAbsent
    /// Like `ifAbsent`, and only if no explicit removal happened since `invalidations` was read
    /// (`_CacheState.invalidations`) and `isCurrent()`, asked inside the critical section, still
    /// holds (a memoized call stores nothing when its function or its cache was expired while it
    /// ran).
    case ifAbsentAndCurrent(since: UInt64, () -> Bool)
    /// Only when the load `id` is still the key's load (no write, removal or `expireAll`
    /// detached it); it is retired in the same critical section. A refresh (`refreshing` is the
    /// slot it reloads, else -1) also needs that slot to still hold the key at `version`: it
    /// never brings back an entry that expired, was evicted or was overwritten meanwhile.
    case ifLoadCurrent(id: UInt64, refreshing: Int32, version: UInt64?)
    /// A restore from a file (`_restore`): only when the key has no entry (what is in memory is
    /// newer), leaving a load running for the key attached (the file is older than anything
    /// loaded now), and only when `cost` can be counted
    /// beside the total without passing `Int.max` (the engine would trap on a total that
    /// overflows; a file's costs can add up to that beside what the cache holds).
    case restore(cost: Int)
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

    /// The count of explicit removals so far (see `_CacheState.invalidations`).
    @inlinable
    var _invalidations: UInt64 { _withState { $0.invalidations } }

    /// Reads the state after removing expired entries: what every query sees.
    @inlinable
    func _withSweptState<R>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R {
        try _withSweptState(now: _timekeeper.now()) { state, _ in try body(&state) }
    }

    @inlinable
    func _value(forKey key: Key) -> Value? {
        let hash = _prefetchIndex(for: key)
        let now = _timekeeper.now()
        // The observer is copied out only when one is installed: copying the optional closure
        // unconditionally cost every read a retain and a release, even of `nil`.
        var observer: ((CacheActivity<Key>) -> Void)?
        let value = _withSweptState(now: now) { state, _ in
            if state.isObserved { observer = state.activityObserver }
            return state.core.value(forKey: key, hash: hash, now: now)
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
        return _store(value, forKey: key, cost: cost, expiresAfter: expiresAfter, when: .ifAbsent)
            .stored
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

    @inlinable
    func _removeValue(forKey key: Key) -> Value? {
        _withSweptState(now: _timekeeper.now()) { state, removals in
            state.detachLoad(forKey: key)
            state.invalidations &+= 1
            guard let removal = state.core.removeValue(forKey: key, reason: .removed) else { return nil }
            removals.append(removal)
            return removal.value
        }
    }

    /// Removes `key`'s entry with `reason` if `matches` accepts its value; loads in flight and
    /// the invalidation count are left alone (an entry found expired, not removed by the user).
    /// `matches` runs under the lock: internal callers only, comparing without user code.
    func _removeValue(forKey key: Key, reason: RemovalReason, if matches: (Value) -> Bool) {
        _withSweptState(now: _timekeeper.now()) { state, removals in
            let slot = state.core.slot(of: key)
            guard slot >= 0, matches(state.core.entries[Int(slot)].value),
                let removal = state.core.removeValue(forKey: key, reason: reason)
            else { return }
            removals.append(removal)
        }
    }

    /// Puts `replacement` in place of `key`'s value if `matches` accepts the value: no write, no
    /// event, no change of place, cost or expiry. `matches` runs under the lock: internal
    /// callers only, comparing without user code. The value replaced is released after the lock.
    func _replaceValue(forKey key: Key, if matches: (Value) -> Bool, with replacement: Value) {
        let replaced = _withSweptState(now: _timekeeper.now()) { state, _ -> Value? in
            let slot = state.core.slot(of: key)
            guard slot >= 0, matches(state.core.entries[Int(slot)].value) else { return nil }
            let old = state.core.entries[Int(slot)].value
            state.core.entries[Int(slot)].value = replacement
            return old
        }
        _ = replaced
    }

    @inlinable
    func _removeValues<S: Sequence>(forKeys keys: S) where S.Element == Key {
        // Collected first: iterating the caller's sequence (a lazy one may run any code, this
        // cache's methods included) must not happen under the lock.
        let keys = Array(keys)
        _withSweptState(now: _timekeeper.now()) { state, removals in
            state.invalidations &+= 1
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
            state.invalidations &+= 1
        }
    }

    // Not inlinable: it destroys a `_CacheCore`, whose deinit is not inlinable (and inlining it
    // into client code crashes the 6.3 optimizer).
    @usableFromInline
    func _removeAll(reason: RemovalReason) {
        var handler: ((CacheRemoval<Key, Value>) -> Void)?
        var expired = _Removals<Key, Value>()
        let now = _timekeeper.now()
        let old = _withState { state in
            handler = state.removalHandler
            // What had expired leaves as expired, reported first.
            state.core.removeExpired(now: now, removals: &expired)
            // Emptying to free memory leaves loads attached; removing or expiring everything
            // invalidates what they loaded.
            if reason != .memoryPressure {
                state.loads.removeAll()
                state.invalidations &+= 1
            }
            let old = state.takeAll()
            state.core.stats.recordRemovals(reason, count: old.count)
            return old
        }
        guard let handler else { return }
        Self._report(expired, to: handler)
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
    func _setLimit(_ apply: (inout _CacheCore<Key, Value>) -> Void) {
        _ = _trimToLimits(protecting: nil, askingVeto: true, after: apply)
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
}
