#if SQLite
import CacheKit
import Foundation
import Synchronization

/// A ``CacheKit/CacheStore`` that keeps many small values in one SQLite database.
///
/// ```swift
/// let store = try await SQLiteStore(path: cachesDirectory.appending(path: "thumbnails.sqlite"),
///                                   byteLimit: 64 << 20)
/// try await store.setEntry(png, forKey: "avatar/42", expiresAt: .now.addingTimeInterval(86_400))
/// let hit = try await store.entry(forKey: "avatar/42")?.value
/// try await store.close()
/// ```
///
/// Use it for thousands to millions of values of a few bytes to a few hundred kilobytes: one
/// file, one transaction per write, no file per entry. (Large values belong in a store that
/// keeps a file each.)
///
/// ## Design
/// - **One table of entries.** `cachekit_entries(key TEXT PRIMARY KEY, value BLOB, size INTEGER,
///   deadline REAL, access INTEGER, checksum INTEGER)`: `deadline` is seconds since 2001-01-01 UTC on the wall
///   clock (exactly a `Date`, so it survives a restart unchanged), `NULL` for never, and has a
///   partial index for finding expired entries; `access` orders the entries by their last write.
///   Reads are ordered in a small table of their own, `cachekit_reads(key, access)`, because
///   SQLite rewrites a whole row, value and all, to change one column: recording a read there
///   costs the same for a value of 100 bytes or 100 kilobytes. An entry's last use is the later
///   of the two. `PRAGMA application_id` marks the file as a CacheKit store and
///   `PRAGMA user_version` holds its schema version (a store of schema 1, whose rows have no
///   checksum, gains the column and the checksums of its rows when opened).
/// - **Checksums.** SQLite checks the structure of its pages, not the bytes of a value, so each row
///   keeps a CRC-32C of its key, value, size and deadline, checked on every read: a row whose
///   bytes were damaged on disk is a miss, reported to the problem handler as
///   ``CacheKit/CacheStoreError/corrupted(path:reason:)`` and deleted.
/// - **Healing damage.** A store's file that SQLite finds damaged or not a database
///   (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), when opening or in any later operation (a damaged page
///   that opening did not read, such as one of the key index), is moved aside with its log to
///   `<path>.damaged` and `<path>.damaged-wal`, replacing any earlier pair, and the store goes on
///   in a new database into which it copies every row it can still read whose checksum holds.
///   A page check (`PRAGMA quick_check`) finds the broken pages SQLite's reads pass over, after
///   a disagreement of key index and table at open or a row that fails its checksum. The
///   problem handler hears ``CacheKit/CacheStoreError/corrupted(path:reason:)``, with each key
///   lost by name, and the operation that found the damage runs again on the new database, so
///   no call fails for it.
/// - **Refusing other files.** A whole database that is not a store's (other tables, another
///   application id) throws ``CacheKit/CacheStoreError/corrupted(path:reason:)``; one of a newer
///   schema throws ``CacheKit/CacheStoreError/newerFormat(path:found:supported:)``. Either way
///   the store writes nothing to it and never deletes it: the file stays for its owner to
///   inspect.
/// - **One owner.** The store holds an exclusive `flock` on `<path>.lock` from open to close; a
///   second store, in this process or another, gets ``CacheKit/CacheStoreError/locked(path:)``.
///   The lock file stays on disk after close. Before each write the store checks that its lock
///   file is still there (two system calls): if it was deleted, the store locks a new one and
///   stays the only owner. If a second store opened the database meanwhile (it made and locked
///   the new file first), the first store's writes and removals throw
///   ``CacheKit/CacheStoreError/locked(path:)`` while the second holds it; its reads miss what
///   the second wrote or removed, reporting nothing, and its `close()` leaves its last reads'
///   access records unwritten. SQLite's own locks keep the database whole throughout. The store
///   does not lock the database file itself, because closing any descriptor of that file would
///   drop the POSIX locks SQLite holds on it in this process.
/// - **Durability.** The database runs in WAL mode with `synchronous=NORMAL`: every write is one
///   transaction, so a crash of the process (even `SIGKILL`) loses nothing that was written and
///   never leaves half a write. A power loss or operating-system crash can lose the last
///   transactions before a checkpoint, never the database's consistency: right for a cache.
/// - **Eviction.** The store keeps every key in memory in a ``CacheKit/SerialCache`` whose cost
///   is the value's size in bytes, with the store's limits and policy, so entries leave in the
///   order CacheKit's policies choose. At open, the index is rebuilt by inserting the keys in
///   `access` order (least recently used first): LRU resumes exactly, and frequency-based
///   policies start from recency alone, as their counts are not stored. A write deletes the
///   entries the index evicts in the same transaction, so limits hold when the write returns;
///   when a transaction fails, the index is rebuilt from the database.
/// - **Batched access order.** A read changes nothing on disk: it records its access in memory,
///   one record per key, holding its last read. The records are written to `cachekit_reads` in
///   one transaction every 8,192 reads, with every write, and at close: a key read many times in
///   between costs one row, and a reopened store resumes the order of every read written. A
///   crash loses only the records not yet written, so eviction order, never entries.
/// - **A full disk.** A write that finds the disk full throws
///   ``CacheKit/CacheStoreError/database(path:code:message:)`` with `SQLITE_FULL` and changes
///   nothing: the entries stored before read back and the database reopens whole. A removal needs
///   room too, as the log records a delete like any change, so it may fail the same way until
///   space is freed; then the store goes on.
/// - **Expiry.** An entry whose deadline has passed on the store's ``CacheKit/WallClock`` is
///   never returned: a read that finds one deletes it, and every write first deletes all
///   expired entries (an index lookup when there are none).
/// - **Threads.** One connection, guarded by a lock. Opening and each operation run on the
///   task that calls them (the methods are `async` and not isolated to an actor, so on the
///   global concurrent executor, never the caller's actor). The problem handler runs after the
///   lock is released, on the thread of the operation that found the problem.
///
/// ## Performance
/// A hit runs one indexed query; a miss runs none (the index answers). Every 8,192 reads, one
/// transaction upserts a row per key read since the previous one, 64 rows to a statement. A
/// write runs one transaction: an upsert plus one delete per evicted entry. The index keeps one
/// slot and the key's string in memory per entry.
public final class SQLiteStore: CacheStore {
    /// The database file.
    public let path: URL
    /// The most entries the store holds; `0` means no limit on the count.
    public let countLimit: Int
    /// The most bytes of values the store holds.
    public let byteLimit: Int
    /// Which entry leaves first when a limit is reached.
    public let policy: EvictionPolicy

