import CacheKitTestSupport
import Foundation
import Synchronization
import Testing

@testable import CacheKit

#if canImport(Glibc)
import Glibc
#endif

/// `CachePersistence`: round trips, the file format's error cases, permissions, expiry, autosave
/// on a `ManualClock`, and a crash test that kills a saving process at random moments.
@Suite("Persistence")
struct PersistenceTests {
    /// A fresh temporary directory, removed when the test ends.
    final class Directory {
        let url: URL

        init() throws {
            url = FileManager.default.temporaryDirectory
                .appendingPathComponent("CacheKitPersistence-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        }

        deinit { try? FileManager.default.removeItem(at: url) }

        func file(_ name: String = "cache.bin") -> URL { url.appendingPathComponent(name) }
    }

    /// The serializers under test, by name (the arguments of the parameterized tests).
    enum SerializerKind: String, CaseIterable, CustomTestStringConvertible {
        case json
        case propertyList
        case custom

        var testDescription: String { rawValue }

        var serializer: CacheSerializer<String, Int> {
            switch self {
            case .json: return .json
            case .propertyList: return .propertyList
            case .custom: return .custom(identifier: "tsv-v1", encode: encodeTSV, decode: decodeTSV)
            }
        }
    }

    /// A bounded LRU cache with costs and a known eviction order: c, a, d, b (next victim first).
    func makeFilledCache() -> Cache<String, Int> {
        let cache = Cache<String, Int>(countLimit: 4, policy: .lru)
        cache.setValue(1, forKey: "a", cost: 10)
        cache.setValue(2, forKey: "b", cost: 20)
        cache.setValue(3, forKey: "c", cost: 30)
        _ = cache["a"]
        cache.setValue(4, forKey: "d", cost: 40)
        _ = cache["b"]
        return cache
    }

    @Test("round trip keeps entries, costs and eviction order", arguments: SerializerKind.allCases)
    func roundTrip(kind: SerializerKind) throws {
        let directory = try Directory()
        let original = makeFilledCache()
        #expect(original.keys == ["c", "a", "d", "b"])
        try CachePersistence(cache: original, fileURL: directory.file(), serializer: kind.serializer).save()

        let restored = Cache<String, Int>(countLimit: 4, policy: .lru)
        let loaded = try CachePersistence(cache: restored, fileURL: directory.file(), serializer: kind.serializer)
            .load()
        #expect(loaded == 4)
        #expect(restored.persistableEntries() == original.persistableEntries())
        #expect(restored.keys == ["c", "a", "d", "b"])
        #expect(restored.totalCost == 100)
        // The same key is the next victim in both.
        original["e"] = 5
        restored["e"] = 5
        #expect(!original.contains("c"))
        #expect(!restored.contains("c"))
        #expect(restored.keys == original.keys)
        restored._checkInvariants()
    }

    @Test(
        "a SharedCache round-trips through every serializer, eviction order included",
        arguments: SerializerKind.allCases
    )
    func sharedCacheRoundTrip(kind: SerializerKind) throws {
        let directory = try Directory()
        let clock = ManualClock()
        let original = SharedCache<String, Int>(countLimit: 4, policy: .lru, clock: clock)
        // The read of "a" below must reach the policy: a read that finds a background drain
        // replaying the buffers goes unrecorded (see SharedCache), so no drain may run here.
        original._applyWritesOnlyWhenAsked()
        original.setValue(1, forKey: "a", cost: 10)
        original.setValue(2, forKey: "b", cost: 20)
        original.setValue(3, forKey: "c", cost: 30)
        original.setValue(4, forKey: "d", cost: 40, expiresAfter: .seconds(5))
        _ = original["a"]
        clock.advance(by: .seconds(5))  // "d" expires: it is not saved
        try CachePersistence(cache: original, fileURL: directory.file(), serializer: kind.serializer).save()

        let restored = SharedCache<String, Int>(countLimit: 4, policy: .lru)
        restored["b"] = 99  // already in memory: kept over the file's value
        let loaded = try CachePersistence(cache: restored, fileURL: directory.file(), serializer: kind.serializer)
            .load()
        #expect(loaded == 3)
        #expect(restored.entries.map(\.key) == ["b", "c", "a"])
        #expect(restored["b"] == 99 && restored.totalCost == 30 + 10)  // b keeps its value and cost 0
        #expect(original.entries.map(\.key) == ["b", "c", "a"])
        restored._checkInvariants()
    }

    @Test("a missing file loads as an empty cache, and a save creates it")
    func missingFile() throws {
        let directory = try Directory()
        let cache = Cache<String, Int>()
        let persistence = CachePersistence(cache: cache, fileURL: directory.file())
        #expect(try persistence.load() == 0)
        #expect(cache.count == 0)
        #expect(persistence.unreadableFileError == nil)
        cache["a"] = 1
        try persistence.save()
        #expect(FileManager.default.fileExists(atPath: directory.file().path))
        let other = Cache<String, Int>()
        #expect(try CachePersistence(cache: other, fileURL: directory.file()).load() == 1)
        #expect(other["a"] == 1)
    }

    @Test("an empty cache round-trips")
    func emptyCache() throws {
        let directory = try Directory()
        try CachePersistence(cache: Cache<String, Int>(), fileURL: directory.file()).save()
        #expect(try CachePersistence(cache: Cache<String, Int>(), fileURL: directory.file()).load() == 0)
    }

    /// How a test spoils a good file, and which error it must then get.
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncatedPayload
        case truncatedHeader
        case emptyFile
        case corruptedByte
        case trailingBytes
        case foreignFile
        case newerVersion
        case wrongSerializer

        var testDescription: String { rawValue }

        func apply(to bytes: [UInt8]) -> [UInt8] {
            switch self {
            case .truncatedPayload: return Array(bytes.dropLast(3))
            case .truncatedHeader: return Array(bytes.prefix(15))
            case .emptyFile: return []
            case .corruptedByte:
                var bytes = bytes
                bytes[bytes.count - 10] ^= 0x01
                return bytes
            case .trailingBytes: return bytes + [0]
            case .foreignFile: return Array("{\"a\": 1}\n".utf8)
            case .newerVersion:
                var bytes = bytes
                bytes[8] = 2
                return bytes
            case .wrongSerializer: return bytes  // written as JSON, read as a property list below
            }
        }

        func matches(_ error: CachePersistenceError, size: Int) -> Bool {
            switch (self, error) {
            case (.truncatedPayload, .truncated(_, let expected, let actual)):
                return expected == size && actual == size - 3
            case (.truncatedHeader, .truncated(_, _, let actual)): return actual == 15
            case (.emptyFile, .truncated(_, _, 0)): return true
            case (.corruptedByte, .checksumMismatch): return true
            case (.trailingBytes, .corrupted(_, let offset, _)): return offset == size
            case (.foreignFile, .foreignFile): return true
            case (.newerVersion, .newerVersion(_, 2, 1)): return true
            case (.wrongSerializer, .serializerMismatch(_, "json", "plist")): return true
            default: return false
            }
        }
    }

