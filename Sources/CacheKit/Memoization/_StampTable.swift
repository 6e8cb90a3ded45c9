/// The times a function on a ``MemoStorage`` stored its results, on its own timeline, for a
/// storage that hands results back without them (see `_MemoStorageBacking`).
///
/// Bounded: past `capacity` stamps, the oldest is dropped, and the newest time dropped so far
/// (the watermark) stands in for every result without a stamp, so a result whose stamp was
/// dropped ages at least from then and never looks younger than it is. Every mutation returns
/// what it removed (`_StampGarbage`), for the caller to release after unlocking: keys hold the
/// user's arguments, whose deinitializers must not run under the lock.
struct _StampTable: Sendable {
    private(set) var stamps: [MemoKey: Int64] = [:]
    /// Stamps in the order they were made (so in time order); entries that a later stamp of the
    /// same key or a removal made stale stay until they reach the front or a compaction.
    private var order: [(key: MemoKey, time: Int64)?] = []
    private var head = 0
    /// The newest time dropped for room: no result without a stamp is younger than that.
    private(set) var watermark: Int64?
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { stamps.count }

    /// When the result stored under `key` was computed, as far as this table knows: its stamp,
    /// or else the watermark or `now` (the first time it is asked), which is then its stamp.
    mutating func time(of key: MemoKey, now: Int64) -> (time: Int64, garbage: _StampGarbage) {
        if let stamp = stamps[key] { return (stamp, _StampGarbage()) }
        let time = watermark.map { Swift.min($0, now) } ?? now
        return (time, stamp(key, at: time))
    }

    /// Stamps `key` with `time`, replacing its stamp.
    mutating func stamp(_ key: MemoKey, at time: Int64) -> _StampGarbage {
        var garbage = _StampGarbage()
        stamps[key] = time
        order.append((key, time))
        while stamps.count > capacity, head < order.count {
            let entry = order[head]
            order[head] = nil
            head += 1
            guard let entry else { continue }
            garbage.entries.append(entry)
            if stamps[entry.key] == entry.time {
                garbage.removed.append(stamps.removeValue(forKey: entry.key).map { (entry.key, $0) }!)
                watermark = Swift.max(watermark ?? entry.time, entry.time)
            }
        }
        // Compact once the stale and consumed entries outnumber the live ones.
        if order.count > 2 * Swift.max(capacity, stamps.count) {
            var live: [(key: MemoKey, time: Int64)?] = []
            live.reserveCapacity(stamps.count)
            for case let entry? in order[head...] where stamps[entry.key] == entry.time { live.append(entry) }
            garbage.order = order
            order = live
            head = 0
        }
        return garbage
    }

    /// Forgets the stamp of `key`, if it is `time` (or whatever it is, for `nil`): a call that
    /// removes an expired result must not forget the stamp of a newer one stored meanwhile.
    mutating func forget(_ key: MemoKey, ifStampedAt time: Int64?) -> _StampGarbage {
        guard let stamp = stamps[key], time == nil || stamp == time else { return _StampGarbage() }
        var garbage = _StampGarbage()
        if let removed = stamps.removeValue(forKey: key) { garbage.removed.append((key, removed)) }
        return garbage
    }

    /// Forgets every stamp (and the watermark: what was stored before is gone).
    mutating func removeAll() -> _StampGarbage {
        var garbage = _StampGarbage()
        garbage.table = stamps
        garbage.order = order
        stamps = [:]
        order = []
        head = 0
        watermark = nil
        return garbage
    }
}

/// What a `_StampTable` mutation removed: released by whoever receives it, outside the lock.
struct _StampGarbage: Sendable {
    var entries: [(key: MemoKey, time: Int64)] = []
    var removed: [(MemoKey, Int64)] = []
    var order: [(key: MemoKey, time: Int64)?] = []
    var table: [MemoKey: Int64] = [:]

    init() {}
}
