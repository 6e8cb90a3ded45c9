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
                return try salvage(arguments, found: damage, problems: &problems)
            }
            do throws(CacheStoreError) {
                return try openDatabase(arguments)
            } catch {
                guard SQLiteConnection.isDamage(error), case .corrupted(_, let found) = error, isStoreOrGarbage(path)
                else { throw error }
                return try salvage(arguments, found: found, problems: &problems)
            }
        } catch {
            lock.release()
            throw error
        }
    }

    /// After an operation of an open store found its database damaged (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`: a page the open did not read, such as the key index's; or a broken page
    /// that `PRAGMA quick_check` found): closes the connection and salvages the database as
    /// `open` does, under the same lock, carrying the reads not yet written over. `problems`
    /// gets a report, and each key the store held that the new database lacks is reported
    /// lost by name. Returns `false`, changing nothing, when `error` is not damage or the file
    /// is not a store's.
    mutating func startAfresh(after error: CacheStoreError) throws(CacheStoreError) -> Bool {
        guard SQLiteConnection.isDamage(error), case .corrupted(_, let found) = error, let lock,
            Self.isStoreOrGarbage(path)
        else { return false }
        connection?.close()
        connection = nil
        var problems = self.problems
        var fresh = try Self.salvage(
            (path, countLimit, byteLimit, policy, clock, lock),
            found: found,
            problems: &problems,
            held: index.keys,
            accesses: pendingAccess
        )
        fresh.problems = problems
        self = fresh
        return true
    }

    /// Moves the damaged database at `arguments`' path aside with its log, opens a new one in
    /// its place, and copies into it every entry of the damaged one that SQLite can still read,
    /// whose checksum holds and that has not expired (``copyVerifiedRows(from:indexed:accesses:)``),
    /// with its last use: the store keeps what it can prove whole. When the damaged file cannot
    /// be read at all, the new database stays empty. `problems` gets a report naming the file
    /// and how many entries were kept, and one for each key the new database lacks that the
    /// store `held`, that the damaged database's key index names, or whose row was read and
    /// found damaged.
    private static func salvage(
        _ arguments: (String, Int, Int, EvictionPolicy, WallClock, LockFile),
        found: String,
        problems: inout [CacheStoreProblem],
        held: [String] = [],
        accesses: [String: Int64] = [:]
    ) throws(CacheStoreError) -> SQLiteStoreState {
        let path = arguments.0
        try moveAside(path)
        var state = try openDatabase(arguments)
        let damaged = path + ".damaged"
        var lost = Set(held)
        var copied = 0
        // A store's file whose header SQLite refuses is read through a copy with the header
        // repaired.
        let repaired = repairedCopy(of: damaged)
        let readable = repaired ?? damaged
        if let source = try? SQLiteConnection(path: readable), (try? source.execute("PRAGMA query_only = ON")) != nil {
            // As far as it can be read: the keys the damaged database's own index names.
            var indexed = Set<String>()
            try? source.run("SELECT key FROM cachekit_entries INDEXED BY sqlite_autoindex_cachekit_entries_1") {
                indexed.insert($0.text(0))
            }
            lost.formUnion(indexed)
            let (count, dropped) = state.copyVerifiedRows(from: source, indexed: indexed, accesses: accesses)
            copied = count
            lost.formUnion(dropped)
            source.close()
        }
        for name in [readable + "-shm"] + (repaired.map { [$0, $0 + "-wal"] } ?? []) { unlink(name) }
        if copied > 0 {
            // The copied rows join the index, in their order of last use, within the limits.
            do throws(CacheStoreError) {
                try state.rebuildIndex()
            } catch {
                state.connection?.close()
                throw error
            }
        }
        let kept =
            copied == 0
            ? "the store starts empty"
            : "the store keeps \(copied) \(copied == 1 ? "entry" : "entries") it read and verified"
        let reason = "\(found); the database was moved to \(damaged) and \(kept)"
        problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: reason)))
        let named = Set(problems.compactMap(\.key))
        for key in lost.sorted() where !state.index.contains(key) && !named.contains(key) {
            let reason = "the entry was lost with the damaged database"
            problems.append(CacheStoreProblem(key: key, error: .corrupted(path: path, reason: reason)))
        }
        return state
    }

    /// A copy of the store's database at `damaged` (and of its log) whose header has the fields
    /// SQLite refuses or misreads a file for set to sound values: the magic string, the file
    /// format versions (2, write-ahead logging), the payload fractions, the schema format (4),
    /// an invalid page size (4,096, SQLite's default), the size in pages (the file's), and the
    /// text encoding (UTF-8, the only one a store writes). `nil` when the header is sound, too
    /// short, or does not carry the store's application id (big-endian at offset 68): garbage,
    /// or someone else's. The copy is the caller's to delete.
    private static func repairedCopy(of damaged: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: damaged) else { return nil }
        let header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
        try? handle.close()
        guard header.count == 100, header[68..<72].reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == applicationID
        else { return nil }
        var fixed = header
        fixed.replaceSubrange(0..<16, with: Array("SQLite format 3\0".utf8))
        for offset in [18, 19] where !(1...2).contains(fixed[offset]) { fixed[offset] = 2 }
        fixed.replaceSubrange(21..<24, with: [64, 32, 32])
        if !(1...4).contains(fixed[44..<48].reduce(UInt32(0), { $0 << 8 | UInt32($1) })) {
            fixed.replaceSubrange(44..<48, with: [0, 0, 0, 4])
        }
        let sizeField = Int(fixed[16]) << 8 | Int(fixed[17])
        if sizeField != 1 && (sizeField < 512 || sizeField & (sizeField - 1) != 0) {
            fixed.replaceSubrange(16..<18, with: [0x10, 0x00])
        }
        let pageSize = sizeField == 1 ? 65_536 : Int(fixed[16]) << 8 | Int(fixed[17])
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: damaged)[.size] as? Int) ?? 0
        let pages = UInt32(clamping: fileSize / pageSize)
        fixed.replaceSubrange(28..<32, with: (0..<4).map { UInt8(truncatingIfNeeded: pages >> (24 - 8 * $0)) })
        fixed.replaceSubrange(56..<60, with: [0, 0, 0, 1])
        guard fixed != header else { return nil }
        let copy = damaged + ".repaired"
        for name in [copy, copy + "-wal", copy + "-shm"] { unlink(name) }
        do {
            try FileManager.default.copyItem(atPath: damaged, toPath: copy)
            if FileManager.default.fileExists(atPath: damaged + "-wal") {
                try FileManager.default.copyItem(atPath: damaged + "-wal", toPath: copy + "-wal")
            }
            let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))
            defer { try? writer.close() }
            try writer.write(contentsOf: fixed)
            return copy
        } catch {
            for name in [copy, copy + "-wal"] { unlink(name) }
            return nil
        }
    }

    /// Copies from `source` (a damaged store's database) every entry row SQLite can read whose
    /// key and checksum hold and which has not expired, in one transaction of this state's
    /// empty database. The rows are read in the table's order (`NOT INDEXED`: the key index may
    /// be what is damaged); a read that SQLite stops at a damaged page is followed by a lookup
    /// of each of `indexed` (the keys of the damaged file's key index) not copied yet, each
    /// failing alone. An entry's access is the latest of its row's, its last read written to
    /// `cachekit_reads` and `accesses`. Returns how many entries were copied, and the keys of
    /// rows read and found damaged.
    private mutating func copyVerifiedRows(
        from source: SQLiteConnection,
        indexed: Set<String>,
        accesses: [String: Int64]
    ) -> (copied: Int, dropped: [String]) {
        guard let connection else { return (0, []) }
        var reads: [String: Int64] = [:]
        try? source.run("SELECT key, access FROM cachekit_reads") { row in
            if !row.isNull(0) { reads[row.text(0)] = row.integer(1) }
        }
        var copied = Set<String>()
        var dropped: [String] = []
        let now = clock.now()
        let insert: SQL = """
            INSERT OR REPLACE INTO cachekit_entries (key, value, size, deadline, access, checksum)
            VALUES (?, ?, ?, ?, ?, ?)
            """
        func copy(_ row: SQLiteRow) throws(CacheStoreError) {
            guard !row.isNull(0), !row.isNull(5) else { return }
            let (key, value, size) = (row.text(0), row.blob(1), row.integer(2))
            let deadline = row.isNull(3) ? nil : Date(timeIntervalSinceReferenceDate: row.real(3))
            let checksum = row.integer(5)
            guard size == Int64(value.count),
                checksum == Self.checksum(key: key, value: value, size: size, deadline: deadline)
            else {
                dropped.append(key)
                return
            }
            if let deadline, deadline <= now { return }
            let access = max(row.integer(4), reads[key] ?? 0, accesses[key] ?? 0)
            let deadlineValue: SQLiteValue = deadline.map { .real($0.timeIntervalSinceReferenceDate) } ?? .null
            try connection.run(
                insert,
                [.text(key), .blob(value), .integer(size), deadlineValue, .integer(access), .integer(checksum)]
            )
            copied.insert(key)
        }
        do {
            try connection.begin()
            let columns = "SELECT key, value, size, deadline, access, checksum FROM cachekit_entries"
            let scan: SQL = "SELECT key, value, size, deadline, access, checksum FROM cachekit_entries NOT INDEXED"
            if (try? source.run(scan, row: copy)) == nil {
                for key in indexed.sorted() where !copied.contains(key) {
                    try? source.run(source.statement(columns + " WHERE key = ?"), [.text(key)], row: copy)
                }
            }
            try connection.commit()
            return (copied.count, dropped)
        } catch {
            connection.rollback()
            return (0, [])
        }
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
