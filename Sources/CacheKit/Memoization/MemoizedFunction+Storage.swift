import Synchronization

/// What a function on a ``MemoStorage`` keeps beside the storage: the clock that results' ages
/// are measured on, the `async` runs in flight, one per key (single-flight), and the times it
/// first saw results whose age the storage did not keep.
///
/// Ages. A result this function computes carries the time on its clock, and the clock's
/// timeline: every function on the default `ContinuousClock` shares one, as do the functions on
/// one ``ManualClock`` (so a function created again with the same identity ages the results an
/// earlier one stored), and a function on any other clock has one of its own. A result without a reading of this timeline (a storage that
/// rebuilt it with `MemoValue(_:computeTime:)`, or one stored on another clock) gets a time
/// here instead, kept on this side and never written to the storage: the time this function
/// stored it, if the storage drops readings (the first store with an expiry rule reads its
/// result back to find out), else the time a call first found it.
final class _MemoStorageBacking: Sendable {
    struct Flight: Sendable {
        let id: UInt64
        let task: Task<(value: MemoValue, wasStored: Bool), any Error>
    }

    struct State: Sendable {
        var running: [MemoKey: Flight] = [:]
        var nextID: UInt64 = 0
        /// Times on this timeline for results the storage returned without one.
        var stamps: [MemoKey: Int64] = [:]
        /// Whether the storage returns the results stored in it without their readings (as a
        /// file does): `nil` until a result read back after its store tells. Stores are
        /// stamped here while it is `true`.
        var dropsReadings: Bool?
    }

    /// The most stamps kept. Past it they are all forgotten, and results of unknown age then
    /// age from the next call that finds them: a bound on the memory a storage's own evictions
    /// (which this side never hears of) would otherwise leave here.
    static let maxStamps = 65_536

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

    /// When `stored` was computed, on this timeline: its own reading if it has one, else the
    /// stamp kept here for `key`, made now if there is none.
    func computedAt(of stored: MemoValue, forKey key: MemoKey, now: Int64) -> Int64 {
        if stored.computedAt >= 0 && stored.timeline == timeline { return stored.computedAt }
        return state.withLock { state in
            if let stamp = state.stamps[key] { return stamp }
            if state.stamps.count >= Self.maxStamps { state.stamps = [:] }
            state.stamps[key] = now
            return now
        }
    }

    /// Whether the storage is known to drop readings (`nil`: not known yet).
    var dropsReadings: Bool? { state.withLock { $0.dropsReadings } }

    /// Notes that this function stored `value` under `key` (a stamp, if the storage drops
    /// readings; `drops` is what a read-back just found out), or removed it (`nil`).
    func noteStore(_ value: MemoValue?, forKey key: MemoKey, drops: Bool? = nil) {
        let replaced = state.withLock { state -> Int64? in
            guard let value else { return state.stamps.removeValue(forKey: key) }
            if let drops { state.dropsReadings = drops }
            guard state.dropsReadings == true else { return nil }
            if state.stamps.count >= Self.maxStamps { state.stamps = [:] }
            return state.stamps.updateValue(value.computedAt, forKey: key)
        }
        _ = replaced
    }

