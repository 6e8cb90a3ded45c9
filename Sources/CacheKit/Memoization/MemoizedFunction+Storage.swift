import Synchronization

/// What a function on a ``MemoStorage`` keeps beside the storage: the clock that results' ages
/// are measured on, the `async` runs in flight, one per key (single-flight), and when it stored
/// its results, for a storage that does not keep that.
///
/// Ages. A result this function computes carries the time on its clock, and the clock's
/// timeline: every function on the default `ContinuousClock` shares one, as do the functions on
/// one ``ManualClock``, and a function on any other clock has one of its own. A storage that
/// keeps `MemoValue`s as they are hands that time back, so a function created again with the
/// same identity ages what an earlier one stored. A storage that rebuilds results with
/// `MemoValue(_:computeTime:)` (a file) loses it, so while an expiry rule is set the function
/// also stamps each store here (a `StampTable`, bounded, never written to the storage), and a
/// result without a stamp (restored from an earlier process, or stored by another function)
/// ages from the first call that finds it.
final class MemoStorageBacking: Sendable {
    struct Flight: Sendable {
        let id: UInt64
        let task: Task<(value: MemoValue, wasStored: Bool), any Error>
    }

    struct State: Sendable {
        var running: [MemoKey: Flight] = [:]
        var nextID: UInt64 = 0
        var stamps = StampTable(capacity: MemoStorageBacking.maxStamps)
    }

    /// The most stamps kept (see `StampTable`).
    static let maxStamps = 16_384

    let storage: any MemoStorage
    let timekeeper: _Timekeeper
    let timeline: UInt64
    let state = _Locked(State())

    /// The timekeeper and timeline every function on the default clock shares.
    private static let continuous = _Timekeeper(ContinuousClock(), active: true)
    /// Timeline 1 is `continuous`'s; other clocks' start at 2.
    private static let timelines = Atomic<UInt64>(1)

    init<C: Clock>(storage: any MemoStorage, clock: C) where C.Duration == Duration {
        self.storage = storage
        if C.self == ContinuousClock.self {
            timekeeper = Self.continuous
            timeline = 1
        } else if let manual = clock as? ManualClock {
            // Read from the clock's own zero, so that every function on it agrees.
            timekeeper = _Timekeeper(
                active: true,
                sleep: { try await manual.sleep(for: $0) },
                read: { manual.now.offset._nanoseconds }
            )
            timeline = manual.timeline
        } else {
            timekeeper = _Timekeeper(clock, active: true)
            timeline = Self.newTimeline()
        }
    }

    /// A timeline of its own, for a clock whose readings no other function can compare with.
    static func newTimeline() -> UInt64 { timelines.add(1, ordering: .relaxed).newValue }

    /// When `stored` was computed, on this timeline: its own reading if it has one, else its
    /// stamp here (see `StampTable.time(of:now:)`); `nil` when unknown.
    func computedAt(of stored: MemoValue, forKey key: MemoKey, now: Int64) -> Int64? {
        if stored.computedAt >= 0 && stored.timeline == timeline { return stored.computedAt }
        let (time, garbage) = state.withLock { $0.stamps.time(of: key, now: now) }
        _ = garbage  // released here, outside the lock
        return time
    }

    /// Stamps `key` with `time`: this function is about to store a result computed then.
    func stamp(_ key: MemoKey, at time: Int64) {
        let garbage = state.withLock { $0.stamps.stamp(key, at: time) }
        _ = garbage
    }

    /// Forgets the stamp of `key` if it is `time` (any stamp, for `nil`).
    func forget(_ key: MemoKey, ifStampedAt time: Int64?) {
        let garbage = state.withLock { $0.stamps.forget(key, ifStampedAt: time) }
        _ = garbage
    }

    /// Forgets every run in flight and every stamp (``MemoizedFunction/expireAll()``): later
    /// calls start runs of their own instead of waiting for these, whose results the epoch
    /// check keeps out of the storage.
    func detachAll() {
        let detached = state.withLock { state in
            let running = state.running
            state.running = [:]
            return (running, state.stamps.removeAll())
        }
        _ = detached  // released here, outside the lock
    }

