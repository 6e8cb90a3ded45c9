import Foundation

extension _StateHost {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs
    /// and deadlines. Expired entries are swept first, so they are never part of it.
    func _persistableEntries() -> [PersistedEntry<Key, Value>] {
        let now = _timekeeper.now()
        let wallNow = Date()
        return _withSweptState(now: now) { state, _ in
            state.core.persistableEntries(now: now, wallNow: wallNow)
        }
    }

    /// Writes `entries` in order through the normal write path (limits, policy, insertion
    /// policy, events), skipping keys that already have an entry and entries whose cost would
    /// take the total past `Int.max`. Each restored entry gets what is left of its life
    /// (`PersistedEntry.expiresAt`) as an `expiresAfter` of its own, and one whose time has
    /// passed is left out; an entry with no deadline gets the cache's expiration, counted from
    /// now.
    func _restore(_ entries: [PersistedEntry<Key, Value>]) {
        for (entry, timeToLive) in _CacheCore<Key, Value>.restorable(entries, at: Date()) {
            _ = _store(
                entry.value,
                forKey: entry.key,
                cost: entry.cost,
                expiresAfter: timeToLive.map { .nanoseconds($0) },
                when: .restore(cost: entry.cost)
            )
        }
    }
}

extension _CacheCore {
    /// The live entries in eviction order, next victim first, with their costs and, where they
    /// have one, their deadlines on the wall clock: `wallNow` plus what is left of each at `now`
    /// (the cache's clock).
    func persistableEntries(now: Int64, wallNow: Date) -> [PersistedEntry<Key, Value>] {
        var result: [PersistedEntry<Key, Value>] = []
        result.reserveCapacity(count)
        forEachSlotInEvictionOrder { slot in
            let entry = entries[Int(slot)]
            var expiresAt: Date?
            if let expiry, now >= 0 {
                let deadline = expiry.pointee.deadline(of: slot)
                if deadline != _Expiry.never {
                    expiresAt = wallNow.addingTimeInterval(Double(deadline - now) / 1e9)
                }
            }
            result.append(
                PersistedEntry(key: entry.key, value: entry.value, cost: cost(at: slot), expiresAt: expiresAt)
            )
            return true
        }
        return result
    }

    /// The entries a restore at `wallNow` writes, in order, each with what is left of its life
    /// in nanoseconds (at least 1; `nil` for an entry without a deadline, which gets the cache's
    /// expiration): those whose `expiresAt` has passed are left out.
    static func restorable(
        _ entries: [PersistedEntry<Key, Value>],
        at wallNow: Date
    ) -> [(entry: PersistedEntry<Key, Value>, timeToLive: Int64?)] {
        entries.compactMap { entry in
            guard let expiresAt = entry.expiresAt else { return (entry, nil) }
            let seconds = expiresAt.timeIntervalSince(wallNow)
            guard seconds > 0 else { return nil }  // its time passed while it was saved
            // Beyond what Int64 nanoseconds hold: as good as never (saturates to it when added).
            let nanoseconds = seconds < 9e9 ? Swift.max(1, Int64(seconds * 1e9)) : Int64.max - 1
            return (entry, nanoseconds)
        }
    }
}
