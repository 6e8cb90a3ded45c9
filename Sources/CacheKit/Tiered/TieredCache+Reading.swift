import Foundation

/// Thrown through the memory cache's single flight when the store has no value and there is
/// no loader: every caller waiting for that read learns it missed.
@usableFromInline
struct _StoreMiss: Error {
    /// One boxed instance for every miss: reporting a miss as a failed load allocates nothing.
    @usableFromInline static let boxed: any Error = _StoreMiss()
}

/// What `TieredCache._readStoreDirectly(_:)` settled.
@usableFromInline
enum _DirectRead {
    /// Neither level holds the key; the miss is counted and reported.
    case missed
    /// The store may hold the key, or a load of it runs: read it through memory's single flight.
    case throughMemory
    /// Something other than a plain miss or hit (a pending write-behind, a key the encoding
    /// refuses, a store error, an expired entry): the general path reads again and handles it.
    case unsettled
}

extension TieredCache {
    /// The value for `key` from memory or, on a memory miss, from the store (promoting it to
    /// memory with what is left of its lifetime); `nil` if neither holds it.
    ///
    /// A store that fails, or holds bytes the codec cannot read, is a miss, reported to the
    /// problem handler. The memory cache counts a read from the store as a load.
    ///
    /// - Complexity: O(1) on a memory hit; otherwise one store read.
    @inlinable
    public func value(forKey key: Key) async -> Value? {
        // Inlinable, with the store read of a miss, so that both run specialized in the
        // caller's module, as a `Cache` read does; the rest of the store's path is not.
        if let value = memory.value(forKey: key) { return value }
        switch await _readStoreDirectly(key) {
        case .missed: return nil
        case .throughMemory: return await _valueFromStore(forKey: key, readingDirectly: false)
        case .unsettled: return await _valueFromStore(forKey: key, readingDirectly: true)
        }
    }

    /// After a memory miss with no load of `key` running, reads the store directly: a miss
    /// stores nothing, so it needs neither the single flight nor the task a load runs in. A
    /// plain miss is counted and reported as the single flight's failed load would be;
    /// anything else is left to `_valueFromStore(forKey:readingDirectly:)`.
    ///
    /// Inlinable because generic code that is not specialized looks up the type metadata of
    /// each generic type it touches on every call, which cost a miss most of its time.
    @inlinable
    func _readStoreDirectly(_ key: Key) async -> _DirectRead {
        guard !memory._withState({ $0.loads[key] != nil }) else { return .throughMemory }
        let start = ContinuousClock.now
        // A write-behind not yet in the store answers before it.
        guard state.withLock({ $0.pending[key] == nil }) else { return .unsettled }
        guard let storeKey = try? keys.encode(key) else { return .unsettled }
        let entry: StoredEntry?
        do {
            entry = try await store.entry(forKey: storeKey)
        } catch {
            return .unsettled
        }
        if let entry {
            // Expired: the general path counts and reports it as the miss it is.
            guard let deadline = entry.expiresAt, deadline <= clock.now() else { return .throughMemory }
            return .unsettled
        }
        state.withLock { $0.counts.missCount += 1 }
        memory._recordLoad(forKey: key, time: ContinuousClock.now - start, error: _StoreMiss.boxed)
        return .missed
    }

