/// One write to a ``SharedCache``, queued when it is issued and applied, in issue order, by the
/// next drain.
@usableFromInline
enum _SharedWrite<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// `now` is the time the write was issued (for its time to live), or -1. `hash` is the key's
    /// hash (`_KeyHash`), computed once by the writer: the key filter, the drain's warming and its
    /// index lookup all use it (three hashes fewer inside the exclusive lock).
    case set(Key, Value, cost: Int, timeToLive: Int64?, now: Int64, hash: Int)
    case merge([(key: Key, value: Value)], now: Int64)
    /// Stores each entry whose key has none (a restore from a file: memory is newer), each with
    /// its time to live in nanoseconds (`nil`: the cache's).
    case restore([(key: Key, value: Value, cost: Int, timeToLive: Int64?)], now: Int64)
    /// `now`: when the removal was issued (-1 unknown), as for `set`.
    case remove([Key], now: Int64)
    case removeAll(RemovalReason, now: Int64)
    /// Removes each entry that still holds the version the decider saw.
    case purge([_PurgeTarget<Key>])
    /// Removes entries in eviction order until at most this fraction of them remains.
    case trim(keptFraction: Double, reason: RemovalReason)
    case setCountLimit(Int)
    case setTotalCostLimit(Int)
    /// A read that a queued `set` of the key answered: queued after it, so that the policy hears
    /// of the read in order once the `set` is applied. Changes no contents.
    case access(Key, hash: Int)

    /// When the write was issued, for those that carry the time (-1 when it was not read): the
    /// drain removes what had expired by then before applying the write, so that a write or a
    /// removal issued while an entry lived replaces or removes it rather than finding it expired.
    @inlinable
    var issuedAt: Int64 {
        switch self {
        case .set(_, _, _, _, let now, _), .merge(_, let now), .restore(_, let now), .remove(_, let now),
            .removeAll(_, let now):
            return now
        default:
            return -1
        }
    }
}

/// An entry an eviction decider chose, identified by its slot's version when it was chosen.
@usableFromInline
struct _PurgeTarget<Key: Hashable & Sendable>: Sendable {
    @usableFromInline let key: Key
    @usableFromInline let slot: Int32
    @usableFromInline let version: UInt64

    @usableFromInline
    init(key: Key, slot: Int32, version: UInt64) {
        self.key = key
        self.slot = slot
        self.version = version
    }
}