    private let state: _Mutex<SQLiteStoreState>
    private let problemHandler: (@Sendable (CacheStoreProblem) -> Void)?

    /// Opens the store at `path`, creating the database (and its directory) when missing.
    ///
    /// - Parameters:
    ///   - path: The database file. The store also uses `<path>.lock` and SQLite's `<path>-wal`
    ///     and `<path>-shm`.
    ///   - countLimit: The most entries the store holds; `0` (the default) means no limit.
    ///   - byteLimit: The most bytes of values the store holds; a larger value is refused with
    ///     ``CacheKit/CacheStoreError/tooLarge(key:bytes:limit:)``.
    ///   - policy: Which entry leaves first when a limit is reached. Defaults to LRU.
    ///   - clock: The wall clock deadlines are measured on. Tests pass
    ///     ``CacheKit/WallClock/manual(_:origin:)``.
    ///   - problemHandler: Hears what the store handled without failing a call: a damaged entry
    ///     it dropped, access records it could not write. Called on the operation's thread with no
    ///     lock held.
    /// - Throws: ``CacheKit/CacheStoreError/locked(path:)`` when another store owns the
    ///   database; `corrupted`, `newerFormat` or `database` when the file is a whole database
    ///   that is not a store's, or of a newer schema (the file is left as it is); `ioFailure`
    ///   when the directory or lock file cannot be created. A file SQLite finds damaged is not
    ///   an error: it is moved to `<path>.damaged` and the store goes on with the entries it can
    ///   still read and verify, reported to the problem handler.
    /// - Precondition: `countLimit` is not negative and `byteLimit` is positive.
    public init(
        path: URL,
        countLimit: Int = 0,
        byteLimit: Int,
        policy: EvictionPolicy = .lru,
        clock: WallClock = .system,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) async throws(CacheStoreError) {
        precondition(countLimit >= 0, "SQLiteStore: countLimit must not be negative")
        precondition(byteLimit > 0, "SQLiteStore: byteLimit must be positive")
        self.path = path
        self.countLimit = countLimit
        self.byteLimit = byteLimit
        self.policy = policy
        self.problemHandler = problemHandler
        let file = path.standardizedFileURL.path
        var problems: [CacheStoreProblem] = []
        state = _Mutex(
            try SQLiteStoreState.open(
                path: file,
                countLimit: countLimit,
                byteLimit: byteLimit,
                policy: policy,
                clock: clock,
                problems: &problems
            )
        )
        // The state was written outside the lock: publish it to ThreadSanitizer as a release of
        // the lock, which every later use acquires.
        _ThreadSanitizer.release?(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
        if let problemHandler { for problem in problems { problemHandler(problem) } }
    }

    deinit {
        state.withLock { try? $0.close() }
    }

    /// Runs `body` under the store's lock, then reports the problems it collected with the lock
    /// released. When `body` finds the database damaged, the store moves it aside and salvages
    /// it (`startAfresh(after:)`), and `body` runs once more on the new database. It runs on
    /// the calling task's executor: the methods are `async` and not isolated to an actor, so
    /// that is the global concurrent executor, never the caller's actor. (A hop to a queue of
    /// the store's own costs more than an indexed query.)
    private func perform<R: Sendable>(
        _ body: @Sendable (inout SQLiteStoreState) throws(CacheStoreError) -> R
    ) throws(CacheStoreError) -> R {
        let (result, problems) = state.withLock { state in
            let result = Result { () throws(CacheStoreError) in
                do throws(CacheStoreError) {
                    return try body(&state)
                } catch {
                    // A damaged database never fails a call: it is salvaged, and the call
                    // runs again on the new, empty one.
                    guard try state.startAfresh(after: error) else { throw error }
                    return try body(&state)
                }
            }
            return (result, state.takeProblems())
        }
        if let problemHandler, !problems.isEmpty {
            for problem in problems { problemHandler(problem) }
        }
        return try result.get()
    }

    /// The entry for `key` and its deadline, or `nil` when there is none or it has expired.
    /// Records the access for the eviction policy (in memory; written in batches).
    ///
    /// - Complexity: O(1) in memory plus one indexed query on a hit; none on a miss.
    public func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry? {
        try perform { state throws(CacheStoreError) in try state.entry(forKey: key) }
    }

    /// Stores `value` for `key`, replacing any entry, to be dropped at `expiresAt` (`nil` for
    /// never). One transaction also deletes expired entries and evicts, by the store's policy,
    /// what the limits require; when it returns the entry is committed (see the type's
    /// durability notes). A deadline already passed removes the key's entry instead, and so does
    /// a value larger than the byte limit, which is refused with
    /// ``CacheKit/CacheStoreError/tooLarge(key:bytes:limit:)``.
    ///
    /// - Complexity: One transaction: O(log *n*) for the row plus O(log *n*) per entry expired
    ///   or evicted.
    public func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError) {
        try perform { state throws(CacheStoreError) in
            try state.setEntry(value, forKey: key, expiresAt: expiresAt)
        }
    }

    /// Removes the entry for `key`; returns whether there was one (an expired entry does not
    /// count).
    ///
    /// - Complexity: One statement, O(log *n*).
    @discardableResult
    public func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool {
        try perform { state throws(CacheStoreError) in try state.removeEntry(forKey: key) }
    }

    /// Removes every entry. The database file keeps its size for reuse.
    public func removeAll() async throws(CacheStoreError) {
        try perform { state throws(CacheStoreError) in try state.removeAll() }
    }

    /// How many entries the store holds and how many bytes of values, as its limits count
    /// them. Entries that expired since the last write count until they are dropped.
    ///
    /// - Complexity: O(1), from memory.
    public func usage() async throws(CacheStoreError) -> CacheStoreUsage {
        try perform { state throws(CacheStoreError) in try state.usage() }
    }

    /// Writes the pending access records, closes the database and releases its lock. Later
    /// calls throw ``CacheKit/CacheStoreError/closed(path:)``; closing twice is harmless. The
    /// database and lock are released even when the final write fails (then it throws). A
    /// store released without `close()` closes itself, on the thread that releases it.
    public func close() async throws(CacheStoreError) {
        try perform { state throws(CacheStoreError) in try state.close() }
    }
}
#endif