    /// Forgets the run `id` for `key`, unless another run has replaced it.
    func retire(_ key: MemoKey, id: UInt64) {
        let retired = state.withLock { state -> Flight? in
            guard state.running[key]?.id == id else { return nil }
            return state.running.removeValue(forKey: key)
        }
        _ = retired  // released here, outside the lock
    }
}

// The calls of a function created with `storage:`. The storage is user code: it is called with
// no lock held, so the steps that a `MemoCache` takes in one critical section (look up, store
// unless expired meanwhile) are separate calls here, and the comments say what each race costs.
extension MemoizedFunction {
    /// `call(arguments:_:)` on a storage.
    func storedCall<Failure: Error>(
        forKey key: MemoKey,
        in backing: MemoStorageBacking,
        _ compute: () throws(Failure) -> Output
    ) throws(Failure) -> Output {
        if let hit = freshValue(forKey: key, in: backing) {
            counters.recordHit(saving: hit.value.computeTime)
            return hit.result
        }
        counters.recordMiss()
        let startEpoch = epoch.load(ordering: .sequentiallyConsistent)
        let start = ContinuousClock.now
        let result: Output
        do {
            result = try compute()
        } catch {
            counters.recordRun(time: ContinuousClock.now - start, failed: true)
            throw error
        }
        let elapsed = ContinuousClock.now - start
        counters.recordRun(time: elapsed, failed: false)
        store(result, computeTime: elapsed, forKey: key, in: backing, ifEpochIs: startEpoch)
        return result
    }

    /// The `async` `call(arguments:_:)` on a storage: one run per key at a time, shared by the
    /// callers that miss while it runs.
    func storedCall(
        forKey key: MemoKey,
        in backing: MemoStorageBacking,
        _ compute: @escaping @Sendable () async throws -> Output
    ) async throws -> Output {
        let chain = LoadChain.links
        let identity = ObjectIdentifier(self)
        if let hit = freshValue(forKey: key, in: backing) {
            counters.recordHit(saving: hit.value.computeTime)
            return hit.result
        }
        // A cycle only on a miss: a hit answers whoever asks (see `Cache._value(forKey:…)`).
        if chain.contains(where: { $0.cache == identity && ($0.key as? MemoKey) == key }) {
            throw CacheLoadError.recursiveLoad(key: "\(key)")
        }
        let link = chain + [LoadChain.Link(cache: identity, key: key)]
        let task = backing.state.withLock { state -> Task<(value: MemoValue, wasStored: Bool), any Error> in
            if let flight = state.running[key] { return flight.task }
            state.nextID &+= 1
            let id = state.nextID
            let task = Task<(value: MemoValue, wasStored: Bool), any Error> {
                try await LoadChain.$links.withValue(link) {
                    try await self.run(compute, forKey: key, in: backing, flight: id)
                }
            }
            state.running[key] = MemoStorageBacking.Flight(id: id, task: task)
            return task
        }
        let outcome: (value: MemoValue, wasStored: Bool)
        do {
            outcome = try await task.value
        } catch {
            // A failed run is a miss for every caller that waited for it.
            counters.recordMiss()
            throw error
        }
        // A run that found a result stored meanwhile answers its callers as a lookup would: a
        // hit. Otherwise a caller that waited for a run is a miss.
        if outcome.wasStored {
            counters.recordHit(saving: outcome.value.computeTime)
        } else {
            counters.recordMiss()
        }
        return output(of: outcome.value)
    }

