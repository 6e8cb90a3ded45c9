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

    /// A placeholder reason for a candidate proposed beyond what meets the target (its real
    /// reason is known only once the veto has answered about those before it).
    @inlinable
    var defaultReason: RemovalReason { reason ?? .evictedForCount }

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
    /// The slot's version when proposed (`_CacheCore.version(of:)`); any write or removal in
    /// between changes it, and so does emptying the cache.
    @usableFromInline var version: UInt64
    @usableFromInline var key: Key
    @usableFromInline var value: Value
    @usableFromInline var cost: Int
    /// Why it would go: set when proposed, and again when the veto is asked.
    @usableFromInline var reason: RemovalReason

    @inlinable
    init(slot: Int32, version: UInt64, key: Key, value: Value, cost: Int, reason: RemovalReason) {
        self.slot = slot
        self.version = version
        self.key = key
        self.value = value
        self.cost = cost
        self.reason = reason
    }

    /// Identifies this version of the entry: a replaced value is a new version.
    @inlinable
    var identity: _SlotVersion { _SlotVersion(slot: slot, version: version) }
}

/// One version of one slot's entry (see `_CacheCore.version(of:)`).
@usableFromInline
struct _SlotVersion: Hashable, Sendable {
    @usableFromInline var slot: Int32
    @usableFromInline var version: UInt64

    @inlinable
    init(slot: Int32, version: UInt64) {
        self.slot = slot
        self.version = version
    }
}
