import CacheKit
import Foundation
import Testing

/// Run under ThreadSanitizer in CI (`swift test --sanitize=thread --filter StressTests`).
@Suite("DiskStoreStressTests")
struct DiskStoreStressTests {
    @Test("tasks mixing reads, writes, removals and removeAll leave a consistent store within its limits")
    func mixedOperations() async throws {
        let directory = StoreDirectory()
        let problems = ProblemLog()
        let countLimit = 24
        let byteLimit = 2_000
        let store = try await DiskStore(
            directory: directory.url,
            countLimit: countLimit,
            byteLimit: byteLimit,
            problemHandler: problems.handler
        )
        let keys = (0..<32).map { "k\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<6 {
                group.addTask {
                    var generator = SeededGenerator(seed: UInt64(task))
                    for step in 0..<150 {
                        let key = keys.randomElement(using: &generator)!
                        do {
                            switch Int.random(in: 0..<20, using: &generator) {
                            case 0..<9:
                                let version = task * 1_000 + step
                                let size = Int.random(in: 0...140, using: &generator)
                                try await store.setEntry(
                                    Self.value(key, version, size: size),
                                    forKey: key,
                                    expiresAt: nil
                                )
                            case 9..<16:
                                if let entry = try await store.entry(forKey: key) {
                                    #expect(Self.isValid(entry.value, key: key), "\(key) read back damaged")
                                }
                            case 16..<19:
                                try await store.removeEntry(forKey: key)
                            default:
                                if step.isMultiple(of: 7) { try await store.removeAll() }
                                let usage = try await store.usage()
                                #expect(usage.count <= countLimit && usage.bytes <= byteLimit)
                            }
                        } catch {
                            Issue.record("task \(task), step \(step): \(error)")
                        }
                    }
                }
            }
        }
        let usage = try await store.usage()
        #expect(usage.count <= countLimit && usage.bytes <= byteLimit)
        var found = CacheStoreUsage(count: 0, bytes: 0)
        for key in keys {
            guard let entry = try await store.entry(forKey: key) else { continue }
            #expect(Self.isValid(entry.value, key: key))
            found.count += 1
            found.bytes += entry.value.count
        }
        #expect(found == usage, "every entry the store counts reads back")
        try await store.close()
        #expect(directory.entryFiles().count == usage.count, "no file outlives its entry")
        #expect(problems.all.isEmpty)
        let reopened = try await DiskStore(directory: directory.url, countLimit: countLimit, byteLimit: byteLimit)
        #expect(try await reopened.usage() == usage)
        try await reopened.close()
    }

    /// The value written for `key` at `version`: `key|version|`, then `size` bytes made from both.
    static func value(_ key: String, _ version: Int, size: Int) -> Data {
        Data("\(key)|\(version)|".utf8) + testValue(key, version, size: size)
    }

    /// Whether `value` is one the test writes for `key`.
    static func isValid(_ value: Data, key: String) -> Bool {
        let fields = value.split(separator: UInt8(ascii: "|"), maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0].elementsEqual(key.utf8),
            let version = Int(String(decoding: fields[1], as: UTF8.self))
        else { return false }
        return Self.value(key, version, size: fields[2].count) == value
    }
}
