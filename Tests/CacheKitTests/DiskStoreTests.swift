import CacheKit
import Foundation
import Synchronization
import Testing
import _CacheKitShims

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory for one store, deleted with everything in it at the end.
final class StoreDirectory: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("DiskStore-\(UUID().uuidString)")
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    var journal: URL { url.appendingPathComponent("journal") }
    var entries: URL { url.appendingPathComponent("entries") }

    /// The entry files, without temporary files.
    func entryFiles() -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: entries.path)) ?? []
        return names.filter { !$0.hasSuffix(".tmp") }.sorted().map { entries.appendingPathComponent($0) }
    }
}

/// Collects what a store reports to its problem handler.
final class ProblemLog: Sendable {
    private let problems = Mutex<[CacheStoreProblem]>([])

    var handler: @Sendable (CacheStoreProblem) -> Void { { problem in self.problems.withLock { $0.append(problem) } } }
    var all: [CacheStoreProblem] { problems.withLock { $0 } }
    var keys: [String?] { all.map(\.key) }
}

/// The bytes of test value `n` for `key`: distinct for every key and `n`, `size` long.
func testValue(_ key: String, _ n: Int, size: Int = 32) -> Data {
    var seed: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in key.utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01B3 }
    var generator = SeededGenerator(seed: seed &+ UInt64(n))
    return Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
}

@Suite("DiskStore")
struct DiskStoreTests {
    let directory = StoreDirectory()
    let clock = ManualClock()

    func open(
        countLimit: Int = 0,
        byteLimit: Int = 1 << 20,
        problems: ProblemLog? = nil
    ) async throws(CacheStoreError) -> DiskStore {
        try await DiskStore(
            directory: directory.url,
            countLimit: countLimit,
            byteLimit: byteLimit,
            clock: .manual(clock),
            problemHandler: problems?.handler
        )
    }

