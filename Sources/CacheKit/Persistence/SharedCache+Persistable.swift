import Foundation

extension SharedCache: SnapshotCache {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs,
    /// read in one operation after every write issued before it (and with every read so far in
    /// the order). Expired entries are not part of it.
    ///
    /// - Complexity: O(*n*).
    public func persistableEntries() -> [PersistedEntry<Key, Value>] {
        let wallNow = Date()
        // Exclusive: the buffered reads are replayed first, so the order is exact.
        return _exclusive { state, now in state.core.persistableEntries(now: now, wallNow: wallNow) }
    }

    /// Queues the writes of `entries`, in order, as one operation; a key that already has an
    /// entry when it is applied keeps its value (what is in memory is newer than the file).
    /// Each restored entry gets what is left of its life (``PersistedEntry/expiresAt``), and one
    /// whose time has passed is left out; an entry with no deadline gets the cache's expiration
    /// counted from now. With ``EvictionPolicy/lru`` or ``EvictionPolicy/fifo`` this reproduces
    /// the saved eviction order.
    ///
    /// - Complexity: O(*n*).
    public func restore(_ entries: [PersistedEntry<Key, Value>]) {
        let restored = _CacheCore<Key, Value>.restorable(entries, at: Date()).map { entry, timeToLive in
            (key: entry.key, value: entry.value, cost: entry.cost, timeToLive: timeToLive)
        }
        // An entry with a time of its own needs the clock read (as `setValue(expiresAfter:)`).
        let now = restored.contains { $0.timeToLive != nil } ? _timekeeper.activate() : _timekeeper.now()
        _enqueue(.restore(restored, now: now))
    }
}

extension SharedCache: PersistableCache where Key: Codable, Value: Codable {}
