extension Cache {
    /// The value for `key`; on a miss, the value `make()` returns, stored with `cost`.
    ///
    /// `make` runs outside the lock, so it may use this cache. Two threads that miss the same key
    /// at once may both run `make`; the first value stored wins and both get it. For one load per
    /// key however many callers wait, use ``value(forKey:cost:loader:)``. If `make` throws,
    /// nothing is stored and the error reaches the caller; a miss and a failed load are counted.
    ///
    /// - Complexity: O(1) plus `make`.
    @inlinable
    public func value(forKey key: Key, cost: Int = 0, orInsert make: () throws -> Value) rethrows -> Value {
        try _value(forKey: key, cost: cost, orInsert: make)
    }

    /// Counts of hits, misses, removals by reason and loads. See ``CacheStatistics``.
    public var statistics: CacheStatistics { _statistics }

    /// Whether the cache counts ``statistics`` (`true` by default). While `false`, nothing is
    /// counted and the counts keep their values.
    public var isRecordingStatistics: Bool {
        get { _isRecordingStatistics }
        set { _isRecordingStatistics = newValue }
    }

    /// Sets every count in ``statistics`` to zero.
    public func resetStatistics() { _resetStatistics() }
}

extension SerialCache {
    /// The value for `key`; on a miss, the value `make()` returns, stored with `cost`. If `make`
    /// stored a value for `key` itself, that one is kept and returned. If `make` throws, nothing
    /// is stored.
    ///
    /// - Complexity: O(1) plus `make`.
    @inlinable
    public func value(forKey key: Key, cost: Int = 0, orInsert make: () throws -> Value) rethrows -> Value {
        try _value(forKey: key, cost: cost, orInsert: make)
    }

    /// Counts of hits, misses, removals by reason and loads. See ``CacheStatistics``.
    public var statistics: CacheStatistics { _statistics }

    /// Whether the cache counts ``statistics`` (`true` by default).
    public var isRecordingStatistics: Bool {
        get { _isRecordingStatistics }
        set { _isRecordingStatistics = newValue }
    }

    /// Sets every count in ``statistics`` to zero.
    public func resetStatistics() { _resetStatistics() }
}

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
enum _LoadChain {
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
    ///   its own key (directly or through other loads it started) gets
    ///   ``CacheLoadError/recursiveLoad(key:)`` instead of waiting forever. Cycles that pass
    ///   through loads started by other callers are not detected.
    /// - The loaded value is stored with `cost`, like ``setValue(_:forKey:cost:)``: limits,
    ///   the removal handler and the eviction veto apply. No loader runs while the lock is held.
    ///
    /// - Complexity: O(1) on a hit; on a miss, O(1) plus the load.
    public func value(
        forKey key: Key,
        cost: Int = 0,
        loader: @escaping @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        let id = ObjectIdentifier(self)
        let chain = _LoadChain.links
        if chain.contains(where: { $0.cache == id && ($0.key as? Key) == key }) {
            throw CacheLoadError.recursiveLoad(key: "\(key)")
        }
        let (hit, task) = _withState { state -> (Value?, Task<Value, any Error>?) in
            if let value = state.core.value(forKey: key) { return (value, nil) }
            if let load = state.loads[key] { return (nil, (load.task as! Task<Value, any Error>)) }
            let task = Task<Value, any Error> {
                try await _LoadChain.$links.withValue(chain + [_LoadChain.Link(cache: id, key: key)]) {
                    try await self._runLoad(forKey: key, cost: cost, loader: loader)
                }
            }
            state.loads[key] = _InFlightLoad(task: task)
            return (nil, task)
        }
        if let hit { return hit }
        return try await task!.value
    }

    /// Runs one load, then, in one critical section, retires it and stores its value.
    func _runLoad(
        forKey key: Key,
        cost: Int,
        loader: @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        let clock = ContinuousClock()
        let start = clock.now
        let result: Result<Value, any Error>
        do {
            result = .success(try await loader(key))
        } catch {
            result = .failure(error)
        }
        let elapsed = clock.now - start
        guard case .success(let value) = result else {
            _withState { state in
                state.loads[key] = nil
                state.core.stats.recordLoad(succeeded: false, time: elapsed)
            }
            return try result.get()
        }
        let (removals, handler, veto) = _withState { state in
            state.loads[key] = nil
            state.core.stats.recordLoad(succeeded: true, time: elapsed)
            var removals = _Removals<Key, Value>()
            let veto = state.evictionVeto
            _ = state.core.setValue(value, forKey: key, cost: cost, evictInline: veto == nil, removals: &removals)
            state.core._debugCheckInvariants()
            return (removals, removals.isEmpty ? nil : state.removalHandler, veto)
        }
        Self._report(removals, to: handler)
        if let veto { _ = _trim(askingVeto: veto, protecting: key) { $0.limits } }
        return value
    }
}