    @Test(
        "an unreadable file gives a typed error, stays byte-identical, and is not overwritten until allowed",
        arguments: Damage.allCases
    )
    func unreadableFile(damage: Damage) async throws {
        let directory = try Directory()
        let url = directory.file()
        try CachePersistence(cache: makeFilledCache(), fileURL: url).save()
        let good = try [UInt8](Data(contentsOf: url))
        let damaged = damage.apply(to: good)
        try Data(damaged).write(to: url)

        let cache = Cache<String, Int>(countLimit: 4, policy: .lru)
        let serializer: CacheSerializer<String, Int> = damage == .wrongSerializer ? .propertyList : .json
        let persistence = CachePersistence(cache: cache, fileURL: url, serializer: serializer)
        let failure = #expect(throws: CachePersistenceError.self) { try persistence.load() }
        let error = try #require(failure)
        #expect(damage.matches(error, size: good.count), "unexpected error: \(error)")
        #expect(error.path == url.path)
        #expect(error.description.hasPrefix(url.path))
        #expect(persistence.unreadableFileError == error)
        #expect(try [UInt8](Data(contentsOf: url)) == damaged)

        // The cache still works.
        #expect(cache.count == 0)
        cache["x"] = 42
        #expect(cache["x"] == 42)

        // No save of any kind replaces the file.
        #expect(throws: CachePersistenceError.saveRefused(path: url.path, because: error)) { try persistence.save() }
        #expect(throws: CachePersistenceError.saveRefused(path: url.path, because: error)) { try persistence.close() }
        let clock = ManualClock()
        let reported = Locked<[CachePersistenceError]>([])
        persistence.onError = { error in reported.mutate { $0.append(error) } }
        persistence.startAutosave(every: .seconds(1), clock: clock)
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(1))
        await eventually { reported.value.count == 1 }
        persistence.stopAutosave()
        #expect(reported.value == [.saveRefused(path: url.path, because: error)])
        #expect(try [UInt8](Data(contentsOf: url)) == damaged)

        // Until the user says so.
        persistence.allowOverwritingUnreadableFile()
        #expect(persistence.unreadableFileError == nil)
        try persistence.save()
        let check = Cache<String, Int>()
        #expect(try CachePersistence(cache: check, fileURL: url, serializer: serializer).load() == 1)
        #expect(check["x"] == 42)
    }

