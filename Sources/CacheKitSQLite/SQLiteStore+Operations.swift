// The store's operations on its locked state: reads record their access in memory, writes run in
// one transaction that also writes those records, drops expired entries and evicts what the
// limits require.
#if SQLite

import CacheKit
import Foundation

extension SQLiteStoreState {
    /// The entry for `key`, or `nil`; drops it when expired or damaged.
    mutating func entry(forKey key: String) throws(CacheStoreError) -> StoredEntry? {
        try SQLiteStore.validate(key: key)
        let connection = try ready()
        // The index holds every stored key: a miss costs no query, and a hit is the policy's use.
        guard index.value(forKey: key) != nil else { return nil }
        var found = try row(forKey: key, connection)
        if found == nil {
            // The index holds exactly the keys with a row, so SQLite's own index on the key
            // column missed it (a damaged page that its reads do not detect), the row is lost,
            // or a second store that took a deleted lock file removed it.
            guard try rebuildKeyIndex(missing: key, connection) else {
                index.removeValue(forKey: key)
                pendingAccess[key] = nil
                return nil
            }
            found = try row(forKey: key, connection)
        }
        guard let found else {
            index.removeValue(forKey: key)
            pendingAccess[key] = nil
            return nil
        }
        let damage: String?
        if found.checksum != Self.checksum(key: key, value: found.value, size: found.size, deadline: found.deadline) {
            damage = "the entry's checksum does not match its key, value and deadline"
        } else if found.size != Int64(found.value.count) {
            damage = "the entry's value has \(found.value.count) bytes where its row records \(found.size)"
        } else {
            damage = nil
        }
        if let damage {
            if !pagesCheckedSinceWrite {
                // Damage to a page's structure makes SQLite write rows over others, which then
                // read back damaged: the pages are checked, and broken ones salvage the
                // database (see `perform`). Sound pages mean damage to this row alone.
                if let broken = brokenPages(connection) {
                    throw .corrupted(path: path, reason: broken + SQLiteConnection.ownDamage)
                }
                pagesCheckedSinceWrite = true
            }
            problems.append(CacheStoreProblem(key: key, error: .corrupted(path: path, reason: damage)))
            try dropAfterRead(key)
            return nil
        }
        if let deadline = found.deadline, deadline <= clock.now() {
            try dropAfterRead(key)
            return nil
        }
        pendingAccess[key] = takeAccess()
        readsSinceFlush += 1
        if readsSinceFlush >= Self.accessFlushInterval { flushPendingAccess() }
        return StoredEntry(value: found.value, expiresAt: found.deadline)
    }

    /// `key`'s row, looked up through SQLite's index on the key column.
    private func row(
        forKey key: String,
        _ connection: SQLiteConnection
    ) throws(CacheStoreError) -> (value: Data, size: Int64, deadline: Date?, checksum: Int64?)? {
        var found: (value: Data, size: Int64, deadline: Date?, checksum: Int64?)?
        let query: SQL = "SELECT value, size, deadline, checksum FROM cachekit_entries WHERE key = ?"
        try connection.run(query, [.text(key)]) { row in
            let deadline = row.isNull(2) ? nil : Date(timeIntervalSinceReferenceDate: row.real(2))
            found = (row.blob(0), row.integer(1), deadline, row.isNull(3) ? nil : row.integer(3))
        }
        return found
    }

    /// Rebuilds SQLite's indexes of the entries from the table (``reindex(_:)``) after the one on
    /// the key column missed `key`'s row, and reports it. Returns `false`, changing nothing, when
    /// a second store holds the lock file (see ``LockFile/reassert()``): its writes, not damage,
    /// explain the missing row.
    private mutating func rebuildKeyIndex(
        missing key: String,
        _ connection: SQLiteConnection
    ) throws(CacheStoreError) -> Bool {
        guard try isStillOwner() else { return false }
        try reindex(connection)
        let reason = "the index on the key column missed a stored key's row; it was rebuilt from the table"
        problems.append(CacheStoreProblem(key: key, error: .corrupted(path: path, reason: reason)))
        return true
    }

    /// Whether this store still holds its lock file, locking a new one if it was deleted; `false`
    /// when a second store took the new one.
    private func isStillOwner() throws(CacheStoreError) -> Bool {
        do throws(CacheStoreError) {
            try lock?.reassert()
            return true
        } catch {
            guard case .locked = error else { throw error }
            return false
        }
    }

    /// Drops `key` after a read found it damaged or expired, unless a second store that took a
    /// deleted lock file owns the database now: the row is then left to it.
    private mutating func dropAfterRead(_ key: String) throws(CacheStoreError) {
        guard try isStillOwner() else {
            index.removeValue(forKey: key)
            pendingAccess[key] = nil
            return
        }
        try drop(key)
    }

