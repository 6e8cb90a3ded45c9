// `Cache`'s public operations, declared on the type. Each forwards to the one implementation
// `Cache` and `SerialCache` share (`_StateHost`, in `_StateHost+Operations.swift` and beside it),
// which runs the engine through `_withState` (for `Cache`, its lock) and reports to the hooks
// after it returns; the reads and statistics go to `Cache`'s own (`Cache+Reading.swift`), which
// serve contended reads in parallel.

extension Cache {
    /// A name for the cache, for debugging and logs (`NSCache`'s `name`); empty unless set.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var name: String {
        get { _name }
        set { _name = newValue }
    }

    /// The expiration this cache was created with.
    @inlinable
    public var expiration: Expiration { _expiration }

    /// The eviction policy this cache was created with.
    @inlinable
    public var policy: EvictionPolicy { _policy }

    // MARK: Reading

    /// The value for `key`, recording a use (an LRU cache moves it to the most recent end).
    /// Setting `nil` removes the entry; setting a value stores it with cost 0.
    ///
    /// - Complexity: O(1).
    @inlinable
    public subscript(key: Key) -> Value? {
        get { _value(forKey: key) }
        set { _setSubscript(newValue, forKey: key) }
    }

    /// The value for `key`, or `nil`; records a use of the entry with the eviction policy.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func value(forKey key: Key) -> Value? { _value(forKey: key) }

    /// The value for `key` without recording a use: the entry keeps its place in eviction order.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func peekValue(forKey key: Key) -> Value? { _peekValue(forKey: key) }

    /// Whether `key` has an entry. Does not record a use.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func contains(_ key: Key) -> Bool { _contains(key) }

    /// The values for those of `keys` the cache holds, read in one critical section (no write
    /// lands between two of them, as ``SharedCache/values(forKeys:)``). Like ``peekValue(forKey:)``,
    /// it records no use and counts no request.
    ///
    /// - Complexity: O(*k*) for *k* keys.
    @inlinable
    public func values<S: Sequence>(forKeys keys: S) -> [Key: Value] where S.Element == Key {
        _values(forKeys: keys)
    }

    /// The value for `key`; on a miss, the value `make()` returns, stored with `cost` and
    /// `expiresAfter`.
    ///
    /// `make` runs outside the cache's lock, so it may use this cache; if it stores a value for
    /// `key` itself, that one is kept and returned. Two threads that miss the same key at once
    /// may both run `make`; the first value stored wins and both get it. For
    /// one load per key however many callers wait, use
    /// ``Cache/value(forKey:cost:expiresAfter:loader:)``. If `make` throws, nothing is stored and
    /// the error reaches the caller; a miss and a failed load are counted.
    ///
    /// - Complexity: O(1) plus `make`.
    @inlinable
    public func value(
        forKey key: Key,
        cost: Int = 0,
        expiresAfter: Duration? = nil,
        orInsert make: () throws -> Value
    ) rethrows -> Value {
        try _value(forKey: key, cost: cost, expiresAfter: expiresAfter, orInsert: make)
    }

    // MARK: Writing

    /// Stores `value` for `key` with a cost, then evicts until both limits hold.
    ///
    /// A new entry never evicts itself; a replaced value is reported to the removal handler with
    /// reason ``RemovalReason/replaced``. If `cost` alone exceeds `totalCostLimit`, or the
    /// insertion policy refuses the value, nothing is stored, any previous value for `key` is
    /// removed, and the result says why (``WriteResult/Rejection``).
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: Its key.
    ///   - cost: What the entry weighs against `totalCostLimit` (bytes, say). Defaults to 0.
    ///   - expiresAfter: How long this entry lives, in place of ``Expiration/afterWrite``; `nil`
    ///     (the default) for the cache's setting.
    /// - Returns: What happened. Ignoring it is fine.
    /// - Precondition: `cost` is not negative; `expiresAfter` is positive.
    /// - Complexity: O(1) amortized, plus O(1) per entry evicted; O(log *n*) with a per-entry
    ///   `expiresAfter`.
    @inlinable
    @discardableResult
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0, expiresAfter: Duration? = nil) -> WriteResult {
        _setValue(value, forKey: key, cost: cost, expiresAfter: expiresAfter)
    }

    /// Removes the entry for `key` and returns its value, or `nil` if there was none.
    ///
    /// - Complexity: O(1).
    @inlinable
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? { _removeValue(forKey: key) }

    /// Removes the entries for `keys`, in one critical section.
    ///
    /// - Complexity: O(*k*) for *k* keys.
    @inlinable
    public func removeValues<S: Sequence>(forKeys keys: S) where S.Element == Key { _removeValues(forKeys: keys) }

    /// Removes every entry. The removal handler hears each with reason
    /// ``RemovalReason/removedAll``; the eviction veto is not asked.
    ///
    /// - Complexity: O(1) in the critical section; O(*n*) after it to report and release the
    ///   entries.
    public func removeAll() { _removeAll(reason: .removedAll) }

    // MARK: Expiring

    /// Removes every entry that has expired now, reporting each with reason
    /// ``RemovalReason/expired``. Every operation does this first anyway; call it to free
    /// memory in a cache that sees no calls, or set ``Expiration/sweepInterval``.
    ///
    /// - Complexity: O(1) if nothing expired; O(1) per entry removed, O(log *n*) for entries
    ///   written with their own `expiresAfter`.
    public func removeExpired() { _removeExpired() }

    /// Expires every entry at once (ClearCache's expiration trigger): removes them all,
    /// reporting each with reason ``RemovalReason/expired``. The eviction veto is not asked.
    ///
    /// - Complexity: O(1) in the critical section; O(*n*) after it to report and release the
    ///   entries.
    public func expireAll() { _removeAll(reason: .expired) }

    // MARK: Size and limits

    /// The number of entries.
    ///
    /// - Complexity: O(1), plus the removal of expired entries first: O(1) each, O(log *n*) for
    ///   one written with its own `expiresAfter`.
    public var count: Int { _count }

    /// The sum of the costs of all entries.
    ///
    /// - Complexity: O(1), plus the removal of expired entries first: O(1) each, O(log *n*) for
    ///   one written with its own `expiresAfter`.
    public var totalCost: Int { _totalCost }

    /// The most entries the cache holds; `0` means no limit. Lowering it evicts at once.
    ///
    /// - Precondition: not negative.
    ///
    /// - Complexity: O(1) to read. Setting evicts at once: O(*k*) for the *k* entries it removes
    ///   (with an eviction veto, in O(log *v*) rounds for *v* refusals), after removing expired
    ///   entries as ``count`` does; with W-TinyLFU, a new limit also sizes the frequency sketch:
    ///   O(min(limit, max(65,536, *n*))) when it grows.
    public var countLimit: Int {
        get { _countLimit }
        set { _countLimit = newValue }
    }

    /// The most total cost the cache holds; `0` means no limit. Lowering it evicts at once.
    ///
    /// - Precondition: not negative.
    ///
    /// - Complexity: O(1) to read. Setting evicts at once, as setting ``countLimit`` does.
    public var totalCostLimit: Int {
        get { _totalCostLimit }
        set { _totalCostLimit = newValue }
    }

    /// Whether the cache holds more than a limit allows, because the eviction veto kept entries.
    ///
    /// - Complexity: O(1), plus the removal of expired entries first: O(1) each, O(log *n*) for
    ///   one written with its own `expiresAfter`.
    public var isOverLimit: Bool { _isOverLimit }

    // MARK: Enumerating

    /// The keys in eviction order: the entry that would be evicted next comes first (for LRU,
    /// the least recently used). A snapshot: later changes do not affect it.
    ///
    /// - Complexity: O(*n*).
    public var keys: [Key] { _keys }

    /// The entries in eviction order, next victim first. A snapshot; stop early with `break`.
    /// (SIEVE, S3-FIFO and W-TinyLFU decide at eviction time: for them this is the order their
    /// queues stand in, and the entry that goes next can be a later one.)
    ///
    /// - Complexity: O(*n*).
    public var entries: [(key: Key, value: Value)] { _entries }

    // MARK: Statistics

    /// Counts of hits, misses, removals by reason and loads. See ``CacheStatistics``.
    ///
    /// - Complexity: O(1): a copy of a dozen counters.
    public var statistics: CacheStatistics { _statistics }

    /// Whether the cache counts ``statistics`` (`true` by default). While `false`, nothing is
    /// counted and the counts keep their values.
    public var isRecordingStatistics: Bool {
        get { _isRecordingStatistics }
        set { _isRecordingStatistics = newValue }
    }

    /// Sets every count in ``statistics`` to zero.
    ///
    /// - Complexity: O(1).
    public func resetStatistics() { _resetStatistics() }

    // MARK: Memory pressure

    /// What ``handleMemoryPressure()`` does. Defaults to ``MemoryPressureAction/removeAll``.
    public var memoryPressureAction: MemoryPressureAction {
        get { _memoryPressureAction }
        set { _memoryPressureAction = newValue }
    }

    /// Frees memory as ``memoryPressureAction`` says: empties the cache or trims it, in eviction
    /// order, asking the eviction veto and reporting each eviction with reason
    /// ``RemovalReason/memoryPressure``. Call it from a memory warning or a pressure monitor
    /// (the cache can also follow a ``MemoryPressureMonitor`` itself).
    ///
    /// - Complexity: O(*n*) to remove every entry; O(*k*) to trim *k* entries.
    public func handleMemoryPressure() { _handleMemoryPressure() }

    /// Frees memory as `action` says, whatever ``memoryPressureAction`` holds: empties the cache
    /// or trims it, in eviction order, asking the eviction veto and reporting each eviction with
    /// reason ``RemovalReason/memoryPressure``, as ``SharedCache/handleMemoryPressure(_:)`` does.
    ///
    /// - Complexity: O(*n*) to remove every entry; O(*k*) to trim *k* entries.
    public func handleMemoryPressure(_ action: MemoryPressureAction) { _handleMemoryPressure(action) }

    // MARK: Bulk writes

    /// Writes every pair, in order, as ``setValue(_:forKey:cost:expiresAfter:)`` with no cost
    /// would (YMCache's `addEntriesFromDictionary:`, as `SharedCache.addEntries(from:)` does). Each pair
    /// is a write of its own: limits hold and the removal handler hears of each pair's removals
    /// before the next pair is written.
    ///
    /// - Complexity: O(*m*) amortized for *m* pairs, plus O(1) per entry evicted.
    public func addEntries<S: Sequence>(from entries: S) where S.Element == (key: Key, value: Value) {
        _addEntries(from: entries)
    }

    /// Writes every key-value pair of `dictionary`, in the dictionary's order, as
    /// the sequence form does.
    ///
    /// - Complexity: O(*m*) amortized for *m* pairs, plus O(1) per entry evicted.
    public func addEntries(from dictionary: [Key: Value]) {
        _addEntries(from: dictionary)
    }
}
