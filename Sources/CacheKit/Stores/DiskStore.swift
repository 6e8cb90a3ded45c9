import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A ``CacheStore`` that keeps a file per entry in a directory it owns: for values of
/// kilobytes to megabytes beneath a memory cache.
///
/// ```swift
/// let store = try await DiskStore(directory: cachesURL.appendingPathComponent("images"),
///                                  byteLimit: 500 << 20)
/// try await store.setEntry(png, forKey: "avatar/42", expiresAt: .now.addingTimeInterval(86_400))
/// let hit = try await store.entry(forKey: "avatar/42")?.value
/// ```
///
/// ## Design
/// - **One owner.** The store takes an advisory lock (`flock`) on `lock` in its directory and on
///   the directory itself, and holds both until ``close()`` or deinit; a second store on the
///   directory, in this process or another, gets ``CacheStoreError/locked(path:)``, even when the
///   lock file was deleted meanwhile.
/// - **Its own index.** Entries are listed in `journal`, an append-only file of checksummed,
///   length-prefixed records (set, remove, a batch of reads, closed). Opening replays it and
///   never lists or stats the entry files, so it costs the same however large the values are.
///   When the journal holds more than about twice the live entries' records, it is rewritten
///   from the index (a new file flushed, then renamed over it). A torn last record, which a
///   crash during an append leaves, is cut off and reported to the problem handler. A record
///   whose length runs past the end is taken for torn only when no whole record follows it
///   (within the largest record's reach): otherwise its length is damaged, and cutting there
///   would drop every later record, so the journal is taken as damaged. A journal
///   of a newer format gives ``CacheStoreError/newerFormat(path:found:supported:)`` and is left
///   as it is.
/// - **It heals itself.** A journal that is not one, damaged before its last record, or missing
///   beside entry files does not stop the store from opening: it is kept as `journal.damaged`
///   and the index is rebuilt from the entry files, each of which names its key and deadline and
///   carries checksums. Every
///   file that checks whole is kept (of two for one key, the later write), the rest are removed,
///   and the problem handler hears of the rebuild and of each file removed. The eviction order
///   becomes the order of the writes. An entry removed just before a crash whose file was not yet
///   deleted can come back this way, when the journal is damaged too.
/// - **A file per entry**, `entries/<id>`, named by an id no other entry is given, so that a
///   file is never rewritten in place and a read needs no lock. The file is written to a
///   temporary name and renamed, and holds a header (magic, key, value length, deadline, CRC-32C
///   of the value, and of the header) that a read checks. A damaged, cut short or missing file is a miss: the
///   entry is dropped and reported (``CacheStoreProblem``).
/// - **Limits and eviction.** The index is a ``SerialCache`` with each entry's value bytes as
///   its cost and the store's limits, so it evicts by CacheKit's own policies before a write
///   returns; evicted files are removed. Reads count as uses, and reach the journal in batches
///   of 64, so the eviction order survives a restart approximately. File times play no part.
///   A value larger than `byteLimit` is refused with ``CacheStoreError/tooLarge(key:bytes:limit:)``
///   and the key's older entry is removed: the store never answers with a value older than
///   the last write for its key.
///   Eviction runs inline, down to the limits and no further: no background trim. Evicting
///   from the index costs O(1) per entry and each evicted file costs one `unlink` whenever it
///   happens, so trimming below the limits (to 90%, say) would batch nothing and only drop
///   entries a later read could have hit.
/// - **Deadlines** are dates on the store's ``WallClock``. An expired entry is never returned;
///   a read that finds one drops it, and opening drops all that have expired. Until then it
///   counts in ``usage()`` and is evicted like any other entry.
/// - **Concurrency.** The state (index and journal) is guarded by a lock. Entry files are
///   written and read outside it; the journal append that makes a write visible happens under
///   it, so the journal's order is the index's. Files are removed and problems reported after
///   the lock is released. The methods are `async` and not isolated to an actor, so they run
///   on the global concurrent executor, never on the caller's actor.
/// - **`removeAll()`** writes an empty journal, renames `entries` away and deletes it in the
///   background; ``close()`` waits for that.
///
/// ## Durability
/// - *Process crash* (`SIGKILL` at any moment): everything a returned call wrote survives.
///   An entry's file is in place before the journal lists it, and the journal says an entry is
///   gone before its file is removed, so after a restart every listed entry reads back exactly.
///   A crash can leave files no entry lists; after a run that did not close, the next one
///   deletes them in the background.
/// - *Power loss*: by default (``Durability/processCrash``) an entry's file is renamed into
///   place without being flushed (`fsync`), as the disk caches of PINCache, Kingfisher and Nuke
///   write theirs: a write costs a file's write and rename, several times less than with the
///   flush. After a power loss or an operating-system crash, recent entries may read back
///   missing, empty or damaged: their checksums catch it, and each is dropped and reported, a
///   miss. ``Durability/powerLoss`` flushes each entry's file before its rename, so that an entry
///   the journal lists has its bytes on disk. Either way the journal is flushed when it is
///   rewritten and on ``close()``, not after every write, so recent writes may be lost. A journal
///   that the file system left damaged before its end is rebuilt from the entry files (see
///   above).
///
/// ## Performance
/// A read takes the lock twice for O(1) work and reads the file outside it; a write writes and
/// flushes a file outside the lock, then appends one record under it. Opening reads the
/// journal once: O(*n*) for *n* records. A journal of set records only (as compaction writes it,
/// and as long as no remove or read has been appended since) lists the entries in eviction order
/// and goes into the index as it is read, without tables of keys and ids or a sort.
public final class DiskStore: CacheStore {
    /// The directory the store owns.
    public let directory: URL
    /// The most entries the store holds; `0` for no limit.
    public let countLimit: Int
    /// The most bytes of values the store holds.
    public let byteLimit: Int

