// A `SharedCache`'s writes: each is queued and returns at once; a drain applies them in order
// (`SharedCache+Drain.swift`), and a read issued after a write sees it.

extension SharedCache {
    /// Queues a write of `value` for `key`, with a cost and optionally its own time to live.
    /// Returns before the write is applied; every later read sees it. A value whose cost alone
    /// exceeds `totalCostLimit` is not stored, and the key's old value is removed.
    ///
    /// - Complexity: O(1) to queue; O(1) amortized to apply.
    /// - Precondition: `cost` is not negative; `expiresAfter` is positive.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0, expiresAfter: Duration? = nil) {
        precondition(cost >= 0, "cost must not be negative (got \(cost))")
        var now = _timekeeper.now()
        if let expiresAfter {
            precondition(expiresAfter > .zero, "expiresAfter must be positive (got \(expiresAfter))")
            now = _timekeeper.activate()
        }
        _enqueue(
            .set(
                key,
                value,
                cost: cost,
                timeToLive: expiresAfter?._lifetimeNanoseconds,
                now: now,
                hash: _KeyHash.hash(key, seed: _hashSeed)
            )
        )
    }

    /// Queues writes of every pair, applied as one operation (YMCache's
    /// `addEntriesFromDictionary:`).
    ///
    /// - Complexity: O(*m*) for the caller to copy the *m* pairs and queue them; the drain applies
    ///   them in O(*m*) plus O(*k*) for *k* evictions.
    @inlinable
    public func addEntries<S: Sequence>(from entries: S) where S.Element == (key: Key, value: Value) {
        _enqueue(.merge(Array(entries), now: _timekeeper.now()))
    }

    /// Queues writes of every key-value pair of `dictionary`, applied as one operation.
    ///
    /// - Complexity: O(*m*) for the caller to copy the *m* pairs and queue them; the drain applies
    ///   them in O(*m*) plus O(*k*) for *k* evictions.
    @inlinable
    public func addEntries(from dictionary: [Key: Value]) {
        _enqueue(.merge(dictionary.map { ($0.key, $0.value) }, now: _timekeeper.now()))
    }

    /// Queues the removal of `key`'s entry.
    ///
    /// - Complexity: O(1) amortized for the caller; the drain applies it in O(1).
    @inlinable
    public func removeValue(forKey key: Key) { _enqueue(.remove([key], now: _timekeeper.now())) }

    /// Queues the removal of every key in `keys`, applied as one operation.
    ///
    /// - Complexity: O(*k*) for the caller to copy the *k* keys; the drain applies them in O(*k*).
    @inlinable
    public func removeValues<S: Sequence>(forKeys keys: S) where S.Element == Key {
        _enqueue(.remove(Array(keys), now: _timekeeper.now()))
    }

    /// Queues the removal of every entry, applied as one operation (reason
    /// ``RemovalReason/removedAll``).
    ///
    /// - Complexity: O(1) amortized for the caller; the drain applies it in O(*n*).
    @inlinable
    public func removeAll() { _enqueue(.removeAll(.removedAll, now: _timekeeper.now())) }

    /// Queues the expiry of every entry at once (reason ``RemovalReason/expired``).
    ///
    /// - Complexity: O(1) amortized for the caller; the drain applies it in O(*n*).
    @inlinable
    public func expireAll() { _enqueue(.removeAll(.expired, now: _timekeeper.now())) }

    /// Removes the entries that have expired, now.
    ///
    /// - Complexity: as ``count``.
    @inlinable
    public func removeExpired() { _exclusive { _, _ in } }

    /// Applies every write issued before this call, on the calling thread, and returns once the
    /// removal handler has heard every removal they caused (called from the handler itself, it
    /// does not wait for the delivery in progress).
    ///
    /// - Complexity: as ``count``, plus the removal handler's time for what the writes removed.
    @inlinable
    public func flush() {
        _exclusive { _, _ in }
        awaitDeliveries()
    }

    /// ``flush()`` under the name async code expects. It blocks the calling thread as ``flush()``
    /// does: while the queued writes are applied and, if no one else is delivering, while the
    /// removal handler hears what they removed.
    ///
    /// - Complexity: as ``flush()``.
    public func settle() async { flush() }
}
