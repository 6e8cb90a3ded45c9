#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Testing

@Suite("SQLiteStore")
struct SQLiteStoreTests {
    let directory: TemporaryDirectory
    let clock = ManualClock()
    var wallClock: WallClock { .manual(clock) }

    init() throws { directory = try TemporaryDirectory() }

    func open(
        countLimit: Int = 0,
        byteLimit: Int = 1 << 20,
        policy: EvictionPolicy = .lru,
        problems: ProblemLog? = nil
    ) async throws(CacheStoreError) -> SQLiteStore {
        try await SQLiteStore(
            path: directory.file(),
            countLimit: countLimit,
            byteLimit: byteLimit,
            policy: policy,
            clock: wallClock,
            problemHandler: problems?.handler
        )
    }

    @Test("an entry reads back with its value and deadline")
    func roundTrip() async throws {
        let store = try await open()
        let deadline = wallClock.now().addingTimeInterval(60.125)
        try await store.setEntry(Data("hello".utf8), forKey: "greeting", expiresAt: deadline)
        try await store.setEntry(Data(), forKey: "empty", expiresAt: nil)
        try await store.setEntry(Data("nul".utf8), forKey: "a\u{0}b", expiresAt: nil)
        #expect(
            try await store.entry(forKey: "greeting") == StoredEntry(value: Data("hello".utf8), expiresAt: deadline)
        )
        #expect(try await store.entry(forKey: "empty") == StoredEntry(value: Data(), expiresAt: nil))
        #expect(try await store.entry(forKey: "a\u{0}b")?.value == Data("nul".utf8))
        #expect(try await store.entry(forKey: "a") == nil)
        #expect(try await store.entry(forKey: "missing") == nil)
        try await store.close()
    }

    @Test("a write replaces the entry, its deadline and its bytes in the usage")
    func replace() async throws {
        let store = try await open()
        try await store.setEntry(bytes(10), forKey: "k", expiresAt: wallClock.now().addingTimeInterval(5))
        try await store.setEntry(bytes(3, 1), forKey: "k", expiresAt: nil)
        #expect(try await store.entry(forKey: "k") == StoredEntry(value: bytes(3, 1), expiresAt: nil))
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 3))
        try await store.close()
    }

    @Test("remove says whether there was an entry; removeAll empties the store")
    func removal() async throws {
        let store = try await open()
        for i in 0..<5 { try await store.setEntry(bytes(i + 1), forKey: "k\(i)", expiresAt: nil) }
        #expect(try await store.usage() == CacheStoreUsage(count: 5, bytes: 15))
        #expect(try await store.removeEntry(forKey: "k2"))
        #expect(try await !store.removeEntry(forKey: "k2"))
        #expect(try await store.entry(forKey: "k2") == nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 4, bytes: 12))
        try await store.removeAll()
        #expect(try await store.usage() == CacheStoreUsage(count: 0, bytes: 0))
        #expect(try await store.entry(forKey: "k0") == nil)
        try await store.close()
        let reopened = try await open()
        #expect(try await reopened.usage() == CacheStoreUsage(count: 0, bytes: 0))
        try await reopened.close()
    }

    @Test("after close every operation throws closed, closing again is harmless, and the lock is free")
    func closed() async throws {
        let store = try await open()
        try await store.setEntry(bytes(1), forKey: "k", expiresAt: nil)
        try await store.close()
        try await store.close()
        let closed = CacheStoreError.closed(path: directory.file().path)
        #expect(await storeError { () async throws(CacheStoreError) in try await store.entry(forKey: "k") } == closed)
        #expect(
            await storeError { () async throws(CacheStoreError) in
                try await store.setEntry(bytes(1), forKey: "k", expiresAt: nil)
            } == closed
        )
        #expect(
            await storeError { () async throws(CacheStoreError) in try await store.removeEntry(forKey: "k") } == closed
        )
        #expect(await storeError { () async throws(CacheStoreError) in try await store.removeAll() } == closed)
        #expect(await storeError { () async throws(CacheStoreError) in try await store.usage() } == closed)
        let next = try await open()
        #expect(try await next.entry(forKey: "k")?.value == bytes(1))
        try await next.close()
    }

    @Test("a reopened store keeps its entries, their deadlines and their order of use")
    func reopen() async throws {
        let store = try await open(countLimit: 3)
        let deadline = wallClock.now().addingTimeInterval(1_234.567_891)
        try await store.setEntry(bytes(1), forKey: "a", expiresAt: deadline)
        try await store.setEntry(bytes(2), forKey: "b", expiresAt: nil)
        try await store.setEntry(bytes(3), forKey: "c", expiresAt: nil)
        _ = try await store.entry(forKey: "a")  // recorded in memory, written at close
        try await store.close()

        let reopened = try await open(countLimit: 3)
        #expect(try await reopened.usage() == CacheStoreUsage(count: 3, bytes: 6))
        #expect(try await reopened.entry(forKey: "a") == StoredEntry(value: bytes(1), expiresAt: deadline))
        try await reopened.setEntry(bytes(4), forKey: "d", expiresAt: nil)  // evicts b, the least recently used
        #expect(try await reopened.entry(forKey: "b") == nil)
        #expect(try await reopened.entry(forKey: "c") != nil)
        try await reopened.close()
    }

    @Test("an entry past its deadline is never returned and is dropped")
    func expiry() async throws {
        let store = try await open()
        try await store.setEntry(bytes(4), forKey: "short", expiresAt: wallClock.now().addingTimeInterval(10))
        try await store.setEntry(bytes(5), forKey: "long", expiresAt: wallClock.now().addingTimeInterval(100))
        try await store.setEntry(bytes(6), forKey: "never", expiresAt: nil)
        clock.advance(by: .seconds(9))
        #expect(try await store.entry(forKey: "short") != nil)
        clock.advance(by: .seconds(1))
        #expect(try await store.entry(forKey: "short") == nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 2, bytes: 11))
        clock.advance(by: .seconds(100))
        try await store.setEntry(bytes(1), forKey: "other", expiresAt: nil)  // a write drops what expired
        #expect(try await store.usage() == CacheStoreUsage(count: 2, bytes: 7))
        #expect(try await !store.removeEntry(forKey: "long"))
        // A deadline already passed stores nothing and removes the previous entry.
        try await store.setEntry(bytes(2), forKey: "never", expiresAt: wallClock.now())
        #expect(try await store.entry(forKey: "never") == nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 1))
        try await store.close()
    }

    @Test("expired entries are dropped when the store opens")
    func expiryAtOpen() async throws {
        let store = try await open()
        try await store.setEntry(bytes(4), forKey: "k", expiresAt: wallClock.now().addingTimeInterval(10))
        try await store.close()
        clock.advance(by: .seconds(10))
        let reopened = try await open()
        #expect(try await reopened.usage() == CacheStoreUsage(count: 0, bytes: 0))
        try await reopened.close()
    }

    @Test("a value larger than the byte limit is refused; one of exactly the limit evicts the rest")
    func tooLarge() async throws {
        let store = try await open(byteLimit: 100)
        try await store.setEntry(bytes(40), forKey: "a", expiresAt: nil)
        let error = await storeError { () async throws(CacheStoreError) in
            try await store.setEntry(bytes(101), forKey: "big", expiresAt: nil)
        }
        #expect(error == .tooLarge(key: "big", bytes: 101, limit: 100))
        #expect(try await store.entry(forKey: "a") != nil)
        // A refused write of a key that holds a value removes that value, as DiskStore does.
        try await store.setEntry(bytes(10), forKey: "b", expiresAt: nil)
        let replaced = await storeError { () async throws(CacheStoreError) in
            try await store.setEntry(bytes(101), forKey: "b", expiresAt: nil)
        }
        #expect(replaced == .tooLarge(key: "b", bytes: 101, limit: 100))
        #expect(try await store.entry(forKey: "b") == nil, "no stale value survives a refused write")
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 40))
        try await store.setEntry(bytes(100), forKey: "full", expiresAt: nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 100))
        #expect(try await store.entry(forKey: "a") == nil)
        try await store.close()
    }

    @Test("keys outside 1 to 4096 bytes are refused")
    func invalidKeys() async throws {
        let store = try await open()
        let empty = await storeError { () async throws(CacheStoreError) in
            try await store.setEntry(bytes(1), forKey: "", expiresAt: nil)
        }
        guard case .invalidKey = empty else {
            Issue.record("empty key: \(String(describing: empty))")
            return
        }
        let long = String(repeating: "x", count: SQLiteStore.maximumKeyBytes + 1)
        let tooLong = await storeError { () async throws(CacheStoreError) in try await store.entry(forKey: long) }
        guard case .invalidKey = tooLong else {
            Issue.record("long key: \(String(describing: tooLong))")
            return
        }
        try await store.close()
    }

    @Test("a store with a smaller limit evicts at open, by its policy")
    func smallerLimitsAtOpen() async throws {
        let store = try await open()
        for i in 0..<10 { try await store.setEntry(bytes(10), forKey: "k\(i)", expiresAt: nil) }
        try await store.close()
        let smaller = try await open(countLimit: 4, byteLimit: 35)
        #expect(try await smaller.usage() == CacheStoreUsage(count: 3, bytes: 30))
        for i in 7..<10 { #expect(try await smaller.entry(forKey: "k\(i)") != nil) }
        try await smaller.close()
    }

    @Test("reads write their access order in one batch, not one write per read")
    func accessBatching() async throws {
        let store = try await open()
        try await store.setEntry(bytes(1), forKey: "k", expiresAt: nil)
        let observer = try SQLiteConnection(path: directory.file().path)
        let written = try observer.integer("SELECT access FROM cachekit_entries WHERE key = 'k'")
        let reads = "SELECT count(*) FROM cachekit_reads WHERE key = 'k'"
        for _ in 1..<SQLiteStoreState.accessFlushInterval { _ = try await store.entry(forKey: "k") }
        #expect(try observer.integer(reads) == 0)
        _ = try await store.entry(forKey: "k")
        #expect(try observer.integer(reads) == 1)
        #expect(try observer.integer("SELECT access FROM cachekit_reads WHERE key = 'k'") > written)
        // Recording reads never rewrites the entry's row.
        #expect(try observer.integer("SELECT access FROM cachekit_entries WHERE key = 'k'") == written)
        observer.close()
        try await store.close()
    }

    @Test("a reopened store evicts in the order of the last reads before close, repeated reads included")
    func readOrderAcrossReopen() async throws {
        // More keys than one statement writes, so the records go out in several statements.
        let count = 150
        let keys = (0..<count).map { "k\($0)" }
        let store = try await open(countLimit: count)
        for key in keys { try await store.setEntry(bytes(1), forKey: key, expiresAt: nil) }
        var random = SplitMix(seed: 11)
        var order = keys  // least recently used first
        for key in keys.shuffled(using: &random) + keys.prefix(40).shuffled(using: &random) + ["k7", "k3", "k7"] {
            #expect(try await store.entry(forKey: key) != nil)
            order.removeAll { $0 == key }
            order.append(key)
        }
        try await store.close()

        // Each new entry evicts one: the least recently used, in the order of the reads.
        let reopened = try await open(countLimit: count)
        for (index, key) in order.enumerated() {
            try await reopened.setEntry(bytes(1), forKey: "new\(index)", expiresAt: nil)
            #expect(try await reopened.entry(forKey: key) == nil, "eviction \(index): \(key)")
        }
        try await reopened.close()
    }

    @Test("an entry whose row is damaged is a miss, dropped and reported")
    func damagedEntry() async throws {
        let problems = ProblemLog()
        let store = try await open(problems: problems)
        try await store.setEntry(bytes(8), forKey: "bad", expiresAt: nil)
        try await store.setEntry(bytes(8), forKey: "good", expiresAt: nil)
        let writer = try SQLiteConnection(path: directory.file().path)
        try writer.execute("UPDATE cachekit_entries SET value = x'0102' WHERE key = 'bad'")
        writer.close()
        #expect(try await store.entry(forKey: "bad") == nil)
        #expect(try await store.entry(forKey: "good")?.value == bytes(8))
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 8))
        #expect(problems.all.map(\.key) == ["bad"])
        guard case .corrupted = problems.all.first?.error else {
            Issue.record("expected a corrupted problem: \(problems.all)")
            return
        }
        try await store.close()
    }
}
#endif
