// What SQLiteStore guards with its lock: the connection, the in-memory eviction index, the access
// records not yet written, and the problems to report once the lock is released. Plain state
// and synchronous methods; SQLiteStore decides where they run.
#if SQLite

import CacheKit
import Foundation

/// The keys the index evicted during one call, collected by its removal handler.
final class EvictedKeys {
    var keys: [String] = []

    /// The keys collected since the last call, emptying the list.
    func take() -> [String] {
        defer { keys.removeAll() }
        return keys
    }
}

/// The state of one open ``SQLiteStore``, mutated under its lock only.
package struct SQLiteStoreState {
    /// The schema this code writes and reads, kept in `PRAGMA user_version`. Schema 1 (rows
    /// without a checksum) is brought to 2 when opened.
    package static let schemaVersion = 2
    /// `PRAGMA application_id` of a CacheKit store ("CKSQ"), telling it from other databases.
    package static let applicationID: Int64 = 0x434B_5351
    /// Reads recorded in memory before their access order is written in one transaction. A batch
    /// writes one row per key read, so the more reads it spans, the fewer rows per read for keys
    /// read repeatedly; a crash loses the order of at most this many reads.
    package static let accessFlushInterval = 8_192

    /// The database file.
    let path: String
    let countLimit: Int
    let byteLimit: Int
    let policy: EvictionPolicy
    let clock: WallClock
    /// `nil` once closed.
    var connection: SQLiteConnection?
    var lock: LockFile?
    /// Every stored key with its value's size as cost: the store's eviction policy and limits.
    var index: SerialCache<String, Int>
    let evicted = EvictedKeys()
    /// Reads not yet written to `cachekit_reads`, by key.
    var pendingAccess: [String: Int64] = [:]
    /// Reads since the access records were last written.
    var readsSinceFlush = 0
    /// The next value of the `access` column: larger than every one written.
    var nextAccess: Int64 = 1
    /// Whether `PRAGMA quick_check` found the pages sound since the last write
    /// (``brokenPages(_:)``): a damaged row read meanwhile needs no second check.
    var pagesCheckedSinceWrite = false
    /// Set when a transaction failed after the index changed: the index is rebuilt from the
    /// database before the next operation.
    var indexIsStale = false
    /// Problems handled without failing the call, reported after the lock is released.
    var problems: [CacheStoreProblem] = []

    init(
        path: String,
        countLimit: Int,
        byteLimit: Int,
        policy: EvictionPolicy,
        clock: WallClock,
        connection: SQLiteConnection,
        lock: LockFile
    ) {
        self.path = path
        self.countLimit = countLimit
        self.byteLimit = byteLimit
        self.policy = policy
        self.clock = clock
        self.connection = connection
        self.lock = lock
        index = SerialCache()
    }

    /// The open connection, with an index that matches the database.
    mutating func ready() throws(CacheStoreError) -> SQLiteConnection {
        guard let connection else { throw .closed(path: path) }
        if indexIsStale { try rebuildIndex() }
        return connection
    }

    /// Runs `body` in one write transaction with the pending access records written first.
    /// On failure the transaction is rolled back and the index is marked for a rebuild, as it
    /// may already hold the failed write's changes.
    mutating func inTransaction<R>(_ body: (inout Self) throws(CacheStoreError) -> R) throws(CacheStoreError) -> R {
        let connection = try ready()
        // A lock file deleted under the store is locked again before the store writes.
        try lock?.reassert()
        do {
            try connection.begin()
            try writePendingAccess()
            let result = try body(&self)
            try connection.commit()
            pagesCheckedSinceWrite = false
            pendingAccess.removeAll(keepingCapacity: true)
            readsSinceFlush = 0
            return result
        } catch {
            connection.rollback()
            indexIsStale = true
            evicted.keys.removeAll()
            throw error
        }
    }

    /// The next value of the `access` column.
    mutating func takeAccess() -> Int64 {
        defer { nextAccess += 1 }
        return nextAccess
    }

    /// Writes the pending access records (inside a transaction the caller holds): up to 64 rows
    /// to an upsert, so that rows share a statement's own cost of stepping and resetting.
    func writePendingAccess() throws(CacheStoreError) {
        guard let connection, !pendingAccess.isEmpty else { return }
        var records = pendingAccess.makeIterator()
        var remaining = pendingAccess.count
        var bindings: [SQLiteValue] = []
        bindings.reserveCapacity(2 * Self.accessRowsPerStatement.max()!)
        while remaining > 0 {
            let size = Self.accessRowsPerStatement.firstIndex { $0 <= remaining }!
            let rows = Self.accessRowsPerStatement[size]
            bindings.removeAll(keepingCapacity: true)
            for _ in 0..<rows {
                let (key, access) = records.next()!  // `remaining` records are left
                bindings.append(.text(key))
                bindings.append(.integer(access))
            }
            try connection.run(connection.statement(Self.accessUpserts[size]), bindings)
            remaining -= rows
        }
    }

    /// The row counts of the statements that write access records, largest first; the last is 1.
    static let accessRowsPerStatement = [64, 16, 4, 1]

    /// The upserts of `accessRowsPerStatement` rows, in the same order; each row binds a key and
    /// its access.
    static let accessUpserts = accessRowsPerStatement.map { rows in
        let values = repeatElement("(?, ?)", count: rows).joined(separator: ", ")
        return """
            INSERT INTO cachekit_reads (key, access) VALUES \(values)
            ON CONFLICT (key) DO UPDATE SET access = excluded.access
            """
    }

    /// Writes the pending access records in a transaction of their own. A failure loses only
    /// those records (eviction order, not entries) and is reported as a problem.
    mutating func flushPendingAccess() {
        guard !pendingAccess.isEmpty else { return }
        do {
            try inTransaction { _ throws(CacheStoreError) in }
        } catch {
            pendingAccess.removeAll()
            readsSinceFlush = 0
            indexIsStale = false  // the index did not change: only the read records failed
            problems.append(CacheStoreProblem(key: nil, error: error))
        }
    }

    /// Deletes every entry whose deadline is at or before `now` from the database and the index
    /// (inside a transaction the caller holds).
    mutating func deleteExpired(now: Date) throws(CacheStoreError) {
        guard let connection else { throw .closed(path: path) }
        var expired: [String] = []
        try connection.run(
            "DELETE FROM cachekit_entries WHERE deadline <= ? RETURNING key",
            [.real(now.timeIntervalSinceReferenceDate)]
        ) { row in expired.append(row.text(0)) }
        for key in expired {
            try connection.run("DELETE FROM cachekit_reads WHERE key = ?", [.text(key)])
            index.removeValue(forKey: key)
            pendingAccess[key] = nil
        }
    }

    /// Deletes the rows of `keys` (inside a transaction the caller holds, or alone).
    mutating func deleteRows(_ keys: [String]) throws(CacheStoreError) {
        guard let connection else { throw .closed(path: path) }
        for key in keys {
            try connection.run("DELETE FROM cachekit_entries WHERE key = ?", [.text(key)])
            try connection.run("DELETE FROM cachekit_reads WHERE key = ?", [.text(key)])
            pendingAccess[key] = nil
        }
    }

    /// Builds the index from the database: every key in access order (least recent first), so
    /// that the policy starts from the order the entries were last used in, then the accesses
    /// not yet written. When the database holds more than the limits allow (a store reopened
    /// with smaller limits), the index evicts by its policy and those rows are deleted.
    mutating func rebuildIndex() throws(CacheStoreError) {
        guard let connection else { throw .closed(path: path) }
        let index = SerialCache<String, Int>(countLimit: countLimit, totalCostLimit: byteLimit, policy: policy)
        let evicted = self.evicted
        evicted.keys.removeAll()
        index.removalHandler = { removal in
            if removal.reason.isEviction { evicted.keys.append(removal.key) }
        }
        var lastAccess: Int64 = 0
        // Reads of keys whose entry is gone (a crash between the two deletes of a removal).
        try connection.execute("DELETE FROM cachekit_reads WHERE key NOT IN (SELECT key FROM cachekit_entries)")
        // SQLite's index on the key column, read on its own, and the table's rows (`NOT
        // INDEXED`): a row whose key the index lacks, or an index key no row has, means damage
        // to one of the two, which SQLite's reads do not detect.
        var indexed = Set<String>()
        try connection.run("SELECT key FROM cachekit_entries INDEXED BY sqlite_autoindex_cachekit_entries_1") {
            indexed.insert($0.text(0))
        }
        var suspects: [Int64] = []
        // An entry's last use is its write (`cachekit_entries.access`) or its last read written
        // since (`cachekit_reads`), whichever is later.
        let query: SQL = """
            SELECT e.key, length(e.value), max(e.access, coalesce(r.access, 0)) AS used, e.rowid
            FROM cachekit_entries AS e NOT INDEXED LEFT JOIN cachekit_reads AS r ON r.key = e.key
            ORDER BY used, e.key
            """
        try connection.run(query) { row in
            lastAccess = max(lastAccess, row.integer(2))
            let key = row.isNull(0) ? nil : row.text(0)
            guard let key, indexed.remove(key) != nil else {
                suspects.append(row.integer(3))
                return
            }
            let size = Int(row.integer(1))
            index.setValue(size, forKey: key, cost: size)
        }
        if !suspects.isEmpty || !indexed.isEmpty {
            try settle(suspects: suspects, unmatched: indexed, into: index, connection)
        }
        for (key, _) in pendingAccess.sorted(by: { $0.value < $1.value }) where index.contains(key) {
            _ = index.value(forKey: key)
        }
        self.index = index
        nextAccess = max(nextAccess, lastAccess + 1)
        indexIsStale = false
        let victims = evicted.take()
        if !victims.isEmpty {
            try inTransaction { state throws(CacheStoreError) in try state.deleteRows(victims) }
        }
    }

    /// Settles a table and a key index that disagree. First the table's pages are checked
    /// (``brokenPages(_:)``): a broken one throws damage, and the database is salvaged. Each
    /// suspect row (by rowid: its key is NULL or missing from the index) whose checksum holds is
    /// whole, so the index was damaged: it joins `index`. One whose checksum fails is damaged:
    /// SQLite's indexes are rebuilt from the table, then it is deleted and reported. When
    /// damaged rows were found, each key of `unmatched` (in the index, on no row) was theirs:
    /// it is reported lost. (On sound pages with no damaged row, such a key is the index's own
    /// damage, never a key the store held.)
    private mutating func settle(
        suspects: [Int64],
        unmatched: Set<String>,
        into index: SerialCache<String, Int>,
        _ connection: SQLiteConnection
    ) throws(CacheStoreError) {
        if let broken = brokenPages(connection) {
            // A broken page (a cell pointer into another cell, say), which SQLite would go on
            // writing into: the database is salvaged.
            throw .corrupted(path: path, reason: broken + SQLiteConnection.ownDamage)
        }
        var damaged: [Int64] = []
        for rowid in suspects {
            var whole = false
            var entry: (key: String, size: Int)?
            let query: SQL = "SELECT key, value, size, deadline, checksum FROM cachekit_entries WHERE rowid = ?"
            try connection.run(query, [.integer(rowid)]) { row in
                guard !row.isNull(0), !row.isNull(4) else { return }
                let (key, value, size) = (row.text(0), row.blob(1), row.integer(2))
                let deadline = row.isNull(3) ? nil : Date(timeIntervalSinceReferenceDate: row.real(3))
                whole =
                    size == Int64(value.count)
                    && row.integer(4) == Self.checksum(key: key, value: value, size: size, deadline: deadline)
                entry = (key, value.count)
            }
            if whole, let entry {
                index.setValue(entry.size, forKey: entry.key, cost: entry.size)
            } else {
                damaged.append(rowid)
            }
        }
        // Rebuilt first: deleting a row whose key the index lacks is damage to SQLite.
        try reindex(connection)
        for rowid in damaged {
            try connection.run("DELETE FROM cachekit_entries WHERE rowid = ?", [.integer(rowid)])
        }
        if !damaged.isEmpty {
            let reason = "\(damaged.count) rows whose key was damaged were dropped"
            problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
            for key in unmatched.sorted() {
                let lost = "the entry's row was damaged and dropped"
                problems.append(CacheStoreProblem(key: key, error: .corrupted(path: path, reason: lost)))
            }
        }
        let reason = "the index on the key column did not match the table's rows; it was rebuilt from them"
        problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
    }

    /// Rebuilds SQLite's indexes of the entries from the table. A table that no longer makes a
    /// unique index (two rows for one key, written while the index was damaged) is damage that
    /// moves the database aside.
    func reindex(_ connection: SQLiteConnection) throws(CacheStoreError) {
        do throws(CacheStoreError) {
            try connection.execute("REINDEX cachekit_entries")
        } catch {
            throw .corrupted(
                path: path,
                reason: "the index on the key column cannot be rebuilt (\(error))" + SQLiteConnection.ownDamage
            )
        }
    }

    /// What `PRAGMA quick_check` finds wrong with the structure of the database's pages (its
    /// first finding), or `nil` when they are sound. SQLite's reads check a page only as far as
    /// they use it: a cell pointer that points outside its page, for one, lets rows written
    /// into that page read back damaged. The check reads every page, so it runs only after
    /// damage was found.
    func brokenPages(_ connection: SQLiteConnection) -> String? {
        var findings: [String] = []
        do throws(CacheStoreError) {
            try connection.run("PRAGMA quick_check(1)") { findings.append($0.text(0)) }
        } catch {
            return "the check of the database's pages failed (\(error))"
        }
        return findings == ["ok"] ? nil : "the database's pages are damaged: \(findings.joined(separator: "; "))"
    }

    /// Reports the problems collected so far, emptying the list.
    mutating func takeProblems() -> [CacheStoreProblem] {
        defer { problems.removeAll() }
        return problems
    }

    /// The checksum a row keeps of its key, value, size and deadline: CRC-32C over the key's
    /// bytes, the size and the deadline's bits, and the value's own checksum (`CRC32C.lanes`).
    /// SQLite checks its pages' structure, not the bytes of a value, so damage inside a value or
    /// a deadline would otherwise read back as a hit.
    static func checksum(key: String, value: Data, size: Int64, deadline: Date?) -> Int64 {
        var check = CRC32C()
        var key = key
        key.withUTF8 { check.update(UnsafeRawBufferPointer($0)) }
        let valueCheck = value.withUnsafeBytes { UInt64(CRC32C.lanes(of: $0)) }
        let deadlineBits = deadline.map { $0.timeIntervalSinceReferenceDate.bitPattern } ?? .max
        let fields = (UInt64(bitPattern: size).littleEndian, deadlineBits.littleEndian, valueCheck.littleEndian)
        withUnsafeBytes(of: fields) { check.update($0) }
        return Int64(check.value)
    }
}
#endif
