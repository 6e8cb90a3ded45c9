import Foundation

extension TieredCache {
    /// Stores `value` for `key` in both levels, to expire after `expiresAfter` (else the cache's
    /// ``expiresAfter``).
    ///
    /// With ``WriteMode/writeThrough`` it returns once the store holds the value; with
    /// ``WriteMode/writeBehind(maximumPending:)``, once memory does (the store is written in the
    /// background). A store write that fails leaves the key in neither level: write-through
    /// throws the store's error, write-behind reports it to the problem handler.
    ///
    /// - Throws: ``CacheStoreError/invalidKey(key:reason:)`` when the key encoding fails,
    ///   ``CacheStoreError/codec(key:reason:)`` when the codec fails (nothing is written then),
    ///   or the store's error.
    public func setValue(_ value: Value, forKey key: Key, expiresAfter: Duration? = nil) async throws(CacheStoreError) {
        let storeKey = try encodedKey(key)
        let bytes: Data
        do {
            bytes = try codec.encode(value)
        } catch {
            throw .codec(key: storeKey, reason: "\(error)")
        }
        let lifetime = expiresAfter ?? self.expiresAfter
        await keyLock.lock(key)
        let expiresAt = deadline(after: lifetime)
        let (generation, inBackground) = state.withLock { state in
            let generation = state.nextGeneration(for: key)
            state.pending[key] = .write(value, bytes, expiresAt: expiresAt, generation: generation)
            guard case .writeBehind(let maximumPending) = writeMode,
                state.backgroundWrites.count < maximumPending
            else { return (generation, false) }
            return (generation, true)
        }
        let stamp = coherenceStamp()
        if mayKeep(stamp) {
            memory.setValue(value, forKey: key, cost: cost?(value) ?? 0, expiresAfter: lifetime)
            dropIfStale(key, stamp: stamp)
        }
        if inBackground {
            keyLock.unlock(key)
            startBackgroundWrite(forKey: key, storeKey: storeKey, generation: generation)
            return
        }
        defer { keyLock.unlock(key) }
        try await writeToStore(bytes, forKey: key, storeKey: storeKey, expiresAt: expiresAt, generation: generation)
    }

    /// Removes `key` from the levels named (both by default).
    ///
    /// - Throws: The store's error; the memory level's copy is removed regardless.
    public func removeValue(forKey key: Key, from levels: Levels = .all) async throws(CacheStoreError) {
        guard levels.contains(.store) else {
            if levels.contains(.memory) { _ = memory.removeValue(forKey: key) }
            return
        }
        let storeKey = try encodedKey(key)
        await keyLock.lock(key)
        defer { keyLock.unlock(key) }
        let generation = state.withLock { state in
            let generation = state.nextGeneration(for: key)
            state.pending[key] = .removal(generation: generation)
            return generation
        }
        if levels.contains(.memory) { _ = memory.removeValue(forKey: key) }
        defer { clearPending(key, generation: generation) }
        try await store.removeEntry(forKey: storeKey)
    }

    /// Removes every entry from the levels named (both by default). Background writes still
    /// pending are finished first, so none lands after the removal.
    public func removeAll(from levels: Levels = .all) async throws(CacheStoreError) {
        try await removeAll(from: levels) { $0.removeAll() }
    }

    /// Expires every entry of both levels: memory's leave with ``RemovalReason/expired``, and
    /// the store's are removed. For "nothing cached may be served any more" events; see also
    /// ``expireAll(whenever:)``.
    public func expireAll() async throws(CacheStoreError) {
        try await removeAll(from: .all) { $0.expireAll() }
    }

    /// Calls ``expireAll()`` each time `events` yields an element, until the sequence ends, the
    /// returned trigger is cancelled, or the cache is deinitialized. Store failures are
    /// reported to the problem handler.
    @discardableResult
    public func expireAll<Events: AsyncSequence & Sendable>(whenever events: Events) -> ExpirationTrigger {
        _triggers.expire(self, whenever: events) { cache in
            // The memory level at once, on the trigger's task; the store's removal after it.
            cache.memory.expireAll()
            Task {
                do throws(CacheStoreError) {
                    try await cache.expireAll()
                } catch {
                    cache.report(CacheStoreProblem(key: nil, error: error))
                }
            }
        }
    }

