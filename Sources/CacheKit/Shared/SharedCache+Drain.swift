import Dispatch
import Synchronization

// How a `SharedCache` writes: writes are queued, and drains, holding the lock exclusively, apply
// them in issue order through the engine and hand their removals to the outbox before unlocking.

extension SharedCache {
    /// Runs `body` holding the lock exclusively, after replaying the buffered reads, removing
    /// what expired and applying every queued write; then delivers the removals, unlocked.
    @inlinable
    func _exclusive<R>(_ body: (inout _CacheState<Key, Value>, Int64) -> R) -> R {
        _lock.lockExclusive()
        return _drainHoldingLock(body)
    }

    /// The work of `_exclusive` once the lock is held; releases it. Inlinable, as is what it
    /// calls for a plain write, so that it runs specialized for the client's key and value types
    /// (unspecialized, a fifth of a drain went to looking up generic metadata).
    ///
    /// `sweepingUntil`: the latest time the final sweep removes what expired by (the drain's own
    /// clock reading when later). A writer that drains before queueing its write passes the
    /// time its write was issued at: an entry alive then must be there for that write, to be
    /// replaced or removed by it, not swept as expired by a drain that read the clock later.
    @inlinable
    func _drainHoldingLock<R>(
        sweepingUntil limit: Int64 = .max,
        _ body: (inout _CacheState<Key, Value>, Int64) -> R
    ) -> R {
        // Lock order: exclusive, then policy. A replay holds the policy lock alone and waits
        // for nothing, so this wait ends.
        _lockPolicy()
        let now = _timekeeper.now()
        var writes = pending.withLock { $0.takeAll() }
        var removals: [CacheRemoval<Key, Value>] = []
        replayReads()
        if writes.count > 1 { warm(for: writes) }
        // What had expired when each write was issued goes first, as expired; an entry the
        // write reached alive is then replaced or removed by it, as it would have been had the
        // drain run at once. (Sweeping everything at `now` first reported such entries as
        // expired.) Then what expired by `now`.
        let sweepsPerWrite = _state.pointee.core.expiry != nil && now >= 0
        for write in writes {
            if sweepsPerWrite {
                let issued = write.issuedAt
                if issued >= 0 { sweep(at: Swift.min(issued, now), into: &removals) }
            }
            apply(write, at: now, removals: &removals)
            // Applied: readers of its keys need not look into the queue any more (once the lock
            // is released). (A write already expired at `now` was not stored: see `store`.)
            _pendingKeys.count(write, -1)
        }
        if !writes.isEmpty {
            _pendingCount.wrappingSubtract(writes.count, ordering: .sequentiallyConsistent)
            _drainEpoch.wrappingAdd(1, ordering: .relaxed)
        }
        sweep(at: Swift.min(now, limit), into: &removals)
        let result = body(&_state.pointee, now)
        let deliver = removals.isEmpty ? false : outbox.withLock { $0.post(removals) }
        _unlockPolicy()
        _lock.unlockExclusive()
        // Released here, unlocked: a value dropped by a write never deinitializes under the lock.
        // Emptied here, in code specialized for `Key` and `Value`: an array's own deinit
        // destroys its elements through generic value witnesses, which look up the metadata
        // of the writes' payloads (a tenth of a drain's time, in profiles).
        writes.removeAll(keepingCapacity: true)
        if !deliver { removals.removeAll(keepingCapacity: true) }
        if deliver { deliverRemovals() }
        return result
    }

    /// Applies the queued writes (and delivers their removals, unless another thread is).
    @inlinable
    func _drain() { _exclusive { _, _ in } }

    /// Removes what has expired by `time` (the exclusive lock held), collecting the removals.
    @inlinable
    func sweep(at time: Int64, into removals: inout [CacheRemoval<Key, Value>]) {
        var swept = _Removals<Key, Value>()
        _state.pointee.core.removeExpired(now: time, removals: &swept)
        collect(swept, into: &removals)
    }

