extension _StateHost {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs.
    /// Expired entries are swept first, so they are never part of it.
    func _persistableEntries() -> [PersistedEntry<Key, Value>] {
        _withSweptState { state in
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

    /// Writes `entries` in order through the normal write path (limits, policy, insertion
    /// policy, events), skipping keys that already have an entry and entries whose cost would
    /// take the total past `Int.max`. Each restored entry gets the cache's default expiration,
    /// counted from now.
    func _restore(_ entries: [PersistedEntry<Key, Value>]) {
        for entry in entries {
            _ = _store(entry.value, forKey: entry.key, cost: entry.cost, when: .restore(cost: entry.cost))
        }
    }
}
