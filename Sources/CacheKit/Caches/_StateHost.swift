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

    // The reads and statistics a cache may serve its own way (`Cache` reads under a shared
    // lock and counts requests per stripe); the defaults run through `_withState`.

    /// The value for `key`, recording a use with the policy.
    func _value(forKey key: Key) -> Value?
    /// The value for `key` without recording a use.
    func _peekValue(forKey key: Key) -> Value?
    /// Whether `key` has an entry.
    func _contains(_ key: Key) -> Bool
    /// The counts of ``CacheStatistics``.
    var _statistics: CacheStatistics { get }
    /// Whether statistics are counted.
    var _isRecordingStatistics: Bool { get set }
    /// Sets every count to zero.
    func _resetStatistics()
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
    @inline(__always)
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
    public func _value(forKey key: Key) -> Value? {
        _exclusiveValue(forKey: key, hash: _prefetchIndex(for: key), now: _timekeeper.now())
    }

    /// `_value(forKey:)` inside `_withState`: the engine's read, which tells the policy at once
    /// and moves a time-to-idle deadline. `hash`: the key's hash if taken, `now` the clock's
    /// reading.
    @inlinable
    @inline(__always)
    func _exclusiveValue(forKey key: Key, hash: Int?, now: Int64) -> Value? {
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
    public func _peekValue(forKey key: Key) -> Value? {
        _withSweptState { $0.core.peekValue(forKey: key) }
    }

    @inlinable
    public func _contains(_ key: Key) -> Bool {
        _withSweptState { $0.core.slot(of: key) >= 0 }
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
    public var _statistics: CacheStatistics { _withState { $0.core.stats.snapshot } }

    @inlinable
    public var _isRecordingStatistics: Bool {
        get { _withState { $0.core.stats.isRecording } }
        set { _withState { $0.core.stats.isRecording = newValue } }
    }

    @inlinable
    public func _resetStatistics() { _withState { $0.core.stats.reset() } }

    @inlinable
    var _totalCost: Int { _withSweptState { $0.core.totalCost } }

    @inlinable
    var _isOverLimit: Bool { _withSweptState { $0.core.isOverLimit } }

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

}
