// Opening a SQLiteStore: the lock, the connection, the schema check and the index. A file SQLite
// finds damaged is moved aside; a whole database that is not a store's, or of a newer schema, is
// refused before anything is written to it.
#if SQLite

import CSQLite
import CacheKit
import Foundation

extension SQLiteStoreState {
    /// The columns of `cachekit_entries` and whether each is the primary key, in order.
    static let columns: [(name: String, primaryKey: Bool)] = [
        ("key", true), ("value", false), ("size", false), ("deadline", false), ("access", false),
        ("checksum", false),
    ]
    /// The columns of `cachekit_reads` and whether each is the primary key, in order.
    static let readsColumns: [(name: String, primaryKey: Bool)] = [("key", true), ("access", false)]

    /// Locks, opens and checks the database at `path`, creating it when missing, and builds the
    /// index. Expired entries and entries beyond the limits are deleted.
    ///
    /// A file that SQLite itself finds damaged or not a database (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`, while opening, checking the schema or reading the rows) is moved aside
    /// with its log, to `<path>.damaged` and `<path>.damaged-wal`, and the store starts afresh
    /// in a new database; `problems` gets a report of it. So is a store's file whose header breaks
    /// the file format's rules (``headerDamage(_:)``). A whole database that is not a store's
    /// (other tables, another application id, an unknown schema) is someone else's: it throws
    /// and is left as it is.
    static func open(
        path: String,
        countLimit: Int,
        byteLimit: Int,
        policy: EvictionPolicy,
        clock: WallClock,
        problems: inout [CacheStoreProblem]
    ) throws(CacheStoreError) -> SQLiteStoreState {
        try createDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        let lock = try LockFile(path: path + ".lock", owner: path)
        let arguments = (path, countLimit, byteLimit, policy, clock, lock)
        do throws(CacheStoreError) {
            if let damage = headerDamage(path), isStoreOrGarbage(path) {
                // SQLite would refuse such a file (as read-only, or of an unsupported format)
                // without calling it damaged.
                try moveAside(path)
                let state = try openDatabase(arguments)
                let reason = "\(damage); the database was moved to \(path).damaged and the store starts empty"
                problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
                return state
            }
            do throws(CacheStoreError) {
                return try openDatabase(arguments)
            } catch {
                guard SQLiteConnection.isDamage(error), case .corrupted(_, let found) = error, isStoreOrGarbage(path)
                else { throw error }
                try moveAside(path)
                let state = try openDatabase(arguments)
                let reason = "\(found); the database was moved to \(path).damaged and the store starts empty"
                problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
                return state
            }
        } catch {
            lock.release()
            throw error
        }
    }

    /// After an operation of an open store found its database damaged (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`: a page the open did not read, such as the key index's): closes the
    /// connection, moves the database aside with its log as `open` does, and continues in a new,
    /// empty database under the same lock. `problems` gets a report. Returns `false`, changing
    /// nothing, when `error` is not damage or the file is not a store's.
    mutating func startAfresh(after error: CacheStoreError) throws(CacheStoreError) -> Bool {
        guard SQLiteConnection.isDamage(error), case .corrupted(_, let found) = error, let lock,
            Self.isStoreOrGarbage(path)
        else { return false }
        connection?.close()
        connection = nil
        index.removeAll()
        pendingAccess.removeAll()
        try Self.moveAside(path)
        var fresh = try Self.openDatabase((path, countLimit, byteLimit, policy, clock, lock))
        fresh.problems = problems
        let reason = "\(found); the database was moved to \(path).damaged and the store starts empty"
        fresh.problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
        self = fresh
        return true
    }

    /// Whether the file at `path` may be moved aside as a store's damaged database: its header
    /// does not begin as a SQLite database's (garbage, or a store's file damaged there), or its
    /// application id (big-endian at offset 68) is the store's. A whole SQLite database of
    /// someone else's, even one this SQLite finds damaged, is left alone.
    private static func isStoreOrGarbage(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
        guard header.count >= 72, header.starts(with: Array("SQLite format 3\0".utf8)) else { return true }
        let id = header[68..<72].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Int64(Int32(bitPattern: id)) == applicationID
    }

