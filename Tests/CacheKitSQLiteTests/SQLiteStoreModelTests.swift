#if SQLite
import CacheKit
import CacheKitSQLite
import CacheKitTestSupport
import Foundation
import Testing

/// Random operations applied to a store and to a reference model, compared after every step.
@Suite("SQLiteStore model")
struct SQLiteStoreModelTests {
    /// A plain LRU model: entries with their values, least recently used first.
    struct LRUModel {
        let countLimit: Int
        let byteLimit: Int
        var entries: [(key: String, value: Data)] = []

        var bytes: Int { entries.reduce(0) { $0 + $1.value.count } }

        mutating func get(_ key: String) -> Data? {
            guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
            let entry = entries.remove(at: index)
            entries.append(entry)
            return entry.value
        }

        mutating func set(_ value: Data, _ key: String) {
            entries.removeAll { $0.key == key }
            entries.append((key, value))
            while (countLimit > 0 && entries.count > countLimit) || bytes > byteLimit { entries.removeFirst() }
        }

        mutating func remove(_ key: String) -> Bool {
            let before = entries.count
            entries.removeAll { $0.key == key }
            return entries.count != before
        }
    }

    @Test("LRU: every read, write and usage agrees with the model, across reopens", arguments: [1, 2, 3])
    func lruAgainstModel(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var random = SplitMix(seed: seed)
        let countLimit = 12
        let byteLimit = 600
        var model = LRUModel(countLimit: countLimit, byteLimit: byteLimit)
        func open() async throws -> SQLiteStore {
            try await SQLiteStore(path: directory.file(), countLimit: countLimit, byteLimit: byteLimit)
        }
        var store = try await open()
        for step in 0..<1_500 {
            let key = "k\(random.next(below: 30))"
            switch random.next(below: 100) {
            case 0..<45:
                let value = bytes(random.next(below: 150), UInt8(step % 251))
                try await store.setEntry(value, forKey: key, expiresAt: nil)
                model.set(value, key)
                let usage = try await store.usage()
                #expect(usage.count <= countLimit && usage.bytes <= byteLimit, "step \(step): \(usage)")
            case 45..<85:
                #expect(try await store.entry(forKey: key)?.value == model.get(key), "step \(step): \(key)")
            case 85..<97:
                #expect(try await store.removeEntry(forKey: key) == model.remove(key), "step \(step): \(key)")
            default:
                try await store.close()
                store = try await open()
            }
            #expect(
                try await store.usage() == CacheStoreUsage(count: model.entries.count, bytes: model.bytes),
                "step \(step)"
            )
        }
        for (key, value) in model.entries { #expect(try await store.entry(forKey: key)?.value == value) }
        try await store.close()
    }

    @Test(
        "every policy, with or without a count limit: limits hold after each write, a hit is the last value written",
        arguments: EvictionPolicy.allCases,
        [0, 10]
    )
    func limitsForEveryPolicy(policy: EvictionPolicy, countLimit: Int) async throws {
        let directory = try TemporaryDirectory()
        var random = SplitMix(seed: 7)
        let byteLimit = 400
        let store = try await SQLiteStore(
            path: directory.file(),
            countLimit: countLimit,
            byteLimit: byteLimit,
            policy: policy
        )
        // A second connection reads what the database holds, not what the store's index says.
        let observer = try SQLiteConnection(path: directory.file().path)
        defer { observer.close() }
        var latest: [String: Data] = [:]
        for step in 0..<800 {
            let key = "k\(random.next(below: 25))"
            if random.next(below: 2) == 0 {
                let value = bytes(random.next(below: 120), UInt8(step % 251))
                try await store.setEntry(value, forKey: key, expiresAt: nil)
                latest[key] = value
                let usage = try await store.usage()
                #expect(
                    (countLimit == 0 || usage.count <= countLimit) && usage.bytes <= byteLimit,
                    "\(policy) step \(step): \(usage)"
                )
                let stored = try observer.integer("SELECT count(*) FROM cachekit_entries")
                let storedBytes = try observer.integer("SELECT coalesce(sum(length(value)), 0) FROM cachekit_entries")
                #expect(stored == Int64(usage.count) && storedBytes == Int64(usage.bytes), "\(policy) step \(step)")
            } else if let hit = try await store.entry(forKey: key) {
                #expect(hit.value == latest[key], "\(policy) step \(step): \(key)")
            }
        }
        try await store.close()
    }
}

/// The tests' seeded generator (SplitMix64), from CacheKitTestSupport.
typealias SplitMix = CacheKitTestSupport.SeededGenerator
#endif
