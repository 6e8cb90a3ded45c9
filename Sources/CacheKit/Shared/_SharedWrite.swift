/// One write to a ``SharedCache``, queued when it is issued and applied, in issue order, by the
/// next drain.
@usableFromInline
enum _SharedWrite<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// `now` is the time the write was issued (for its time to live), or -1.
    case set(Key, Value, cost: Int, timeToLive: Int64?, now: Int64)
    case merge([(key: Key, value: Value)], now: Int64)
    /// Stores each entry whose key has none (a restore from a file: memory is newer).
    case restore([(key: Key, value: Value, cost: Int)], now: Int64)
    case remove([Key])
    case removeAll(RemovalReason)
    /// Removes each entry that still holds the version the decider saw.
    case purge([_PurgeTarget<Key>])
    /// Removes entries in eviction order until at most this fraction of them remains.
    case trim(keptFraction: Double, reason: RemovalReason)
    case setCountLimit(Int)
    case setTotalCostLimit(Int)
}

/// An entry an eviction decider chose, identified by its slot's version when it was chosen.
@usableFromInline
struct _PurgeTarget<Key: Hashable & Sendable>: Sendable {
    @usableFromInline let key: Key
    @usableFromInline let slot: Int32
    @usableFromInline let generation: UInt32

    @usableFromInline
    init(key: Key, slot: Int32, generation: UInt32) {
        self.key = key
        self.slot = slot
        self.generation = generation
    }
}

/// The writes issued and not yet applied.
@usableFromInline
struct _PendingWrites<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline var writes: [_SharedWrite<Key, Value>] = []
    /// Whether a background drain is queued.
    @usableFromInline var drainScheduled = false

    init() {}
}
