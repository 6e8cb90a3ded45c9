/// The fastest CacheKit cache, for one thread (or one serial queue, or one actor) at a time.
///
/// ```swift
/// let cache = SerialCache<Int, String>(countLimit: 4)
/// for i in 1...5 { cache[i] = "\(i)" }   // the 5th insert evicts 1 before it returns
/// cache.keys                             // [2, 3, 4, 5], least recently used first
/// ```
///
/// The YapCache role: a strict cache whose limits hold before each write returns, with the
/// same API, policies, limits, removal handler and eviction veto as ``Cache``, minus the lock
/// and what needs threads (loaders, notification and async-sequence triggers, monitors).
///
/// **`SerialCache` is not thread-safe.** It is not `Sendable`; keep each instance inside one
/// isolation domain (an actor, a serial queue, a single thread). Use ``Cache`` to share one.
///
/// Hooks run after the engine's work for the call is complete, so they may call back into the
/// cache.
///
/// ## Performance
/// The same engine as ``Cache`` without a mutex: O(1) reads and writes, no allocation once full.
public final class SerialCache<Key: Hashable, Value> {
    @usableFromInline let state: UnsafeMutablePointer<_CacheState<Key, Value>>
    /// Public only as `_StateHost` requires it (see there); not API.
    public let _timekeeper: _Timekeeper
    /// Public only as `_StateHost` requires it (see there); not API.
    public let _insertionPolicy: ((Key, Value, Int) -> Bool)?

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the cache holds; `0` (the default) means no limit, as
    ///     for ``Cache`` and `NSCache`. (YapCache's default is 40; a size that suits every use
    ///     does not exist, so CacheKit does not pick one: pass yours.)
    ///   - totalCostLimit: The most total cost the cache holds; `0` (the default) means no limit.
    ///   - policy: Which entry leaves first when a limit is reached. Defaults to ``EvictionPolicy/lru``: YapCache's
    ///     strict LRU, unlike ``Cache``, whose default is ``EvictionPolicy/default``.
    ///   - expiration: When entries expire (time to live, time to idle, refresh). Defaults to
    ///     ``Expiration/never``; a write can still give its entry an `expiresAfter`.
    ///   - clock: The clock expiry is measured on. Tests pass a ``ManualClock``. The default
    ///     `ContinuousClock` is read on Linux from a reading that a background thread publishes
    ///     every millisecond (so an entry's life may be up to about 1 ms off its duration), and
    ///     it does not advance while the machine is suspended. Any other clock is read exactly.
    ///     ``Expiration/sweepInterval`` is ignored: a `SerialCache` runs nothing in the background.
    ///   - insertionPolicy: Asked before each value is stored; a value it refuses is not stored.
    /// - Precondition: `countLimit` and `totalCostLimit` are not negative; every duration in
    ///   `expiration` is positive. A violation traps with a message naming the parameter.
    public init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .lru,
        expiration: Expiration = .never,
        clock: some Clock<Duration> = ContinuousClock(),
        insertionPolicy: ((_ key: Key, _ value: Value, _ cost: Int) -> Bool)? = nil
    ) {
        state = _CacheState.allocate(countLimit, totalCostLimit, policy, expiration)
        _timekeeper = _Timekeeper(clock, active: expiration.isActive)
        _insertionPolicy = insertionPolicy
    }

    /// Decides which values are stored. Set when the cache is created.
    public var insertionPolicy: ((_ key: Key, _ value: Value, _ cost: Int) -> Bool)? { _insertionPolicy }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Called with every entry that leaves the cache and why, once the cache's own work for the
    /// call is done. It may call back into the cache.
    public var removalHandler: ((CacheRemoval<Key, Value>) -> Void)? {
        get { state.pointee.userRemovalHandler }
        set { _ = _exchangeRemovalHandler(newValue) }
    }

    /// Hears every hit, miss, write, removal and load (see ``CacheActivity``), once the cache's
    /// own work for the call is done; it may call back into the cache. `nil` by default.
    public var activityObserver: ((CacheActivity<Key>) -> Void)? {
        get { state.pointee.activityObserver }
        set { _ = _exchangeActivityObserver(newValue) }
    }

    /// Asked before each eviction (for count, cost or memory pressure, never for explicit
    /// removals); return `false` to keep the entry and have the next candidate tried.
    public var evictionVeto: ((Key, Value, RemovalReason) -> Bool)? {
        get { state.pointee.evictionVeto }
        set { _ = _exchangeEvictionVeto(newValue) }
    }

    /// Checks the engine's internal consistency, trapping on the first disagreement (for the
    /// package's tests; not API).
    package func _checkInvariants() { state.pointee.core._checkInvariants() }

    /// Makes room in an empty cache for `count` entries (at most `countLimit`) at once, for a
    /// load of a known number of entries, such as a store's index when it opens; not API.
    package func _reserveCapacity(_ count: Int) { state.pointee.core.reserve(count) }
}

