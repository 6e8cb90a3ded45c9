import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// How a `SharedCache` reads: under a shared stripe of its lock, answering a key with a queued
// write from the queue by the engine's rules, and buffering reads that the policy hears later.

extension SharedCache {
    /// Runs `body` holding the lock shared, after applying any queued write.
    @inlinable
    func _reading<R>(_ body: (borrowing _CacheState<Key, Value>, Int64) -> R) -> R {
        if _pendingCount.load(ordering: .sequentiallyConsistent) > 0 { _drain() }
        let now = _timekeeper.now()
        let stripe = _lock.lockShared()
        defer { _lock.unlockShared(stripe) }
        return body(_state.pointee, now)
    }

    /// Runs `body` holding the lock shared, with the key's hash (computed once, for the filter
    /// and the index) and the latest queued write to `key` (`nil` if no queued write touches
    /// it); `body` returns its result and what the read counts in the statistics, which the
    /// unlock adds. The applied state and the queue together are the cache's current contents: while
    /// the shared lock is held no drain moves a write from one to the other, so a read of one
    /// key need not apply the queue, unless a bulk write is queued.
    ///
    /// The filter alone says whether to look: it is counted up before a write's call returns,
    /// like `_pendingCount`, which every write changes and a read of one key therefore does not
    /// load (the line would move between cores on every write).
    ///
    /// `body` gets a pointer to the state, and must only read through it (other readers hold
    /// the lock too). Passed `borrowing`, the state (536 bytes) was copied onto the stack for
    /// every read: a `memcpy` that took a fifth of a read's instructions. (`inout` avoided the
    /// copy, but ThreadSanitizer rightly reports two readers' `inout` accesses as a race.)
    ///
    /// - Complexity: O(1); a look into the queue's index (under its lock) only when the filter
    ///   says a queued write may touch `key`.
    @inlinable
    @inline(__always)
    func _reading<R>(
        key: Key,
        recordingRead: Bool = false,
        _ body: (UnsafeMutablePointer<_CacheState<Key, Value>>, _StripedLock.Stripe, Int64, Int, _QueuedRead<Value>?) ->
            (
                R, _StripedLock.Tally
            )
    ) -> R {
        let now = _timekeeper.now()
        let hash = _KeyHash.hash(key, seed: _hashSeed)
        while true {
            let stripe = _lock.lockShared()
            var queued: _QueuedRead<Value>? = nil
            if _pendingKeys.mayTouch(hash: hash) {
                queued = _latestQueuedWrite(to: key, hash: hash, recordingRead: recordingRead)
                if case .drainFirst? = queued {
                    _lock.unlockShared(stripe)
                    _drain()
                    continue
                }
            }
            let (result, tally) = body(_state, stripe, now, hash, queued)
            _lock.unlockShared(stripe, counting: tally)
            return result
        }
    }

    /// The latest queued write to `key`; out of line, so that the common read (no queued write
    /// to its key) stays small enough to inline. `recordingRead`: a read the policy should hear
    /// of; when a queued `set` answers it, an `access` is queued behind, in the same critical
    /// section, so the policy hears of the read right where it happened in the order of writes.
    @inlinable
    @inline(never)
    func _latestQueuedWrite(to key: Key, hash: Int, recordingRead: Bool) -> _QueuedRead<Value>? {
        if recordingRead && _tracksReads.load(ordering: .relaxed) {
            return pending.withLock { pending in
                let latest = pending.latestWrite(to: key, hash: hash)
                // One access for a run of reads of the key with nothing queued between them (a
                // hot key read many times between two drains queues one, not thousands).
                if pending.lastIsAccess(to: key) { return latest }
                if case .stored? = latest {
                    pending.append(.access(key, hash: hash))
                    _pendingCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
                }
                return latest
            }
        }
        return pending.withLock { $0.latestWrite(to: key, hash: hash) }
    }

    /// The value a queued write leaves for its key once applied, if it is alive at `now`: a
    /// `set` whose cost exceeds the cost limit removes the key, and one whose time to live
    /// (its own, or the cache's) or time to idle has run out is expired. Evictions that queued
    /// writes will cause are not seen here: they happen when the writes are applied.
    /// `state` is read only (see `_reading(key:recordingRead:_:)`).
    @inlinable
    func _value(
        of queued: _QueuedRead<Value>,
        in state: UnsafeMutablePointer<_CacheState<Key, Value>>,
        now: Int64
    ) -> Value? {
        guard case .stored(let value, let cost, let timeToLive, let floor, let floorWithoutExpiry) = queued else {
            return nil
        }
        if state.pointee.core.rejects(cost: cost) { return nil }
        guard now >= 0 else { return value }
        // The floor the queue kept for the state the write will meet: with expiry state, or
        // without it (the first write with a time to live of its own creates it).
        let writtenAt = state.pointee.core.expiry == nil ? floorWithoutExpiry : floor
        return state.pointee.core.deadline(ofWriteAt: writtenAt, timeToLive: timeToLive) > now ? value : nil
    }

    /// The replay by a reader whose read buffer reached the replay threshold, if no one else
    /// holds the policy lock: it costs the reader O(buffered reads) about once per 16 reads, and
    /// no thread waits for it. It holds the
    /// policy lock only, not the exclusive lock, so other readers keep reading meanwhile: a
    /// replay writes only the policy's own state and the entries' list links, which readers never
    /// read (they read the index, keys, values, generations and deadlines, which only drains
    /// change, holding both locks).
    @inlinable
    func _maintain() {
        // Loaded first: while another thread replays, every read past the threshold comes here,
        // and a failing compare-and-exchange would take the lock's line from the replaying core.
        guard !_policyLock.load(ordering: .relaxed),
            _policyLock.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else {
            return
        }
        replayReads()
        _unlockPolicy()
    }

    /// Takes the policy lock, waiting for a replay in progress (which waits for nothing).
    @inlinable
    func _lockPolicy() {
        while !_policyLock.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            sched_yield()
        }
    }

    @inlinable
    func _unlockPolicy() { _policyLock.store(false, ordering: .releasing) }

    /// `_reading` that also holds the policy lock, for walks in eviction order (the lists a
    /// concurrent replay would be relinking).
    @inlinable
    func _readingInEvictionOrder<R>(_ body: (borrowing _CacheState<Key, Value>, Int64) -> R) -> R {
        _reading { state, now in
            _lockPolicy()
            defer { _unlockPolicy() }
            return body(state, now)
        }
    }

    /// Tells the policy about the reads the stripes buffered (see `_StripedLock.replayReads`).
    @inlinable
    func replayReads() {
        let warmed = _lock.replayReads(into: _state)
        if warmed != 0 { _warmed.store(warmed, ordering: .relaxed) }
    }
}
