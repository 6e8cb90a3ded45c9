// Persistence/: a cache saved to one file and loaded back (format, serializers, atomic replacement)
// and each cache's snapshot and restore. Reads the engine only to snapshot and restore entries.

import Foundation

/// Saves a cache's entries to a file and loads them back: YMCache's persistence manager.
///
/// ```swift
/// let cache = Cache<String, Quote>(countLimit: 10_000, policy: .lru)
/// let persistence = CachePersistence(cache: cache, fileURL: url)   // JSON, mode 0o600
/// try persistence.load()                                           // a missing file loads nothing
/// persistence.onError = { print("autosave failed: \($0)") }
/// persistence.startAutosave(every: .seconds(30))
/// // …
/// try persistence.close()                                          // stops autosave, saves once more
/// ```
///
/// ## What is saved
/// The live entries with their costs, in eviction order (next victim first); expired entries are
/// left out. Loading writes them back in that order, so an LRU or FIFO cache has the same next
/// victim after a restart. Each entry that can expire is saved with its deadline on the wall
/// clock (``PersistedEntry/expiresAt``: the time of the save plus what was left of its life),
/// and a load gives it what is left until then, so the time between a save and a load counts
/// and an entry whose time passed meanwhile is not restored. Entries without a deadline get the
/// cache's ``Cache/expiration`` from the load on.
///
/// ## Safety of the file
/// A save writes a temporary file in the same directory, flushes it (`fsync`), renames it over
/// the file and flushes the directory: after a crash or power loss the file holds the previous
/// save or the new one, never a mix. The header carries a format identifier, a version, the
/// serializer's identifier, the payload length and a CRC32, so a truncated, corrupted, foreign,
/// newer-version or other-serializer file is reported as a ``CachePersistenceError`` rather than
/// misread. After such a failed load the file is left as it is, the cache keeps working, and
/// every save (manual, autosave or ``close()``) is refused with
/// ``CachePersistenceError/saveRefused(path:because:)`` until you call
/// ``allowOverwritingUnreadableFile()`` or a later ``load()`` succeeds. Saves are refused in the
/// same way while the file exists and this object has neither loaded nor saved it
/// (``CachePersistenceError/notLoaded(path:)``): a save before ``load()``, by an autosave started
/// too early or a ``close()`` without a load, would otherwise replace the entries of the last
/// run with whatever the cache holds. Call ``allowOverwritingUnreadableFile()`` to start afresh.
///
/// ## Threads
/// All methods may be called from any thread. Concurrent saves each write a complete file; one
/// that finishes after a newer save already replaced the file is dropped. No callback
/// (``onError``, the serializer, the cache's handlers) runs while this object holds its lock.
public final class CachePersistence<C: SnapshotCache & Sendable>: Sendable where C.Key: Sendable, C.Value: Sendable {
    /// The cache this object saves and loads.
    public let cache: C
    /// The file it saves to and loads from.
    public let fileURL: URL
    /// How entries become bytes.
    public let serializer: CacheSerializer<C.Key, C.Value>
    /// The POSIX mode a saved file gets (for example `0o600`, the default: owner read and write).
    public let filePermissions: Int

    private struct State: Sendable {
        /// Why the last load failed, while saves are refused because of it.
        var unreadable: CachePersistenceError?
        var autosave: Task<Void, Never>?
        var onError: (@Sendable (CachePersistenceError) -> Void)?
        /// Whether saves may replace an existing file: this object loaded it (or found none),
        /// saved it, or was allowed to overwrite it.
        var mayReplace = false
        /// The number the next save gets, and the number of the save whose file is in place.
        var nextSave: UInt64 = 1
        var savedInPlace: UInt64 = 0
        /// Loads restoring entries into the cache right now: a save meanwhile would write a
        /// snapshot with part of the file's entries over the whole file, so none starts.
        var restoring = 0
        /// Counts the loads that began restoring entries: a save whose snapshot was taken before
        /// one of them holds none of the file's entries and must not replace the file.
        var restores: UInt64 = 0

