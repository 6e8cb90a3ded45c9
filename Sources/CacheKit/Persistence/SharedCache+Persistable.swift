extension SharedCache: SnapshotCache {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs,
    /// read in one operation after every write issued before it (and with every read so far in
    /// the order). Expired entries are not part of it.
    ///
    /// - Complexity: O(*n*).
    public func persistableEntries() -> [PersistedEntry<Key, Value>] {
        // Exclusive: the buffered reads are replayed first, so the order is exact.
        _exclusive { state, _ in
            var result: [PersistedEntry<Key, Value>] = []
            result.reserveCapacity(state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                let entry = state.core.entries[Int(slot)]
                result.append(PersistedEntry(key: entry.key, value: entry.value, cost: state.core.cost(at: slot)))
                return true
            }
            return result
        }
    }

    /// Queues the writes of `entries`, in order, as one operation; a key that already has an
    /// entry when it is applied keeps its value (what is in memory is newer than the file).
    /// Restored entries get the cache's expiration counted from now. With
    /// ``EvictionPolicy/lru`` or ``EvictionPolicy/fifo`` this reproduces the saved eviction order.
    ///
    /// - Complexity: O(*n*).
    public func restore(_ entries: [PersistedEntry<Key, Value>]) {
        _enqueue(.restore(entries.map { ($0.key, $0.value, $0.cost) }, now: _timekeeper.now()))
    }
}

extension SharedCache: PersistableCache where Key: Codable, Value: Codable {}
