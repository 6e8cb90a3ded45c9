/// Why a load through a cache failed, other than the loader's own error.
public enum CacheLoadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A loader asked the same cache for the key it is loading: waiting would never end.
    case recursiveLoad(key: String)

    public var description: String {
        switch self {
        case .recursiveLoad(let key):
            "the loader for key \(key) asked the same cache for \(key) (a load cannot wait for itself)"
        }
    }
}

/// The loads the current task is running, innermost last, to catch a loader that waits on itself.
enum LoadChain {
    struct Link: Sendable {
        let cache: ObjectIdentifier
        let key: any Hashable & Sendable
    }

    @TaskLocal static var links: [Link] = []
}

extension Cache where Key: Sendable, Value: Sendable {
    /// The value for `key`, loading it with `loader` on a miss. One load per key at a time:
    /// callers that miss while a load for the key is running wait for that load.
    ///
    /// - Every waiter gets the loaded value, or the same error. Errors are not cached: the next
    ///   call after a failure loads again.
    /// - The load runs in its own task. Cancelling a waiter does not cancel the load, which
    ///   still stores its value for the others; the cancelled waiter still receives the result.
    /// - A loader may read and load other keys of this cache. A loader that asks this cache for
    ///   its own key while it is not stored (directly or through other loads it started) gets
    ///   ``CacheLoadError/recursiveLoad(key:)`` instead of waiting forever; a stored value is
    ///   returned to anyone, tasks a loader started among them. Cycles that pass
    ///   through loads started by other callers are not detected; a background refresh counts
    ///   as started by no caller (nothing waits for it).
    /// - The loaded value is stored with `cost` and `expiresAfter`, like
    ///   ``setValue(_:forKey:cost:expiresAfter:)``: limits, the insertion policy, the removal
    ///   handler and the eviction veto apply. A value the insertion policy refuses is still
    ///   returned to every waiter, just not stored. No loader runs while the lock is held.
    /// - A write, removal, `removeAll()` or `expireAll()` that reaches the key while its load
    ///   runs wins: the load still answers its waiters with what it loaded, but stores nothing,
    ///   and the next miss starts a new load. (Evictions and memory pressure do not cancel loads.)
    /// - With ``Expiration/refreshAfterWrite``, a hit on a value older than that returns the
    ///   value at once and starts one background reload with `loader`, which replaces the value
    ///   when it succeeds, unless the entry was written, removed, evicted or expired meanwhile
    ///   (a refresh never brings back an entry that left). A miss for the key while the refresh
    ///   runs (the entry was evicted or expired) waits for it instead of starting another load,
    ///   and then the refreshed value is stored, as that miss's own load would store it. A failed
    ///   refresh keeps the old value, which still expires as configured; the next hit tries again.
    ///
    /// - Complexity: O(1) on a hit; on a miss, O(1) plus the load.
    public func value(
        forKey key: Key,
        cost: Int = 0,
        expiresAfter: Duration? = nil,
        loader: @escaping @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        try await _value(
            forKey: key,
            cost: { _ in cost },
            admit: nil,
            loader: { key in (try await loader(key), expiresAfter) }
        ).value
    }