    /// What is wrong with the header of the SQLite database at `path`, by the file format's
    /// rules (sqlite.org/fileformat2.html, "The Database Header"), or `nil` when it is sound,
    /// absent, or not a SQLite header at all (SQLite itself then reports `SQLITE_NOTADB`). The
    /// fields checked are those SQLite refuses a file for without reporting damage: the read and
    /// write versions (1 or 2; a larger write version opens read-only), the payload fractions
    /// (64, 32, 32), the schema format (1 to 4) and the page size (a power of two from 512 to
    /// 65,536, 1 meaning 65,536).
    static func headerDamage(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
        guard header.count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else { return nil }
        let pageSize = Int(header[16]) << 8 | Int(header[17])
        let schemaFormat = header[44..<48].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if !(1...2).contains(header[18]) || !(1...2).contains(header[19]) {
            return "the header's file format versions are \(header[18]) and \(header[19]), not 1 or 2"
        }
        if header[21] != 64 || header[22] != 32 || header[23] != 32 {
            return "the header's payload fractions are \(header[21]), \(header[22]), \(header[23]), not 64, 32, 32"
        }
        if !(1...4).contains(schemaFormat) { return "the header's schema format is \(schemaFormat), not 1 to 4" }
        if pageSize != 1 && (pageSize < 512 || pageSize & (pageSize - 1) != 0) {
            return "the header's page size is \(pageSize)"
        }
        return nil
    }

    /// Moves a damaged database and its write-ahead log aside, replacing any earlier pair, and
    /// deletes its shared-memory index, so that a new database can take the path. Each file is
    /// linked to its new name before the old name is removed, the log first, so that a crash
    /// meanwhile leaves the damaged pair in place for the next open to move.
    private static func moveAside(_ path: String) throws(CacheStoreError) {
        let moves = [(path + "-wal", path + ".damaged-wal"), (path, path + ".damaged")]
        for name in [path + ".damaged", path + ".damaged-wal", path + ".damaged-shm"] where unlink(name) != 0 {
            guard errno == ENOENT else { throw .ioFailure(path: name, operation: "unlink", errno: errno) }
        }
        for (from, to) in moves where link(from, to) != 0 {
            guard errno == ENOENT else { throw .ioFailure(path: from, operation: "link", errno: errno) }
        }
        for name in [path + "-shm"] + moves.map(\.0) where unlink(name) != 0 {
            guard errno == ENOENT else { throw .ioFailure(path: name, operation: "unlink", errno: errno) }
        }
    }

    /// Opens and checks the database under the lock `arguments` holds, and builds the index. On
    /// failure the connection is closed; the lock is the caller's.
    private static func openDatabase(
        _ arguments: (String, Int, Int, EvictionPolicy, WallClock, LockFile)
    ) throws(CacheStoreError) -> SQLiteStoreState {
        let (path, countLimit, byteLimit, policy, clock, lock) = arguments
        let connection = try SQLiteConnection(path: path)
        do {
            try prepareSchema(connection)
            var state = SQLiteStoreState(
                path: path,
                countLimit: countLimit,
                byteLimit: byteLimit,
                policy: policy,
                clock: clock,
                connection: connection,
                lock: lock
            )
            try state.inTransaction { state throws(CacheStoreError) in try state.deleteExpired(now: clock.now()) }
            try state.rebuildIndex()
            return state
        } catch {
            connection.close()
            throw error
        }
    }

    /// Creates `directory` and its parents when missing.
    private static func createDirectory(_ directory: String) throws(CacheStoreError) {
        var status = stat()
        if stat(directory, &status) == 0 { return }
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        if parent != directory { try createDirectory(parent) }
        if mkdir(directory, 0o755) != 0, errno != EEXIST {
            throw .ioFailure(path: directory, operation: "mkdir", errno: errno)
        }
    }

    /// Checks that the database is an empty one (then creates the schema) or a CacheKit store
    /// of a schema this code reads, then switches it to WAL. Nothing is written before the
    /// checks pass.
    private static func prepareSchema(_ connection: SQLiteConnection) throws(CacheStoreError) {
        let path = connection.path
        try connection.execute("PRAGMA trusted_schema = OFF")
        let applicationID = try connection.integer("PRAGMA application_id")
        let version = try connection.integer("PRAGMA user_version")
        if applicationID == 0, version == 0 {
            // An empty database (or a new, empty file): the store creates its schema. A
            // database with tables of its own belongs to someone else.
            if try connection.integer("SELECT count(*) FROM sqlite_schema") != 0 {
                throw .corrupted(path: path, reason: "not a CacheKit store: the database holds other tables")
            }
            try enableWAL(connection)
            try createSchema(connection)
            return
        }
        guard applicationID == Self.applicationID else {
            throw .corrupted(path: path, reason: "not a CacheKit store: application id \(applicationID)")
        }
        if version > Self.schemaVersion {
            throw .newerFormat(path: path, found: Int(version), supported: Self.schemaVersion)
        }
        // From here on the file says it is a store's: what does not match is damage to it.
        guard version == Self.schemaVersion || version == 1 else {
            throw .corrupted(path: path, reason: "unknown schema version \(version)" + SQLiteConnection.ownDamage)
        }
        // Schema 1 is schema 2 without the checksum column; both are checked before anything
        // is written, then schema 1 gains the column.
        do throws(CacheStoreError) {
            try checkColumns(connection, ofReads: false, expected: version == 1 ? columns.dropLast() : columns[...])
            try checkColumns(connection, ofReads: true, expected: readsColumns[...])
        } catch .corrupted(let path, let reason) {
            throw .corrupted(path: path, reason: reason + SQLiteConnection.ownDamage)
        }
        if version == 1 { try addChecksums(connection) }
        try enableWAL(connection)
    }

