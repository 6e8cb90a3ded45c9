/// How small an eviction pass must make the cache, and what to call the evictions.
@usableFromInline
struct _TrimTarget: Sendable {
    /// The most entries that may stay (`Int.max`: no bound).
    @usableFromInline var maxCount: Int
    /// The most total cost that may stay (`Int.max`: no bound).
    @usableFromInline var maxCost: Int
    /// A reason for every eviction of this pass; `nil` picks count or cost, whichever is exceeded.
    @usableFromInline var reason: RemovalReason?

    @inlinable
    init(maxCount: Int, maxCost: Int, reason: RemovalReason? = nil) {
        self.maxCount = maxCount
        self.maxCost = maxCost
        self.reason = reason
    }

    /// The cache's own limits, where 0 means "no limit".
    @inlinable
    static func limits(countLimit: Int, totalCostLimit: Int) -> _TrimTarget {
        _TrimTarget(
            maxCount: countLimit > 0 ? countLimit : .max,
            maxCost: totalCostLimit > 0 ? totalCostLimit : .max
        )
    }

    /// The reason for the next eviction, or `nil` when `count` and `cost` are within the target.
    @inlinable
    func reasonToEvict(count: Int, cost: Int) -> RemovalReason? {
        if count > maxCount { return reason ?? .evictedForCount }
        if cost > maxCost { return reason ?? .evictedForCost }
        return nil
    }
}

/// An entry proposed for eviction, copied out so the veto can be asked without the lock.
@usableFromInline
struct _Candidate<Key, Value> {
    @usableFromInline var slot: Int32
    /// The slot's generation when proposed; any write or removal in between changes it.
    @usableFromInline var generation: UInt32
    @usableFromInline var key: Key
    @usableFromInline var value: Value
    @usableFromInline var reason: RemovalReason

    @inlinable
    init(slot: Int32, generation: UInt32, key: Key, value: Value, reason: RemovalReason) {
        self.slot = slot
        self.generation = generation
        self.key = key
        self.value = value
        self.reason = reason
    }

    /// Identifies this version of the entry: a replaced value is a new version.
    @inlinable
    var identity: UInt64 { UInt64(UInt32(bitPattern: slot)) << 32 | UInt64(generation) }
}