    /// Queues `write` and makes sure a drain will apply it.
    ///
    /// A writer that finds `_writerDrainThreshold` writes or more queued first applies them
    /// itself, if no drain is running (Caffeine's amortized maintenance on the calling
    /// thread), then queues its own: its call stays asynchronous, as every write's does. The
    /// background drain applies what stays queued when writes slow down. Writers draining on
    /// their own threads measured faster than leaving every drain to the background, on 1
    /// thread and on 2 (`cachekit bench --subjects SharedCache`); the background drain costs a thread
    /// wake-up and, on a busy machine, takes a core from a reader while every reader waits.
    ///
    /// The write is counted in the filter and in `_pendingCount` before it is queued, outside
    /// the queue's lock, which writing threads contend for: counted early, a reader may look
    /// for a write not queued yet (and not find it: the call that issues it has not returned),
    /// but a drain can never take a write it has not counted, so no count drops below the
    /// writes queued, which would hide another write from readers.
    @inlinable
    func _enqueue(_ write: consuming _SharedWrite<Key, Value>) {
        _pendingKeys.count(write, 1)
        let queued = _pendingCount.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue
        if queued >= Self._writerDrainThreshold && _writersDrain.load(ordering: .relaxed) {
            let issued = write.issuedAt
            _drainUnlessRunning(sweepingUntil: issued >= 0 ? issued : .max)
        }
        var write = Optional(write)  // moved into the queue, not copied (see `append`)
        let action = pending.withLock { pending -> _DrainScheduler.Action in
            pending.append(write.take().unsafelyUnwrapped)
            return pending.drainScheduler.writeQueued()
        }
        if action == .schedule { scheduleBackgroundDrain(epoch: _drainEpoch.load(ordering: .relaxed)) }
    }

    /// How many queued writes make a writer apply them (see `_enqueue`). On read90, 2,048
    /// measures slower than 128 (FIFO 25.6 against 24.2–24.3 ns/op on 1 thread), 512 cannot be
    /// told from 128, and 32 is much slower on 2 threads.
    @inlinable
    static var _writerDrainThreshold: Int { 128 }

    /// Applies the queued writes unless another thread holds the lock exclusively (a drain, or
    /// an exclusive read, which applies them too), sweeping expired entries only up to `limit`
    /// (see `_drainHoldingLock`).
    @inlinable
    func _drainUnlessRunning(sweepingUntil limit: Int64) {
        guard _lock.tryLockExclusive() else { return }
        _drainHoldingLock(sweepingUntil: limit) { _, _ in }
    }

    /// Schedules the background drain half a millisecond from now (see `_DrainScheduler`), so
    /// that a burst of writes costs one dispatch. `epoch` is `_drainEpoch` now: when the drain
    /// fires, a different one means writers drained meanwhile.
    @inlinable
    func scheduleBackgroundDrain(epoch: Int) {
        drainQueue.asyncAfter(deadline: DispatchTime.now() + DispatchTimeInterval.microseconds(500)) { [weak self] in
            guard let self else { return }
            let current = _drainEpoch.load(ordering: .relaxed)
            // Decided under the queue's lock: a write queued after the scheduler returns to
            // `idle` schedules the next background drain itself.
            let action = pending.withLock { pending in
                pending.drainScheduler.fired(writersDrained: current != epoch, queueIsEmpty: pending.writes.isEmpty)
            }
            switch action {
            case .schedule: scheduleBackgroundDrain(epoch: current)
            case .drain: _drain()
            case .none: break
            }
        }
    }