    let paths: DiskPaths
    let clock: WallClock
    let problemHandler: (@Sendable (CacheStoreProblem) -> Void)?
    /// Makes writes fail on purpose, for the package's tests; not API.
    package let faults: DiskFaults
    /// What a returned write survives (see Durability).
    public let durability: Durability

    /// What a returned ``setEntry(_:forKey:expiresAt:)`` survives.
    public enum Durability: Sendable, Hashable {
        /// A crash of the process, at any moment: the entry's file is written and renamed into
        /// place, not flushed. A power loss may lose or damage recent entries, which then read
        /// as reported misses (each file's checksum tells).
        case processCrash
        /// Also a power loss or an operating-system crash, for the entry's value: its file is
        /// flushed (`fsync`) before the rename, which costs the write a disk flush.
        case powerLoss
    }
    let state: _Mutex<DiskStoreState>

    /// Opens the store in `directory`, creating it if needed, and replays its journal.
    ///
    /// - Parameters:
    ///   - directory: The store's own directory; nothing else should write there.
    ///   - countLimit: The most entries; `0` (the default) for no limit.
    ///   - byteLimit: The most bytes of values, counted without keys and headers.
    ///   - policy: Which entry leaves first when a limit is reached; LRU by default.
    ///   - clock: The clock deadlines are measured on; tests pass ``WallClock/manual(_:origin:)``.
    ///   - durability: What a returned write survives: a crash of the process
    ///     (``Durability/processCrash``, the default), or also a power loss
    ///     (``Durability/powerLoss``: every entry file flushed before its rename). See Durability.
    ///   - problemHandler: Hears what the store handled without failing a call (a damaged entry
    ///     dropped, a torn journal record cut off, a damaged journal rebuilt from the entry files,
    ///     a failed background deletion). It runs
    ///     without the store's lock held, on the calling task or on the background task that
    ///     found the problem; it may call the store.
    /// - Throws: ``CacheStoreError/locked(path:)`` if another store has the directory;
    ///   ``CacheStoreError/newerFormat(path:found:supported:)`` for a journal of a newer format;
    ///   ``CacheStoreError/ioFailure(path:operation:errno:)`` if the directory cannot be used.
    ///   Damaged files are not an error: see "It heals itself".
    /// - Precondition: `countLimit` is not negative and `byteLimit` is positive.
    /// - Complexity: O(*n*) for a journal of *n* records; a rebuild reads every entry file.
    public init(
        directory: URL,
        countLimit: Int = 0,
        byteLimit: Int,
        policy: EvictionPolicy = .lru,
        clock: WallClock = .system,
        durability: Durability = .processCrash,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) async throws(CacheStoreError) {
        precondition(countLimit >= 0, "DiskStore: countLimit must not be negative")
        precondition(byteLimit > 0, "DiskStore: byteLimit must be positive")
        let paths = DiskPaths(directory: directory)
        let faults = DiskFaults()
        try DiskIO.makeDirectory(paths.root)
        let fileLock = try StoreLock.acquire(paths.lock, owner: paths.root)
        let directoryLock: Int32
        do throws(CacheStoreError) {
            directoryLock = try StoreLock.acquireDirectory(paths.root, owner: paths.root)
        } catch {
            StoreLock.release(fileLock)
            throw error
        }
        let locks = [fileLock, directoryLock]
        var after = DiskAftermath()
        var opened: DiskStoreState
        let replay: DiskJournal.Replay
        do throws(CacheStoreError) {
            try DiskIO.makeDirectory(paths.entries)
            let journal: DiskJournal
            (journal, replay) = try DiskJournal.openOrRebuild(
                paths,
                faults: faults,
                byteLimit: byteLimit,
                problems: &after.problems
            )
            if let torn = replay.tornTail {
                after.problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: paths.journal, reason: torn)))
            }
            opened = DiskStoreState(
                journal: journal,
                nextId: replay.nextId,
                locks: locks,
                countLimit: countLimit,
                byteLimit: byteLimit,
                policy: policy
            )
            opened.load(replay, now: clock.now(), into: &after)
        } catch {
            for lock in locks { StoreLock.release(lock) }
            throw error
        }
        let sweep = !replay.closedCleanly
        // Listing the entries costs as much as the rest of opening: only a sweep needs them.
        let live = sweep ? Set(opened.index.entries.map(\.value.id)) : []
        let nextId = opened.nextId
        self.directory = directory
        self.countLimit = countLimit
        self.byteLimit = byteLimit
        self.paths = paths
        self.clock = clock
        self.problemHandler = problemHandler
        self.faults = faults
        self.durability = durability
        self.state = _Mutex(opened)
        let removed = DiskIO.names(in: paths.root).filter { $0.hasPrefix(DiskPaths.removingPrefix) }
        withState { state in
            startInBackground(&state) { [paths, problemHandler] in
                for name in removed { Self.removeTree(paths.root + "/" + name, problemHandler: problemHandler) }
                if sweep { Self.removeUnlisted(paths, live: live, below: nextId) }
            }
        }
        finish(after)
    }

    deinit {
        withState { $0.shutDown() }
    }

    /// How many entries the store holds and their bytes of values.
    ///
    /// - Complexity: O(1).
    public func usage() async throws(CacheStoreError) -> CacheStoreUsage {
        try withState { state throws(CacheStoreError) in
            try state.checkOpen()
            return CacheStoreUsage(count: state.index.count, bytes: state.index.totalCost)
        }
    }

    /// The keys in the index's eviction order, the next victim first, for the package's tests;
    /// not API.
    package func _keysInEvictionOrder() -> [String] {
        withState { $0.index.keys }
    }

    /// Waits for the background deletions, journals the pending reads and a clean close,
    /// flushes the journal and releases the directory's lock. Later calls throw
    /// ``CacheStoreError/closed(path:)``; closing twice is harmless, and every `close()`
    /// returns once the lock is released.
    public func close() async throws(CacheStoreError) {
        let closing = withState { state -> Task<Void, Never> in
            if let closing = state.closing { return closing }
            state.isClosed = true
            let background = Array(state.background.values)
            let closing = Task {
                for task in background { await task.value }
                self.withState { $0.shutDown() }
            }
            state.closing = closing
            return closing
        }
        await closing.value
    }

    /// Runs `body` with the state while holding the lock.
    func withState<R: Sendable, E: Error>(_ body: (inout DiskStoreState) throws(E) -> R) throws(E) -> R {
        try state.withLock { state throws(E) -> R in try body(&state) }
    }

    /// Runs `work` in a task of its own, which ``close()`` awaits and which forgets itself when
    /// done. Called under the lock.
    func startInBackground(_ state: inout DiskStoreState, _ work: @escaping @Sendable () -> Void) {
        let number = state.backgroundStarted
        state.backgroundStarted += 1
        state.background[number] = Task.detached { [weak self] in
            work()
            self?.withState { _ = $0.background.removeValue(forKey: number) }
        }
    }

    // MARK: After the lock

    /// Removes the files `after` names and reports its problems. Called without the lock.
    func finish(_ after: DiskAftermath) {
        var problems = after.problems
        for id in after.unlink where unlink(paths.entry(id)) != 0 && errno != ENOENT {
            problems.append(
                CacheStoreProblem(key: nil, error: .ioFailure(path: paths.entry(id), operation: "unlink", errno: errno))
            )
        }
        guard let problemHandler else { return }
        for problem in problems { problemHandler(problem) }
    }

    /// Deletes an entry directory that `removeAll()` renamed away, reporting a failure.
    static func removeTree(_ path: String, problemHandler: (@Sendable (CacheStoreProblem) -> Void)?) {
        do {
            try DiskIO.removeTree(path)
        } catch {
            problemHandler?(CacheStoreProblem(key: nil, error: error))
        }
    }

    /// Deletes the entry files and temporary files that a crash left behind: those with an id
    /// below `nextId` (ids at or above it belong to writes of this run) that no entry has.
    /// Their ids are never given out again, so no entry can come to need them.
    static func removeUnlisted(_ paths: DiskPaths, live: Set<UInt64>, below nextId: UInt64) {
        // A listing that fails leaves the files to a later sweep.
        for (id, temporary) in (try? DiskJournal.entryIds(paths)) ?? [] where id < nextId {
            if temporary {
                unlink(paths.entryTemporary(id))
            } else if !live.contains(id) {
                unlink(paths.entry(id))
            }
        }
    }
}
