/// What a function on a ``MemoStorage`` keeps beside the storage: the clock that results' ages
/// are measured on, and the `async` runs in flight, one per key (single-flight).
final class _MemoStorageBacking: Sendable {
    struct Flight: Sendable {
        let id: UInt64
        let task: Task<MemoValue, any Error>
    }

    struct Flights: Sendable {
        var running: [MemoKey: Flight] = [:]
        var nextID: UInt64 = 0
    }

    let storage: any MemoStorage
    let timekeeper: _Timekeeper
    let flights = _Locked(Flights())

    init(storage: any MemoStorage, timekeeper: _Timekeeper) {
        self.storage = storage
        self.timekeeper = timekeeper
    }

    /// Forgets every run in flight: later calls start runs of their own instead of waiting for
    /// these, whose results the epoch check keeps out of the storage.
    func detachAll() {
        let detached = flights.withLock { flights in
            let running = flights.running
            flights.running = [:]
            return running
        }
        _ = detached  // released here, outside the lock
    }

    /// Forgets the run `id` for `key`, unless another run has replaced it.
    func retire(_ key: MemoKey, id: UInt64) {
        let retired = flights.withLock { flights -> Flight? in
            guard flights.running[key]?.id == id else { return nil }
            return flights.running.removeValue(forKey: key)
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
        let value = MemoValue(result, computeTime: elapsed, computedAt: backing.timekeeper.reading())
        store(value, result: result, forKey: key, in: backing, ifEpochIs: startEpoch)
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
        let task = backing.flights.withLock { flights -> Task<MemoValue, any Error> in
            if let flight = flights.running[key] { return flight.task }
            flights.nextID &+= 1
            let id = flights.nextID
            let task = Task<MemoValue, any Error> {
                try await _LoadChain.$links.withValue(link) {
                    try await self.run(compute, forKey: key, in: backing, flight: id)
                }
            }
            flights.running[key] = _MemoStorageBacking.Flight(id: id, task: task)
            return task
        }
        // A caller that waited for a run is a miss, whether the run succeeded or failed.
        counters.recordMiss()
        return output(of: try await task.value)
    }

    /// One run in flight: computes, stores, then retires, so that a caller arriving after the
    /// retirement finds the stored result.
    private func run(
        _ compute: @Sendable () async throws -> Output,
        forKey key: MemoKey,
        in backing: _MemoStorageBacking,
        flight id: UInt64
    ) async throws -> MemoValue {
        defer { backing.retire(key, id: id) }
        // A run that finished between this caller's lookup and this run's start stored its
        // result: use it rather than run again.
        if let stored = freshValue(forKey: key, in: backing) { return stored }
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
        let value = MemoValue(result, computeTime: elapsed, computedAt: backing.timekeeper.reading())
        store(value, result: result, forKey: key, in: backing, ifEpochIs: startEpoch)
        return value
    }

    /// Stores a result just computed, if the insertion policy admits it and ``expireAll()`` has
    /// not run since its call started. An `expireAll()` that runs between that check and the
    /// store is caught by a second check after it, which removes the result again (at worst
    /// removing a newer one stored meanwhile, which costs the next call a run).
    private func store(
        _ value: MemoValue,
        result: Output,
        forKey key: MemoKey,
        in backing: _MemoStorageBacking,
        ifEpochIs startEpoch: UInt64
    ) {
        guard insertionPolicy?(result) ?? true, epoch.load(ordering: .sequentiallyConsistent) == startEpoch else {
            return
        }
        backing.storage.storeMemoizedValue(value, forKey: key, cost: cost?(result) ?? 0)
        if epoch.load(ordering: .sequentiallyConsistent) != startEpoch {
            backing.storage.removeMemoizedValue(forKey: key)
        }
    }

    /// The result stored for `key`, unless it has expired (by `expiresAfter` or `expiresWhen`)
    /// or is not of this function's result type; such a result is removed from the storage
    /// (possibly a newer one stored meanwhile, which costs the next call a run) and the call is
    /// a miss. A result of unknown age is stored again, stamped with the time now, and ages
    /// from then.
    private func freshValue(forKey key: MemoKey, in backing: _MemoStorageBacking) -> MemoValue? {
        guard let stored = backing.storage.memoizedValue(forKey: key) else { return nil }
        // A result of another type (written by an older version of the program, say) is a miss.
        guard let result = stored.value as? Output else {
            backing.storage.removeMemoizedValue(forKey: key)
            return nil
        }
        guard expiresAfter != nil || expiresWhen != nil else { return stored }
        let now = backing.timekeeper.reading()
        let age: Duration
        if stored.computedAt < 0 {
            age = .zero
            let stamped = MemoValue(result, computeTime: stored.computeTime, computedAt: now, serial: stored.serial)
            backing.storage.storeMemoizedValue(stamped, forKey: key, cost: cost?(result) ?? 0)
        } else {
            age = .nanoseconds(max(0, now - stored.computedAt))
        }
        if let expiresAfter, age >= expiresAfter {
            backing.storage.removeMemoizedValue(forKey: key)
            return nil
        }
        if let expiresWhen, expiresWhen(result, age) {
            backing.storage.removeMemoizedValue(forKey: key)
            return nil
        }
        return stored
    }
}
