// The operations `Cache` and `SerialCache` share, implemented once: each type declares its public
// members (`Cache+Operations.swift`, `SerialCache+Operations.swift`) as forwarders to these and to
// the reads and writes in `_StateHost.swift`, `_StateHost+Writing.swift` and
// `_StateHost+Eviction.swift`.

extension _StateHost {
    @inlinable
    var _name: String {
        get { _withState { $0.name } }
        set { _withState { $0.name = newValue } }
    }

    @inlinable
    var _expiration: Expiration { _withState { $0.expiration } }

    @inlinable
    var _policy: EvictionPolicy { _withState { $0.policy } }

    /// The subscript's setter: `nil` removes the entry, a value is stored with cost 0.
    @inlinable
    func _setSubscript(_ newValue: Value?, forKey key: Key) {
        if let newValue { _ = _setValue(newValue, forKey: key, cost: 0) } else { _ = _removeValue(forKey: key) }
    }

    /// The values for those of `keys` the cache holds, in one critical section, recording no use.
    @inlinable
    func _values<S: Sequence>(forKeys keys: S) -> [Key: Value] where S.Element == Key {
        // Collected first: iterating the caller's sequence (a lazy one may run any code, this
        // cache's methods included) must not happen under the lock.
        let keys = Array(keys)
        return _withSweptState { state in
            var result: [Key: Value] = [:]
            for key in keys {
                if let value = state.core.peekValue(forKey: key) { result[key] = value }
            }
            return result
        }
    }

    var _countLimit: Int {
        get { _withState { $0.core.countLimit } }
        set {
            precondition(newValue >= 0, "countLimit must not be negative (got \(newValue))")
            _setLimit { $0.countLimit = newValue }
        }
    }

    var _totalCostLimit: Int {
        get { _withState { $0.core.totalCostLimit } }
        set {
            precondition(newValue >= 0, "totalCostLimit must not be negative (got \(newValue))")
            _setLimit { $0.totalCostLimit = newValue }
        }
    }

    var _memoryPressureAction: MemoryPressureAction {
        get { _withState { $0.memoryPressureAction } }
        set { _withState { $0.memoryPressureAction = newValue } }
    }

    /// Writes each pair as a write of its own, with no cost.
    func _addEntries<S: Sequence>(from entries: S) where S.Element == (key: Key, value: Value) {
        for (key, value) in entries { _ = _setValue(value, forKey: key, cost: 0, expiresAfter: nil) }
    }

    func _addEntries(from dictionary: [Key: Value]) {
        for (key, value) in dictionary { _ = _setValue(value, forKey: key, cost: 0, expiresAfter: nil) }
    }
}
