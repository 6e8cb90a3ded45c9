/// Everything a cache keeps behind its lock (or, for `SerialCache`, behind its single owner).
///
/// Not API: public only as the type `_StateHost`'s requirements name; every member is internal.
public struct _CacheState<Key: Hashable, Value>: ~Copyable {
    @usableFromInline var core: _CacheCore<Key, Value>
    @usableFromInline let policy: EvictionPolicy
    @usableFromInline let expiration: Expiration
    /// What every removal is reported to: the user's handler and the activity observer, or `nil`.
    @usableFromInline var removalHandler: ((CacheRemoval<Key, Value>) -> Void)?
    /// The handler the user installed.
    @usableFromInline var userRemovalHandler: ((CacheRemoval<Key, Value>) -> Void)?
    @usableFromInline var activityObserver: ((CacheActivity<Key>) -> Void)? {
        didSet { isObserved = activityObserver != nil }
    }
    /// Whether `activityObserver` is set, kept apart from it: code that copies the observer out
    /// only `if activityObserver != nil` was compiled to an unconditional copy (copying `nil`
    /// is the same as not copying), a retain and a release on every call.
    @usableFromInline var isObserved = false
    @usableFromInline var evictionVeto: ((Key, Value, RemovalReason) -> Bool)?
    @usableFromInline var memoryPressureAction: MemoryPressureAction
    /// Loads in flight (`Cache.value(forKey:loader:)`), by key: each holds the shared `Task`.
    /// A write, removal or `expireAll` of the key detaches its load (drops it from here): the
    /// load still finishes and answers its waiters, but stores nothing over the newer state.
    @usableFromInline var loads: [Key: _InFlightLoad] = [:]
    /// The identity the next load gets, so a finishing load can tell whether it is still attached.
    @usableFromInline var nextLoadID: UInt64 = 0
    /// Counts explicit removals (`removeValue`, `removeValues`, `removeAll`, `expireAll` and the
    /// expiration triggers; not evictions, expiry or memory pressure). A memoized synchronous
    /// call, which has no load here to detach, notes it before computing and stores nothing if it
    /// changed meanwhile: what it computed may be what the removal meant to drop.
    @usableFromInline var invalidations: UInt64 = 0
    /// The cache's name (`NSCache.name`), for debugging and logs.
    @usableFromInline var name = ""

    /// A new state on the heap, where a cache keeps it for its lifetime (deallocated by the
    /// cache's `deinit`). The arguments are a cache initializer's, in its order.
    static func allocate(
        _ countLimit: Int,
        _ totalCostLimit: Int,
        _ policy: EvictionPolicy,
        _ expiration: Expiration
    ) -> UnsafeMutablePointer<Self> {
        let state = UnsafeMutablePointer<Self>.allocate(capacity: 1)
        state.initialize(
            to: _CacheState(
                countLimit: countLimit,
                totalCostLimit: totalCostLimit,
                policy: policy,
                expiration: expiration
            )
        )
        return state
    }

    init(countLimit: Int, totalCostLimit: Int, policy: EvictionPolicy, expiration: Expiration = .never) {
        expiration.validate()
        self.policy = policy
        self.expiration = expiration
        self.core = _CacheCore(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            expiry: expiration.isActive ? _ExpiryTimes(expiration) : nil
        ) {
            _AnyPolicy(policy, slotCapacity: $0)
        }
        // A refresh must not overwrite a write that happened while it loaded: it compares versions.
        if expiration.refreshAfterWrite != nil { core.trackGenerations() }
        self.removalHandler = nil
        self.userRemovalHandler = nil
        self.activityObserver = nil
        self.evictionVeto = nil
        self.memoryPressureAction = .removeAll
    }

    /// Sets `removalHandler` to report to both the user's handler and the observer.
    @inlinable
    mutating func combineRemovalHooks() {
        guard let observer = activityObserver else {
            removalHandler = userRemovalHandler
            return
        }
        let user = userRemovalHandler
        removalHandler = { removal in
            user?(removal)
            observer(.removal(key: removal.key, reason: removal.reason))
        }
    }

    /// Empties the core in O(1), returning the old one to report and free outside the lock.
    @inlinable
    mutating func takeAll() -> _CacheCore<Key, Value> {
        core.takeAll { [policy] in _AnyPolicy(policy, slotCapacity: $0) }
    }
}

/// One load in flight: the `Task` every caller for the key awaits, type-erased so that the state
/// can hold it whatever `Value` is (the loading API requires `Sendable` values).
@usableFromInline
final class _InFlightLoad {
    @usableFromInline let id: UInt64
    @usableFromInline let task: Any
    /// A miss for the key awaits this load (guarded by the cache's lock). A refresh that a miss
    /// joined stores its value even if the entry it reloads has left: it is that miss's load.
    @usableFromInline var answersMiss = false

    @inlinable
    init(id: UInt64, task: Any) {
        self.id = id
        self.task = task
    }
}

extension _CacheState {
    /// Drops the load in flight for `key`, if any, so that it stores nothing when it finishes.
    @inlinable
    mutating func detachLoad(forKey key: Key) {
        if !loads.isEmpty { loads[key] = nil }
    }
}
