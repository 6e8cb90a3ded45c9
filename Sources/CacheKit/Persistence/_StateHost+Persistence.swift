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
        let wallNow = Date()
        for entry in entries {
            guard let lifetime = _CacheCore<Key, Value>.remainingLifetime(until: entry.expiresAt, at: wallNow) else {
                continue  // its time passed while it was saved
            }
            _ = _store(
                entry.value,
                forKey: entry.key,
                cost: entry.cost,
                expiresAfter: lifetime == Int64.max ? nil : .nanoseconds(lifetime),
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

    /// What is left until `expiresAt` at `wallNow`, in nanoseconds: at least 1, `Int64.max` for
    /// no deadline (`nil`), and `nil` when the time has passed.
    static func remainingLifetime(until expiresAt: Date?, at wallNow: Date) -> Int64? {
        guard let expiresAt else { return Int64.max }
        let seconds = expiresAt.timeIntervalSince(wallNow)
        guard seconds > 0 else { return nil }
        guard seconds < 9e9 else { return Int64.max - 1 }  // beyond what Int64 nanoseconds hold: as good as never
        return Swift.max(1, Int64(seconds * 1e9))
    }
}