    /// Throws ``CacheKit/CacheStoreError/corrupted(path:reason:)`` unless the reads table (or the
    /// entries table) has the `expected` columns (names and primary key), in order.
    private static func checkColumns(
        _ connection: SQLiteConnection,
        ofReads: Bool,
        expected: ArraySlice<(name: String, primaryKey: Bool)>
    ) throws(CacheStoreError) {
        let query: SQL = ofReads ? "PRAGMA table_info(cachekit_reads)" : "PRAGMA table_info(cachekit_entries)"
        var found: [(name: String, primaryKey: Bool)] = []
        try connection.run(query) { row in found.append((row.text(1), row.integer(5) != 0)) }
        guard found.elementsEqual(expected, by: { $0.name == $1.name && $0.primaryKey == $1.primaryKey }) else {
            let names = found.map(\.name).joined(separator: ", ")
            let table = ofReads ? "reads" : "entries"
            throw .corrupted(
                path: connection.path,
                reason: "the \(table) table has the columns [\(names)], not a store's"
            )
        }
    }

    /// Brings a store of schema 1, whose rows carry no checksum (and whose tables were checked),
    /// to this schema: adds the column and fills it for every row, in one transaction (a crash
    /// leaves schema 1 as it was).
    private static func addChecksums(_ connection: SQLiteConnection) throws(CacheStoreError) {
        do {
            try connection.begin()
            try connection.execute("ALTER TABLE cachekit_entries ADD COLUMN checksum INTEGER")
            var rows: [(key: String, checksum: Int64)] = []
            try connection.run("SELECT key, value, size, deadline FROM cachekit_entries") { row in
                let deadline = row.isNull(3) ? nil : Date(timeIntervalSinceReferenceDate: row.real(3))
                let key = row.text(0)
                let size = row.integer(2)
                let checksum = SQLiteStoreState.checksum(key: key, value: row.blob(1), size: size, deadline: deadline)
                rows.append((key, checksum))
            }
            for row in rows {
                try connection.run(
                    "UPDATE cachekit_entries SET checksum = ? WHERE key = ?",
                    [.integer(row.checksum), .text(row.key)]
                )
            }
            try connection.execute("PRAGMA user_version = \(schemaVersion)")
            try connection.commit()
        } catch {
            connection.rollback()
            throw error
        }
    }

    private static func enableWAL(_ connection: SQLiteConnection) throws(CacheStoreError) {
        var mode = ""
        try connection.run("PRAGMA journal_mode = WAL") { row in mode = row.text(0) }
        guard mode.lowercased() == "wal" else {
            throw .database(
                path: connection.path,
                code: SQLITE_ERROR,
                message: "the database cannot use write-ahead logging (journal mode \(mode))"
            )
        }
        try connection.execute("PRAGMA synchronous = NORMAL")
    }

    private static func createSchema(_ connection: SQLiteConnection) throws(CacheStoreError) {
        do {
            try connection.begin()
            try connection.execute(
                """
                CREATE TABLE cachekit_entries (
                    key TEXT PRIMARY KEY NOT NULL,
                    value BLOB NOT NULL,
                    size INTEGER NOT NULL,
                    deadline REAL,
                    access INTEGER NOT NULL,
                    checksum INTEGER
                );
                CREATE INDEX cachekit_entries_deadline ON cachekit_entries (deadline) WHERE deadline IS NOT NULL;
                CREATE TABLE cachekit_reads (key TEXT PRIMARY KEY NOT NULL, access INTEGER NOT NULL) WITHOUT ROWID;
                PRAGMA application_id = \(applicationID);
                PRAGMA user_version = \(schemaVersion);
                """
            )
            try connection.commit()
        } catch {
            connection.rollback()
            throw error
        }
    }
}
#endif
