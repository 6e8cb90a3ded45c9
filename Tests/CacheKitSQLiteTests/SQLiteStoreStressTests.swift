#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Synchronization
import Testing

/// Many tasks on one store at once; CI runs this suite under ThreadSanitizer
/// (`swift test --sanitize=thread --filter StressTests`).
@Suite("SQLiteStore stress")
struct SQLiteStoreStressTests {
    @Test("concurrent reads, writes, removals and usage keep values whole and limits held")
    func concurrentOperations() async throws {
        let directory = try TemporaryDirectory()
        let problems = ProblemLog()
        let countLimit = 20
        let byteLimit = 2_000
        let store = try await SQLiteStore(
            path: directory.file(),
            countLimit: countLimit,
            byteLimit: byteLimit,
            policy: .wTinyLFU,
            problemHandler: problems.handler
        )
        let violations = Violations()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SplitMix(seed: UInt64(task))
                    for step in 0..<300 {
                        let key = "k\(random.next(below: 40))"
                        switch random.next(below: 10) {
                        case 0..<4:
                            // A value is its key's bytes repeated: a reader can tell whose it is.
                            let value = Data(repeating: UInt8(key.utf8.count), count: random.next(below: 200))
                            try await store.setEntry(value, forKey: key, expiresAt: nil)
                        case 4..<8:
                            if let hit = try await store.entry(forKey: key),
                                hit.value.contains(where: { $0 != UInt8(key.utf8.count) })
                            {
                                violations.record("task \(task) step \(step): wrong value for \(key)")
                            }
                        case 8:
                            try await store.removeEntry(forKey: key)
                        default:
                            let usage = try await store.usage()
                            if usage.count > countLimit || usage.bytes > byteLimit {
                                violations.record("task \(task) step \(step): \(usage)")
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(violations.all == [])
        #expect(problems.all == [])
        let usage = try await store.usage()
        #expect(usage.count <= countLimit && usage.bytes <= byteLimit)
        // Closing while other tasks still call in: each call either completes or throws closed.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for step in 0..<50 {
                        do throws(CacheStoreError) {
                            try await store.setEntry(Data(count: 3), forKey: "late\(task)-\(step)", expiresAt: nil)
                        } catch .closed {
                            return
                        }
                    }
                }
            }
            group.addTask { try await store.close() }
            try await group.waitForAll()
        }
    }
}

/// What the stress test's tasks found wrong.
final class Violations: Sendable {
    private let list = Mutex<[String]>([])

    var all: [String] { list.withLock { $0 } }

    func record(_ violation: String) { list.withLock { $0.append(violation) } }
}
#endif