    /// ``value(forKey:)`` after a memory miss that `_readStoreDirectly(_:)` did not settle.
    ///
    /// `readingDirectly`: the store is read directly first, as `_readStoreDirectly(_:)` does,
    /// but with every case handled (and reported). A hit, or a running load to join, goes
    /// through memory's single flight, which reads the store again for a hit so that a write
    /// meanwhile is seen.
    @usableFromInline
    func _valueFromStore(forKey key: Key, readingDirectly: Bool) async -> Value? {
        if readingDirectly && !memory._withState({ $0.loads[key] != nil }) {
            let clock = ContinuousClock()
            let start = clock.now
            var pending: _TierState<Key, Value>.Pending?
            let since = beginLoad(key, pending: &pending)
            var lifetime: Duration?
            let found = await readStore(key, since: since, pending: pending, countingHit: false, lifetime: &lifetime)
            endLoad()
            if found == nil {
                memory._recordLoad(forKey: key, time: clock.now - start, error: _StoreMiss.boxed)
                return nil
            }
        }
        do {
            return try await throughMemory(key) { key in
                var pending: _TierState<Key, Value>.Pending?
                let since = self.beginLoad(key, pending: &pending)
                defer { self.endLoad() }
                var lifetime: Duration?
                guard let found = await self.readStore(key, since: since, pending: pending, lifetime: &lifetime) else {
                    throw _StoreMiss()
                }
                return (found, lifetime)
            }
        } catch {
            return nil
        }
    }

    /// The value for `key` from memory, else from the store, else from `loader`, whose value is
    /// written to both levels with `expiresAfter` (else the cache's ``expiresAfter``).
    ///
    /// One read per key at a time across the three: callers that miss while the key is read from
    /// the store or loaded wait for that read, and get its value or the loader's error. The rules
    /// of ``Cache/value(forKey:cost:expiresAfter:loader:)`` apply: errors are not cached, a write
    /// or removal of the key while the loader runs wins (the loaded value is returned but stored
    /// in neither level), a loader that asks for its own key gets ``CacheLoadError/recursiveLoad(key:)``.
    /// A loaded value the store could not take is still returned and kept in memory; the
    /// failure is reported to the problem handler.
    ///
    /// - Complexity: O(1) on a memory hit; otherwise one store read, and on a store miss the load
    ///   and one store write.
    @inlinable
    public func value(
        forKey key: Key,
        expiresAfter: Duration? = nil,
        loader: @escaping @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        if let value = memory.value(forKey: key) { return value }
        return try await _valueFromStore(forKey: key, expiresAfter: expiresAfter, loader: loader)
    }

    /// ``value(forKey:expiresAfter:loader:)`` after a memory miss.
    @usableFromInline
    func _valueFromStore(
        forKey key: Key,
        expiresAfter: Duration?,
        loader: @escaping @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        let lifetime = expiresAfter ?? self.expiresAfter
        // A caller that joins a read by `value(forKey:)` (which has no loader) learns only that
        // the store missed; it then reads again with its own loader. Each round waits for a
        // whole store read, so a few rounds suffice; the bound keeps a stream of loader-less
        // readers from holding a loader back for ever.
        for _ in 0..<Self.joinedReadRounds {
            do {
                return try await throughMemory(key) { key in
                    var pending: _TierState<Key, Value>.Pending?
                    let since = self.beginLoad(key, pending: &pending)
                    defer { self.endLoad() }
                    var stored: Duration?
                    if let found = await self.readStore(key, since: since, pending: pending, lifetime: &stored) {
                        return (found, stored)
                    }
                    let value = try await loader(key)
                    await self.storeLoaded(value, forKey: key, lifetime: lifetime, since: since)
                    return (value, lifetime)
                }
            } catch is _StoreMiss {
                continue
            }
        }
        return try await loader(key)
    }

    /// Reads `key` through the memory cache's single flight, whose load is `load`: memory keeps
    /// what it loads unless the coherence stamp changes meanwhile (then the copy is removed).
    func throughMemory(
        _ key: Key,
        load: @escaping @Sendable (Key) async throws -> (Value, expiresAfter: Duration?)
    ) async throws -> Value {
        let stamp = coherenceStamp()
        let value = try await memory._value(
            forKey: key,
            cost: memoryCost,
            admit: admission(stamp),
            missCounted: true,
            loader: load
        ).value
        dropIfStale(key, stamp: stamp)
        return value
    }