/// The writes issued and not yet applied, with an index of the latest one to each key, so that
/// a read of one key can see a queued write instead of applying the queue.
@usableFromInline
struct _PendingWrites<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline var writes: [_SharedWrite<Key, Value>] = []
    /// When the background drain runs (kept under the queue's lock with the writes).
    @usableFromInline var drainScheduler = _DrainScheduler()
    /// For each key a queued write names (`set`, or a `remove` of at most
    /// `_SharedWrite.maxNamedKeys` keys), the position in `writes` of the latest such write.
    /// Keyed by the key with its hash, computed once by the writer: this index is used under
    /// the queue's lock, which writing threads contend for.
    @usableFromInline var latest: [_HashedKey<Key>: Int] = [:]
    /// Whether a write that may touch any key (a bulk write) is queued.
    @usableFromInline var hasBulkWrite = false
    /// The latest time a queued `set` was issued at (-1: none), and for each queued write the
    /// latest up to it: applying the queue in order raises the expiry's clock floor
    /// (`_Expiry.latest`) to it, and a queued write's deadline counts from that floor.
    @usableFromInline var latestNow: Int64 = -1
    @usableFromInline var floors: [Int64] = []
    /// The same from the first queued `set` with a time to live of its own on (-1: none yet):
    /// in a cache that has no expiry state yet, that write creates it, and only writes applied
    /// from then on raise the floor.
    @usableFromInline var latestNowSinceTimeToLive: Int64 = -1
    @usableFromInline var floorsWithoutExpiry: [Int64] = []

    init() {}

    /// Queues `write` after the others.
    ///
    /// Moves `write` into the queue: appending a borrowed write copied the whole enum through
    /// an outlined copy (about 80 instructions, on every queued `set`).
    @inlinable
    mutating func append(_ write: consuming _SharedWrite<Key, Value>) {
        index(write, at: writes.count)
        writes.append(write)
    }

    /// Records `write`, about to be queued at `position`, in the floors and the index by key.
    @inlinable
    mutating func index(_ write: _SharedWrite<Key, Value>, at position: Int) {
        var floorWithoutExpiry: Int64 = -1
        if case .set(_, _, _, let timeToLive, let now, _) = write {
            latestNow = Swift.max(latestNow, now)
            if timeToLive != nil || latestNowSinceTimeToLive >= 0 {
                latestNowSinceTimeToLive = Swift.max(latestNowSinceTimeToLive, now)
            }
            floorWithoutExpiry = latestNowSinceTimeToLive >= 0 ? latestNowSinceTimeToLive : now
        }
        floors.append(latestNow)
        floorsWithoutExpiry.append(floorWithoutExpiry)
        switch write {
        case .set(let key, _, _, _, _, let hash): latest[_HashedKey(key, hash: hash)] = position
        case .remove(let keys, _) where keys.count <= _SharedWrite<Key, Value>.maxNamedKeys:
            for key in keys { latest[_HashedKey(key, hash: _KeyHash.hash(key))] = position }
        case .access: break
        default: hasBulkWrite = true
        }
    }

    /// Takes every queued write, in issue order, leaving the queue empty, with room for as many
    /// as were taken (so that the next burst does not grow the array from nothing, copying it
    /// at every doubling).
    @inlinable
    mutating func takeAll() -> [_SharedWrite<Key, Value>] {
        var taken: [_SharedWrite<Key, Value>] = []
        swap(&taken, &writes)
        writes.reserveCapacity(taken.count)
        floors.removeAll(keepingCapacity: true)
        floorsWithoutExpiry.removeAll(keepingCapacity: true)
        latestNowSinceTimeToLive = -1
        if !latest.isEmpty { latest.removeAll(keepingCapacity: true) }
        hasBulkWrite = false
        latestNow = -1
        return taken
    }

    /// What the queued writes make of `key`: `nil` when none touches it (the applied state is
    /// then current for `key`), `.drainFirst` when a bulk write is queued (it may touch the key,
    /// or change a limit that decides whether a queued `set` is stored).
    ///
    /// - Complexity: O(1).
    @inlinable
    func latestWrite(to key: Key, hash: Int) -> _QueuedRead<Value>? {
        if hasBulkWrite { return .drainFirst }
        guard let position = latest[_HashedKey(key, hash: hash)] else { return nil }
        // Through the buffer, whose subscript lends the element: the array's subscript returned
        // a copy of the whole write (an outlined copy of the enum on every such read).
        return writes.withUnsafeBufferPointer { writes in answer(writes[position], at: position) }
    }

    /// Whether the last queued write is an `access` to `key` (read in place, not copied out).
    @inlinable
    func lastIsAccess(to key: Key) -> Bool {
        writes.withUnsafeBufferPointer { writes in
            guard let last = writes.indices.last, case .access(let accessed, _) = writes[last] else { return false }
            return accessed == key
        }
    }

    /// `latestWrite(to:hash:)` for the write at `position`.
    @inlinable
    func answer(_ write: _SharedWrite<Key, Value>, at position: Int) -> _QueuedRead<Value> {
        switch write {
        case .set(_, let value, let cost, let timeToLive, let now, _):
            // `didWrite` counts from max(now, floor) when the time is known.
            return .stored(
                value,
                cost: cost,
                timeToLive: timeToLive,
                floor: now < 0 ? now : floors[position],
                floorWithoutExpiry: now < 0 ? now : floorsWithoutExpiry[position]
            )
        default:
            return .removed
        }
    }
}

/// A key with its hash (`_KeyHash`), hashing as that value without hashing the key again.
@usableFromInline
struct _HashedKey<Key: Hashable & Sendable>: Hashable, Sendable {
    @usableFromInline let key: Key
    @usableFromInline let hash: Int

    @inlinable
    init(_ key: Key, hash: Int) {
        self.key = key
        self.hash = hash
    }

    @inlinable
    static func == (a: Self, b: Self) -> Bool { a.hash == b.hash && a.key == b.key }

    @inlinable
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// The key's hash as is: already a seeded hash of the key (`Dictionary` asks for
    /// this, not `hash(into:)`, when it exists).
    @inlinable
    func _rawHashValue(seed: Int) -> Int { hash }
}

/// The latest queued write to one key, as a reader sees it before the write is applied.
@usableFromInline
enum _QueuedRead<Value: Sendable>: Sendable {
    /// A `set`, with what decides whether it is stored and when it expires: the time its
    /// deadlines count from (the queue's clock floor at it, or -1 when unknown), in a cache that
    /// has expiry state and in one that has none yet.
    case stored(Value, cost: Int, timeToLive: Int64?, floor: Int64, floorWithoutExpiry: Int64)
    /// A removal of the key.
    case removed
    /// A bulk write may touch the key: apply the queue, then read.
    case drainFirst
}

extension _SharedWrite {
    /// The most keys a queued `remove` may name and still be indexed by key; a longer one counts
    /// as a bulk write (readers of any key apply the queue first).
    @inlinable
    static var maxNamedKeys: Int { 64 }
}