        /// After a load that read the file or found none, or when told to: saves may replace it.
        mutating func allowReplacing() {
            unreadable = nil
            mayReplace = true
        }
    }

    private let state = _Locked(State())

    /// Creates a persistence for `cache`. Nothing is read or written until you call ``load()``,
    /// ``save()``, ``startAutosave(every:clock:)`` or ``close()``.
    ///
    /// - Parameters:
    ///   - cache: The cache to save and load.
    ///   - fileURL: A file URL; its directory must exist.
    ///   - serializer: How entries become bytes: ``CacheSerializer/json``,
    ///     ``CacheSerializer/propertyList`` (both for `Codable` keys and values) or
    ///     ``CacheSerializer/custom(identifier:encode:decode:)``, which works for any keys and
    ///     values: YMCache's "arbitrary model transformations". Without this argument, keys and
    ///     values must be `Codable`, and the file is JSON (see
    ///     ``init(cache:fileURL:filePermissions:)``).
    ///   - filePermissions: The POSIX mode of the saved file, applied whatever the umask.
    ///     Defaults to `0o600`.
    /// - Precondition: `fileURL` is a file URL; `filePermissions` is within `0...0o7777`.
    public init(
        cache: C,
        fileURL: URL,
        serializer: CacheSerializer<C.Key, C.Value>,
        filePermissions: Int = 0o600
    ) {
        precondition(fileURL.isFileURL, "CachePersistence needs a file URL (got \(fileURL))")
        precondition(
            (0...0o7777).contains(filePermissions),
            "filePermissions must be a POSIX mode in 0...0o7777 (got \(String(filePermissions, radix: 8)))"
        )
        self.cache = cache
        self.fileURL = fileURL
        self.serializer = serializer
        self.filePermissions = filePermissions
    }

    deinit {
        state.withLock { $0.autosave }?.cancel()
    }

    private var path: String { fileURL.path }

    /// Called with each error of an autosave, on the autosave's task. Errors never stop the
    /// autosave or crash; `nil` (the default) ignores them.
    public var onError: (@Sendable (CachePersistenceError) -> Void)? {
        get { state.withLock { $0.onError } }
        set {
            // The old closure is released after the lock (releasing it may run a `deinit`).
            let old = state.withLock { state in
                defer { state.onError = newValue }
                return state.onError
            }
            _ = old
        }
    }

    /// The error of the last ``load()``, while it keeps saves from overwriting the file; `nil`
    /// when saves may proceed.
    public var unreadableFileError: CachePersistenceError? { state.withLock { $0.unreadable } }

    /// Reads the file and restores its entries into the cache (see ``SnapshotCache/restore(_:)``).
    ///
    /// A missing file is an empty cache: nothing is restored and the result is 0. If the file
    /// cannot be read or is not a valid cache file for this serializer, the cache is left as it
    /// was, the file is not touched, and saves are refused until
    /// ``allowOverwritingUnreadableFile()`` or a successful load.
    ///
    /// It also removes the temporary files that processes killed while saving left beside the
    /// file (never the file itself).
    ///
    /// - Returns: The number of entries in the file.
    /// - Throws: ``CachePersistenceError``, saying what is wrong and where.
    @discardableResult
    public func load() throws(CachePersistenceError) -> Int {
        CacheFile.removeStaleTemporaries(beside: path)
        let entries: [PersistedEntry<C.Key, C.Value>]
        do throws(CachePersistenceError) {
            var bytesRead = 0
            guard
                let payload = try CacheFile.readPayload(
                    path: path,
                    identifier: serializer.identifier,
                    bytesRead: &bytesRead
                )
            else {
                state.withLock { $0.allowReplacing() }
                return 0
            }
            entries = try decode(payload)
            try Self.checkCosts(of: entries, path: path)
        } catch {
            state.withLock { $0.unreadable = error }
            throw error
        }
        // Saves are held off while the entries go in (an autosave started before `load()` would
        // otherwise replace the file with the part restored so far), and are allowed only once
        // all are in. The lock is not held meanwhile: restoring runs the cache's handlers.
        state.withLock { state in
            state.restoring += 1
            state.restores += 1
        }
        cache.restore(entries)
        state.withLock { state in
            state.restoring -= 1
            state.allowReplacing()
        }
        return entries.count
    }

