#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Testing

/// SQLiteStore as the second level of a TieredCache.
@Suite("SQLiteStore beneath TieredCache")
struct SQLiteStoreTieredTests {
    @Test("values outlive the memory level and the process, and expire on both levels together")
    func tieredOverSQLite() async throws {
        let directory = try TemporaryDirectory()
        let clock = ManualClock()
        let wall = WallClock.manual(clock)
        func open() async throws -> SQLiteStore {
            try await SQLiteStore(path: directory.file(), byteLimit: 1 << 16, clock: wall)
        }
        let store = try await open()
        let first = TieredCache<Int, String>(countLimit: 2, store: store, clock: wall)
        for key in 0..<5 { try await first.setValue("v\(key)", forKey: key, expiresAfter: .seconds(60)) }
        try await first.setValue("kept", forKey: 99)
        #expect(try await store.usage().count == 6)
        try await first.close()

        // Another run: an empty memory level over the reopened database.
        let reopened = try await open()
        let second = TieredCache<Int, String>(countLimit: 2, store: reopened, clock: wall)
        for key in 0..<5 { #expect(await second.value(forKey: key) == "v\(key)") }
        clock.advance(by: .seconds(60))
        for key in 0..<5 { #expect(await second.value(forKey: key) == nil) }
        #expect(await second.value(forKey: 99) == "kept")
        #expect(try await reopened.usage().count == 1)
        try await second.close()
        #expect(await storeError { () async throws(CacheStoreError) in try await reopened.usage() } != nil)
    }
}
#endif
