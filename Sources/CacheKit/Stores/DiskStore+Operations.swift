import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension DiskStore {
    /// The entry for `key` and its deadline, or `nil`: none, expired (then dropped), or found
    /// damaged or missing on disk (then dropped and reported to the problem handler). Counts
    /// as a use for eviction.
    ///
    /// - Throws: ``CacheStoreError/closed(path:)`` after ``close()``;
    ///   ``CacheStoreError/ioFailure(path:operation:errno:)`` if the file cannot be read for a
    ///   reason other than damage (the entry stays).
    /// - Complexity: O(1) under the lock, plus reading the file outside it.
    public func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry? {
        try Self.validate(key: key)
        // A file can vanish under a read when another call replaces or removes the entry at
        // once; the index then names another file (or none), and the read starts again.
        for _ in 0..<8 {
            let now = clock.now()
            var after = DiskAftermath()
            let found = try withState { state throws(CacheStoreError) -> DiskEntryInfo? in
                try state.checkOpen()
                guard let info = state.index.peekValue(forKey: key) else { return nil }
                if let deadline = info.expiresAt, deadline <= now {
                    _ = try? state.drop(key, id: info.id, into: &after)
                    return nil
                }
                _ = state.index.value(forKey: key)
                state.touch(info.id)
                return info
            }
            finish(after)
            guard let info = found else { return nil }

            let path = paths.entry(info.id)
            let damage: CacheStoreError
            do {
                switch try DiskEntryFile.read(path, key: key, size: info.size) {
                case .success(let value): return StoredEntry(value: value, expiresAt: info.expiresAt)
                case .failure(let failure): damage = .corrupted(path: path, reason: failure.reason)
                }
            } catch {
                guard case .ioFailure(_, "open", ENOENT) = error else { throw error }
                damage = .corrupted(path: path, reason: "the entry file is missing")
            }
            var report = DiskAftermath()
            let dropped = withState { state -> Bool in
                guard !state.isClosed, state.index.peekValue(forKey: key)?.id == info.id else { return false }
                do throws(CacheStoreError) {
                    _ = try state.drop(key, id: info.id, into: &report)
                } catch {
                    report.problems.append(CacheStoreProblem(key: key, error: error))
                }
                return true
            }
            guard dropped else { continue }
            report.problems.insert(CacheStoreProblem(key: key, error: damage), at: 0)
            finish(report)
            return nil
        }
        return nil
    }

    /// Stores `value` for `key`, replacing any entry, with the deadline `expiresAt` (`nil` for
    /// never; a date at infinity is never too, and one at minus infinity or NaN has passed),
    /// then evicts (removing files) until both limits hold.
    ///
    /// When it returns, the entry survives a crash of the process (see Durability). A value
    /// larger than ``byteLimit`` is refused, and any older entry for `key` removed.
    ///
    /// - Throws: ``CacheStoreError/tooLarge(key:bytes:limit:)``;
    ///   ``CacheStoreError/ioFailure(path:operation:errno:)`` if the file or the journal cannot
    ///   be written (a full disk): the store is then as it was, and usable;
    ///   ``CacheStoreError/closed(path:)``; ``CacheStoreError/invalidKey(key:reason:)``.
    /// - Complexity: Writing and flushing the file outside the lock, then O(1) amortized under
    ///   it, plus O(1) per entry evicted.
    public func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError) {
        try Self.validate(key: key)
        // A deadline at infinity is none; NaN and minus infinity have passed.
        let expiresAt = expiresAt.flatMap { date -> Date? in
            let seconds = date.timeIntervalSinceReferenceDate
            return seconds.isFinite ? date : (seconds == .infinity ? nil : .distantPast)
        }
        var after = DiskAftermath()
        guard value.count <= byteLimit else {
            let failure = withState { state -> CacheStoreError? in
                do throws(CacheStoreError) {
                    try state.checkOpen()
                    _ = try state.drop(key, into: &after)
                    return nil
                } catch {
                    return error
                }
            }
            finish(after)
            throw failure ?? .tooLarge(key: key, bytes: value.count, limit: byteLimit)
        }
        let (id, generation) = try withState { state throws(CacheStoreError) in
            try state.checkOpen()
            return (try state.allocateId(), state.generation)
        }
        var failure: CacheStoreError?
        do {
            try DiskIO.writeAtomically(
                DiskEntryFile.encode(value, key: key, expiresAt: expiresAt),
                to: paths.entry(id),
                temporary: paths.entryTemporary(id),
                target: .entryFile,
                faults: faults,
                flush: durability == .powerLoss
            )
        } catch {
            failure = error
        }
        let info = DiskEntryInfo(id: id, size: value.count, expiresAt: expiresAt)
        let result = withState { state in
            state.commit(key, info, generation: generation, failure: failure, into: &after)
        }
        finish(after)
        try result.get()
    }

    /// Removes the entry for `key`; returns whether there was one (an expired entry is removed
    /// and counts as none).
    ///
    /// - Complexity: O(1) under the lock; the file is removed after it.
    @discardableResult
    public func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool {
        try Self.validate(key: key)
        let now = clock.now()
        var after = DiskAftermath()
        let removed = try withState { state throws(CacheStoreError) in
            try state.checkOpen()
            return try state.drop(key, into: &after)
        }
        finish(after)
        guard let removed else { return false }
        return removed.expiresAt.map { $0 > now } ?? true
    }

    /// Removes every entry: writes an empty journal, renames the entry directory away and
    /// deletes it in the background (``close()`` waits for that).
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if the journal cannot be
    ///   written; the entries are then kept.
    /// - Complexity: O(1) under the lock, plus writing and flushing a new journal.
    public func removeAll() async throws(CacheStoreError) {
        var after = DiskAftermath()
        try withState { state throws(CacheStoreError) in
            try state.checkOpen()
            try state.journal.rewrite([], nextId: max(state.nextId, state.reservedUpTo))
            state.touches.removeAll()
            state.index.removeAll()
            _ = state.removals.take()
            state.generation += 1
            let removed =
                paths.root + "/" + DiskPaths.removingPrefix + String(UInt64.random(in: 1...UInt64.max), radix: 16)
            let renamed = rename(paths.entries, removed) == 0
            let error = errno
            if renamed {
                let problemHandler = problemHandler
                startInBackground(&state) { Self.removeTree(removed, problemHandler: problemHandler) }
            } else if error != ENOENT {
                // The old files stay where they were, listed nowhere: deleted one by one instead.
                let nextId = state.nextId
                startInBackground(&state) { [paths] in Self.removeUnlisted(paths, live: [], below: nextId) }
                after.problems.append(
                    CacheStoreProblem(
                        key: nil,
                        error: .ioFailure(path: paths.entries, operation: "rename", errno: error)
                    )
                )
            }
            try DiskIO.makeDirectory(paths.entries)
        }
        finish(after)
    }
}