    /// Waits until every background write started so far has reached the store.
    public func flush() async {
        while true {
            let writes = state.withLock { Array($0.backgroundWrites.values) }
            if writes.isEmpty { return }
            for write in writes { await write.value }
        }
    }

    /// Finishes the background writes and closes the store. The memory level keeps working;
    /// operations that reach the store then throw (or, for reads, miss with) ``CacheStoreError/closed(path:)``.
    public func close() async throws(CacheStoreError) {
        await flush()
        try await store.close()
    }

    // MARK: - Internals

    func encodedKey(_ key: Key) throws(CacheStoreError) -> String {
        do {
            return try keys.encode(key)
        } catch {
            throw .invalidKey(key: "\(key)", reason: "\(error)")
        }
    }

    func removeAll(
        from levels: Levels,
        memoryRemoval: (Cache<Key, Value>) -> Void
    ) async throws(CacheStoreError) {
        guard levels.contains(.store) else {
            if levels.contains(.memory) { memoryRemoval(memory) }
            return
        }
        await flush()
        state.withLock { state in
            state.generation &+= 1
            state.lastRemoveAll = state.generation
            state.pending.removeAll()
        }
        if levels.contains(.memory) { memoryRemoval(memory) }
        try await store.removeAll()
    }

    /// Writes a value the loader produced to the store, unless a write or removal reached the
    /// key after the load began (its value then stands).
    func storeLoaded(_ value: Value, forKey key: Key, lifetime: Duration?, since: UInt64) async {
        guard let storeKey = storeKey(key) else { return }
        let bytes: Data
        do {
            bytes = try codec.encode(value)
        } catch {
            report(CacheStoreProblem(key: storeKey, error: .codec(key: storeKey, reason: "\(error)")))
            return
        }
        await keyLock.lock(key)
        defer { keyLock.unlock(key) }
        guard !wasWritten(key, since: since) else { return }
        let expiresAt = deadline(after: lifetime)
        do {
            try await store.setEntry(bytes, forKey: storeKey, expiresAt: expiresAt)
            state.withLock { $0.counts.writeCount += 1 }
        } catch {
            report(CacheStoreProblem(key: storeKey, error: error))
        }
    }

    /// The store write of `setValue`, holding the key's lock. On failure the key leaves both
    /// levels and the error is thrown.
    func writeToStore(
        _ bytes: Data,
        forKey key: Key,
        storeKey: String,
        expiresAt: Date?,
        generation: UInt64
    ) async throws(CacheStoreError) {
        defer { clearPending(key, generation: generation) }
        do {
            try await store.setEntry(bytes, forKey: storeKey, expiresAt: expiresAt)
            state.withLock { $0.counts.writeCount += 1 }
        } catch {
            state.withLock { $0.counts.errorCount += 1 }
            _ = memory.removeValue(forKey: key)
            // The store may still hold an older value: it must not come back.
            _ = try? await store.removeEntry(forKey: storeKey)
            throw error
        }
    }

    /// Writes the pending value of `key` in the background, if it is still the one of
    /// `generation` when the key's lock is free.
    func startBackgroundWrite(forKey key: Key, storeKey: String, generation: UInt64) {
        state.withLock { state in
            state.backgroundWrites[generation] = Task {
                await self.keyLock.withLock(key) {
                    let pending = self.state.withLock { $0.pending[key] }
                    guard case .write(_, let bytes, let expiresAt, generation)? = pending else { return }
                    do throws(CacheStoreError) {
                        try await self.writeToStore(
                            bytes,
                            forKey: key,
                            storeKey: storeKey,
                            expiresAt: expiresAt,
                            generation: generation
                        )
                    } catch {
                        self.report(CacheStoreProblem(key: storeKey, error: error))
                    }
                }
                _ = self.state.withLock { $0.backgroundWrites.removeValue(forKey: generation) }
            }
        }
    }

    /// Forgets the pending operation on `key` if it is still the one of `generation`.
    func clearPending(_ key: Key, generation: UInt64) {
        state.withLock { state in
            if state.pending[key]?.generation == generation { state.pending[key] = nil }
        }
    }
}