    /// Warms what applying `writes` touches first (see `_CacheCore.warm(hashes:)`), while the
    /// exclusive lock keeps every reader waiting.
    @inlinable
    func warm(for writes: [_SharedWrite<Key, Value>]) {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: writes.count) { hashes in
            var count = 0
            for write in writes {
                guard case .set(_, _, _, _, _, let hash) = write else { continue }
                hashes[count] = hash
                count += 1
            }
            let warmed = _state.pointee.core.warm(hashes: UnsafeMutableBufferPointer(rebasing: hashes[0..<count]))
            _warmed.store(warmed, ordering: .relaxed)
        }
    }

    /// Moves `removed` into `removals`, logging each key that is now absent.
    @inlinable
    func collect(_ removed: consuming _Removals<Key, Value>, into removals: inout [CacheRemoval<Key, Value>]) {
        let start = removals.count
        switch consume removed {
        case .none: return
        case .one(let removal): removals.append(removal)
        case .many(let all): removals.append(contentsOf: all)
        }
        guard changeLog != nil else { return }
        for removal in removals[start...] where _state.pointee.core.slot(of: removal.key) < 0 {
            changeLog!.didRemove(removal.key)
        }
    }

    @inlinable
    func store(
        _ value: Value,
        forKey key: Key,
        hash: Int,
        cost: Int,
        timeToLive: Int64?,
        now: Int64,
        at drainTime: Int64,
        removals: inout [CacheRemoval<Key, Value>]
    ) {
        var removed = _Removals<Key, Value>()
        let stored = _state.pointee.core.applyDeferredSet(
            value,
            forKey: key,
            hash: hash,
            cost: cost,
            timeToLive: timeToLive,
            issuedAt: now,
            appliedAt: drainTime,
            removals: &removed
        )
        // A write that expired while it waited leaves its key removed: `collect` logs that.
        collect(removed, into: &removals)
        if stored { changeLog?.didSet(key, value) }
    }

    @inlinable
    func apply(_ write: _SharedWrite<Key, Value>, at drainTime: Int64, removals: inout [CacheRemoval<Key, Value>]) {
        switch write {
        case .set(let key, let value, let cost, let timeToLive, let now, let hash):
            store(
                value,
                forKey: key,
                hash: hash,
                cost: cost,
                timeToLive: timeToLive,
                now: now,
                at: drainTime,
                removals: &removals
            )
        case .access(let key, let hash):
            // As common as a read of a key with a queued write: specialized here, with `set`.
            let slot = _state.pointee.core.slot(of: key, hash: hash)
            if slot >= 0 { _state.pointee.core.recordAccess(slot) }
        default:
            applyBulk(write, at: drainTime, removals: &removals)
        }
    }

    /// Every write but a plain `set`: rarer, so not inlined into clients.
    @usableFromInline
    func applyBulk(_ write: _SharedWrite<Key, Value>, at drainTime: Int64, removals: inout [CacheRemoval<Key, Value>]) {
        switch write {
        case .set:
            apply(write, at: drainTime, removals: &removals)  // `apply` stores sets itself
        case .merge(let entries, let now):
            for (key, value) in entries {
                store(
                    value,
                    forKey: key,
                    hash: _state.pointee.core.hash(of: key),
                    cost: 0,
                    timeToLive: nil,
                    now: now,
                    at: drainTime,
                    removals: &removals
                )
            }
        case .restore(let entries, let now):
            // (Skipping, as `Cache` does, an entry whose cost would take the total past Int.max.)
            for (key, value, cost, timeToLive) in entries
            where _state.pointee.core.slot(of: key) < 0 && _state.pointee.core.totalCostCanTake(cost) {
                store(
                    value,
                    forKey: key,
                    hash: _state.pointee.core.hash(of: key),
                    cost: cost,
                    timeToLive: timeToLive,
                    now: now,
                    at: drainTime,
                    removals: &removals
                )
            }
        case .remove(let keys, _):
            var removed = _Removals<Key, Value>()
            for key in keys {
                if let removal = _state.pointee.core.removeValue(forKey: key, reason: .removed) {
                    removed.append(removal)
                }
            }
            collect(removed, into: &removals)
        case .removeAll(let reason, _):
            // Fresh storage restarts the slot versions: a buffered read of the old storage could
            // match a slot of the new one, so none may be replayed.
            _lock.discardReads()
            let old = _state.pointee.takeAll()
            _state.pointee.core.stats.recordRemovals(reason, count: old.count)
            removals.reserveCapacity(removals.count + old.count)
            old.forEachSlotInEvictionOrder { slot in
                let entry = old.entries[Int(slot)]
                changeLog?.didRemove(entry.key)
                removals.append(CacheRemoval(key: entry.key, value: entry.value, reason: reason))
                return true
            }
        case .purge(let targets):
            var removed = _Removals<Key, Value>()
            for target in targets {
                let core = _state
                guard core.pointee.core.slot(of: target.key) == target.slot,
                    core.pointee.core.version(of: target.slot) == target.version
                else { continue }  // written or removed since the decider saw it
                removed.append(core.pointee.core.removeSlot(target.slot, reason: .purged))
            }
            collect(removed, into: &removals)
        case .trim(let keptFraction, let reason):
            var removed = _Removals<Key, Value>()
            let kept = MemoryPressureAction.keptCount(of: _state.pointee.core.count, fraction: keptFraction)
            _state.pointee.core.trim(
                to: _TrimTarget(maxCount: kept, maxCost: .max, reason: reason),
                protecting: -1,
                removals: &removed
            )
            collect(removed, into: &removals)
        case .setCountLimit(let limit):
            _state.pointee.core.countLimit = limit
            enforceLimits(removals: &removals)
        case .setTotalCostLimit(let limit):
            _state.pointee.core.totalCostLimit = limit
            enforceLimits(removals: &removals)
        case .access:
            apply(write, at: drainTime, removals: &removals)  // `apply` replays accesses itself
        }
    }

    private func enforceLimits(removals: inout [CacheRemoval<Key, Value>]) {
        let core = _state
        _tracksReads.store(
            _policyHearsReads && (core.pointee.core.countLimit > 0 || core.pointee.core.totalCostLimit > 0),
            ordering: .relaxed
        )
        var removed = _Removals<Key, Value>()
        core.pointee.core.trim(to: core.pointee.core.limits, protecting: -1, removals: &removed)
        collect(removed, into: &removals)
    }

}
