// Events/: what caches report to their hooks (removals and why, activity, write results). Plain
// values: nothing here locks, stores or decides.

/// Why an entry left a cache. Every removal a removal handler hears carries one.
///
/// Later releases may add reasons; a `switch` over this type outside CacheKit should keep a
/// `default` case, or test ``isEviction`` instead.
public enum RemovalReason: String, Hashable, Sendable, CaseIterable {
    /// Evicted by the policy to keep the cache within its `countLimit`.
    case evictedForCount
    /// Evicted by the policy to keep the cache within its `totalCostLimit`.
    case evictedForCost
    /// A new value was written for the key. Also the reason when the new value was rejected (its
    /// cost alone exceeds `totalCostLimit`, or the insertion policy refused it) and the old value
    /// was dropped with it.
    case replaced
    /// Removed by `removeValue(forKey:)`, `removeValues(forKeys:)` or a `nil` subscript write.
    case removed
    /// Removed by `removeAll()`.
    case removedAll
    /// Evicted by `handleMemoryPressure()`.
    case memoryPressure
    /// Its time ran out (see ``Expiration``), or `expireAll()` expired it. Not an eviction: the
    /// eviction veto is not asked, since an expired value must not be served.
    case expired
    /// Chosen by an eviction decider: ``SharedCache/purgeEvictableItems(context:)`` or the
    /// cache's ``SharedCache/evictionInterval``.
    case purged

    /// Whether the cache chose this removal (an eviction), rather than the caller asking for it.
    ///
    /// Only evictions ask the eviction veto first.
    public var isEviction: Bool {
        switch self {
        case .evictedForCount, .evictedForCost, .memoryPressure, .purged: true
        case .replaced, .removed, .removedAll, .expired: false
        }
    }
}

/// One entry that left a cache: its key, its value and why.
public struct CacheRemoval<Key, Value> {
    /// The key of the entry that left.
    public var key: Key
    /// The value the entry held when it left.
    public var value: Value
    /// Why it left.
    public var reason: RemovalReason

    /// Creates a removal record.
    @inlinable
    public init(key: Key, value: Value, reason: RemovalReason) {
        self.key = key
        self.value = value
        self.reason = reason
    }
}

extension CacheRemoval: Sendable where Key: Sendable, Value: Sendable {}
extension CacheRemoval: Equatable where Key: Equatable, Value: Equatable {}