    /// Deletes `key`'s row (one statement, atomic on its own) and its index entry.
    private mutating func drop(_ key: String) throws(CacheStoreError) {
        try deleteRows([key])
        index.removeValue(forKey: key)
    }

    /// Stores `value` for `key` and evicts what the limits require, in one transaction.
    mutating func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) throws(CacheStoreError) {
        try SQLiteStore.validate(key: key)
        _ = try ready()
        guard value.count <= byteLimit else {
            // As a write that succeeds would: the key's older value is gone either way, so that a
            // refused write never leaves a stale value behind (DiskStore and Cache do the same).
            if index.contains(key) {
                try lock?.reassert()
                try drop(key)
            }
            throw .tooLarge(key: key, bytes: value.count, limit: byteLimit)
        }
        let now = clock.now()
        try inTransaction { state throws(CacheStoreError) in
            try state.deleteExpired(now: now)
            if let expiresAt, expiresAt <= now {
                // Already expired: it would never be returned, so it replaces the entry by nothing.
                try state.drop(key)
                return
            }
            try state.connection?.run(
                """
                INSERT INTO cachekit_entries (key, value, size, deadline, access, checksum) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, size = excluded.size,
                    deadline = excluded.deadline, access = excluded.access, checksum = excluded.checksum
                """,
                [
                    .text(key), .blob(value), .integer(Int64(value.count)),
                    expiresAt.map { .real($0.timeIntervalSinceReferenceDate) } ?? .null,
                    .integer(state.takeAccess()),
                    .integer(Self.checksum(key: key, value: value, size: Int64(value.count), deadline: expiresAt)),
                ]
            )
            state.pendingAccess[key] = nil
            _ = state.evicted.take()
            state.index.setValue(value.count, forKey: key, cost: value.count)
            var victims = state.evicted.take()
            // A policy may turn the new entry away (an admission filter): then it is not kept.
            if !state.index.contains(key), !victims.contains(key) { victims.append(key) }
            try state.deleteRows(victims)
        }
    }

    /// Removes `key`'s entry; returns whether there was one that had not expired.
    mutating func removeEntry(forKey key: String) throws(CacheStoreError) -> Bool {
        try SQLiteStore.validate(key: key)
        let connection = try ready()
        try lock?.reassert()
        var removed = false
        var deleted = false
        let now = clock.now()
        let delete: SQL = "DELETE FROM cachekit_entries WHERE key = ? RETURNING deadline"
        try connection.run(delete, [.text(key)]) { row in
            deleted = true
            removed = row.isNull(0) || Date(timeIntervalSinceReferenceDate: row.real(0)) > now
        }
        if !deleted, index.contains(key) {
            // A row left behind would come back at the next open: as for a read, the key index
            // missed it.
            _ = try rebuildKeyIndex(missing: key, connection)
            try connection.run(delete, [.text(key)]) { row in
                removed = row.isNull(0) || Date(timeIntervalSinceReferenceDate: row.real(0)) > now
            }
        }
        try connection.run("DELETE FROM cachekit_reads WHERE key = ?", [.text(key)])
        index.removeValue(forKey: key)
        pendingAccess[key] = nil
        return removed
    }

    /// Removes every entry.
    mutating func removeAll() throws(CacheStoreError) {
        try inTransaction { state throws(CacheStoreError) in
            try state.connection?.execute("DELETE FROM cachekit_entries; DELETE FROM cachekit_reads")
            state.index.removeAll()
        }
        pendingAccess.removeAll()
    }

    /// The count and bytes the limits apply to.
    mutating func usage() throws(CacheStoreError) -> CacheStoreUsage {
        _ = try ready()
        return CacheStoreUsage(count: index.count, bytes: index.totalCost)
    }

    /// Writes the pending access records, closes the connection and releases the lock. Closing
    /// again does nothing. The connection and lock are released even when the write fails.
    mutating func close() throws(CacheStoreError) {
        guard let connection else { return }
        var failure: CacheStoreError?
        if !pendingAccess.isEmpty {
            do {
                try inTransaction { _ throws(CacheStoreError) in }
            } catch {
                // Damage that writing the last accesses finds moves the database aside while the
                // lock is still held, as for any operation; the new, empty one then closes.
                if try startAfresh(after: error) { return try close() }
                // A second store took a deleted lock file: the accesses, an eviction hint and
                // no data, are left unwritten.
                if case .locked = error {} else { failure = error }
            }
        }
        connection.close()
        self.connection = nil
        lock?.release()
        lock = nil
        index.removeAll()
        pendingAccess.removeAll()
        if let failure { throw failure }
    }
}
#endif
