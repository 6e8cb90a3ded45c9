#if SQLite
import CacheKit
import CacheKitSQLite
import CacheKitTestSupport
import Foundation
import Testing

/// Files a store must refuse, and leave as they are: other owners, other formats, damage, and
/// places it cannot write.
@Suite("SQLiteStore files")
struct SQLiteStoreFileTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    var path: String { directory.file().path }

    func open() async throws(CacheStoreError) -> SQLiteStore {
        try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20)
    }

    /// The error opening a store at the file throws, and whether the file's bytes stayed as
    /// they were.
    func refusal() async throws -> (error: CacheStoreError?, unchanged: Bool) {
        let before = try Data(contentsOf: directory.file())
        let error = await storeError { () async throws(CacheStoreError) in try await open() }
        return (error, try Data(contentsOf: directory.file()) == before)
    }

    /// A closed store's database with one entry.
    func makeStore() async throws {
        let store = try await open()
        try await store.setEntry(bytes(100), forKey: "k", expiresAt: nil)
        try await store.close()
    }

    /// An open store holding "a", whose lock file was deleted since.
    func openThenDeleteLockFile(problems: ProblemLog = ProblemLog()) async throws -> SQLiteStore {
        let store = try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20, problemHandler: problems.handler)
        try await store.setEntry(bytes(10, 1), forKey: "a", expiresAt: nil)
        try FileManager.default.removeItem(atPath: path + ".lock")
        return store
    }

    @Test("a lock file deleted under an open store is locked again by its next write")
    func lockFileDeletedThenWritten() async throws {
        let first = try await openThenDeleteLockFile()
        try await first.setEntry(bytes(10, 2), forKey: "b", expiresAt: nil)
        #expect(FileManager.default.fileExists(atPath: path + ".lock"))
        #expect(await storeError { () async throws(CacheStoreError) in try await open() } == .locked(path: path))
        try await first.close()
    }

    @Test("a second store that takes a deleted lock file first makes the first store's writes fail as locked")
    func lockFileDeletedThenTaken() async throws {
        let problems = ProblemLog()
        let first = try await openThenDeleteLockFile(problems: problems)
        let second = try await open()
        #expect(
            await storeError { () async throws(CacheStoreError) in
                try await first.setEntry(bytes(10, 2), forKey: "b", expiresAt: nil)
            } == .locked(path: path)
        )
        #expect(
            await storeError { () async throws(CacheStoreError) in try await first.removeEntry(forKey: "a") }
                == .locked(path: path)
        )
        try await second.setEntry(bytes(10, 3), forKey: "c", expiresAt: nil)
        #expect(try await second.entry(forKey: "a")?.value == bytes(10, 1))
        #expect(try await second.removeEntry(forKey: "a"))
        // A row the second store removed is a plain miss to the first, not damage.
        #expect(try await first.entry(forKey: "a") == nil)
        #expect(problems.all.isEmpty, "\(problems.all)")
        try await second.close()
        // The second store released the lock: the first store's next write takes it again.
        try await first.setEntry(bytes(10, 4), forKey: "d", expiresAt: nil)
        #expect(try await first.entry(forKey: "d")?.value == bytes(10, 4))
        try await first.close()
    }

    @Test("a store whose deleted lock file a second store took closes without writing its last reads")
    func lockFileDeletedThenTakenThenClosed() async throws {
        let first = try await openThenDeleteLockFile()
        #expect(try await first.entry(forKey: "a")?.value == bytes(10, 1), "a read whose access record is pending")
        let second = try await open()
        try await first.close()
        #expect(try await second.entry(forKey: "a")?.value == bytes(10, 1))
        try await second.close()
    }

    @Test("a second store opening the same database gets locked, until the first closes")
    func secondOpenerInProcess() async throws {
        let first = try await open()
        #expect(await storeError { () async throws(CacheStoreError) in try await open() } == .locked(path: path))
        try await first.close()
        let second = try await open()
        try await second.close()
    }

    @Test(
        "a store in another process gets locked",
        .enabled(if: sqliteCrashHelper != nil, Comment(rawValue: testHelperMissing))
    )
    func secondOpenerInAnotherProcess() async throws {
        let helper = try #require(sqliteCrashHelper)
        let first = try await open()
        let output = try runHelper(helper, ["--open", path])
        #expect(output.contains(CacheStoreError.locked(path: path).description), "\(output)")
        try await first.close()
        #expect(try runHelper(helper, ["--open", path]).hasPrefix("opened"))
    }

    /// Opens a store over a file that SQLite finds damaged, expecting it moved aside whole to
    /// `<path>.damaged`, reported once with each of the `lost` keys, and a new, working store in
    /// its place.
    func expectMovedAside(_ damaged: Data, lost: [String] = []) async throws {
        let problems = ProblemLog()
        let store = try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20, problemHandler: problems.handler)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".damaged")) == damaged, "moved aside whole")
        #expect(problems.all.count == 1 + lost.count)
        #expect(problems.all.dropFirst().map(\.key) == lost)
        if case .corrupted(let errorPath, let reason) = problems.all.first?.error {
            #expect(errorPath == path && reason.hasSuffix("the store starts empty"), "\(reason)")
        } else {
            Issue.record("\(problems.all)")
        }
        #expect(try await store.usage().count == 0)
        try await store.setEntry(bytes(10), forKey: "new", expiresAt: nil)
        #expect(try await store.entry(forKey: "new")?.value == bytes(10))
        try await store.close()
        let reopened = try await open()
        #expect(try await reopened.entry(forKey: "new")?.value == bytes(10), "the new database is a store's")
        try await reopened.close()
    }

    @Test("a file of garbage bytes is moved aside and the store starts empty", arguments: [16, 4_096, 20_000])
    func garbage(size: Int) async throws {
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try garbage.write(to: directory.file())
        try await expectMovedAside(garbage)
    }

    @Test(
        "a store whose header has flipped bytes is moved aside, and its entry is read from a repaired copy",
        arguments: [0, 5, 16, 21, 28, 44]
    )
    func flippedHeader(offset: Int) async throws {
        try await makeStore()
        var data = try Data(contentsOf: directory.file())
        for index in offset..<(offset + 3) { data[index] ^= 0xA5 }
        try data.write(to: directory.file())
        let problems = ProblemLog()
        let store = try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20, problemHandler: problems.handler)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".damaged")) == data, "moved aside whole")
        #expect(problems.all.count == 1)
        if case .corrupted(_, let reason) = problems.all.first?.error {
            #expect(reason.hasSuffix("the store keeps 1 entry it read and verified"), "\(reason)")
        } else {
            Issue.record("\(problems.all)")
        }
        #expect(try await store.entry(forKey: "k")?.value == bytes(100))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(!files.contains { $0.contains("repaired") }, "the repaired copy is deleted: \(files)")
        try await store.close()
    }

    @Test(
        "damage that opening does not read (a free page) is found by a write: the entries move to a new database"
    )
    func damageFoundAfterOpen() async throws {
        let store = try await open()
        for i in 0..<300 { try await store.setEntry(bytes(500, UInt8(i % 200)), forKey: "key-\(i)", expiresAt: nil) }
        for i in 0..<280 { try await store.removeEntry(forKey: "key-\(i)") }
        try await store.close()
        // The header's first freelist trunk page (big-endian at offset 32) and page size (at 16):
        // opening reads no free page; the next write that needs a page reads the trunk.
        var data = try Data(contentsOf: directory.file())
        let trunk = data[32..<36].reduce(0) { $0 << 8 | Int($1) }
        let sizeField = data[16..<18].reduce(0) { $0 << 8 | Int($1) }
        let pageSize = sizeField == 1 ? 65_536 : sizeField
        try #require(trunk > 0, "the removals left free pages")
        let start = (trunk - 1) * pageSize
        for offset in start..<start + pageSize { data[offset] = 0xA5 }
        let (damaged, problems) = try await reopen(data)
        #expect(problems.all.isEmpty, "opening reads no free page")
        #expect(try await damaged.entry(forKey: "key-290")?.value == bytes(500, UInt8(290 % 200)))
        try await damaged.setEntry(bytes(30_000, 9), forKey: "big", expiresAt: nil)
        #expect(problems.all.count == 1)
        if case .corrupted(let errorPath, let reason) = problems.all.first?.error {
            #expect(
                errorPath == path && reason.hasSuffix("the store keeps 20 entries it read and verified"),
                "\(reason)"
            )
        } else {
            Issue.record("\(problems.all)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".damaged")).count >= data.count - pageSize)
        #expect(try await damaged.entry(forKey: "big")?.value == bytes(30_000, 9), "the write ran again")
        for i in 280..<300 {
            #expect(try await damaged.entry(forKey: "key-\(i)")?.value == bytes(500, UInt8(i % 200)), "key-\(i)")
        }
        #expect(try await damaged.usage().count == 21)
        try await damaged.removeEntry(forKey: "big")
        #expect(try await damaged.usage().count == 20)
        try await damaged.setEntry(bytes(10), forKey: "new", expiresAt: nil)
        #expect(try await damaged.entry(forKey: "new")?.value == bytes(10))
        try await damaged.close()
        let reopened = try await open()
        #expect(try await reopened.entry(forKey: "new")?.value == bytes(10))
        #expect(try await reopened.usage().count == 21)
        try await reopened.close()
        #expect(problems.all.count == 1)
    }

    /// A closed store's database of 40 entries of 60 bytes (`key-0`, `bytes(60, 100)`, to
    /// `key-39`), all in one table leaf page, its bytes, and the offset of that page.
    func fortyEntriesInOneLeaf() async throws -> (data: Data, page: Int) {
        let store = try await open()
        for i in 0..<40 { try await store.setEntry(bytes(60, UInt8(100 + i)), forKey: "key-\(i)", expiresAt: nil) }
        try await store.close()
        let data = try Data(contentsOf: directory.file())
        let pageSize = Int(data[16]) << 8 | Int(data[17])
        let row = try #require(data.firstRange(of: bytes(60, 100)), "the first value's bytes")
        let page = row.lowerBound / pageSize * pageSize
        try #require(page > 0 && data[page] == 13, "a table leaf after the first page")
        return (data, page)
    }

    /// Whether `problems` holds a `corrupted` report whose reason contains `text`.
    func reports(_ problems: ProblemLog, containing text: String) -> Bool {
        problems.all.contains { problem in
            if case .corrupted(_, let reason) = problem.error { return reason.contains(text) }
            return false
        }
    }

    /// Expects every `key-N` of ``fortyEntriesInOneLeaf()`` read back whole or reported lost,
    /// at least `kept` of them whole, the database salvaged, and new writes reading back.
    func expectSalvaged(_ store: SQLiteStore, _ problems: ProblemLog, kept least: Int) async throws {
        var kept = 0
        for i in 0..<40 {
            switch try await store.entry(forKey: "key-\(i)")?.value {
            case nil: #expect(problems.all.contains { $0.key == "key-\(i)" }, "key-\(i) lost unreported")
            case let value?:
                #expect(value == bytes(60, UInt8(100 + i)), "key-\(i)")
                kept += 1
            }
        }
        #expect(kept >= least, "\(problems.all)")
        #expect(reports(problems, containing: "was moved to"), "\(problems.all)")
        for i in 0..<20 {
            try await store.setEntry(bytes(50, UInt8(i)), forKey: "new-\(i)", expiresAt: nil)
            #expect(try await store.entry(forKey: "new-\(i)")?.value == bytes(50, UInt8(i)), "new-\(i)")
        }
        try await store.close()
    }

    @Test("a cell pointer into another cell: the page check at open moves the entries to a new database")
    func brokenCellPointer() async throws {
        // The leaf's first cell pointer (big-endian at offset 8) takes the thirteenth's value:
        // SQLite's reads find the thirteenth row twice and the first never.
        var (data, page) = try await fortyEntriesInOneLeaf()
        data[page + 8] = data[page + 8 + 24]
        data[page + 9] = data[page + 9 + 24]
        let (damaged, problems) = try await reopen(data)
        #expect(reports(problems, containing: "pages are damaged"), "\(problems.all)")
        try await expectSalvaged(damaged, problems, kept: 30)
    }

    @Test("a wrong start of a page's cell area: a write over old rows is found, and the database salvaged")
    func wrongCellAreaStart() async throws {
        // The start of the leaf's cell area (big-endian at offset 5) moves 400 bytes up, into the
        // first rows written. Opening reads every row through the cell pointers, which hold.
        var (data, page) = try await fortyEntriesInOneLeaf()
        let start = Int(data[page + 5]) << 8 | Int(data[page + 6])
        data[page + 5] = UInt8((start + 400) >> 8)
        data[page + 6] = UInt8((start + 400) & 0xFF)
        let (damaged, problems) = try await reopen(data)
        #expect(problems.all.isEmpty, "\(problems.all)")
        try await damaged.setEntry(bytes(300, 200), forKey: "over", expiresAt: nil)
        try await expectSalvaged(damaged, problems, kept: 30)
    }

    @Test("a damaged row on a page whose structure SQLite's reads pass over: the page check salvages the database")
    func damagedRowOnABrokenPage() async throws {
        // The leaf's count of fragmented bytes (offset 7), which only a page check reads, and one
        // byte of key-7's value, which its checksum catches.
        var (data, page) = try await fortyEntriesInOneLeaf()
        data[page + 7] ^= 0x05
        let value = try #require(data.firstRange(of: bytes(60, 107)))
        data[value.lowerBound + 30] ^= 0xFF
        let (damaged, problems) = try await reopen(data)
        #expect(problems.all.isEmpty, "\(problems.all)")
        #expect(try await damaged.entry(forKey: "key-7") == nil)
        #expect(reports(problems, containing: "pages are damaged"), "\(problems.all)")
        try await expectSalvaged(damaged, problems, kept: 39)
    }

    /// A store opened on `data`, written as its database, with the problems it reports.
    func reopen(_ data: Data) async throws -> (SQLiteStore, ProblemLog) {
        try data.write(to: directory.file())
        let problems = ProblemLog()
        let store = try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20, problemHandler: problems.handler)
        return (store, problems)
    }

    /// A closed store's database of 40 small entries (`key-0` to `key-39`), its bytes, and the
    /// byte range of the root page of SQLite's index on the key column (a leaf at this size).
    func fortyEntriesAndTheirIndexPage() async throws -> (data: Data, indexPage: Range<Int>) {
        let store = try await open()
        for i in 0..<40 { try await store.setEntry(bytes(20, UInt8(i)), forKey: "key-\(i)", expiresAt: nil) }
        try await store.close()
        let connection = try SQLiteConnection(path: path)
        var root = 0
        try connection.run("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_cachekit_entries_1'") {
            root = Int($0.integer(0))
        }
        connection.close()
        let data = try Data(contentsOf: directory.file())
        let pageSize = Int(data[16]) << 8 | Int(data[17])
        try #require(root > 1)
        return (data, (root - 1) * pageSize..<root * pageSize)
    }

    @Test(
        "a damaged index on the key column: reads still find every entry, a removal stays removed, and both report it",
        arguments: [false, true]
    )
    func damagedKeyIndex(removingFirst: Bool) async throws {
        // The key index's root page, a leaf at this size, holds each key's text: one of them is
        // changed there, which SQLite's lookups do not notice.
        let (pristine, page) = try await fortyEntriesAndTheirIndexPage()
        var data = pristine
        let found = try #require(data[page].firstRange(of: Data("key-17".utf8)), "the key's text in its index page")
        data[found.lowerBound + 2] = UInt8(ascii: "z")
        let (damaged, problems) = try await reopen(data)
        if removingFirst {
            #expect(try await damaged.removeEntry(forKey: "key-17"))
            try await damaged.close()
            let reopened = try await open()
            #expect(try await reopened.entry(forKey: "key-17") == nil, "the removed entry stays removed")
            #expect(try await reopened.usage().count == 39)
            try await reopened.close()
        } else {
            for i in 0..<40 {
                #expect(try await damaged.entry(forKey: "key-\(i)")?.value == bytes(20, UInt8(i)), "key-\(i)")
            }
            try await damaged.close()
        }
        #expect(problems.all.count == 1)
        if case .corrupted(_, let reason) = problems.all.first?.error {
            #expect(reason.contains("index on the key column"), "\(reason)")
        } else {
            Issue.record("\(problems.all)")
        }
    }

    @Test("a damaged key in a table row: the entry is dropped and reported by its key, the others are kept")
    func damagedKeyInTheTable() async throws {
        let (pristine, indexPage) = try await fortyEntriesAndTheirIndexPage()
        var data = pristine
        // The key's text in its table row (outside the index's page): changed, so that the row's
        // checksum no longer matches it and the index no longer names it.
        var search = data.startIndex..<data.endIndex
        var row: Range<Int>?
        while row == nil, let found = data[search].firstRange(of: Data("key-17".utf8)) {
            if !indexPage.contains(found.lowerBound) { row = found }
            search = found.upperBound..<data.endIndex
        }
        data[try #require(row).lowerBound + 2] = UInt8(ascii: "z")
        let (damaged, problems) = try await reopen(data)
        #expect(try await damaged.usage().count == 39)
        #expect(try await damaged.entry(forKey: "key-17") == nil)
        for i in 0..<40 where i != 17 {
            #expect(try await damaged.entry(forKey: "key-\(i)")?.value == bytes(20, UInt8(i)), "key-\(i)")
        }
        try await damaged.close()
        #expect(problems.all.contains { $0.key == "key-17" }, "\(problems.all)")
        #expect(problems.all.count == 3, "\(problems.all)")
    }

    @Test(
        "a byte flipped anywhere in the database: the store opens, and each read is the value written or a miss"
    )
    func everyRegion() async throws {
        let store = try await open()
        var expected: [String: Data] = [:]
        for i in 0..<40 {
            let value = Data((0..<(i * 37 % 600 + 1)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
            try await store.setEntry(value, forKey: "key-\(i)", expiresAt: nil)
            expected["key-\(i)"] = value
        }
        try await store.close()
        let pristine = try Data(contentsOf: directory.file())
        let pageSize = Int(pristine[16]) << 8 | Int(pristine[17])
        // Every 97th byte; the first bytes of each page (the page header, which the last
        // accesses written at close may be the first to read); and header fields that SQLite
        // refuses without calling them damage (the write version, the schema format).
        var damages = stride(from: 0, to: pristine.count, by: 97).map { ($0, UInt8(0x5A)) }
        for page in stride(from: 0, to: pristine.count, by: pageSize) {
            for offset in [0, 1, 3, 5, 7] { damages.append(((page == 0 ? 100 : page) + offset, 0x5A)) }
        }
        damages += [(18, 0x01), (47, 0x01)]
        var opened = 0
        for (offset, flip) in damages {
            for suffix in ["", ".damaged", ".damaged-wal", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: path + suffix)
            }
            var damaged = pristine
            damaged[offset] ^= flip
            try damaged.write(to: directory.file())
            let damagedStore = try await open()
            opened += 1
            for (key, value) in expected {
                // A damaged page SQLite finds on the way moves the database aside: a miss, never
                // an error or a wrong value.
                let read = await storeResult { () async throws(CacheStoreError) in
                    try await damagedStore.entry(forKey: key)?.value
                }
                switch read {
                case .success(let found?): #expect(found == value, "offset \(offset): \(key) read another value")
                case .success(nil): break
                case .failure(let error): Issue.record("offset \(offset): \(key): \(error)")
                }
            }
            // Closing writes the reads' accesses: damage found then moves the database aside too.
            let closed = await storeResult { () async throws(CacheStoreError) in try await damagedStore.close() }
            if case .failure(let error) = closed { Issue.record("offset \(offset): close: \(error)") }
        }
        #expect(opened == damages.count)
    }

    @Test("a database of another application is refused as corrupted and left unchanged")
    func foreignDatabase() async throws {
        let connection = try SQLiteConnection(path: path)
        try connection.execute(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes VALUES (1, 'x')"
        )
        connection.close()
        let (error, unchanged) = try await refusal()
        guard case .corrupted(path, let reason) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(reason.contains("not a CacheKit store"))
        #expect(unchanged)
    }

    @Test("another application's database that SQLite finds damaged is refused and left as it is")
    func damagedForeignDatabase() async throws {
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA application_id = 42")
        try connection.execute(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes VALUES (1, 'x')"
        )
        connection.close()
        var bytes = try Data(contentsOf: directory.file())
        // The first page's b-tree header, right after the 100-byte file header.
        for offset in 100..<108 { bytes[offset] ^= 0xFF }
        try bytes.write(to: directory.file())
        let (error, unchanged) = try await refusal()
        #expect(error != nil, "refused")
        #expect(unchanged)
        #expect(!FileManager.default.fileExists(atPath: path + ".damaged"), "not moved aside")
    }

    @Test("a store's database whose table has another layout is damage: moved aside, and the store starts empty")
    func damagedLayout() async throws {
        try await makeStore()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("ALTER TABLE cachekit_entries DROP COLUMN access")
        try connection.execute("PRAGMA journal_mode = DELETE")
        connection.close()
        // The entry's row cannot be read without its columns: its key, in the key index, is
        // reported lost.
        try await expectMovedAside(try Data(contentsOf: directory.file()), lost: ["k"])
    }

    @Test("a database of a newer schema is refused as newerFormat and left unchanged")
    func newerSchema() async throws {
        try await makeStore()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA user_version = \(SQLiteStoreState.schemaVersion + 1)")
        connection.close()
        let (error, unchanged) = try await refusal()
        #expect(
            error
                == .newerFormat(
                    path: path,
                    found: SQLiteStoreState.schemaVersion + 1,
                    supported: SQLiteStoreState.schemaVersion
                )
        )
        #expect(unchanged)
    }

    /// Whether this process can run the helper as another user (root and setpriv): root
    /// ignores file modes, so a read-only place is tested as `nobody`.
    static let canRunAsNobody =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && sqliteCrashHelper != nil

    /// The outcome of opening a store at `path` as a user the modes apply to: this process
    /// when it is not root, else the crash helper run as `nobody`.
    func openWithoutPrivileges(_ path: String) async throws -> String {
        if getuid() != 0 {
            let error = await storeError { () async throws(CacheStoreError) in
                try await SQLiteStore(path: URL(fileURLWithPath: path), byteLimit: 100)
            }
            return error.map { "error: \($0)" } ?? "opened"
        }
        let helper = directory.file("helper")
        if !FileManager.default.fileExists(atPath: helper.path) {
            try FileManager.default.copyItem(at: try #require(sqliteCrashHelper), to: helper)
        }
        #expect(chmod(helper.path, 0o755) == 0)
        return try runHelper(
            helper,
            ["--open", path],
            launcher: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        )
    }

    @Test(
        "a read-only directory or database file gives a typed error",
        .enabled(if: getuid() != 0 || canRunAsNobody, "root needs setpriv and the crash helper")
    )
    func readOnly() async throws {
        #expect(chmod(directory.url.path, 0o755) == 0)
        let folder = directory.file("read-only")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        #expect(chmod(folder.path, 0o555) == 0)
        let inFolder = try await openWithoutPrivileges(folder.appendingPathComponent("store.sqlite").path)
        #expect(inFolder.hasPrefix("error: open failed for \(folder.path)/store.sqlite.lock"), "\(inFolder)")

        // A writable directory and lock file, a database file that cannot be written.
        let writable = directory.file("writable")
        try FileManager.default.createDirectory(at: writable, withIntermediateDirectories: false)
        let database = writable.appendingPathComponent("store.sqlite")
        let store = try await SQLiteStore(path: database, byteLimit: 100)
        try await store.setEntry(bytes(1), forKey: "k", expiresAt: nil)
        try await store.close()
        #expect(chmod(writable.path, 0o777) == 0)
        #expect(chmod(database.path + ".lock", 0o666) == 0)
        #expect(chmod(database.path, 0o444) == 0)
        let before = try Data(contentsOf: database)
        let readOnlyFile = try await openWithoutPrivileges(database.path)
        #expect(readOnlyFile.hasPrefix("error: database \(database.path)"), "\(readOnlyFile)")
        #expect(try Data(contentsOf: database) == before)
    }
}
#endif