    @Test("a value written reads back with its deadline; a replaced value reads as the new one")
    func roundTripAndReplace() async throws {
        let store = try await open()
        let deadline = Date(timeIntervalSince1970: 1_900_000_000)
        try await store.setEntry(Data("one".utf8), forKey: "a", expiresAt: deadline)
        #expect(try await store.entry(forKey: "a") == StoredEntry(value: Data("one".utf8), expiresAt: deadline))
        try await store.setEntry(Data("two!".utf8), forKey: "a", expiresAt: nil)
        #expect(try await store.entry(forKey: "a") == StoredEntry(value: Data("two!".utf8), expiresAt: nil))
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 4))
        #expect(directory.entryFiles().count == 1, "the replaced value's file is removed")
        #expect(try await store.entry(forKey: "b") == nil)
        try await store.setEntry(Data(), forKey: "empty", expiresAt: nil)
        #expect(try await store.entry(forKey: "empty")?.value == Data())
        try await store.close()
    }

    @Test("remove and removeAll empty the store and its directory; usage counts value bytes")
    func removeAndRemoveAll() async throws {
        let store = try await open()
        for i in 0..<5 {
            try await store.setEntry(testValue("k\(i)", 0, size: 10 * i), forKey: "k\(i)", expiresAt: nil)
        }
        #expect(try await store.usage() == CacheStoreUsage(count: 5, bytes: 100))
        #expect(try await store.removeEntry(forKey: "k1"))
        #expect(try await !store.removeEntry(forKey: "k1"))
        #expect(try await store.entry(forKey: "k1") == nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 4, bytes: 90))
        try await store.removeAll()
        #expect(try await store.usage() == CacheStoreUsage(count: 0, bytes: 0))
        #expect(try await store.entry(forKey: "k2") == nil)
        try await store.setEntry(Data("after".utf8), forKey: "k2", expiresAt: nil)
        try await store.close()  // waits for the background deletion
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(!names.contains { $0.hasPrefix("removing-") })
        #expect(directory.entryFiles().count == 1)
        let reopened = try await open()
        #expect(try await reopened.entry(forKey: "k2")?.value == Data("after".utf8))
        #expect(try await reopened.usage().count == 1)
        try await reopened.close()
    }

    @Test("after close every operation throws closed, and closing again is harmless")
    func closed() async throws {
        let store = try await open()
        try await store.setEntry(Data("x".utf8), forKey: "a", expiresAt: nil)
        try await store.close()
        try await store.close()
        let closed = CacheStoreError.closed(path: directory.url.standardizedFileURL.path)
        await #expect(throws: closed) { try await store.entry(forKey: "a") }
        await #expect(throws: closed) { try await store.setEntry(Data(), forKey: "a", expiresAt: nil) }
        await #expect(throws: closed) { try await store.removeEntry(forKey: "a") }
        await #expect(throws: closed) { try await store.removeAll() }
        await #expect(throws: closed) { try await store.usage() }
    }

    @Test("reopening keeps the entries, their values and their deadlines")
    func reopenKeepsEntries() async throws {
        let deadline = Date(timeIntervalSinceReferenceDate: 830_000_000.123_456_7)
        var store = try await open()
        for i in 0..<20 {
            try await store.setEntry(
                testValue("k\(i)", i),
                forKey: "k\(i)",
                expiresAt: i.isMultiple(of: 2) ? deadline : nil
            )
        }
        try await store.removeEntry(forKey: "k3")
        try await store.close()
        store = try await open()
        #expect(try await store.usage() == CacheStoreUsage(count: 19, bytes: 19 * 32))
        for i in 0..<20 where i != 3 {
            let entry = try await store.entry(forKey: "k\(i)")
            #expect(entry == StoredEntry(value: testValue("k\(i)", i), expiresAt: i.isMultiple(of: 2) ? deadline : nil))
        }
        #expect(try await store.entry(forKey: "k3") == nil)
        try await store.close()
    }

    @Test("an entry is never returned once its deadline has passed, and is dropped, now or on reopening")
    func expiry() async throws {
        var store = try await open()
        let now = WallClock.manual(clock).now()
        try await store.setEntry(Data("soon".utf8), forKey: "soon", expiresAt: now.addingTimeInterval(10))
        try await store.setEntry(Data("later".utf8), forKey: "later", expiresAt: now.addingTimeInterval(100))
        try await store.setEntry(Data("never".utf8), forKey: "never", expiresAt: nil)
        try await store.setEntry(Data("past".utf8), forKey: "past", expiresAt: now)
        #expect(try await store.entry(forKey: "past") == nil)
        #expect(try await store.entry(forKey: "soon") != nil)
        clock.advance(by: .seconds(10))
        #expect(try await store.entry(forKey: "soon") == nil)
        #expect(try await store.usage().count == 2)
        #expect(try await store.entry(forKey: "later") != nil)
        try await store.close()
        clock.advance(by: .seconds(90))
        store = try await open()
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 5))
        #expect(try await store.entry(forKey: "later") == nil)
        #expect(try await store.entry(forKey: "never")?.value == Data("never".utf8))
        try await store.close()
        #expect(directory.entryFiles().count == 1)
    }

    @Test("the limits hold after every write, against a reference model of an LRU store")
    func limitsAgainstModel() async throws {
        let countLimit = 12
        let byteLimit = 600
        let store = try await open(countLimit: countLimit, byteLimit: byteLimit)
        var generator = SeededGenerator(seed: 7)
        var model: [(key: String, size: Int)] = []  // least recently used first
        for step in 0..<400 {
            let key = "k\(Int.random(in: 0..<30, using: &generator))"
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let size = Int.random(in: 0...120, using: &generator)
                try await store.setEntry(testValue(key, step, size: size), forKey: key, expiresAt: nil)
                model.removeAll { $0.key == key }
                model.append((key, size))
                while model.count > countLimit || model.reduce(0, { $0 + $1.size }) > byteLimit { model.removeFirst() }
            case 6..<9:
                let found = try await store.entry(forKey: key)
                let index = model.firstIndex { $0.key == key }
                #expect((found != nil) == (index != nil), "step \(step): \(key)")
                if let index { model.append(model.remove(at: index)) }
                if let found, let index = model.lastIndex(where: { $0.key == key }) {
                    #expect(found.value.count == model[index].size)
                }
            default:
                let removed = try await store.removeEntry(forKey: key)
                #expect(removed == model.contains { $0.key == key })
                model.removeAll { $0.key == key }
            }
            let usage = try await store.usage()
            #expect(usage.count <= countLimit && usage.bytes <= byteLimit, "step \(step)")
            #expect(
                usage == CacheStoreUsage(count: model.count, bytes: model.reduce(0) { $0 + $1.size }),
                "step \(step)"
            )
        }
        try await store.close()
        #expect(directory.entryFiles().count == model.count, "evicted entries' files are removed")
    }

    @Test("a value larger than the byte limit is refused with tooLarge, and the key's older entry is removed")
    func tooLarge() async throws {
        let store = try await open(byteLimit: 100)
        try await store.setEntry(Data(count: 100), forKey: "a", expiresAt: nil)
        await #expect(throws: CacheStoreError.tooLarge(key: "a", bytes: 101, limit: 100)) {
            try await store.setEntry(Data(count: 101), forKey: "a", expiresAt: nil)
        }
        #expect(try await store.entry(forKey: "a") == nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 0, bytes: 0))
        await #expect(throws: CacheStoreError.self) { try await store.setEntry(Data(), forKey: "", expiresAt: nil) }
        try await store.close()
    }

    @Test("a second store on the directory gets locked until the first closes")
    func locked() async throws {
        let store = try await open()
        try await store.setEntry(Data("x".utf8), forKey: "a", expiresAt: nil)
        await #expect(throws: CacheStoreError.locked(path: directory.url.standardizedFileURL.path)) {
            try await open()
        }
        try await store.close()
        let second = try await open()
        #expect(try await second.entry(forKey: "a")?.value == Data("x".utf8))
        try await second.close()
    }

    @Test("entry files are flushed before their rename only with durability powerLoss", arguments: [false, true])
    func durability(flushed: Bool) async throws {
        let store = try await DiskStore(
            directory: directory.url,
            byteLimit: 1 << 20,
            clock: .manual(clock),
            durability: flushed ? .powerLoss : .processCrash
        )
        for i in 0..<3 { try await store.setEntry(testValue("k\(i)", i), forKey: "k\(i)", expiresAt: nil) }
        #expect(store.faults.flushCount(of: .entryFile) == (flushed ? 3 : 0))
        try await store.close()
        let reopened = try await open()
        for i in 0..<3 { #expect(try await reopened.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await reopened.close()
    }

    @Test("deleting the lock file of an open store does not let a second store open its directory")
    func lockFileDeleted() async throws {
        let store = try await open()
        try await store.setEntry(Data("x".utf8), forKey: "a", expiresAt: nil)
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("lock"))
        await #expect(throws: CacheStoreError.locked(path: directory.url.standardizedFileURL.path)) {
            try await open()
        }
        try await store.close()
        let second = try await open()
        #expect(try await second.entry(forKey: "a")?.value == Data("x".utf8))
        try await second.close()
    }

    @Test("reopening with a lower byte limit drops what no longer fits, files included")
    func lowerLimitsOnReopening() async throws {
        var store = try await open(byteLimit: 1_000)
        try await store.setEntry(Data(count: 600), forKey: "large", expiresAt: nil)
        try await store.setEntry(Data(count: 100), forKey: "small", expiresAt: nil)
        try await store.close()
        store = try await open(byteLimit: 500)
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 100))
        #expect(try await store.entry(forKey: "large") == nil)
        try await store.close()
        #expect(directory.entryFiles().count == 1)
        store = try await open(byteLimit: 1_000)
        #expect(try await store.usage() == CacheStoreUsage(count: 1, bytes: 100), "the drop was journaled")
        try await store.close()
    }

    @Test("the journal is compacted as it grows, by writes and by reads, and replays to the same entries")
    func compaction() async throws {
        var store = try await open(countLimit: 10)
        for step in 0..<2_000 {
            try await store.setEntry(testValue("k\(step % 20)", step), forKey: "k\(step % 20)", expiresAt: nil)
        }
        for _ in 0..<200 { for i in 10..<20 { _ = try await store.entry(forKey: "k\(i)") } }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: directory.journal.path)[.size] as? Int)
        #expect(size < 60_000, "2 000 writes and 2 000 reads of ten entries leave a short journal")
        try await store.close()
        store = try await open(countLimit: 10)
        #expect(try await store.usage() == CacheStoreUsage(count: 10, bytes: 320))
        for i in 10..<20 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", 1_980 + i)) }
        try await store.close()
        #expect(directory.entryFiles().count == 10)
    }

    @Test("closing at once from two tasks: both return with the directory free")
    func concurrentClose() async throws {
        let store = try await open()
        try await store.removeAll()  // leaves a background deletion for close to wait for
        async let first: Void = store.close()
        async let second: Void = store.close()
        _ = try await (first, second)
        let reopened = try await open()
        try await reopened.close()
    }

    @Test("a store released without close journals its reads and frees the directory")
    func releasedWithoutClose() async throws {
        var store: DiskStore? = try await open(countLimit: 3)
        for key in ["a", "b", "c"] { try await store!.setEntry(Data(key.utf8), forKey: key, expiresAt: nil) }
        _ = try await store!.entry(forKey: "a")
        store = nil
        let reopened = try await open(countLimit: 3)
        try await reopened.setEntry(Data("d".utf8), forKey: "d", expiresAt: nil)  // evicts b, read least recently
        #expect(try await reopened.entry(forKey: "b") == nil)
        #expect(try await reopened.entry(forKey: "a")?.value == Data("a".utf8))
        try await reopened.close()
    }

    @Test("the eviction order survives a restart: the entries read recently stay")
    func accessOrderSurvivesRestart() async throws {
        var store = try await open(countLimit: 100)
        for i in 0..<100 { try await store.setEntry(testValue("k\(i)", 0), forKey: "k\(i)", expiresAt: nil) }
        for i in 0..<50 { _ = try await store.entry(forKey: "k\(i)") }  // k50 ..< k100 are now the oldest
        try await store.close()
        store = try await DiskStore(directory: directory.url, countLimit: 50, byteLimit: 1 << 20, clock: .manual(clock))
        for i in 0..<50 { #expect(try await store.entry(forKey: "k\(i)") != nil, "k\(i)") }
        #expect(try await store.usage().count == 50)
        try await store.close()
        #expect(directory.entryFiles().count == 50)
    }
}