    /// Forgets every run in flight and every stamp (``MemoizedFunction/expireAll()``): later
    /// calls start runs of their own instead of waiting for these, whose results the epoch
    /// check keeps out of the storage.
    func detachAll() {
        let detached = state.withLock { state in
            let running = state.running
            state.running = [:]
            state.stamps = [:]
            return running
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
        _ compute: () throws(Failure) -> Output
    ) throws(Failure) -> Output {
        guard let backing else { preconditionFailure("a function without storage has a cache") }
        if let hit = freshValue(forKey: key, in: backing) {
            counters.recordHit(saving: hit.computeTime)
            return output(of: hit)
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
        _ compute: @escaping @Sendable () async throws -> Output
    ) async throws -> Output {
        guard let backing else { preconditionFailure("a function without storage has a cache") }
        let chain = _LoadChain.links
        let identity = ObjectIdentifier(self)
        if chain.contains(where: { $0.cache == identity && ($0.key as? MemoKey) == key }) {
            throw CacheLoadError.recursiveLoad(key: "\(key)")
        }
        if let hit = freshValue(forKey: key, in: backing) {
            counters.recordHit(saving: hit.computeTime)
            return output(of: hit)
        }
        let link = chain + [_LoadChain.Link(cache: identity, key: key)]
        let task = backing.state.withLock { state -> Task<(value: MemoValue, wasStored: Bool), any Error> in
            if let flight = state.running[key] { return flight.task }
            state.nextID &+= 1
            let id = state.nextID
            let task = Task<(value: MemoValue, wasStored: Bool), any Error> {
                try await _LoadChain.$links.withValue(link) {
                    try await self.run(compute, forKey: key, in: backing, flight: id)
                }
            }
            state.running[key] = _MemoStorageBacking.Flight(id: id, task: task)
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
        in backing: _MemoStorageBacking,
        flight id: UInt64
    ) async throws -> (value: MemoValue, wasStored: Bool) {
        defer { backing.retire(key, id: id) }
        // A run that finished between this caller's lookup and this run's start stored its
        // result: use it rather than run again.
        if let stored = freshValue(forKey: key, in: backing) { return (stored, true) }
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
        in backing: _MemoStorageBacking,
        ifEpochIs startEpoch: UInt64
    ) -> MemoValue {
        let now = backing.timekeeper.reading()
        let value = MemoValue(result, computeTime: computeTime, computedAt: now, timeline: backing.timeline)
        guard insertionPolicy?(result) ?? true, epoch.load(ordering: .sequentiallyConsistent) == startEpoch else {
            return value
        }
        let agesMatter = expiresAfter != nil || expiresWhen != nil
        let drops = agesMatter ? backing.dropsReadings : false
        if drops == true { backing.noteStore(value, forKey: key) }
        backing.storage.storeMemoizedValue(value, forKey: key, cost: cost?(result) ?? 0)
        if drops == nil, let back = backing.storage.memoizedValue(forKey: key) {
            // The first store with an expiry rule reads its result back: does the storage keep
            // readings? A reading of this timeline says yes (this result's, or a racing call's);
            // none says no; another timeline's (a racing function's) tells nothing: ask again.
            if back.computedAt >= 0 && back.timeline == value.timeline {
                backing.noteStore(value, forKey: key, drops: false)
            } else if back.computedAt < 0 {
                backing.noteStore(value, forKey: key, drops: true)
            }
        }
        if epoch.load(ordering: .sequentiallyConsistent) != startEpoch {
            remove(key, in: backing)
        }
        return value
    }

    /// The result stored for `key`, unless it has expired (by `expiresAfter` or `expiresWhen`)
    /// or is not of this function's result type; such a result is removed from the storage
    /// (possibly a newer one stored meanwhile, which costs the next call a run) and the call is
    /// a miss. Reading never writes to the storage: a result of unknown age gets its time on
    /// this side (see `_MemoStorageBacking`).
    private func freshValue(forKey key: MemoKey, in backing: _MemoStorageBacking) -> MemoValue? {
        guard let stored = backing.storage.memoizedValue(forKey: key) else { return nil }
        // A result of another type (written by an older version of the program, say) is a miss.
        guard let result = stored.value as? Output else {
            remove(key, in: backing)
            return nil
        }
        guard expiresAfter != nil || expiresWhen != nil else { return stored }
        let now = backing.timekeeper.reading()
        let age = Duration.nanoseconds(max(0, now - backing.computedAt(of: stored, forKey: key, now: now)))
        if let expiresAfter, age >= expiresAfter {
            remove(key, in: backing)
            return nil
        }
        if let expiresWhen, expiresWhen(result, age) {
            remove(key, in: backing)
            return nil
        }
        return stored
    }

    private func remove(_ key: MemoKey, in backing: _MemoStorageBacking) {
        backing.noteStore(nil, forKey: key)
        backing.storage.removeMemoizedValue(forKey: key)
    }
}