    /// What memory may keep of a read that took `stamp`: `nil` (everything) without coherence.
    func admission(_ stamp: UInt64?) -> (@Sendable (Value) -> Bool)? {
        guard let stamp, let coherence else { return nil }
        return { _ in coherence.isCurrent(stamp) }
    }

    /// How many times a loading read joins other callers' store reads before it loads alone.
    static var joinedReadRounds: Int { 16 }

    /// Each value's cost in memory.
    var memoryCost: @Sendable (Value) -> Int {
        if let cost { return cost }
        return { _ in 0 }
    }

    /// Marks a load as running and returns the generation it started at (writes after it are
    /// remembered until no load runs) and `key`'s pending write-behind, in one turn of the lock.
    /// (No tuple is returned: in this unspecialized generic code a tuple of a generic type costs
    /// a lookup of its type metadata on every call.)
    func beginLoad(_ key: Key, pending: inout _TierState<Key, Value>.Pending?) -> UInt64 {
        state.withLock { state in
            state.loadsInFlight += 1
            pending = state.pending[key]
            return state.generation
        }
    }

    func endLoad() {
        state.withLock { state in
            state.loadsInFlight -= 1
            if state.loadsInFlight == 0 { state.lastWrite.removeAll(keepingCapacity: true) }
        }
    }

    /// The value for `key` as the store level sees it: a pending write-behind first, then the
    /// store. `nil` for a miss, an expired entry, or one that could not be read (reported).
    /// `pending` is the key's write-behind, read with `since` (`beginLoad(_:)`). `countingHit:
    /// false` leaves a hit uncounted (a caller that reads again to store it). A hit sets
    /// `lifetime` to what is left of the entry's (`nil`: none); it is not returned in a tuple,
    /// whose type metadata this unspecialized generic code would look up on every call.
    func readStore(
        _ key: Key,
        since: UInt64,
        pending: _TierState<Key, Value>.Pending?,
        countingHit: Bool = true,
        lifetime: inout Duration?
    ) async -> Value? {
        switch pending {
        case .write(let value, _, let expiresAt, _)?:
            guard let left = remainingLifetime(until: expiresAt) else { return nil }
            lifetime = left.duration
            return value
        case .removal?:
            return nil
        case nil:
            break
        }
        guard let storeKey = storeKey(key) else { return nil }
        let entry: StoredEntry?
        do {
            entry = try await store.entry(forKey: storeKey)
        } catch {
            report(CacheStoreProblem(key: storeKey, error: error))
            return nil
        }
        guard let entry, let left = remainingLifetime(until: entry.expiresAt) else {
            state.withLock { $0.counts.missCount += 1 }
            return nil
        }
        let value: Value
        do {
            value = try codec.decode(entry.value)
        } catch {
            report(CacheStoreProblem(key: storeKey, error: .codec(key: storeKey, reason: "\(error)")))
            // Bytes this codec cannot read will not become readable: drop them, unless a write
            // replaced them meanwhile.
            await keyLock.withLock(key) {
                guard !wasWritten(key, since: since) else { return }
                _ = try? await store.removeEntry(forKey: storeKey)
            }
            return nil
        }
        if countingHit { state.withLock { $0.counts.hitCount += 1 } }
        lifetime = left.duration
        return value
    }

    /// What is left of a lifetime that ends at `deadline`: `.some(nil)` for none, `nil` if it
    /// has ended.
    func remainingLifetime(until deadline: Date?) -> (duration: Duration?, Void)? {
        guard let deadline else { return (nil, ()) }
        let seconds = deadline.timeIntervalSince(clock.now())
        guard seconds > 0 else { return nil }
        return (.nanoseconds(Int64((seconds * 1e9).rounded(.up))), ())
    }

    /// Whether a write or removal reached `key` (or all keys) after generation `since`.
    func wasWritten(_ key: Key, since: UInt64) -> Bool {
        state.withLock { state in
            state.pending[key] != nil || (state.lastWrite[key] ?? 0) > since || state.lastRemoveAll > since
        }
    }
}