@Suite("CRC-32C")
struct CRC32CTests {
    @Test func matchesTheStandardCheckValue() {
        #expect(_cachekit_crc32c(0, Array("123456789".utf8), 9) == 0xE306_9283)
        #expect(_cachekit_crc32c(0, nil, 0) == 0)
    }

    @Test func theLaneChecksumIsCRC32COfTheLanesAndTheTail() {
        // 32 bytes: one block, each lane one word, no tail.
        let block = (0..<32).map { UInt8($0) }
        var summary: [UInt8] = []
        for lane in 0..<4 {
            let crc = _cachekit_crc32c(0, Array(block[(lane * 8)..<(lane * 8 + 8)]), 8)
            summary += withUnsafeBytes(of: crc.littleEndian) { Array($0) }
        }
        #expect(_cachekit_checksum(block, 32) == _cachekit_crc32c(0, summary, 16))
        // A flipped bit anywhere changes it.
        for index in block.indices {
            var damaged = block
            damaged[index] ^= 0x10
            #expect(_cachekit_checksum(damaged, 32) != _cachekit_checksum(block, 32))
        }
    }

    @Test func theInstructionAndTheTablesAgreeOnEveryLengthAndAlignment() {
        var random = SeededGenerator(seed: 7)
        let bytes = (0..<600).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes.withUnsafeBytes { buffer in
            for start in 0..<9 {
                for count in 0..<(buffer.count - start) {
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
                    let fast = _cachekit_crc32c(0, slice.baseAddress, count)
                    #expect(fast == _cachekit_crc32c_tables(0, slice.baseAddress, count))
                    // In two pieces, continued from the first piece's checksum.
                    let half = count / 2
                    let first = _cachekit_crc32c(0, slice.baseAddress, half)
                    #expect(_cachekit_crc32c(first, slice.baseAddress.map { $0 + half }, count - half) == fast)
                    #expect(
                        _cachekit_checksum(slice.baseAddress, count)
                            == _cachekit_checksum_tables(slice.baseAddress, count)
                    )
                }
            }
        }
    }
}
