#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Testing

/// A store on a file system that fills up: a tmpfs of a few megabytes.
@Suite("SQLiteStore on a full disk")
struct SQLiteStoreFullDiskTests {
    /// SQLite's result code for a full disk, `SQLITE_FULL`.
    static let diskFull: Int32 = 13
    static let valueBytes = 3_000

    /// The value of entry `index`: its bytes depend on the index, so each entry reads back as its
    /// own.
    static func value(_ index: Int) -> Data {
        Data((0..<valueBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7) })
    }

    /// Whether `error` is SQLite's full-disk error.
    static func isDiskFull(_ error: CacheStoreError?) -> Bool {
        guard case .database(_, let code, _) = error else { return false }
        return code & 0xFF == diskFull
    }

    /// Expects `store` to hold exactly `entries`.
    static func expectContents(_ store: SQLiteStore, _ entries: [String: Data]) async throws {
        #expect(
            try await store.usage()
                == CacheStoreUsage(count: entries.count, bytes: entries.values.reduce(0) { $0 + $1.count })
        )
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            #expect(try await store.entry(forKey: key)?.value == value, "\(key)")
        }
    }

    @Test(
        "a full disk fails a write with a typed error; earlier entries read back; the store reopens and recovers",
        .enabled(if: TmpfsMount.isAvailable, "mounting a tmpfs needs Linux and root (CAP_SYS_ADMIN): skipped")
    )
    func fullDisk() async throws {
        let mount = try #require(TmpfsMount(bytes: 4 << 20))
        defer { mount.unmount() }
        // Another program's file on the same file system, deleted later to free space. (Removals
        // alone cannot make room on a full disk: SQLite logs a delete like any other change, and
        // the log gives its space back only once it is copied into the database, which grows.)
        let other = mount.url.appendingPathComponent("other")
        try Data(repeating: 1, count: 2 << 20).write(to: other)
        let path = mount.url.appendingPathComponent("store.sqlite")
        func open() async throws(CacheStoreError) -> SQLiteStore {
            try await SQLiteStore(path: path, byteLimit: 1 << 30)
        }

        var store = try await open()
        var entries: [String: Data] = [:]
        var failure: CacheStoreError?
        for index in 0..<10_000 {
            do throws(CacheStoreError) {
                try await store.setEntry(Self.value(index), forKey: "k\(index)", expiresAt: nil)
                entries["k\(index)"] = Self.value(index)
            } catch {
                failure = error
                break
            }
        }
        #expect(Self.isDiskFull(failure), "\(String(describing: failure))")
        #expect(mount.freeBytes < Self.valueBytes + 4_096, "the file system is full")
        #expect(entries.count > 100)
        #expect(try await store.entry(forKey: "k\(entries.count)") == nil)
        try await Self.expectContents(store, entries)

        // While the disk is full, a removal either happens or throws and leaves the entry.
        let removed = await storeError { () async throws(CacheStoreError) in try await store.removeEntry(forKey: "k0") }
        if let removed {
            #expect(Self.isDiskFull(removed), "\(removed)")
        } else {
            entries["k0"] = nil
        }
        try await Self.expectContents(store, entries)

        // Closing may fail to write the access records; the database still reopens whole.
        let closing = await storeError { () async throws(CacheStoreError) in try await store.close() }
        #expect(closing == nil || Self.isDiskFull(closing), "\(String(describing: closing))")
        store = try await open()
        try await Self.expectContents(store, entries)

        // Once space is freed, removals and writes work again.
        try FileManager.default.removeItem(at: other)
        for index in 1...20 {
            #expect(try await store.removeEntry(forKey: "k\(index)"))
            entries["k\(index)"] = nil
        }
        for index in 20_000..<20_020 {
            try await store.setEntry(Self.value(index), forKey: "k\(index)", expiresAt: nil)
            entries["k\(index)"] = Self.value(index)
        }
        try await Self.expectContents(store, entries)
        try await store.close()
        store = try await open()
        try await Self.expectContents(store, entries)
        try await store.close()
    }
}
#endif
