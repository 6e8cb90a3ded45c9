extension Cache: SnapshotCache {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs.
    /// Expired entries are not part of it.
    ///
    /// - Complexity: O(*n*).
    public func persistableEntries() -> [PersistedEntry<Key, Value>] { _persistableEntries() }

    /// Writes `entries` in order, as `setValue(_:forKey:cost:)` would (limits, eviction policy,
    /// insertion policy and events all apply), except that a key already in the cache keeps its
    /// value. Restored entries get the cache's ``expiration`` counted from now.
    ///
    /// With ``EvictionPolicy/lru`` or ``EvictionPolicy/fifo`` this reproduces the saved eviction
    /// order; the other policies rebuild their own state (frequencies are not saved).
    ///
    /// - Complexity: O(*n*).
    public func restore(_ entries: [PersistedEntry<Key, Value>]) { _restore(entries) }
}

extension Cache: PersistableCache where Key: Codable, Value: Codable {}
