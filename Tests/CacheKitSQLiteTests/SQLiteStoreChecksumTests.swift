#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Testing

/// Each row's checksum: damage to a value, a size or a deadline on disk reads as a reported miss,
/// and a store whose rows have no checksum gains them when opened.
@Suite("SQLiteStore checksums")
struct SQLiteStoreChecksumTests {
    let directory: TemporaryDirectory
    let problems = ProblemLog()

    init() throws { directory = try TemporaryDirectory() }

    var path: String { directory.file().path }

    func open() async throws(CacheStoreError) -> SQLiteStore {
        try await SQLiteStore(path: directory.file(), byteLimit: 1 << 20, problemHandler: problems.handler)
    }

    /// The value stored for `k<i>`: 300 bytes that no other value or page header holds in a row.
    func value(_ i: Int) -> Data { Data((0..<300).map { UInt8(truncatingIfNeeded: 0x41 + i + ($0 % 7) * 17) }) }

    /// A closed store holding `k0` … `k4`.
    func filledAndClosed() async throws {
        let store = try await open()
        for i in 0..<5 { try await store.setEntry(value(i), forKey: "k\(i)", expiresAt: nil) }
        try await store.close()
    }

    /// Opens the store and checks that `k2` is a reported, dropped miss and the rest intact.
    func expectK2DroppedAndReported(_ what: String) async throws {
        let store = try await open()
        #expect(try await store.entry(forKey: "k2") == nil, "\(what)")
        let reported = problems.all
        #expect(reported.count == 1, "\(what): \(reported)")
        #expect(reported.first?.key == "k2")
        guard case .corrupted(_, let reason) = reported.first?.error else {
            Issue.record("\(what): \(reported)")
            return
        }
        #expect(reason.contains("checksum"))
        for i in [0, 1, 3, 4] { #expect(try await store.entry(forKey: "k\(i)")?.value == value(i)) }
        #expect(try await store.usage().count == 4, "the damaged row is deleted")
        try await store.close()
    }

    @Test("a byte flipped inside a stored value in the closed database is a reported miss")
    func flippedValueByte() async throws {
        try await filledAndClosed()
        var file = try Data(contentsOf: directory.file())
        let range = try #require(file.range(of: value(2)), "the value lies in the database file")
        file[range.lowerBound + 150] ^= 0x01
        try file.write(to: directory.file())
        try await expectK2DroppedAndReported("flipped value byte")
    }

    @Test(
        "a row whose value, size or deadline changed under the store is a reported miss",
        arguments: [
            "UPDATE cachekit_entries SET value = zeroblob(300) WHERE key = 'k2'",
            "UPDATE cachekit_entries SET deadline = 1e12 WHERE key = 'k2'",
            "UPDATE cachekit_entries SET checksum = checksum + 1 WHERE key = 'k2'",
            "UPDATE cachekit_entries SET checksum = NULL WHERE key = 'k2'",
        ]
    )
    func changedRow(_ change: String) async throws {
        try await filledAndClosed()
        let connection = try SQLiteConnection(path: path)
        try connection.execute(change)
        connection.close()
        try await expectK2DroppedAndReported(change)
    }

    @Test("a store of schema 1, whose rows have no checksum, opens with every entry and gains checksums")
    func schemaOneGainsChecksums() async throws {
        try await filledAndClosed()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("ALTER TABLE cachekit_entries DROP COLUMN checksum")
        try connection.execute("PRAGMA user_version = 1")
        connection.close()

        let store = try await open()
        for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == value(i)) }
        #expect(problems.all.isEmpty, "\(problems.all)")
        try await store.close()
        let reopened = try SQLiteConnection(path: path)
        #expect(try reopened.integer("PRAGMA user_version") == Int64(SQLiteStoreState.schemaVersion))
        #expect(try reopened.integer("SELECT count(*) FROM cachekit_entries WHERE checksum IS NULL") == 0)
        reopened.close()
    }

    @Test("a store of schema 1 whose reads table is not a store's is moved aside before anything is written")
    func schemaOneCheckedBeforeWriting() async throws {
        try await filledAndClosed()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("ALTER TABLE cachekit_entries DROP COLUMN checksum")
        try connection.execute("ALTER TABLE cachekit_reads RENAME COLUMN access TO used")
        try connection.execute("PRAGMA user_version = 1")
        connection.close()
        let store = try await open()
        #expect(try await store.usage().count == 0, "a new, empty store")
        try await store.close()
        guard case .corrupted(_, let reason) = problems.all.first?.error else {
            Issue.record("\(problems.all)")
            return
        }
        #expect(reason.contains("reads table"))
        let after = try SQLiteConnection(path: path + ".damaged")
        #expect(try after.integer("PRAGMA user_version") == 1, "still schema 1")
        #expect(
            try after.integer("SELECT count(*) FROM pragma_table_info('cachekit_entries') WHERE name = 'checksum'") == 0
        )
        after.close()
    }
}
#endif