    @Test("a payload the serializer cannot decode names the field")
    func undecodable() throws {
        let directory = try Directory()
        try CachePersistence(cache: makeFilledCache(), fileURL: directory.file()).save()
        // Same identifier ("json"), other value type: the checksum passes, decoding fails.
        let persistence = CachePersistence(cache: Cache<String, [String]>(), fileURL: directory.file())
        let failure = #expect(throws: CachePersistenceError.self) { try persistence.load() }
        guard case .undecodable(_, let field, _) = try #require(failure) else {
            Issue.record("expected .undecodable, got \(String(describing: failure))")
            return
        }
        #expect(field == "[0].value")
    }

    @Test(
        "costs no cache accepts give a typed error naming the entry, and the file is kept",
        arguments: [
            (#"[{"key":"a","value":1,"cost":0},{"key":"b","value":2,"cost":-1}]"#, "[1].cost"),
            (#"[{"key":"a","value":1,"cost":9223372036854775807},{"key":"b","value":2,"cost":1}]"#, "[1].cost"),
        ]
    )
    func impossibleCosts(payload: String, field: String) throws {
        // A valid header and checksum around it: a hand-edited file, or another writer's.
        let directory = try Directory()
        let url = directory.file()
        let bytes = CacheFile.wrap(Data(payload.utf8), identifier: "json")
        try Data(bytes).write(to: url)
        let cache = Cache<String, Int>(countLimit: 10, policy: .lru)
        let persistence = CachePersistence(cache: cache, fileURL: url)
        let failure = #expect(throws: CachePersistenceError.self) { try persistence.load() }
        guard case .undecodable(let path, let where_, _) = try #require(failure) else {
            Issue.record("expected .undecodable, got \(String(describing: failure))")
            return
        }
        #expect(path == url.path && where_ == field)
        #expect(cache.count == 0)  // nothing restored, not even the valid first entry
        #expect(throws: CachePersistenceError.saveRefused(path: url.path, because: failure!)) { try persistence.save() }
        #expect(try [UInt8](Data(contentsOf: url)) == bytes)
    }

    @Test("a file this persistence never loaded is not replaced until it loads or is allowed to")
    func notLoaded() throws {
        let directory = try Directory()
        let url = directory.file()
        try CachePersistence(cache: makeFilledCache(), fileURL: url).save()  // no file yet: allowed
        let before = try Data(contentsOf: url)

        let cache = Cache<String, Int>()
        cache["fresh"] = 1
        let early = CachePersistence(cache: cache, fileURL: url)
        let refusal = CachePersistenceError.saveRefused(path: url.path, because: .notLoaded(path: url.path))
        #expect(throws: refusal) { try early.save() }
        #expect(throws: refusal) { try early.close() }
        #expect(refusal.description.contains("call load() first"))
        #expect(try Data(contentsOf: url) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])

        // After a load, saves go through.
        #expect(try early.load() == 4)
        try early.save()
        #expect(try load(url)["fresh"] == 1)

        // Or when told to start afresh.
        let other = Cache<String, Int>()
        other["only"] = 2
        let reset = CachePersistence(cache: other, fileURL: url)
        #expect(throws: refusal) { try reset.save() }
        reset.allowOverwritingUnreadableFile()
        try reset.save()
        #expect(try load(url) == ["only": 2])
    }

    @Test("temporary files: an earlier process's with this pid are removed; two persistences never collide")
    func temporaryFiles() throws {
        let directory = try Directory()
        let url = directory.file()
        let pid = getpid()
        // Left by a killed process that had this pid (pid 1 in every container), in this
        // version's naming and the one before; and one of this process, maybe in flight.
        let stale = [".cache.bin.\(pid)-0123abcd-1.tmp", ".cache.bin.\(pid)-1.tmp"]
        let ours = ".cache.bin.\(pid)-\(CacheFile.processToken)-999.tmp"
        for name in stale + [ours] { try Data("x".utf8).write(to: directory.file(name)) }
        let first = CachePersistence(cache: makeFilledCache(), fileURL: url)
        #expect(try first.load() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == [ours])
        try FileManager.default.removeItem(at: directory.file(ours))

        // Two persistences of one file in one process number their temporary files apart.
        let second = CachePersistence(cache: makeFilledCache(), fileURL: url)
        #expect(try second.load() == 0)
        for _ in 0..<3 {
            try first.save()
            try second.save()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
    }

    /// A model that is not `Codable`, with a key that is not either: only a custom serializer
    /// can save it (YMCache's "arbitrary model transformations").
    struct Story: Equatable, Sendable {
        let title: String
        let words: Int
    }

    struct StoryID: Hashable, Sendable {
        let number: Int
    }

    static let storySerializer = CacheSerializer<StoryID, Story>.custom(
        identifier: "stories-v1",
        encode: { entries in
            Data(entries.map { "\($0.key.number)\t\($0.value.title)\t\($0.value.words)\t\($0.cost)\n" }.joined().utf8)
        },
        decode: { data in
            struct BadLine: Error {}
            return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                guard fields.count == 4, let number = Int(fields[0]), let words = Int(fields[2]),
                    let cost = Int(fields[3])
                else { throw BadLine() }
                return PersistedEntry(
                    key: StoryID(number: number),
                    value: Story(title: String(fields[1]), words: words),
                    cost: cost
                )
            }
        }
    )

    @Test("keys and values that are not Codable persist through a custom serializer, in Cache and SharedCache")
    func nonCodableModels() throws {
        let directory = try Directory()
        let cache = Cache<StoryID, Story>(countLimit: 3, policy: .lru)
        cache.setValue(Story(title: "one", words: 100), forKey: StoryID(number: 1), cost: 1)
        cache.setValue(Story(title: "two", words: 200), forKey: StoryID(number: 2), cost: 2)
        cache.setValue(Story(title: "three", words: 300), forKey: StoryID(number: 3), cost: 3)
        _ = cache[StoryID(number: 1)]  // order, next victim first: 2, 3, 1
        try CachePersistence(cache: cache, fileURL: directory.file("cache"), serializer: Self.storySerializer).save()

        let shared = SharedCache<StoryID, Story>(countLimit: 3, policy: .lru)
        let sharedPersistence = CachePersistence(
            cache: shared,
            fileURL: directory.file("cache"),
            serializer: Self.storySerializer
        )
        #expect(try sharedPersistence.load() == 3)
        #expect(shared.persistableEntries() == cache.persistableEntries())
        #expect(shared.persistableEntries().map(\.key.number) == [2, 3, 1])
        #expect(shared[StoryID(number: 3)] == Story(title: "three", words: 300))

        // And back from SharedCache to Cache, through a second file.
        try CachePersistence(cache: shared, fileURL: directory.file("shared"), serializer: Self.storySerializer).save()
        let restored = Cache<StoryID, Story>(countLimit: 3, policy: .lru)
        #expect(
            try CachePersistence(cache: restored, fileURL: directory.file("shared"), serializer: Self.storySerializer)
                .load() == 3
        )
        #expect(restored.persistableEntries().map(\.key.number) == [2, 1, 3])
        #expect(restored.totalCost == 6)
    }

    /// Generic code over `PersistableCache` gets JSON without naming a serializer, and can
    /// encode the entries itself: its keys and values are `Codable`.
    func jsonPersistence<C: PersistableCache & Sendable>(_ cache: C, _ url: URL) throws -> CachePersistence<C>
    where C.Key: Sendable, C.Value: Sendable {
        _ = try JSONEncoder().encode(cache.persistableEntries())
        return CachePersistence(cache: cache, fileURL: url)
    }

    @Test("generic code over PersistableCache keeps JSON as its default")
    func genericPersistableCache() throws {
        let directory = try Directory()
        let original = makeFilledCache()
        try jsonPersistence(original, directory.file()).save()
        let restored = Cache<String, Int>(countLimit: 4, policy: .lru)
        #expect(try jsonPersistence(restored, directory.file()).load() == 4)
        #expect(restored.persistableEntries() == original.persistableEntries())
    }

    @Test("a serializer that fails to encode leaves the previous file in place")
    func unencodable() throws {
        struct Refusal: Error {}
        let directory = try Directory()
        let url = directory.file()
        let cache = makeFilledCache()
        let serializer = CacheSerializer<String, Int>.custom(
            identifier: "picky",
            encode: { entries in
                if entries.contains(where: { $0.key == "bad" }) { throw Refusal() }
                return try encodeTSV(entries)
            },
            decode: decodeTSV
        )
        let persistence = CachePersistence(cache: cache, fileURL: url, serializer: serializer)
        try persistence.save()
        let before = try Data(contentsOf: url)
        cache["bad"] = 0
        #expect {
            try persistence.save()
        } throws: { error in
            guard case .unencodable(let path, _) = error as? CachePersistenceError else { return false }
            return path == url.path
        }
        #expect(try Data(contentsOf: url) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
    }

    @Test("temporary files: a locked one is a save in flight and stays, whatever its process id says")
    func temporaryFilesByLock() throws {
        let directory = try Directory()
        let url = directory.file()
        // Another container's save in flight: its pid means nothing here (no such process, or
        // another one), and it holds the file's lock.
        let inFlight = directory.file(".cache.bin.999999-abc-1.tmp")
        try Data("x".utf8).write(to: inFlight)
        let holder = open(inFlight.path, O_RDONLY)
        #expect(holder >= 0)
        #expect(flock(holder, LOCK_EX) == 0)
        // A leftover whose pid belongs to a live process here (a killed process of another
        // container had it): nobody holds its lock.
        let leftover = directory.file(".cache.bin.\(getppid())-def-1.tmp")
        try Data("x".utf8).write(to: leftover)
        let persistence = CachePersistence(cache: makeFilledCache(), fileURL: url)
        #expect(try persistence.load() == 0)
        #expect(FileManager.default.fileExists(atPath: inFlight.path), "a save in flight lost its file")
        #expect(!FileManager.default.fileExists(atPath: leftover.path), "a leftover stayed")
        Glibc.close(holder)  // the save ends (or its process dies): the next load removes the file
        #expect(try persistence.load() == 0)
        #expect(!FileManager.default.fileExists(atPath: inFlight.path))
    }

    @Test("a save holds its temporary file's lock until the rename")
    func saveLocksItsTemporaryFile() throws {
        let directory = try Directory()
        let path = directory.file().path
        let temporary = try CacheFile.writeTemporary([1, 2, 3], beside: path, permissions: 0o600)
        let other = open(temporary.path, O_RDONLY)
        #expect(other >= 0)
        #expect(flock(other, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        CacheFile.removeStaleTemporaries(beside: path)  // this process's own: never removed
        #expect(FileManager.default.fileExists(atPath: temporary.path))
        // A child process that another thread is starting holds a copy of the descriptor until
        // it executes its program; the lock is released all the same.
        let childsCopy = dup(temporary.descriptor)
        #expect(childsCopy >= 0)
        try CacheFile.replace(path, with: temporary)
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "the rename released the lock")
        Glibc.close(childsCopy)
        Glibc.close(other)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
    }

    @Test("a save flushes its temporary file before the rename and the directory after it")
    func saveFlushesFileThenDirectory() throws {
        let directory = try Directory()
        let url = directory.file()
        let cache = makeFilledCache()
        let persistence = CachePersistence(cache: cache, fileURL: url)
        // Without the file's flush a power loss can leave the new name on an empty or partial
        // file; without the directory's, the old file after a save that returned.
        let first = try CacheFile.DurabilitySteps.watching(beside: url.path) { try persistence.save() }
        #expect(first == [.fileSync, .rename, .directorySync])
        // Replacing an existing file takes the same steps.
        cache["e"] = 5
        let second = try CacheFile.DurabilitySteps.watching(beside: url.path) { try persistence.save() }
        #expect(second == [.fileSync, .rename, .directorySync])
        #expect(try CachePersistence(cache: Cache<String, Int>(), fileURL: url).load() == 4)
    }

    @Test("concurrent saves all succeed and leave one complete file and no temporary files")
    func concurrentSaves() async throws {
        let directory = try Directory()
        let url = directory.file()
        let cache = Cache<Int, Int>(policy: .lru)
        let persistence = CachePersistence(cache: cache, fileURL: url)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for round in 0..<15 {
                        cache[task * 100 + round] = round
                        #expect(throws: Never.self) { try persistence.save() }
                    }
                }
            }
        }
        try persistence.save()
        let restored = Cache<Int, Int>(policy: .lru)
        #expect(try CachePersistence(cache: restored, fileURL: url).load() == 60)
        #expect(restored.persistableEntries() == cache.persistableEntries())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
    }

    @Test("the saved file gets the requested permissions, whatever the umask")
    func permissions() throws {
        let directory = try Directory()
        let old = umask(0o077)
        defer { umask(old) }
        for mode in [0o600, 0o640, 0o644] {
            let url = directory.file("mode-\(String(mode, radix: 8))")
            try CachePersistence(cache: makeFilledCache(), fileURL: url, filePermissions: mode).save()
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            #expect((attributes[.posixPermissions] as? Int) == mode)
        }
        // The default is owner read and write only.
        let url = directory.file("default")
        try CachePersistence(cache: makeFilledCache(), fileURL: url).save()
        #expect((try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int) == 0o600)
        // No temporary file is left behind.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names.allSatisfy { !$0.hasSuffix(".tmp") })
    }

    @Test("expired entries are not saved; restored entries keep what was left of their time to live")
    func expiry() throws {
        let directory = try Directory()
        let clock = ManualClock()
        let cache = Cache<String, Int>(policy: .lru, expiration: .afterWrite(.seconds(10)), clock: clock)
        cache["old"] = 1
        clock.advance(by: .seconds(6))
        cache["new"] = 2
        clock.advance(by: .seconds(5))  // "old" expired at 10, "new" lives until 16
        try CachePersistence(cache: cache, fileURL: directory.file()).save()

        let restoredClock = ManualClock()
        let restored = Cache<String, Int>(policy: .lru, expiration: .afterWrite(.seconds(10)), clock: restoredClock)
        #expect(try CachePersistence(cache: restored, fileURL: directory.file()).load() == 1)
        #expect(restored.keys == ["new"])
        restoredClock.advance(by: .milliseconds(4_900))  // its 5 s, less the moment between save and load
        #expect(restored["new"] == 2)
        restoredClock.advance(by: .milliseconds(200))
        #expect(restored["new"] == nil)
    }

    @Test(
        "an entry's own expiresAfter and time to idle survive a save and a load, in Cache and SharedCache",
        arguments: [false, true]
    )
    func perEntryExpirySurvives(shared: Bool) throws {
        let directory = try Directory()
        let clock = ManualClock()
        let cache = Cache<String, Int>(policy: .lru, expiration: .afterAccess(.seconds(100)), clock: clock)
        cache.setValue(1, forKey: "token", expiresAfter: .seconds(10))
        cache["idle"] = 2  // lives until 100 s without a read
        clock.advance(by: .seconds(4))
        try CachePersistence(cache: cache, fileURL: directory.file()).save()

        let restoredClock = ManualClock()
        let read: (String) -> Int?
        if shared {
            let sharedCache = SharedCache<String, Int>(policy: .lru, clock: restoredClock)
            #expect(try CachePersistence(cache: sharedCache, fileURL: directory.file()).load() == 2)
            read = { sharedCache.peekValue(forKey: $0) }
        } else {
            let plain = Cache<String, Int>(policy: .lru, clock: restoredClock)
            #expect(try CachePersistence(cache: plain, fileURL: directory.file()).load() == 2)
            read = { plain.peekValue(forKey: $0) }
        }
        restoredClock.advance(by: .milliseconds(5_900))  // 6 s were left of the token's 10
        #expect(read("token") == 1)
        restoredClock.advance(by: .milliseconds(200))
        #expect(read("token") == nil, "a cache with no expiration of its own kept the token's")
        restoredClock.advance(by: .seconds(89))  // 96 s were left of the idle entry's 100
        #expect(read("idle") == 2)
        restoredClock.advance(by: .seconds(1))
        #expect(read("idle") == nil)
    }

    @Test("a restore leaves out entries whose time passed, and gives the others what is left on the wall clock")
    func restoreByWallClock() {
        let clock = ManualClock()
        let entries = [
            PersistedEntry(key: "gone", value: 1, expiresAt: Date(timeIntervalSinceNow: -1)),
            PersistedEntry(key: "kept", value: 2, expiresAt: Date(timeIntervalSinceNow: 60)),
            PersistedEntry(key: "forever", value: 3),
        ]
        let cache = Cache<String, Int>(policy: .lru, clock: clock)
        cache.restore(entries)
        let shared = SharedCache<String, Int>(policy: .lru, clock: clock)
        shared.restore(entries)
        shared.flush()
        for read in [{ cache.peekValue(forKey: $0) }, { shared.peekValue(forKey: $0) }] as [(String) -> Int?] {
            #expect(read("gone") == nil)
            #expect(read("kept") == 2)
            #expect(read("forever") == 3)
        }
        clock.advance(by: .seconds(61))
        for read in [{ cache.peekValue(forKey: $0) }, { shared.peekValue(forKey: $0) }] as [(String) -> Int?] {
            #expect(read("kept") == nil)
            #expect(read("forever") == 3)
        }
        // A file written before deadlines were saved has none: its entries get the cache's.
        let old = Data(#"[{"key":"a","value":1,"cost":0}]"#.utf8)
        #expect((try? CacheSerializer<String, Int>.json.decode(old)) == [PersistedEntry(key: "a", value: 1)])
    }

    @Test("loading into a cache that has entries keeps its values and adds the others")
    func loadIntoNonEmptyCache() throws {
        let directory = try Directory()
        try CachePersistence(cache: makeFilledCache(), fileURL: directory.file()).save()
        let cache = Cache<String, Int>(policy: .lru)
        cache["a"] = 100
        try CachePersistence(cache: cache, fileURL: directory.file()).load()
        #expect(cache["a"] == 100)
        #expect(Set(cache.keys) == ["a", "b", "c", "d"])
    }

    @Test("a save while load() restores entries is refused, and the file keeps every entry")
    func saveDuringLoad() throws {
        let directory = try Directory()
        let url = directory.file()
        try CachePersistence(cache: makeFilledCache(), fileURL: url).save()
        // The insertion policy holds the restore at its first entry until released.
        let restoring = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Locked(true)
        let cache = Cache<String, Int>(policy: .lru) { _, _, _ in
            if first.mutate({ first in
                defer { first = false }
                return first
            }) {
                restoring.signal()
                release.wait()
            }
            return true
        }
        let persistence = CachePersistence(cache: cache, fileURL: url)
        let loaded = Locked<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        startThread {
            loaded.mutate { $0 = try? persistence.load() }
            done.signal()
        }
        restoring.wait()
        #expect(throws: CachePersistenceError.saveRefused(path: url.path, because: .notLoaded(path: url.path))) {
            try persistence.save()
        }
        release.signal()
        done.wait()
        #expect(loaded.value == 4)
        #expect(try load(url) == ["a": 1, "b": 2, "c": 3, "d": 4], "the file was not replaced meanwhile")
        try persistence.save()  // allowed once every entry is in
        #expect(try load(url) == ["a": 1, "b": 2, "c": 3, "d": 4])
    }

    @Test("a save whose snapshot was taken before a load restored the file is dropped, not written over it")
    func saveOvertakenByLoad() throws {
        let directory = try Directory()
        let url = directory.file()
        let format: CacheSerializer<String, Int> = .custom(identifier: "tsv-v1", encode: encodeTSV, decode: decodeTSV)
        try CachePersistence(cache: makeFilledCache(), fileURL: url, serializer: format).save()
        // The serializer holds the first save of the empty cache after its snapshot.
        let encoding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Locked(true)
        let held: CacheSerializer<String, Int> = .custom(
            identifier: "tsv-v1",
            encode: { entries in
                if first.mutate({ first in
                    defer { first = false }
                    return first
                }) {
                    encoding.signal()
                    release.wait()
                }
                return try encodeTSV(entries)
            },
            decode: decodeTSV
        )
        let cache = Cache<String, Int>(policy: .lru)
        let persistence = CachePersistence(cache: cache, fileURL: url, serializer: held)
        let saved = Locked<Result<Void, CachePersistenceError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        startThread {
            let result = Result { () throws(CachePersistenceError) in try persistence.save() }
            saved.mutate { $0 = result }
            done.signal()
        }
        encoding.wait()  // its snapshot is taken: the empty cache
        #expect(try persistence.load() == 4)
        release.signal()
        done.wait()
        if case .failure(let error) = saved.value { Issue.record("the overtaken save failed: \(error)") }
        let restored = Cache<String, Int>()
        try CachePersistence(cache: restored, fileURL: url, serializer: format).load()
        #expect(Set(restored.keys) == ["a", "b", "c", "d"], "the empty snapshot must not replace the file")
    }

    @Test("loading costs that overflow the total beside the cache's own entries skips them instead of trapping")
    func restoreCostOverflow() throws {
        let directory = try Directory()
        let url = directory.file()
        let source = Cache<String, Int>()
        source.setValue(1, forKey: "big", cost: .max)
        source.setValue(2, forKey: "free", cost: 0)
        try CachePersistence(cache: source, fileURL: url).save()

        let cache = Cache<String, Int>(policy: .lru)
        cache.setValue(3, forKey: "small", cost: 1)
        #expect(try CachePersistence(cache: cache, fileURL: url).load() == 2)
        #expect(Set(cache.keys) == ["small", "free"])
        #expect(cache.totalCost == 1)

        let shared = SharedCache<String, Int>(policy: .lru)
        shared.setValue(3, forKey: "small", cost: 1)
        #expect(try CachePersistence(cache: shared, fileURL: url).load() == 2)
        shared.flush()
        #expect(Set(shared.allItems().keys) == ["small", "free"])
    }

    @Test("a large foreign file is reported from its first bytes, not read whole, and left as it is")
    func largeForeignFile() throws {
        let directory = try Directory()
        let url = directory.file()
        let foreign = Data(repeating: UInt8(ascii: "x"), count: 4 << 20)
        try foreign.write(to: url)
        var bytesRead = 0
        #expect(throws: CachePersistenceError.foreignFile(path: url.path)) {
            try CacheFile.readPayload(path: url.path, identifier: "json", bytesRead: &bytesRead)
        }
        #expect(bytesRead <= 23 + 255)
        #expect(throws: CachePersistenceError.foreignFile(path: url.path)) {
            try CachePersistence(cache: Cache<String, Int>(), fileURL: url).load()
        }
        #expect(try Data(contentsOf: url) == foreign)
    }

    @Test("a file whose name is near the 255-byte limit saves: its temporary files get a shorter name")
    func longFileName() throws {
        let directory = try Directory()
        let url = directory.file(String(repeating: "a", count: 240) + ".json")
        let cache = makeFilledCache()
        let persistence = CachePersistence(cache: cache, fileURL: url)
        try persistence.load()
        try persistence.save()
        #expect(try load(url) == ["a": 1, "b": 2, "c": 3, "d": 4])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == [url.lastPathComponent])

        // The shortened prefix is stable and tells names apart that share their first 200 bytes.
        let long = String(repeating: "é", count: 120)  // 240 bytes of UTF-8
        let prefix = CacheFile.temporaryPrefix(for: long + "1")
        #expect(prefix == CacheFile.temporaryPrefix(for: long + "1"))
        #expect(prefix != CacheFile.temporaryPrefix(for: long + "2"))
        #expect(prefix.utf8.count <= 255 - 52)
        #expect(CacheFile.temporaryPrefix(for: "cache.bin") == ".cache.bin.")

        // A dead process's temporary file beside the long name is still found and removed.
        let stale = directory.url.appendingPathComponent(
            "\(CacheFile.temporaryPrefix(for: url.lastPathComponent))999999-7-1.tmp"
        )
        #expect(FileManager.default.createFile(atPath: stale.path, contents: Data("x".utf8)))
        try persistence.load()
        #expect(!FileManager.default.fileExists(atPath: stale.path))
    }

    @Test("autosave saves every interval of the clock and stops when told")
    func autosave() async throws {
        let directory = try Directory()
        let url = directory.file()
        let clock = ManualClock()
        let cache = Cache<String, Int>(policy: .lru)
        let persistence = CachePersistence(cache: cache, fileURL: url)
        let errors = Locked<[CachePersistenceError]>([])
        persistence.onError = { error in errors.mutate { $0.append(error) } }
        persistence.startAutosave(every: .seconds(30), clock: clock)
        #expect(persistence.isAutosaving)
        await eventually { clock.sleeperCount == 1 }
        cache["a"] = 1
        clock.advance(by: .seconds(29))
        #expect(!FileManager.default.fileExists(atPath: url.path))
        clock.advance(by: .seconds(1))
        // The autosave saved and went back to sleep.
        await eventually { clock.sleeperCount == 1 && FileManager.default.fileExists(atPath: url.path) }
        #expect(try load(url) == ["a": 1])

        cache["b"] = 2
        clock.advance(by: .seconds(30))
        await eventually { clock.sleeperCount == 1 }
        #expect(try load(url) == ["a": 1, "b": 2])

        persistence.stopAutosave()
        #expect(!persistence.isAutosaving)
        await eventually { clock.sleeperCount == 0 }
        cache["c"] = 3
        clock.advance(by: .seconds(60))
        #expect(try load(url) == ["a": 1, "b": 2])
        #expect(errors.value.isEmpty)
    }

    @Test("autosave reports errors to onError and keeps going")
    func autosaveErrors() async throws {
        let directory = try Directory()
        let url = directory.url.appendingPathComponent("missing-directory/cache.bin")
        let clock = ManualClock()
        let persistence = CachePersistence(cache: Cache<String, Int>(), fileURL: url)
        let errors = Locked<[CachePersistenceError]>([])
        persistence.onError = { error in errors.mutate { $0.append(error) } }
        persistence.startAutosave(every: .seconds(1), clock: clock)
        for round in 1...2 {
            await eventually { clock.sleeperCount == 1 }
            clock.advance(by: .seconds(1))
            await eventually { errors.value.count == round }
        }
        guard case .ioFailure(_, "open", ENOENT) = errors.value[0] else {
            Issue.record("unexpected error: \(errors.value[0])")
            return
        }
        persistence.stopAutosave()
    }

    @Test("close() stops the autosave and saves")
    func close() async throws {
        let directory = try Directory()
        let clock = ManualClock()
        let cache = makeFilledCache()
        let persistence = CachePersistence(cache: cache, fileURL: directory.file(), serializer: .propertyList)
        persistence.startAutosave(every: .seconds(60), clock: clock)
        await eventually { clock.sleeperCount == 1 }
        try persistence.close()
        #expect(!persistence.isAutosaving)
        await eventually { clock.sleeperCount == 0 }
        let restored = Cache<String, Int>(countLimit: 4, policy: .lru)
        try CachePersistence(cache: restored, fileURL: directory.file(), serializer: .propertyList).load()
        #expect(restored.persistableEntries() == cache.persistableEntries())
    }

    @Test("the file format: magic, version, serializer, length and CRC32")
    func fileFormat() throws {
        let directory = try Directory()
        let cache = Cache<String, Int>()
        cache["a"] = 1
        try CachePersistence(cache: cache, fileURL: directory.file()).save()
        let bytes = try [UInt8](Data(contentsOf: directory.file()))
        #expect(Array(bytes[0..<8]) == [0x89, 0x43, 0x4B, 0x43, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(bytes[8] == 1 && bytes[9] == 0)
        #expect(bytes[10] == 4 && Array(bytes[11..<15]) == Array("json".utf8))
        let length = (0..<8).reduce(0) { $0 | Int(bytes[15 + $1]) << (8 * $1) }
        #expect(length == bytes.count - 27)
        let payload = Data(bytes[27...])
        let entries = try JSONDecoder().decode([PersistedEntry<String, Int>].self, from: payload)
        #expect(entries == [PersistedEntry(key: "a", value: 1, cost: 0)])
        // The checksum is the standard CRC32 ("123456789" -> 0xCBF43926) of bytes 8..<19+n and the payload.
        let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[23 + $1]) << (8 * UInt32($1)) }
        #expect(stored == crc32(Array(bytes[8..<23]) + Array(bytes[27...])))
        #expect(crc32(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    struct Quote: Codable, Sendable, Equatable {
        var symbol: String
        var price: Double
    }

    @Test("the README's persistence sample does what it says")
    func readmeSample() throws {
        let directory = try Directory()
        let url = directory.file()
        let cache = Cache<String, Quote>(countLimit: 10_000, policy: .lru)
        cache["YHOO"] = Quote(symbol: "YHOO", price: 42.5)
        let persistence = CachePersistence(cache: cache, fileURL: url)
        try persistence.load()
        persistence.onError = { error in Issue.record("\(error)") }
        persistence.startAutosave(every: .seconds(30))
        try persistence.close()
        #expect(!persistence.isAutosaving)
        let restored = Cache<String, Quote>(countLimit: 10_000, policy: .lru)
        #expect(try CachePersistence(cache: restored, fileURL: url).load() == 1)
        #expect(restored["YHOO"] == Quote(symbol: "YHOO", price: 42.5))
    }

    // MARK: Crash test

    /// The crash helper, built next to the test bundle (the test target depends on it).
    static let crashHelper = testHelper

    @Test(
        "a cleaner in another process never makes a save in flight fail (the window before its lock)",
        .enabled(if: crashHelper != nil, Comment(rawValue: testHelperMissing))
    )
    func cleanerNeverBreaksASave() throws {
        let helper = try #require(Self.crashHelper)
        let directory = try Directory()
        let url = directory.file()
        let process = Process()
        process.executableURL = helper
        process.arguments = ["persistence-crash", url.path, "1"]  // tiny saves: many temporary files a second
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        _ = output.fileHandleForReading.availableData  // "ready"
        // What load() does first, in a loop. A cleaner may lock a new temporary file before its
        // save does and remove it: the save then starts again under a new name rather than
        // failing at its rename. Without that, this loop makes a save fail within a fraction
        // of a second.
        let start = ContinuousClock.now
        while process.isRunning, ContinuousClock.now - start < .seconds(3) {
            CacheFile.removeStaleTemporaries(beside: url.path)
        }
        let failed = !process.isRunning
        if !failed { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!failed, "the other process's save failed: \(message)")
    }

    @Test("a FIFO or symbolic link named like a temporary file is left alone and does not block load()")
    func temporaryNamesThatAreNotFiles() throws {
        for viaSymlink in [false, true] {
            let directory = try Directory()
            let url = directory.file()
            let name = ".cache.bin.999999-abc-1.tmp"
            let fifo = viaSymlink ? directory.file("elsewhere.fifo") : directory.file(name)
            #expect(mkfifo(fifo.path, 0o600) == 0)
            if viaSymlink {
                try FileManager.default.createSymbolicLink(at: directory.file(name), withDestinationURL: fifo)
            }
            let done = DispatchSemaphore(value: 0)
            startThread {
                _ = try? CachePersistence(cache: Cache<String, Int>(), fileURL: url).load()
                done.signal()
            }
            let finished = done.wait(timeout: .now() + .seconds(10)) == .success
            #expect(finished, "load() blocked opening a FIFO (symbolic link: \(viaSymlink))")
            if !finished {  // let the blocked open end
                let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
                _ = done.wait(timeout: .now() + .seconds(10))
                if writer >= 0 { Glibc.close(writer) }
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            #expect(names.contains(name), "not a regular file: not for load() to remove")
        }
    }

    @Test("a temporary file named by a version before the lock goes by its process id alone")
    func oldNamingGoesByProcessID() throws {
        let directory = try Directory()
        let url = directory.file()
        let live = directory.file(".cache.bin.\(getppid())-7.tmp")  // a live process's save in flight
        let dead = directory.file(".cache.bin.999999-7.tmp")
        for file in [live, dead] { try Data("x".utf8).write(to: file) }
        #expect(try CachePersistence(cache: Cache<String, Int>(), fileURL: url).load() == 0)
        #expect(FileManager.default.fileExists(atPath: live.path), "removed while its process runs")
        #expect(!FileManager.default.fileExists(atPath: dead.path))
    }

    /// Whether this process can run a command as another user in another PID namespace (root,
    /// util-linux, and a sandbox that allows the namespace).
    static let canRunElsewhere: Bool = {
        let tools = ["/usr/bin/unshare", "/usr/bin/setpriv", "/usr/bin/timeout"]
        guard getuid() == 0, tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else {
            return false
        }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = [
            "--pid", "--fork", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/true",
        ]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    @Test(
        "a cleaner of another user in another PID namespace leaves a save in flight alone",
        .enabled(if: crashHelper != nil && canRunElsewhere, "needs root, unshare, setpriv and the crash helper")
    )
    func otherUserInOtherNamespace() throws {
        let directory = try Directory()
        #expect(chmod(directory.url.path, 0o777) == 0)  // a folder two containers share
        // A copy of the helper that the other user can run wherever this package sits (a fresh
        // clone in a private temporary folder, say).
        let helper = directory.file("helper")
        try FileManager.default.copyItem(at: try #require(Self.crashHelper), to: helper)
        #expect(chmod(helper.path, 0o755) == 0)
        let path = directory.file().path
        // This process's save in flight (written, flushed, locked, not yet renamed), mode 0o600.
        let temporary = try CacheFile.writeTemporary([1, 2, 3], beside: path, permissions: 0o600)
        // The other container: another PID namespace and uid, whose load() runs first. Killing
        // `unshare` kills the namespace's first process (`--kill-child`), and with it the rest.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "--pid", "--fork", "--kill-child", "/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/setpriv",
            "--reuid=65534", "--regid=65534", "--clear-groups", helper.path, "persistence-crash", path, "1",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(ready.hasPrefix("ready"), "the other container's load() did not run")
        #expect(FileManager.default.fileExists(atPath: temporary.path), "the other container removed a save in flight")
        do throws(CachePersistenceError) {
            try CacheFile.replace(path, with: temporary)
        } catch {
            Issue.record("the save in flight failed: \(error)")
            CacheFile.discard(temporary)
        }
    }

    @Test(
        "a process killed with SIGKILL while saving leaves the previous or the new snapshot, 100 times",
        .enabled(if: crashHelper != nil, Comment(rawValue: testHelperMissing)),
        .timeLimit(.minutes(10))
    )
    func crash() throws {
        let helper = try #require(Self.crashHelper)
        let directory = try Directory()
        let url = directory.file()
        let count = 200
        var generator = SystemRandomNumberGenerator()
        var previous = -1
        var advanced = 0
        var interruptedWrites = 0
        for run in 0..<100 {
            // Wait for the first save, then kill at a random moment of the save loop.
            let outcome = try killedAfterSignal(
                helper,
                ["persistence-crash", url.path, String(count)],
                signal: "ready",
                pause: 500...25_000,
                using: &generator
            )
            guard case .killed(let bySignal) = outcome else {
                Issue.record("run \(run): the helper failed before its first save: \(outcome)")
                return
            }
            #expect(bySignal)

            let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            if names.contains(where: { $0.hasSuffix(".tmp") }) { interruptedWrites += 1 }
            let cache = Cache<Int, Int>(policy: .lru)
            let loaded = try CachePersistence(cache: cache, fileURL: url).load()
            // The load removed what the killed process left behind.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["cache.bin"])
            let entries = cache.persistableEntries()
            #expect(loaded == count)
            let snapshot = (entries.first?.value ?? -1_000_003) / 1_000_003
            let expected = (0..<count).map { PersistedEntry(key: $0, value: snapshot * 1_000_003 + $0, cost: $0 % 5) }
            #expect(entries == expected, "run \(run): not one complete snapshot")
            #expect(snapshot > previous, "run \(run): snapshot \(snapshot) after \(previous)")
            if snapshot > previous + 1 { advanced += 1 }
            previous = snapshot
        }
        // Most runs saved more than once before the kill, so kills landed inside the save loop.
        #expect(advanced > 0)
        // Some kills landed while a temporary file was being written (typically about half).
        #expect(interruptedWrites > 0)
    }
}

// MARK: Helpers

/// The entries saved at `url` (JSON), as a dictionary.
private func load(_ url: URL) throws -> [String: Int] {
    let cache = Cache<String, Int>()
    try CachePersistence(cache: cache, fileURL: url).load()
    return Dictionary(uniqueKeysWithValues: cache.entries.map { ($0.key, $0.value) })
}

/// A reference CRC32 (bit by bit), to check the file's checksum independently.
private func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// The custom serializer's format: one `key<TAB>value<TAB>cost` line per entry.
@Sendable private func encodeTSV(_ entries: [PersistedEntry<String, Int>]) throws -> Data {
    Data(entries.map { "\($0.key)\t\($0.value)\t\($0.cost)\n" }.joined().utf8)
}

@Sendable private func decodeTSV(_ data: Data) throws -> [PersistedEntry<String, Int>] {
    struct BadLine: Error {}
    return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
        let fields = line.split(separator: "\t")
        guard fields.count == 3, let value = Int(fields[1]), let cost = Int(fields[2]) else { throw BadLine() }
        return PersistedEntry(key: String(fields[0]), value: value, cost: cost)
    }
}
