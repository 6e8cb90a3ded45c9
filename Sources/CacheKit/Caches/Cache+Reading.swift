import Synchronization

// How a `Cache` reads: under a shared stripe of its lock, leaving each read's slot in the
// stripe's buffer for the policy, and taking the exclusive path whenever a read would have to
// change the state (something expired, a time to idle moves).

extension Cache {
    /// The value for `key`, read under the shared lock; the policy hears of the read from the
    /// stripe's buffer. See "Thread safety" in ``Cache`` for what holds.
    ///
    /// - Complexity: O(1): two atomic read-modify-writes on the calling thread's stripe; once
    ///   per 16 reads of a stripe, O(buffered reads) to tell the policy.
    @inlinable
    public func _value(forKey key: Key) -> Value? {
        // Never shared with a time to idle (`_noteContention`): one load decides.
        if _readsShared.load(ordering: .acquiring), let answer = _sharedValue(forKey: key) {
            return answer
        }
        return _lockedValue(forKey: key, hash: _prefetchIndex(for: key), now: _timekeeper.now())
    }

    /// `_value(forKey:)` holding the lock exclusively: what `_StateHost` does, written out
    /// without closures, so that it compiles to one function on every read of a cache whose
    /// reads are not shared.
    @inlinable
    @inline(__always)
    func _lockedValue(forKey key: Key, hash: Int?, now: Int64) -> Value? {
        // The observer is copied out only when one is installed: copying the optional closure
        // unconditionally cost every read a retain and a release, even of `nil`.
        var observer: ((CacheActivity<Key>) -> Void)?
        let turn = _beginWriting()
        var removals = _Removals<Key, Value>()
        state.pointee.core.removeExpired(now: now, removals: &removals)
        if state.pointee.isObserved { observer = state.pointee.activityObserver }
        let value = state.pointee.core.value(forKey: key, hash: hash, now: now)
        state.pointee.core._debugCheckInvariants()
        var handler: ((CacheRemoval<Key, Value>) -> Void)?
        if !removals.isEmpty { handler = state.pointee.removalHandler }
        _endWriting(turn)
        if let handler { removals.forEach(handler) }
        if let observer { observer(value == nil ? .miss(key: key) : .hit(key: key)) }
        return value
    }

    /// `_value(forKey:)` under the shared lock, or `nil` when the read must take the exclusive
    /// path (writers hold the lock for long, or something expired).
    @inlinable
    func _sharedValue(forKey key: Key) -> Value?? {
        let hash = _KeyHash.hash(key, seed: _seed)
        let now = _timekeeper.now()
        guard let stripe = readers.tryLockShared() else { return nil }
        let state = self.state
        if _anythingExpired(in: state, now: now) {
            readers.unlockShared(stripe)
            return nil
        }
        // Copied only when installed (a retain, atomic, safe beside other readers).
        let observer = state.pointee.isObserved ? state.pointee.activityObserver : nil
        let counts = _recordsStatistics.load(ordering: .relaxed)
        let slot = state.pointee.core.slot(of: key, hash: hash)
        guard slot >= 0 else {
            readers.unlockShared(stripe, counting: counts ? .miss : .none)
            observer?(.miss(key: key))
            return .some(nil)
        }
        let value = state.pointee.core.entries[Int(slot)].value
        if _policyHearsReads
            && !stripe.record(slot, generation: state.pointee.core.generations.unsafelyUnwrapped[Int(slot)])
        {
            _replayBufferedReadsIfFree()
        }
        readers.unlockShared(stripe, counting: counts ? .hit : .none)
        observer?(.hit(key: key))
        return value
    }

    /// The value for `key` under the shared lock, telling no one.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func _peekValue(forKey key: Key) -> Value? {
        _sharedLookUp(key) { state, slot in slot >= 0 ? state.pointee.core.entries[Int(slot)].value : nil }
            ?? _withSweptState { $0.core.peekValue(forKey: key) }
    }

    /// Whether `key` has an entry, under the shared lock.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func _contains(_ key: Key) -> Bool {
        _sharedLookUp(key) { _, slot in slot >= 0 } ?? _withSweptState { $0.core.slot(of: key) >= 0 }
    }

    /// Runs `answer` with `key`'s slot (or -1) under the shared lock; `nil` when the read must
    /// take the exclusive path instead (writers hold the lock for long, or something expired).
    @inlinable
    @inline(__always)
    func _sharedLookUp<R>(
        _ key: Key,
        _ answer: (UnsafeMutablePointer<_CacheState<Key, Value>>, Int32) -> R
    ) -> R? {
        guard _readsShared.load(ordering: .acquiring) else { return nil }
        let hash = _KeyHash.hash(key, seed: _seed)
        let now = _timekeeper.now()
        guard let stripe = readers.tryLockShared() else { return nil }
        defer { readers.unlockShared(stripe) }
        let state = self.state
        if _anythingExpired(in: state, now: now) { return nil }
        return answer(state, state.pointee.core.slot(of: key, hash: hash))
    }

    /// Whether an entry may have expired by `now`: a reader then leaves the removal to the
    /// exclusive path. Reads only (the shared lock is held).
    @inlinable
    @inline(__always)
    func _anythingExpired(in state: UnsafeMutablePointer<_CacheState<Key, Value>>, now: Int64) -> Bool {
        guard let expiry = state.pointee.core.expiry, now >= 0 else { return false }
        return expiry.pointee.mayHaveExpired(now: now)
    }

    /// A reader whose stripe's buffer reached the replay threshold replays every stripe's buffer
    /// into the policy, still holding the lock shared (so no writer runs meanwhile), if no other
    /// reader is replaying; otherwise its read stays buffered (dropped only if the buffer was
    /// full) for a later reader or the next write. A replay changes only the policy's state and
    /// the entries' list links, which readers never read.
    @inlinable
    @inline(never)
    func _replayBufferedReadsIfFree() {
        // Loaded first: a failing compare-and-exchange would take the line from the replayer.
        guard !_policyLock.load(ordering: .relaxed),
            _policyLock.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return }
        _replayBufferedReads()
        _policyLock.store(false, ordering: .releasing)
    }

    /// Requests counted by the engine (exclusive reads, loads) and by the readers' stripes.
    ///
    /// - Complexity: O(stripes), under the exclusive lock.
    public var _statistics: CacheStatistics {
        _withState { readers.statistics(adding: $0.core.stats) }
    }

    /// Whether statistics are counted: by the engine and by readers.
    public var _isRecordingStatistics: Bool {
        get { _recordsStatistics.load(ordering: .relaxed) }
        set {
            _withState { state in
                state.core.stats.isRecording = newValue
                _recordsStatistics.store(newValue, ordering: .relaxed)
            }
        }
    }

    /// Sets the engine's counts and the readers' to zero.
    public func _resetStatistics() {
        _withState { readers.resetStatistics(&$0.core.stats) }
    }
}
