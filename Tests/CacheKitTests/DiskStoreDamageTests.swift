import CacheKit
import CacheKitTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("DiskStore damage")
struct DiskStoreDamageTests: DiskStoreSuite {
    let directory = StoreDirectory()
    let clock = ManualClock()
    let problems = ProblemLog()

    /// A store holding `k0` … `k4`, closed.
    func filledAndClosed() async throws {
        let store = try await open()
        for i in 0..<5 { try await store.setEntry(testValue("k\(i)", i), forKey: "k\(i)", expiresAt: nil) }
        try await store.close()
    }

    /// The entry file holding `key`.
    func file(of key: String) throws -> URL {
        try #require(
            directory.entryFiles().first { url in
                let bytes = (try? Data(contentsOf: url)) ?? Data()
                return bytes.count >= 36 + key.utf8.count && bytes[36..<(36 + key.utf8.count)].elementsEqual(key.utf8)
            }
        )
    }

    /// Opens the store, checks that `k2` is a reported miss and the others are intact.
    func expectK2DroppedAndReported(reason: String) async throws {
        let store = try await open()
        #expect(try await store.entry(forKey: "k2") == nil, "\(reason)")
        let reported = problems.all
        #expect(reported.count == 1, "\(reason): \(reported)")
        #expect(reported.first?.key == "k2")
        if case .corrupted = reported.first?.error {} else { Issue.record("\(reason): \(reported)") }
        for i in [0, 1, 3, 4] { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        #expect(try await store.usage().count == 4)
        try await store.close()
        let reopened = try await open()
        #expect(try await reopened.usage().count == 4, "the drop is journaled")
        #expect(try await reopened.entry(forKey: "k2") == nil)
        try await reopened.close()
        #expect(problems.all.count == 1)
    }

    @Test("an entry file with a flipped byte is a reported miss; the other entries are intact")
    func flippedByte() async throws {
        try await filledAndClosed()
        let url = try file(of: "k2")
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 5] ^= 0x40
        try bytes.write(to: url)
        try await expectK2DroppedAndReported(reason: "flipped byte")
    }

    @Test("a truncated entry file is a reported miss; the other entries are intact")
    func truncatedEntryFile() async throws {
        try await filledAndClosed()
        let url = try file(of: "k2")
        #expect(truncate(url.path, 40) == 0)
        try await expectK2DroppedAndReported(reason: "truncated")
    }

    @Test("an entry file deleted behind the store's back is a reported miss; the other entries are intact")
    func deletedEntryFile() async throws {
        try await filledAndClosed()
        try FileManager.default.removeItem(at: try file(of: "k2"))
        try await expectK2DroppedAndReported(reason: "deleted")
    }

    @Test("a FIFO in an entry file's place is a reported miss found without blocking; the others are intact")
    func fifoInPlaceOfAnEntry() async throws {
        try await filledAndClosed()
        let url = try file(of: "k2")
        try FileManager.default.removeItem(at: url)
        // Opening a FIFO for reading waits for a writer: a read that opened it so would never return.
        #expect(mkfifo(url.path, 0o644) == 0)
        try await expectK2DroppedAndReported(reason: "FIFO")
    }

    @Test("a symbolic link in an entry file's place is a reported miss, even to a valid entry file")
    func symbolicLinkInPlaceOfAnEntry() async throws {
        try await filledAndClosed()
        let url = try file(of: "k2")
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("entry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try FileManager.default.moveItem(at: url, to: elsewhere)
        try FileManager.default.createSymbolicLink(at: url, withDestinationURL: elsewhere)
        try await expectK2DroppedAndReported(reason: "symbolic link")
    }

    @Test("a byte flipped anywhere in any file of the store: it opens; each read is the value written or a miss")
    func everyByteOfEveryFile() async throws {
        // Every kind of journal record: sets with and without a deadline, a replacement, a read,
        // a removal and the closed record.
        let deadline = Date(timeIntervalSince1970: 1_800_000_000 + 3_600)
        var expected: [String: Data] = [:]
        let store = try await open()
        for i in 0..<5 {
            let key = "k\(i)"
            try await store.setEntry(testValue(key, 0, size: 16), forKey: key, expiresAt: i == 4 ? deadline : nil)
            expected[key] = testValue(key, 0, size: 16)
        }
        try await store.setEntry(testValue("k1", 1, size: 16), forKey: "k1", expiresAt: nil)
        expected["k1"] = testValue("k1", 1, size: 16)
        _ = try await store.entry(forKey: "k0")
        try await store.removeEntry(forKey: "k3")
        expected["k3"] = nil
        try await store.close()

        let pristine = FileManager.default.temporaryDirectory.appendingPathComponent("pristine-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: directory.url, to: pristine)
        defer { try? FileManager.default.removeItem(at: pristine) }
        let files = [directory.journal, directory.url.appendingPathComponent("lock")] + directory.entryFiles()
        var flips = 0
        for file in files {
            let original = try Data(contentsOf: file)
            for offset in original.indices {
                try FileManager.default.removeItem(at: directory.url)
                try FileManager.default.copyItem(at: pristine, to: directory.url)
                var damaged = original
                damaged[offset] ^= 0x5A
                try damaged.write(to: file)
                flips += 1
                let problemsBefore = problems.all.count
                let place = "\(file.lastPathComponent) at \(offset)"
                let damagedStore = try await open()
                var misses = 0
                for i in 0..<5 {
                    let key = "k\(i)"
                    let read = try await damagedStore.entry(forKey: key)?.value
                    if let read {
                        #expect(read == expected[key], "\(place): \(key) read a value never written")
                    } else if expected[key] != nil {
                        misses += 1
                    }
                }
                #expect(misses == 0 || problems.all.count > problemsBefore, "\(place): a silent loss")
                // The store goes on working.
                try await damagedStore.setEntry(Data("after".utf8), forKey: "k9", expiresAt: nil)
                #expect(try await damagedStore.entry(forKey: "k9")?.value == Data("after".utf8), "\(place)")
                try await damagedStore.close()
            }
        }
        #expect(flips > 300, "the files hold \(flips) bytes")
    }

    @Test("a journal deleted beside entry files is rebuilt from them, and no id is given out twice")
    func missingJournal() async throws {
        try await filledAndClosed()
        try FileManager.default.removeItem(at: directory.journal)
        let store = try await open()
        for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await store.setEntry(Data("new".utf8), forKey: "k9", expiresAt: nil)
        for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await store.close()
        if case .corrupted(_, let reason) = problems.all.first?.error {
            #expect(reason.hasPrefix("the journal is missing; the index was rebuilt"), "\(reason)")
        } else {
            Issue.record("\(problems.all)")
        }
    }

    @Test("a journal of no records (as removeAll writes before it moves the entries away) sweeps the files")
    func journalOfNoRecords() async throws {
        try await filledAndClosed()
        // The header alone, with a next id above every entry's, as `removeAll()` writes it.
        var header = [UInt8](try Data(contentsOf: directory.journal).prefix(12))
        header += withUnsafeBytes(of: UInt64(100).littleEndian) { Array($0) }
        var crc = CRC32C()
        crc.update(header[8..<20])
        header += withUnsafeBytes(of: crc.value.littleEndian) { Array($0) }
        try Data(header).write(to: directory.journal)
        let store = try await open()
        #expect(try await store.usage().count == 0)
        try await store.close()
        #expect(directory.entryFiles().isEmpty, "the unlisted files are removed")
    }

    @Test("a deadline at infinity is none; at minus infinity or NaN it has passed; the journal replays either way")
    func nonFiniteDeadlines() async throws {
        let store = try await open()
        try await store.setEntry(
            testValue("k0", 0),
            forKey: "k0",
            expiresAt: Date(timeIntervalSinceReferenceDate: .infinity)
        )
        try await store.setEntry(
            testValue("k1", 0),
            forKey: "k1",
            expiresAt: Date(timeIntervalSinceReferenceDate: .nan)
        )
        try await store.setEntry(
            testValue("k2", 0),
            forKey: "k2",
            expiresAt: Date(timeIntervalSinceReferenceDate: -.infinity)
        )
        #expect(try await store.entry(forKey: "k0")?.expiresAt == nil)
        #expect(try await store.entry(forKey: "k1") == nil)
        #expect(try await store.entry(forKey: "k2") == nil)
        try await store.close()
        let reopened = try await open()
        #expect(try await reopened.entry(forKey: "k0")?.value == testValue("k0", 0))
        try await reopened.close()
        #expect(problems.all.isEmpty, "\(problems.all)")
    }

    @Test("an index rebuilt from the entry files keeps each entry's deadline")
    func rebuiltDeadlines() async throws {
        let store = try await open()
        let origin = Date(timeIntervalSince1970: 1_800_000_000)
        try await store.setEntry(testValue("k0", 0), forKey: "k0", expiresAt: origin.addingTimeInterval(60))
        try await store.setEntry(testValue("k1", 0), forKey: "k1", expiresAt: nil)
        try await store.close()
        try Data("not a journal".utf8).write(to: directory.journal)
        let rebuilt = try await open()
        #expect(try await rebuilt.entry(forKey: "k0")?.expiresAt == origin.addingTimeInterval(60))
        clock.advance(by: .seconds(61))
        #expect(try await rebuilt.entry(forKey: "k0") == nil, "expired")
        #expect(try await rebuilt.entry(forKey: "k1")?.value == testValue("k1", 0))
        try await rebuilt.close()
    }

    @Test("an entry file of format version 1, without a deadline, reads back through the journal")
    func versionOneEntryFile() async throws {
        let store = try await open()
        try await store.setEntry(testValue("k0", 0), forKey: "k0", expiresAt: nil)
        try await store.close()
        // Version 1: the same header without its deadline field (bytes 20 ..< 28), its own checksum.
        let url = try file(of: "k0")
        let v2 = [UInt8](try Data(contentsOf: url))
        var v1 = Array(v2[0..<20]) + Array(v2[28..<32])
        v1[8] = 1
        var crc = CRC32C()
        crc.update(v1)
        crc.update(v2[36..<38])
        v1 += withUnsafeBytes(of: crc.value.littleEndian) { Array($0) }
        v1 += Array(v2[36...])
        try Data(v1).write(to: url)
        let reopened = try await open()
        #expect(try await reopened.entry(forKey: "k0")?.value == testValue("k0", 0))
        try await reopened.close()
        #expect(problems.all.isEmpty)
    }

    @Test("a journal cut in its last record opens without that record, says so, and appends after the cut")
    func tornJournal() async throws {
        try await filledAndClosed()
        // The last records are k4's set record (38 bytes: 8 + 28 + the key's 2) and the closed record (9).
        let size = try #require(try FileManager.default.attributesOfItem(atPath: directory.journal.path)[.size] as? Int)
        #expect(truncate(directory.journal.path, off_t(size - 9 - 20)) == 0)
        let store = try await open()
        #expect(problems.all.count == 1)
        #expect(problems.all.first.map { if case .corrupted = $0.error { true } else { false } } == true)
        #expect(try await store.usage().count == 4)
        #expect(try await store.entry(forKey: "k4") == nil)
        for i in 0..<4 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        try await store.setEntry(Data("new".utf8), forKey: "k9", expiresAt: nil)
        try await store.close()
        let reopened = try await open()
        #expect(try await reopened.usage().count == 5)
        #expect(try await reopened.entry(forKey: "k9")?.value == Data("new".utf8))
        try await reopened.close()
        #expect(problems.all.count == 1)
    }

    @Test(
        "a non-journal, or damage before the end (even a length past it), is moved aside and the index rebuilt"
    )
    func garbageJournal() async throws {
        try await filledAndClosed()
        let original = try Data(contentsOf: directory.journal)
        var damaged: [Data] = [Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }), Data()]
        var middle = original
        middle[40] ^= 1  // inside k0's record, four records before the end
        damaged.append(middle)
        var length = original
        length[24] = 0xFF  // k0's record length: impossible, and not zeros
        length[27] = 0x7F
        damaged.append(length)
        // A possible length that runs past the end, in a record that whole records follow: damage,
        // not a torn append (which leaves a prefix of one record), in the first and the
        // next-to-last set records (k0 at 24, k3 at 24 + 3 × 38).
        // And one whose damaged length ends it exactly at the file's end, failing its checksum.
        var toTheEnd = original
        let rest = UInt32(original.count - 24 - 8)
        toTheEnd.replaceSubrange(24..<28, with: withUnsafeBytes(of: rest.littleEndian) { Data($0) })
        damaged.append(toTheEnd)
        for (offset, pastTheEnd) in [(24, 8_000), (138, 4_000)] {
            var longer = original
            longer.replaceSubrange(
                offset..<(offset + 4),
                with: withUnsafeBytes(of: UInt32(pastTheEnd).littleEndian) { Data($0) }
            )
            damaged.append(longer)
        }
        for (number, bytes) in damaged.enumerated() {
            try bytes.write(to: directory.journal)
            let store = try await open()
            for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
            #expect(try await store.usage().count == 5)
            try await store.close()
            #expect(try Data(contentsOf: directory.url.appendingPathComponent("journal.damaged")) == bytes)
            #expect(problems.all.count == number + 1, "one problem per rebuild: \(problems.all)")
            if case .corrupted(let path, let reason) = problems.all.last?.error {
                #expect(path.hasSuffix("/journal") && reason.contains("rebuilt from the entry files: 5 kept"))
            } else {
                Issue.record("\(problems.all)")
            }
        }
        let reopened = try await open()
        #expect(try await reopened.usage().count == 5, "the rebuilt journal opens as any other")
        try await reopened.close()
        #expect(problems.all.count == damaged.count)
    }

    @Test("a large journal whose header is wrong is moved aside after reading its header, not the whole file")
    func largeGarbageJournalIsRefusedByItsHeader() async throws {
        try await filledAndClosed()
        // 768 MiB, sparse: no disk, but reading it whole would take as much memory.
        let size: off_t = 768 << 20
        #expect(truncate(directory.journal.path, 0) == 0)
        try Data("not a journal, and very long".utf8).write(to: directory.journal)
        #expect(truncate(directory.journal.path, size) == 0)
        // The peak resident size, reset first where Linux allows (`/proc/self/clear_refs`).
        let peakReset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        let before = peakReset ? residentKiB("VmRSS") : residentKiB("VmHWM")
        let store = try await open()
        let growth = residentKiB("VmHWM") - before
        #expect(try await store.usage().count == 5)
        try await store.close()
        if case .corrupted(_, let reason) = problems.all.first?.error {
            #expect(reason.hasPrefix("not a DiskStore journal; the index was rebuilt"), "\(reason)")
        } else {
            Issue.record("\(problems.all)")
        }
        // The peak grows by the whole file when the journal is read before its header is checked;
        // other tests running meanwhile stay far below half of it.
        #expect(growth < 384 << 10, "the peak resident size grew by \(growth) KiB")
        let damaged = directory.url.appendingPathComponent("journal.damaged").path
        let status = try FileManager.default.attributesOfItem(atPath: damaged)
        #expect(status[.size] as? Int == Int(size), "the journal is moved aside whole")
    }

    @Test("a journal of a newer format version is refused with newerFormat and left as it is")
    func newerJournal() async throws {
        try await filledAndClosed()
        var bytes = try Data(contentsOf: directory.journal)
        bytes[8] = 2
        // A newer version keeps the header's layout and checksum; a version byte damaged without
        // it is damage instead (the test of every byte covers that).
        var crc = CRC32C()
        crc.update(bytes[8..<20])
        bytes.replaceSubrange(20..<24, with: withUnsafeBytes(of: crc.value.littleEndian) { Data($0) })
        try bytes.write(to: directory.journal)
        await #expect(
            throws: CacheStoreError.newerFormat(
                path: directory.journal.standardizedFileURL.path,
                found: 2,
                supported: 1
            )
        ) {
            try await open()
        }
        #expect(try Data(contentsOf: directory.journal) == bytes)
    }

    @Test(
        "a full disk fails writes with ioFailure; the store stays usable and consistent",
        arguments: DiskWriteTarget.allCases
    )
    func fullDisk(target: DiskWriteTarget) async throws {
        let store = try await open(byteLimit: 180)
        for i in 0..<5 { try await store.setEntry(testValue("k\(i)", i), forKey: "k\(i)", expiresAt: nil) }
        store.faults.failWrites(to: target, with: ENOSPC)
        await #expect {
            try await store.setEntry(testValue("k9", 9), forKey: "k9", expiresAt: nil)
        } throws: { error in
            if case .ioFailure(_, "write", ENOSPC) = error as? CacheStoreError { true } else { false }
        }
        await #expect(throws: CacheStoreError.self) {
            try await store.setEntry(testValue("k0", 99), forKey: "k0", expiresAt: nil)
        }
        if target == .journal {
            await #expect(throws: CacheStoreError.self) { try await store.removeEntry(forKey: "k1") }
            await #expect(throws: CacheStoreError.self) { try await store.removeAll() }
        }
        #expect(try await store.usage() == CacheStoreUsage(count: 5, bytes: 160))
        for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        #expect(try await store.entry(forKey: "k9") == nil)
        store.faults.failWrites(to: target, with: nil)
        try await store.setEntry(testValue("k9", 9), forKey: "k9", expiresAt: nil)  // evicts k0 for bytes
        #expect(try await store.usage() == CacheStoreUsage(count: 5, bytes: 160))
        try await store.close()
        #expect(directory.entryFiles().count == 5, "no file is left behind")
        let reopened = try await open(byteLimit: 180)
        for i in 1..<5 { #expect(try await reopened.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        #expect(try await reopened.entry(forKey: "k9")?.value == testValue("k9", 9))
        try await reopened.close()
        #expect(problems.all.isEmpty)
    }

    /// Whether this process can run the store crash helper as another user (root, setpriv and
    /// the helper): root ignores file modes, so a read-only directory is tested as `nobody`.
    static let canRunAsNobody =
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && DiskStoreCrashTests.helper != nil

    /// The outcome of one write of `key` to the closed store (`ok` or `error: ` and the error's
    /// description) by a user the file modes apply to: this process when it is not root, else the
    /// store crash helper run as `nobody`. In this process, the store must still read every entry
    /// after the failure.
    func writeWithoutPrivileges(key: String) async throws -> String {
        if geteuid() != 0 {
            let store = try await open()
            var outcome = "ok"
            do {
                try await store.setEntry(Data("x".utf8), forKey: key, expiresAt: nil)
            } catch {
                outcome = "error: \(error)"
            }
            for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
            try await store.close()
            return outcome
        }
        // `nobody` writes the journal and the lock, and runs a copy of the helper from a
        // directory of its own: the build directory may be where it cannot go.
        #expect(chmod(directory.url.path, 0o777) == 0)
        #expect(chmod(directory.journal.path, 0o666) == 0)
        #expect(chmod(directory.url.appendingPathComponent("lock").path, 0o666) == 0)
        let place = StoreDirectory()
        try FileManager.default.createDirectory(at: place.url, withIntermediateDirectories: false)
        #expect(chmod(place.url.path, 0o755) == 0)
        let helper = place.url.appendingPathComponent("CacheKitTestHelper")
        try FileManager.default.copyItem(at: try #require(DiskStoreCrashTests.helper), to: helper)
        #expect(chmod(helper.path, 0o755) == 0)
        let (status, text, diagnostics) = try runToEnd(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", helper.path, "disk-store-crash", "--write-once",
                directory.url.path, key,
            ]
        )
        #expect(status == 0, "the helper failed: \(diagnostics)")
        return text.trimmingCharacters(in: .newlines)
    }

    @Test(
        "a read-only directory fails writes with a typed error and loses nothing",
        .enabled(
            if: geteuid() != 0 || canRunAsNobody,
            "root ignores file modes, and writing as nobody needs /usr/bin/setpriv and CacheKitTestHelper"
        )
    )
    func readOnlyDirectory() async throws {
        try await filledAndClosed()
        #expect(chmod(directory.entries.path, 0o555) == 0)
        defer { chmod(directory.entries.path, 0o755) }
        let outcome = try await writeWithoutPrivileges(key: "new")
        // Creating the value's temporary file is refused: the exact ioFailure, for the file's name.
        let prefix = "error: open failed for \(directory.entries.standardizedFileURL.path)/"
        let name = outcome.hasPrefix(prefix) ? outcome.dropFirst(prefix.count).prefix { $0 != ":" } : ""
        let denied = CacheStoreError.ioFailure(
            path: directory.entries.standardizedFileURL.path + "/" + name,
            operation: "open",
            errno: EACCES
        )
        #expect(name.hasSuffix(".tmp") && outcome == "error: \(denied)", "\(outcome)")
        let store = try await open()
        for i in 0..<5 { #expect(try await store.entry(forKey: "k\(i)")?.value == testValue("k\(i)", i)) }
        #expect(try await store.entry(forKey: "new") == nil)
        try await store.close()
        chmod(directory.entries.path, 0o755)
        let reopened = try await open()
        #expect(try await reopened.usage().count == 5)
        try await reopened.close()
    }
}

/// A size in KiB from `/proc/self/status` (`VmRSS`, `VmHWM`), 0 where there is none.
private func residentKiB(_ field: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return 0 }
    return Int(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        ?? 0
}