    private func decode(_ payload: Data) throws(CachePersistenceError) -> [PersistedEntry<C.Key, C.Value>] {
        do {
            return try serializer.decode(payload)
        } catch let error as DecodingError {
            let (field, reason) = Self.describe(error)
            throw .undecodable(path: path, field: field, reason: reason)
        } catch let error as PayloadRefused {
            throw .undecodable(path: path, field: "", reason: error.reason)
        } catch {
            throw .undecodable(path: path, field: "", reason: "\(error)")
        }
    }

    /// Rejects what no cache accepts: a negative cost, or costs whose sum overflows `Int` (a
    /// hand-edited file, or one from a custom serializer, can hold them even with a valid
    /// checksum).
    private static func checkCosts(
        of entries: [PersistedEntry<C.Key, C.Value>],
        path: String
    ) throws(CachePersistenceError) {
        var total = 0
        for (i, entry) in entries.enumerated() {
            guard entry.cost >= 0 else {
                throw .undecodable(
                    path: path,
                    field: "[\(i)].cost",
                    reason: "a cost must not be negative (got \(entry.cost))"
                )
            }
            let (sum, overflow) = total.addingReportingOverflow(entry.cost)
            guard !overflow else {
                throw .undecodable(path: path, field: "[\(i)].cost", reason: "the costs add up to more than Int.max")
            }
            total = sum
        }
    }