extension SerialCache: _StateHost {
    /// See `_StateHost`: public only for the inlinable operations both caches share.
    @inlinable
    public func _withState<R: ~Copyable>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R {
        try body(&state.pointee)
    }

    /// Nothing: with no lock to take first, the engine's own load of the bucket comes as early.
    /// Public only as `_StateHost` requires it; not API.
    @inlinable
    @inline(__always)
    public func _prefetchIndex(for key: Key) -> Int? { nil }

    /// Whether a replay may go straight to the engine: nothing (expiry, a removal handler, an
    /// eviction veto, an activity observer, an insertion policy) needs the two-call path.
    @inlinable
    func _replaysDirectly(_ state: borrowing _CacheState<Key, Value>) -> Bool {
        state.core.expiry == nil && state.removalHandler == nil && state.evictionVeto == nil
            && state.activityObserver == nil && _insertionPolicy == nil
    }

    /// For the package's simulator (`cachekit simulate`), not API: one request of a trace replay.
    /// Returns whether `key` was
    /// cached (a hit, which counts as a use); on a miss stores `value` with cost 0. The same
    /// engine and policy steps as ``value(forKey:)`` followed by ``setValue(_:forKey:cost:)``,
    /// with one index probe instead of two. A cache with expiry, a removal handler, an eviction
    /// veto, an activity observer or an insertion policy takes those two calls instead.
    ///
    /// - Complexity: O(1) amortized, plus O(1) per entry evicted.
    @inlinable
    package func _replay(_ key: Key, insertingOnMiss value: Value) -> Bool {
        let hit = _withState { state -> Bool? in
            guard _replaysDirectly(state) else { return nil }
            var removals = _Removals<Key, Value>()
            let hit = state.core.access(key, insertingOnMiss: value, removals: &removals)
            state.core._debugCheckInvariants()
            return hit
        }
        if let hit { return hit }
        if self.value(forKey: key) != nil { return true }
        setValue(value, forKey: key)
        return false
    }

    /// For the package's simulator (`cachekit simulate`), not API: replays `keys` in order, each as
    /// ``_replay(_:insertingOnMiss:)`` does, and returns how many were hits. The cache's
    /// configuration is checked once for the whole run rather than once per request.
    ///
    /// - Complexity: O(*n*) amortized for *n* keys.
    @inlinable
    package func _replay<Keys: Sequence<Key>>(_ keys: Keys, insertingOnMiss value: Value) -> Int {
        guard _withState({ _replaysDirectly($0) }) else {
            return keys.reduce(0) { $0 + (_replay($1, insertingOnMiss: value) ? 1 : 0) }
        }
        return _withState { state in
            var hits = 0
            for key in keys {
                var removals = _Removals<Key, Value>()
                if state.core.access(key, insertingOnMiss: value, removals: &removals) { hits &+= 1 }
                state.core._debugCheckInvariants()
            }
            return hits
        }
    }
}
