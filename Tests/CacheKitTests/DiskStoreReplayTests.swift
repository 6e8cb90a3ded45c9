import CacheKit
import Foundation
import Testing
import _CacheKitShims

#if canImport(Glibc)
import Glibc
#endif

/// Opening replays the journal by one of two paths: a journal of set records only (compacted,
/// perhaps with sets appended) goes straight into the index; one holding reads or removes is
/// worked out record by record. Both must give the order of last use and the last values.
@Suite("DiskStore replay")
struct DiskStoreReplayTests: DiskStoreSuite {
    let directory = StoreDirectory()
    let clock = ManualClock()
    let problems = ProblemLog()

    /// What an LRU store holds: its keys least recently used first, and their values.
    struct Model {
        var order: [String] = []
        var values: [String: Data] = [:]

        mutating func set(_ key: String, _ value: Data) {
            order.removeAll { $0 == key }
            order.append(key)
            values[key] = value
        }

        mutating func read(_ key: String) {
            guard values[key] != nil else { return }
            order.removeAll { $0 == key }
            order.append(key)
        }

        mutating func remove(_ key: String) {
            order.removeAll { $0 == key }
            values[key] = nil
        }
    }

    /// The type bytes of the journal's records, in order (1 set, 2 remove, 3 touch, 4 closed,
    /// 5 reserve).
    func recordTypes() throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: directory.journal))
        var types: [UInt8] = []
        var offset = 24
        while offset + 8 < bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            types.append(bytes[offset + 8])
            offset += 8 + length
        }
        return types
    }

    /// Opens the store and checks that its index is `model`, in order, and that every value reads
    /// back; closes it.
    func expectReopened(matching model: Model, byteLimit: Int = 1 << 20) async throws {
        let store = try await open(byteLimit: byteLimit)
        #expect(store._keysInEvictionOrder() == model.order)
        for key in model.order { #expect(try await store.entry(forKey: key)?.value == model.values[key], "\(key)") }
        #expect(try await store.usage().count == model.order.count)
        try await store.close()
    }

    /// Writes `k0` … `k9`, reads `k2` and `k5`, writes an entry that expires, then reopens the
    /// store after its deadline: dropping it compacts the journal. Returns the open store.
    func compactedStore(_ model: inout Model) async throws -> DiskStore {
        let first = try await open()
        for i in 0..<10 {
            try await first.setEntry(testValue("k\(i)", i), forKey: "k\(i)", expiresAt: nil)
            model.set("k\(i)", testValue("k\(i)", i))
        }
        for key in ["k2", "k5"] {
            _ = try await first.entry(forKey: key)
            model.read(key)
        }
        let now = WallClock.manual(clock).now()
        try await first.setEntry(Data("gone".utf8), forKey: "gone", expiresAt: now.addingTimeInterval(1))
        try await first.close()
        clock.advance(by: .seconds(2))
        let store = try await open()
        #expect(try recordTypes() == Array(repeating: 1, count: 10), "the journal is compacted")
        return store
    }

    @Test("a compacted journal with sets appended replays straight to the order of last use")
    func compactedWithSets() async throws {
        var model = Model()
        let store = try await compactedStore(&model)
        for key in ["n0", "n1"] {
            try await store.setEntry(testValue(key, 0), forKey: key, expiresAt: nil)
            model.set(key, testValue(key, 0))
        }
        try await store.close()
        #expect(try !recordTypes().contains { $0 == 2 || $0 == 3 }, "sets only")
        try await expectReopened(matching: model)
        #expect(problems.all.isEmpty)
    }

    @Test("reads, removes and replacements after compaction replay to the order of last use")
    func compactedWithReadsAndRemoves() async throws {
        var model = Model()
        let store = try await compactedStore(&model)
        // Reads reach the journal in batches, after the writes made meanwhile: the writes come
        // first here so that the journal's order is the order of use.
        try await store.setEntry(testValue("n0", 0), forKey: "n0", expiresAt: nil)
        model.set("n0", testValue("n0", 0))
        try await store.removeEntry(forKey: "k3")
        model.remove("k3")
        try await store.setEntry(testValue("k5", 1), forKey: "k5", expiresAt: nil)
        model.set("k5", testValue("k5", 1))
        for key in ["k0", "k9", "k2", "k7"] {
            _ = try await store.entry(forKey: key)
            model.read(key)
        }
        try await store.close()
        let types = try recordTypes()
        #expect(types.contains(2) && types.contains(3), "removes and reads are journaled")
        try await expectReopened(matching: model)
        // Reopening read every entry, in the model's order: the order survives another replay.
        try await expectReopened(matching: model)
        #expect(problems.all.isEmpty)
    }

    @Test(
        "a key written twice in a journal of sets replays as its last record, also when that expired or does not fit",
        arguments: ["expired", "larger first"]
    )
    func repeatedKeyInSets(_ scenario: String) async throws {
        let store = try await open()
        var model = Model()
        if scenario == "expired" {
            // The second record, expired when the store opens again, ends the first one too.
            try await store.setEntry(Data("v".utf8), forKey: "x", expiresAt: nil)
            let now = WallClock.manual(clock).now()
            try await store.setEntry(Data("w".utf8), forKey: "x", expiresAt: now.addingTimeInterval(1))
            try await store.setEntry(Data("y".utf8), forKey: "y", expiresAt: nil)
            model.set("y", Data("y".utf8))
        } else {
            // Reopened with a byte limit of 10: each key's last record fits (3 bytes in all),
            // while "a"'s first (9 bytes) would push "b" out if it were replayed too.
            for (key, size) in [("b", 1), ("a", 9), ("c", 1), ("a", 1)] {
                let value = testValue(key, size, size: size)
                try await store.setEntry(value, forKey: key, expiresAt: nil)
                model.set(key, value)
            }
        }
        try await store.close()
        #expect(try !recordTypes().contains { $0 == 2 || $0 == 3 }, "sets only")
        clock.advance(by: .seconds(2))
        try await expectReopened(matching: model, byteLimit: 10)
        #expect(directory.entryFiles().count == model.order.count, "only the live entries' files are left")
        #expect(problems.all.isEmpty)
    }

    /// Rewrites the set record of `key` in the journal with `change` applied to its key bytes,
    /// its checksum recomputed so that only the key is wrong.
    func rewriteKey(of key: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: directory.journal))
        var offset = 24
        while offset + 8 < bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
            let payload = (offset + 8)..<(offset + 8 + length)
            if bytes[payload.lowerBound] == 1, bytes[(payload.lowerBound + 28)...].starts(with: Array(key.utf8)) {
                var keyBytes = Array(bytes[(payload.lowerBound + 28)..<payload.upperBound])
                change(&keyBytes)
                bytes.replaceSubrange((payload.lowerBound + 28)..<payload.upperBound, with: keyBytes)
                let crc = bytes[payload].withUnsafeBytes { _cachekit_crc32c(0, $0.baseAddress, $0.count) }
                withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((offset + 4)..<(offset + 8), with: $0) }
                try Data(bytes).write(to: directory.journal)
                return
            }
            offset += 8 + length
        }
        Issue.record("no set record for \(key)")
    }

    @Test("a set record whose key is not UTF-8 is damage, and the index is rebuilt, in either kind of journal")
    func keyNotUTF8() async throws {
        for withReads in [false, true] {
            let store = try await open()
            for key in ["k0", "k1", "k2"] { try await store.setEntry(testValue(key, 0), forKey: key, expiresAt: nil) }
            if withReads {
                _ = try await store.entry(forKey: "k0")
                try await store.removeEntry(forKey: "k2")
            }
            try await store.close()
            try rewriteKey(of: "k1") { $0[1] = 0xFF }
            let damaged = try Data(contentsOf: directory.journal)
            let reopened = try await open()
            let live = withReads ? ["k0", "k1"] : ["k0", "k1", "k2"]
            for key in live { #expect(try await reopened.entry(forKey: key)?.value == testValue(key, 0)) }
            #expect(try await reopened.usage().count == live.count)
            try await reopened.close()
            #expect(try Data(contentsOf: directory.url.appendingPathComponent("journal.damaged")) == damaged)
            if case .corrupted(let path, let reason) = problems.all.last?.error {
                #expect(path.hasSuffix("/journal") && reason.contains("not understood"), "\(reason)")
            } else {
                Issue.record("\(problems.all)")
            }
            try FileManager.default.removeItem(at: directory.url)
        }
        #expect(problems.all.count == 2)
    }

    @Test("a journal with reads and removes: damage before the end rebuilds the index, a torn last record is cut off")
    func damageWithReadsAndRemoves() async throws {
        let store = try await open()
        for i in 0..<5 { try await store.setEntry(testValue("k\(i)", i), forKey: "k\(i)", expiresAt: nil) }
        _ = try await store.entry(forKey: "k0")
        try await store.removeEntry(forKey: "k1")
        try await store.setEntry(testValue("k9", 9), forKey: "k9", expiresAt: nil)
        try await store.close()
        let original = try Data(contentsOf: directory.journal)
        var middle = original
        middle[40] ^= 1  // inside the first set record
        try middle.write(to: directory.journal)
        let rebuilt = try await open()
        #expect(rebuilt._keysInEvictionOrder() == ["k0", "k2", "k3", "k4", "k9"], "in the order of the writes")
        for i in [0, 2, 3, 4, 9] { #expect(try await rebuilt.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await rebuilt.close()
        #expect(problems.all.count == 1)

        // Without the closed record (9 bytes) and the last byte of the read of k0 before it.
        try original.prefix(original.count - 10).write(to: directory.journal)
        let reopened = try await open()
        #expect(problems.all.count == 2)
        #expect(problems.all.last.map { if case .corrupted = $0.error { true } else { false } } == true)
        #expect(reopened._keysInEvictionOrder() == ["k0", "k2", "k3", "k4", "k9"])
        for i in [0, 2, 3, 4, 9] { #expect(try await reopened.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await reopened.close()
    }
}