    /// One run in flight: computes, stores, then retires, so that a caller arriving after the
    /// retirement finds the stored result. Also returns whether the value was found stored.
    private func run(
        _ compute: @Sendable () async throws -> Output,
        forKey key: MemoKey,
        in backing: MemoStorageBacking,
        flight id: UInt64
    ) async throws -> (value: MemoValue, wasStored: Bool) {
        defer { backing.retire(key, id: id) }
        // A run that finished between this caller's lookup and this run's start stored its
        // result: use it rather than run again.
        if let stored = freshValue(forKey: key, in: backing) { return (stored.value, true) }
        let startEpoch = epoch.load(ordering: .sequentiallyConsistent)
        let start = ContinuousClock.now
        let result: Output
        do {
            result = try await compute()
        } catch {
            counters.recordRun(time: ContinuousClock.now - start, failed: true)
            throw error
        }
        let elapsed = ContinuousClock.now - start
        counters.recordRun(time: elapsed, failed: false)
        let value = store(result, computeTime: elapsed, forKey: key, in: backing, ifEpochIs: startEpoch)
        return (value, false)
    }

    /// Stores a result just computed, if the insertion policy admits it and ``expireAll()`` has
    /// not run since its call started. An `expireAll()` that runs between that check and the
    /// store is caught by a second check after it, which removes the result again (at worst
    /// removing a newer one stored meanwhile, which costs the next call a run).
    @discardableResult
    private func store(
        _ result: Output,
        computeTime: Duration,
        forKey key: MemoKey,
        in backing: MemoStorageBacking,
        ifEpochIs startEpoch: UInt64
    ) -> MemoValue {
        let now = backing.timekeeper.reading()
        let value = MemoValue(result, computeTime: computeTime, computedAt: now, timeline: backing.timeline)
        guard insertionPolicy?(result) ?? true, epoch.load(ordering: .sequentiallyConsistent) == startEpoch else {
            return value
        }
        backing.storage.storeMemoizedValue(value, forKey: key, cost: cost?(result) ?? 0)
        // A storage that drops the time the result carries ages it by this stamp instead. After
        // the write: a reader in between finds the new result with the old stamp (too old: a
        // run more), where a stamp made first would make the result it replaces look new.
        if expiresAfter != nil || expiresWhen != nil { backing.stamp(key, at: now) }
        if epoch.load(ordering: .sequentiallyConsistent) != startEpoch {
            remove(key, computedAt: now, in: backing)
        }
        return value
    }

    /// The result stored for `key`, unless it has expired (by `expiresAfter` or `expiresWhen`)
    /// or is not of this function's result type; such a result is removed from the storage
    /// (possibly a newer one stored meanwhile, which costs the next call a run) and the call is
    /// a miss. Reading never writes to the storage: a result without a reading of this
    /// function's timeline is aged by its stamp (see `MemoStorageBacking`).
    /// Also returns the result, cast once to `Output`.
    private func freshValue(forKey key: MemoKey, in backing: MemoStorageBacking) -> (value: MemoValue, result: Output)?
    {
        guard let stored = backing.storage.memoizedValue(forKey: key) else { return nil }
        // A result of another type (written by an older version of the program, say) is a miss.
        guard let result = stored.value as? Output else {
            remove(key, computedAt: nil, in: backing)
            return nil
        }
        guard expiresAfter != nil || expiresWhen != nil else { return (stored, result) }
        let now = backing.timekeeper.reading()
        // Unknown (its stamp may have been dropped): expired, which costs a run, where any guess
        // could serve a stale result.
        guard let computedAt = backing.computedAt(of: stored, forKey: key, now: now) else {
            remove(key, computedAt: nil, in: backing)
            return nil
        }
        let age = Duration.nanoseconds(max(0, now - computedAt))
        if let expiresAfter, age >= expiresAfter {
            remove(key, computedAt: computedAt, in: backing)
            return nil
        }
        if let expiresWhen, expiresWhen(result, age) {
            remove(key, computedAt: computedAt, in: backing)
            return nil
        }
        return (stored, result)
    }

    /// Removes the result stored under `key`, and its stamp if the stamp is `computedAt` (any,
    /// for `nil`): a newer result stored meanwhile keeps its stamp, though the storage removal
    /// may take the result itself.
    private func remove(_ key: MemoKey, computedAt: Int64?, in backing: MemoStorageBacking) {
        backing.forget(key, ifStampedAt: computedAt)
        backing.storage.removeMemoizedValue(forKey: key)
    }
}