    /// ``value(forKey:cost:expiresAfter:loader:)`` with the cost taken from the loaded value and an
    /// extra admission test (`admit`, beside the cache's insertion policy): what memoized functions
    /// need, since their cost and insertion policy are per function and see only the result.
    /// The loader returns each value's `expiresAfter` with it: a tiered cache promotes a value
    /// with what is left of its lifetime in the store.
    /// Also returns whether the value was a hit (a caller that waited for a load is a miss).
    /// `missCounted` says the caller has already read the key and counted (and reported) its
    /// miss: a miss here is then not counted again.
    func _value(
        forKey key: Key,
        cost: @escaping @Sendable (Value) -> Int,
        admit: (@Sendable (Value) -> Bool)?,
        missCounted: Bool = false,
        loader: @escaping @Sendable (Key) async throws -> (Value, expiresAfter: Duration?)
    ) async throws -> (value: Value, wasHit: Bool) {
        let id = ObjectIdentifier(self)
        let chain = LoadChain.links
        // A cycle only if the key misses: a hit answers whoever asks (a task a loader started
        // may read the key its loader stored, or is storing; nothing waits on anything).
        let recursive = chain.contains(where: { $0.cache == id && ($0.key as? Key) == key })
        let link = chain + [LoadChain.Link(cache: id, key: key)]
        let now = _timekeeper.now()
        var observer: ((CacheActivity<Key>) -> Void)?
        let (hit, task) = _withSweptState(now: now) { state, _ -> (Value?, Task<Value, any Error>?) in
            observer = state.activityObserver
            let refreshSlot = Self._slotDueForRefresh(key, in: state, now: now)
            let found = state.core.value(forKey: key, now: now)
            if found == nil, missCounted { state.core.stats.retractMiss() }
            if let value = found {
                if refreshSlot >= 0 {
                    state.nextLoadID &+= 1
                    let id = state.nextLoadID
                    let condition = _StoreCondition.ifLoadCurrent(
                        id: id,
                        refreshing: refreshSlot,
                        version: state.core.version(of: refreshSlot)
                    )
                    // The refresh's chain starts with it: the caller takes the value it has and
                    // does not wait, so its chain is no cycle of the refresh's (inherited, a
                    // refresh whose loader read the caller's key got a false `recursiveLoad`).
                    let refreshLink = [LoadChain.Link(cache: ObjectIdentifier(self), key: key)]
                    state.loads[key] = _InFlightLoad(
                        id: id,
                        task: Task<Value, any Error> {
                            try await LoadChain.$links.withValue(refreshLink) {
                                try await self._runLoad(
                                    forKey: key,
                                    cost: cost,
                                    admit: admit,
                                    storing: condition,
                                    loader: loader
                                )
                            }
                        }
                    )
                }
                return (value, nil)
            }
            if recursive { return (nil, nil) }  // thrown below, outside the lock
            if let load = state.loads[key] {
                load.answersMiss = true
                return (nil, (load.task as! Task<Value, any Error>))
            }
            state.nextLoadID &+= 1
            let id = state.nextLoadID
            let task = Task<Value, any Error> {
                try await LoadChain.$links.withValue(link) {
                    try await self._runLoad(
                        forKey: key,
                        cost: cost,
                        admit: admit,
                        storing: .ifLoadCurrent(id: id, refreshing: -1, version: nil),
                        loader: loader
                    )
                }
            }
            state.loads[key] = _InFlightLoad(id: id, task: task)
            return (nil, task)
        }
        if hit != nil {
            observer?(.hit(key: key))
        } else if !missCounted {
            observer?(.miss(key: key))
        }
        if let hit { return (hit, true) }
        guard let task else { throw CacheLoadError.recursiveLoad(key: "\(key)") }
        return (try await task.value, false)
    }

    /// The slot of `key` if its value is due for a refresh and no load for it is running, else -1.
    static func _slotDueForRefresh(_ key: Key, in state: borrowing _CacheState<Key, Value>, now: Int64) -> Int32 {
        guard let expiry = state.core.expiry, expiry.pointee.refreshAfter != _Expiry.never, state.loads[key] == nil
        else {
            return -1
        }
        let slot = state.core.slot(of: key)
        return slot >= 0 && expiry.pointee.isDueForRefresh(slot, now: now) ? slot : -1
    }

    /// Runs one load, then, in one critical section, retires it and stores its value if it is
    /// still attached (see `_StoreCondition.ifLoadCurrent`). A failed load stores nothing, so a
    /// failed refresh keeps the old value.
    func _runLoad(
        forKey key: Key,
        cost: (Value) -> Int,
        admit: ((Value) -> Bool)?,
        storing condition: _StoreCondition,
        loader: @Sendable (Key) async throws -> (Value, expiresAfter: Duration?)
    ) async throws -> Value {
        let clock = ContinuousClock()
        let start = clock.now
        let result: Result<(Value, expiresAfter: Duration?), any Error>
        do {
            result = .success(try await loader(key))
        } catch {
            result = .failure(error)
        }
        let elapsed = clock.now - start
        let value: Value
        let expiresAfter: Duration?
        do {
            (value, expiresAfter) = try result.get()
        } catch {
            _recordLoad(forKey: key, time: elapsed, error: error) { state in
                if case .ifLoadCurrent(let id, _, _) = condition, state.loads[key]?.id == id { state.loads[key] = nil }
            }
            throw error
        }
        var observer: ((CacheActivity<Key>) -> Void)?
        let stored = _store(
            value,
            forKey: key,
            cost: cost(value),
            expiresAfter: expiresAfter,
            when: condition,
            admitted: admit?(value) ?? true
        ) { state in
            state.core.stats.recordLoad(succeeded: true, time: elapsed)
            observer = state.activityObserver
        }.stored
        observer?(.load(key: key, duration: elapsed, error: nil))
        return stored
    }
}