    private static func describe(_ error: DecodingError) -> (field: String, reason: String) {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
            context = c
        @unknown default:
            return ("", "\(error)")
        }
        let field = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return (field, context.debugDescription)
    }

    /// Lets the next save replace a file that the last ``load()`` could not read, or that this
    /// object never loaded. The file stays as it is until then; call this once you have kept or
    /// given up what it held.
    public func allowOverwritingUnreadableFile() {
        state.withLock { $0.allowReplacing() }
    }

    /// Writes the cache's live entries to the file, atomically, with ``filePermissions``.
    ///
    /// A save that starts while ``load()`` restores entries is refused (reason
    /// ``CachePersistenceError/notLoaded(path:)``), and one whose snapshot was taken before a
    /// load restored the file's entries is dropped without replacing the file: either would
    /// write the cache without the file's entries over the file.
    ///
    /// - Throws: ``CachePersistenceError/saveRefused(path:because:)`` after a failed ``load()``,
    ///   while the file exists and this object has neither loaded nor saved it, or while
    ///   ``load()`` restores the file's entries;
    ///   ``CachePersistenceError/unencodable(path:reason:)`` or
    ///   ``CachePersistenceError/ioFailure(path:operation:errno:)`` otherwise. A failed save
    ///   leaves the previous file in place.
    public func save() throws(CachePersistenceError) {
        let (number, restores) = try state.withLock { state -> Result<(UInt64, UInt64), CachePersistenceError> in
            if let reason = state.unreadable { return .failure(.saveRefused(path: path, because: reason)) }
            if state.restoring > 0 { return .failure(.saveRefused(path: path, because: .notLoaded(path: path))) }
            defer { state.nextSave += 1 }
            return .success((state.nextSave, state.restores))
        }.get()
        let entries = cache.persistableEntries()
        let payload: Data
        do {
            payload = try serializer.encode(entries)
        } catch {
            throw .unencodable(path: path, reason: "\(error)")
        }
        let bytes = CacheFile.wrap(payload, identifier: serializer.identifier)
        let temporary = try CacheFile.writeTemporary(bytes, beside: path, permissions: filePermissions)
        // The rename happens under the lock, so that a load failing meanwhile, or a newer save
        // finishing first, is seen.
        let result = state.withLock { state -> Result<Bool, CachePersistenceError> in
            if let reason = state.unreadable { return .failure(.saveRefused(path: path, because: reason)) }
            // Checked here, under the lock that every rename takes, so that a concurrent save of
            // this object that created the file meanwhile counts as this object's own.
            if !state.mayReplace && CacheFile.exists(path) {
                return .failure(.saveRefused(path: path, because: .notLoaded(path: path)))
            }
            guard number > state.savedInPlace else { return .success(false) }
            // A load restored the file's entries after this snapshot was taken (or is restoring
            // them now): the snapshot lacks them, and the file has them. Dropped, as a save
            // that a newer one overtook.
            guard state.restoring == 0, state.restores == restores else { return .success(false) }
            do throws(CachePersistenceError) {
                try CacheFile.replace(path, with: temporary)
            } catch {
                return .failure(error)
            }
            state.savedInPlace = number
            state.mayReplace = true
            return .success(true)
        }
        switch result {
        case .success(true):
            try CacheFile.syncDirectory(of: path)
        case .success(false):
            CacheFile.discard(temporary)  // a newer save is already in place
        case .failure(let error):
            CacheFile.discard(temporary)
            throw error
        }
    }

    /// Saves every `interval` of `clock` until ``stopAutosave()``, ``close()`` or this object
    /// goes away, replacing any autosave already running. Errors go to ``onError``.
    ///
    /// - Parameters:
    ///   - interval: The time between saves.
    ///   - clock: The clock `interval` is measured on. Tests pass a ``ManualClock``.
    /// - Precondition: `interval` is positive.
    public func startAutosave(every interval: Duration, clock: some Clock<Duration> = ContinuousClock()) {
        precondition(interval > .zero, "the autosave interval must be positive (got \(interval))")
        let sleep: @Sendable (Duration) async throws -> Void = { try await clock.sleep(for: $0) }
        let task = _Timekeeper.repeating(every: interval, sleep: sleep) { [weak self] in
            guard let self else { return false }
            do throws(CachePersistenceError) {
                try self.save()
            } catch {
                self.onError?(error)
            }
            return true
        }
        let old = state.withLock { state in
            defer { state.autosave = task }
            return state.autosave
        }
        old?.cancel()
    }

    /// Stops the autosave, if one runs. A save already under way finishes.
    public func stopAutosave() {
        let old = state.withLock { state in
            defer { state.autosave = nil }
            return state.autosave
        }
        old?.cancel()
    }

    /// Whether an autosave is running.
    public var isAutosaving: Bool { state.withLock { $0.autosave != nil } }

    /// Stops the autosave and saves one last time.
    ///
    /// - Throws: What ``save()`` throws; the autosave is stopped either way.
    public func close() throws(CachePersistenceError) {
        stopAutosave()
        try save()
    }
}

extension CachePersistence where C.Key: Codable, C.Value: Codable {
    /// Creates a persistence for `cache` that saves its entries as JSON
    /// (``CacheSerializer/json``). Nothing is read or written until you call ``load()``,
    /// ``save()``, ``startAutosave(every:clock:)`` or ``close()``.
    ///
    /// - Parameters:
    ///   - cache: The cache to save and load.
    ///   - fileURL: A file URL; its directory must exist.
    ///   - filePermissions: The POSIX mode of the saved file, applied whatever the umask.
    ///     Defaults to `0o600`.
    /// - Precondition: `fileURL` is a file URL; `filePermissions` is within `0...0o7777`.
    public convenience init(cache: C, fileURL: URL, filePermissions: Int = 0o600) {
        self.init(cache: cache, fileURL: fileURL, serializer: .json, filePermissions: filePermissions)
    }
}
