import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// How a `SharedCache` reaches its state: shared for reads, exclusive for drains, which apply the
// queued writes in issue order and hand their removals to the outbox before unlocking.

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

    /// Runs `body` holding the lock exclusively, after replaying the buffered reads, removing
    /// what expired and applying every queued write; then delivers the removals, unlocked.
    @inlinable
    func _exclusive<R>(_ body: (inout _CacheState<Key, Value>, Int64) -> R) -> R {
        _lock.lockExclusive()
        return _drainHoldingLock(body)
    }

    /// The replay by a reader whose read buffer filled, if no one else holds the policy lock:
    /// it costs the reader O(64) once per 64 reads, and no thread waits for it. It holds the
    /// policy lock only, not the exclusive lock, so other readers keep reading meanwhile: a
    /// replay writes only the policy's own state and the entries' list links, which readers never
    /// read (they read the index, keys, values, generations and deadlines, which only drains
    /// change, holding both locks).
    @inlinable
    func _maintain() {
        // Loaded first: while another thread replays, every read of a full buffer comes here,
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

    /// Tells the policy about the reads the stripes buffered, skipping slots whose entry changed.
    /// The slots are warmed first (see `_CacheCore.warm(slots:)`): the replay relinks entries
    /// at random places, and it is work that no other thread can do meanwhile.
    @inlinable
    func replayReads() {
        let state = _state
        withUnsafeTemporaryAllocation(of: _SlotRead.self, capacity: _lock.bufferedReadCapacity) { reads in
            var count = 0
            _lock.drainReads { read in
                (reads.baseAddress.unsafelyUnwrapped + count).initialize(to: read)
                count += 1
            }
            guard count > 0 else { return }
            if count > 1 {
                withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { slots in
                    for i in 0..<count { slots[i] = Int(reads[i].slot) }
                    _warmed.store(state.pointee.core.warm(slots: slots), ordering: .relaxed)
                }
            }
            // The bound: a read recorded as a stripe was being emptied can stay behind in its
            // buffer and be replayed later, after `removeAll` replaced the slot storage. Such a
            // read's generation is odd (its entry was live), and a free slot's is even (see
            // `bumpGeneration`), so it can match only a live entry of the new storage: a wasted
            // recency bump, never a policy operation on a free slot.
            let slots = Int32(truncatingIfNeeded: state.pointee.core.slotsUsed)
            for read in reads[0..<count]
            where read.slot < slots
                && state.pointee.core.generations.unsafelyUnwrapped[Int(read.slot)] == read.generation
            {
                state.pointee.core.recordAccess(read.slot)
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

    /// Delivers posted removals to the handler, in order, one deliverer at a time, unlocked. A
    /// thread that finds another delivering leaves its removals to it.
    @usableFromInline
    func deliverRemovals() {
        let me = _StripedLock.currentThread
        var batch = outbox.withLock { $0.takeBatch(by: me, starting: true) }
        while let (handler, removals) = batch {
            guard let handler else { return }  // the handler went: `removals` are released here, unlocked
            for removal in removals { handler(removal) }
            batch = outbox.withLock { $0.takeBatch(by: me, starting: false) }
        }
    }

    /// Waits until the handler has heard every removal posted so far, delivering them itself if
    /// no one is. Returns at once on the thread that is delivering (a handler calling `flush()`).
    @usableFromInline
    func awaitDeliveries() {
        let me = _StripedLock.currentThread
        let target = outbox.withLock { $0.posted }
        while true {
            let (done, idle) = outbox.withLock { ($0.delivered >= target || $0.deliverer == me, $0.deliverer == 0) }
            if done { return }
            if idle { deliverRemovals() } else { sched_yield() }
        }
    }

    /// A task that calls `body` with the cache every `interval` of its clock, until the cache
    /// goes or the task is cancelled.
    func repeating(
        every interval: Duration,
        _ body: @escaping @Sendable (SharedCache) -> Void
    ) -> Task<Void, Never> {
        let cache = _WeakBox(self)
        return _Timekeeper.repeating(every: interval, sleep: clockSleep) {
            guard let strong = cache.object else { return false }
            body(strong)
            return true
        }
    }
}

/// Removals waiting for the removal handler, and who is delivering them. `posted` and
/// `delivered` count removals, so `flush()` can wait for those posted before it.
@usableFromInline
struct _Outbox<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline var handler: (@Sendable (CacheRemoval<Key, Value>) -> Void)?
    @usableFromInline var queue: [CacheRemoval<Key, Value>] = []
    /// The delivering thread (`_StripedLock.currentThread`), or 0.
    @usableFromInline var deliverer: UInt = 0
    @usableFromInline var posted: UInt64 = 0
    var delivered: UInt64 = 0
    /// Removals handed to the deliverer and not yet counted as delivered.
    var inFlight: UInt64 = 0

    /// Queues `removals` if anyone listens; returns whether the caller should deliver.
    @inlinable
    mutating func post(_ removals: [CacheRemoval<Key, Value>]) -> Bool {
        guard handler != nil else { return false }
        queue.append(contentsOf: removals)
        posted += UInt64(removals.count)
        return deliverer == 0
    }

    /// The next removals to deliver and the handler, or `nil` (then the caller stops delivering).
    /// `starting`: the caller is not yet the deliverer and becomes it only if no one else is;
    /// otherwise the previous batch has been delivered. A `nil` handler (it was removed while
    /// removals waited) hands the caller the undeliverable removals to release after unlocking,
    /// and ends the delivery.
    mutating func takeBatch(
        by thread: UInt,
        starting: Bool
    ) -> ((@Sendable (CacheRemoval<Key, Value>) -> Void)?, [CacheRemoval<Key, Value>])? {
        if starting {
            if deliverer != 0 { return nil }
        } else {
            delivered += inFlight
            inFlight = 0
        }
        guard let handler, !queue.isEmpty else {
            deliverer = 0
            delivered += UInt64(queue.count)  // nobody listens any more: nothing to wait for
            if queue.isEmpty { return nil }
            defer { queue = [] }
            return (nil, queue)  // released by the caller: a value's deinit may call back
        }
        deliverer = thread
        inFlight = UInt64(queue.count)
        defer { queue = [] }
        return (handler, queue)
    }
}

/// The background tasks of a `SharedCache`, cancelled when it goes.
struct _BackgroundTasks: Sendable {
    var sweep: Task<Void, Never>?
    var eviction: Task<Void, Never>?
    var notification: Task<Void, Never>?
    var evictionInterval: Duration?
    var notificationInterval: Duration?

    func cancelAll() {
        sweep?.cancel()
        eviction?.cancel()
        notification?.cancel()
    }
}
