/// The times a function on a ``MemoStorage`` stored its results, on its own timeline, for a
/// storage that hands results back without them (see `MemoStorageBacking`).
///
/// Bounded: past `capacity` stamps, the oldest is dropped. From then on the table cannot tell a
/// result whose stamp it dropped (possibly stored long ago) from one it never stamped, so it
/// reports every result without a stamp as of unknown age, which the function treats as
/// expired: a run more, never a stale result. `removeAll` starts afresh. Every mutation returns
/// what it removed (`StampGarbage`), for the caller to release after unlocking: keys hold the
/// user's arguments, whose deinitializers must not run under the lock.
struct StampTable: Sendable {
    /// A stamp: its time, and its number, which tells it from an earlier stamp of the same key.
    struct Stamp: Sendable {
        var time: Int64
        var number: UInt64
    }

    private var entries: [MemoKey: Stamp] = [:]
    /// Stamps in the order they were made; entries that a later stamp of the same key or a
    /// removal made stale stay until they reach the front or a compaction.
    private var order: [(key: MemoKey, stamp: Stamp)?] = []
    private var nextNumber: UInt64 = 0
    private var head = 0
    /// The newest time dropped for room, or `nil` while nothing has been dropped.
    private(set) var watermark: Int64?
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { entries.count }

    /// Every stamp's time (for tests).
    var times: [MemoKey: Int64] { entries.mapValues(\.time) }

    /// When the result stored under `key` was computed, as far as this table knows: its stamp;
    /// else, while no stamp has been dropped, `now` (the first time it is asked), which becomes
    /// its stamp; else `nil`, unknown (its stamp may have been dropped).
    mutating func time(of key: MemoKey, now: Int64) -> (time: Int64?, garbage: StampGarbage) {
        if let stamp = entries[key] { return (stamp.time, StampGarbage()) }
        guard watermark == nil else { return (nil, StampGarbage()) }
        return (now, stamp(key, at: now))
    }

    /// Stamps `key` with `time`, replacing its stamp.
    mutating func stamp(_ key: MemoKey, at time: Int64) -> StampGarbage {
        var garbage = StampGarbage()
        nextNumber &+= 1
        let stamp = Stamp(time: time, number: nextNumber)
        entries[key] = stamp
        order.append((key, stamp))
        while entries.count > capacity, head < order.count {
            let entry = order[head]
            order[head] = nil
            head += 1
            guard let entry else { continue }
            garbage.entries.append(entry)
            if let index = entries.index(forKey: entry.key), entries[index].value.number == entry.stamp.number {
                // The dictionary's own key goes out too: it may hold the last reference.
                garbage.removed.append(entries.remove(at: index))
                watermark = Swift.max(watermark ?? entry.stamp.time, entry.stamp.time)
            }
        }
        // Compact once the stale and consumed entries outnumber the live ones.
        if order.count > 2 * Swift.max(capacity, entries.count) {
            var live: [(key: MemoKey, stamp: Stamp)?] = []
            live.reserveCapacity(entries.count)
            for case let entry? in order[head...] where entries[entry.key]?.number == entry.stamp.number {
                live.append(entry)
            }
            garbage.order = order
            order = live
            head = 0
        }
        return garbage
    }

    /// Forgets the stamp of `key`, if it is `time` (or whatever it is, for `nil`): a call that
    /// removes an expired result must not forget the stamp of a newer one stored meanwhile.
    mutating func forget(_ key: MemoKey, ifStampedAt time: Int64?) -> StampGarbage {
        guard let index = entries.index(forKey: key), time == nil || entries[index].value.time == time else {
            return StampGarbage()
        }
        var garbage = StampGarbage()
        // The dictionary's own key goes out too: it may hold the last reference.
        garbage.removed.append(entries.remove(at: index))
        return garbage
    }

    /// Forgets every stamp (and the watermark: what was stored before is gone).
    mutating func removeAll() -> StampGarbage {
        var garbage = StampGarbage()
        garbage.table = entries
        garbage.order = order
        entries = [:]
        order = []
        head = 0
        watermark = nil
        return garbage
    }
}

/// What a `StampTable` mutation removed: released by whoever receives it, outside the lock.
struct StampGarbage: Sendable {
    var entries: [(key: MemoKey, stamp: StampTable.Stamp)] = []
    var removed: [(key: MemoKey, value: StampTable.Stamp)] = []
    var order: [(key: MemoKey, stamp: StampTable.Stamp)?] = []
    var table: [MemoKey: StampTable.Stamp] = [:]

    init() {}
}
