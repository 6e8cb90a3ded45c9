#if SQLite
import CacheKit
import CacheKitSQLite
import CacheKitTestSupport
import Foundation
import Testing

/// A process writing to a store is killed with SIGKILL at random moments; SQLite's transactions
/// must leave a database whose every entry is whole and within the limits.
@Suite("SQLiteStore crash")
struct SQLiteStoreCrashTests {
    /// The crash helper's limits (Sources/CacheKitTestHelper/SQLiteStoreCrash.swift).
    static let countLimit = 40
    static let byteLimit = 4_000

    @Test(
        "a writer killed with SIGKILL at random moments leaves whole entries within the limits, 60 times",
        .enabled(if: sqliteCrashHelper != nil, Comment(rawValue: testHelperMissing)),
        .timeLimit(.minutes(10))
    )
    func killedWriter() async throws {
        let helper = try #require(sqliteCrashHelper)
        let directory = try TemporaryDirectory()
        let path = directory.file().path
        var generator = SystemRandomNumberGenerator()
        var sawEntries = false
        for run in 0..<60 {
            // Wait until the helper is writing, then kill it a random moment later.
            let outcome = try killedAfterSignal(
                helper,
                ["sqlite-store-crash", path],
                signal: "progress",
                pause: 0...20_000,
                using: &generator
            )
            guard case .killed(let bySignal) = outcome else {
                Issue.record("run \(run): the helper failed before writing: \(outcome)")
                return
            }
            #expect(bySignal, "run \(run)")

            // What the database holds, read directly (this also recovers its write-ahead log).
            let connection = try SQLiteConnection(path: path)
            var rows: [(key: String, value: Data, size: Int64)] = []
            try connection.run("SELECT key, value, size FROM cachekit_entries") { row in
                rows.append((row.text(0), row.blob(1), row.integer(2)))
            }
            connection.close()
            #expect(rows.count <= Self.countLimit, "run \(run): \(rows.count) entries")
            #expect(rows.reduce(0) { $0 + $1.value.count } <= Self.byteLimit, "run \(run): over the byte limit")
            for row in rows {
                #expect(isValidCrashValue(row.value, forKey: row.key), "run \(run): \(row.key) is not whole")
                #expect(row.size == Int64(row.value.count), "run \(run): \(row.key)'s size")
            }
            sawEntries = sawEntries || !rows.isEmpty

            // The store opens it and reads every entry back.
            let store = try await SQLiteStore(
                path: directory.file(),
                countLimit: Self.countLimit,
                byteLimit: Self.byteLimit
            )
            for row in rows {
                let entry = try await store.entry(forKey: row.key)
                #expect(entry?.value == row.value, "run \(run): \(row.key) does not read back")
            }
            let usage = try await store.usage()
            #expect(usage == CacheStoreUsage(count: rows.count, bytes: rows.reduce(0) { $0 + $1.value.count }))
            try await store.close()
        }
        #expect(sawEntries)
    }
}
#endif
