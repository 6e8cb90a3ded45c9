import CacheKit
import Foundation
import Synchronization
import Testing

@Suite("TieredCache")
struct TieredCacheTests {
    let clock = ManualClock()
    var wall: WallClock { .manual(clock) }

    func json(_ value: Int) -> Data { try! JSONEncoder().encode(value) }

    @Test func loadedValuesReachBothLevelsAndOutliveTheMemoryLevel() async throws {
        let store = InMemoryStore(clock: wall)
        let loads = CallCounter()
        let first = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        let value = try await first.value(forKey: 7) { key in
            loads.increment()
            return key * 10
        }
        #expect(value == 70)
        #expect(first.memory.value(forKey: 7) == 70)
        #expect(await store.entries["7"]?.value == json(70))

        // A new process: an empty memory level over the same store.
        let second = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        let again = try await second.value(forKey: 7) { _ in
            loads.increment()
            return -1
        }
        #expect(again == 70)
        #expect(loads.value == 1)
        #expect(second.statistics.storeHitCount == 1)
        #expect(second.statistics.memory.missCount == 1)
        #expect(second.memory.peekValue(forKey: 7) == 70)  // promoted
        #expect(await second.value(forKey: 7) == 70)
        #expect(second.statistics.memory.hitCount == 1)
    }

    /// A key of the app's own: `Codable`, neither a string nor lossless as one.
    struct Place: Hashable, Codable, Sendable {
        var city: String
        var zip: Int
    }

    @Test("every Codable key works by default: a struct's as sorted JSON, a UUID's as its string, a string as itself")
    func codableKeysByDefault() async throws {
        let store = InMemoryStore(clock: wall)
        let places = TieredCache<Place, Int>(countLimit: 10, store: store, clock: wall)
        try await places.setValue(1, forKey: Place(city: "Oslo", zip: 150))
        #expect(await store.entries[#"{"city":"Oslo","zip":150}"#]?.value == json(1))
        let placesAgain = TieredCache<Place, Int>(countLimit: 10, store: store, clock: wall)
        #expect(await placesAgain.value(forKey: Place(city: "Oslo", zip: 150)) == 1, "read back from the store")

        let id = UUID()
        let byID = TieredCache<UUID, Int>(countLimit: 10, store: store, clock: wall)
        try await byID.setValue(2, forKey: id)
        #expect(await store.entries[id.uuidString]?.value == json(2))

        let named = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        try await named.setValue(3, forKey: "plain")
        #expect(await store.entries["plain"]?.value == json(3), "a string key stays itself, not quoted JSON")
    }

    @Test func concurrentMissesReadTheStoreAndLoadOnce() async throws {
        let store = InMemoryStore(clock: wall)
        let gate = Gate()
        let loads = CallCounter()
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await cache.value(forKey: 1) { _ in
                        loads.increment()
                        await gate.wait()
                        return 99
                    }
                }
            }
            await eventually { await gate.arrivals == 1 }
            await gate.open()
            for try await value in group { #expect(value == 99) }
        }
        #expect(loads.value == 1)
        #expect(await store.reads == 1)
        #expect(await store.writes == 1)
    }

    @Test func aMissInBothLevelsReadsTheStoreOnceAndCountsAsAFailedLoad() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        #expect(await cache.value(forKey: 1) == nil)
        #expect(await store.reads == 1)
        let statistics = cache.statistics
        #expect(statistics.memory.missCount == 1)
        #expect(statistics.memory.loadFailureCount == 1)
        #expect(statistics.memory.loadSuccessCount == 0)
        #expect(statistics.storeMissCount == 1)
        #expect(statistics.storeHitCount == 0)
        // A hit in the store is counted once, though it is read again to be kept in memory.
        try await cache.setValue(2, forKey: 2)
        cache.memory.removeAll()
        #expect(await cache.value(forKey: 2) == 2)
        #expect(cache.statistics.storeHitCount == 1)
        #expect(cache.memory.peekValue(forKey: 2) == 2)
    }

    @Test func aLoadingReadBesideAPlainReadStillLoads() async throws {
        let store = InMemoryStore(clock: wall)
        let gate = Gate()
        await store.set(readGate: gate)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        let plain = Task { await cache.value(forKey: 1) }
        await eventually { await gate.arrivals == 1 }
        let loading = Task { try await cache.value(forKey: 1) { _ in 5 } }
        await gate.open()
        #expect(await plain.value == nil)
        #expect(try await loading.value == 5)
        #expect(await store.entries["1"]?.value == json(5))
    }

    @Test func aPromotedValueKeepsItsStoreDeadline() async throws {
        let store = InMemoryStore(clock: wall)
        let writer = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        try await writer.setValue(5, forKey: "a", expiresAfter: .seconds(60))
        clock.advance(by: .seconds(30))
        let reader = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        #expect(await reader.value(forKey: "a") == 5)
        clock.advance(by: .seconds(29))
        #expect(reader.memory.value(forKey: "a") == 5)
        clock.advance(by: .seconds(2))
        #expect(reader.memory.value(forKey: "a") == nil)
        #expect(await reader.value(forKey: "a") == nil)
    }

    @Test func theCachesLifetimeAppliesToWritesWithoutOne() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<String, Int>(countLimit: 10, store: store, expiresAfter: .seconds(10), clock: wall)
        try await cache.setValue(1, forKey: "a")
        let deadline = await store.entries["a"]?.expiresAt
        #expect(deadline == wall.now().addingTimeInterval(10))
        clock.advance(by: .seconds(10))
        #expect(await cache.value(forKey: "a") == nil)
    }

    @Test func aFailedStoreWriteLeavesTheKeyInNeitherLevel() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: "a")
        await store.set(failsWrites: true)
        await #expect(throws: CacheStoreError.ioFailure(path: "memory", operation: "write", errno: ENOSPC)) {
            try await cache.setValue(2, forKey: "a")
        }
        #expect(cache.memory.value(forKey: "a") == nil)
        #expect(await store.entries["a"] == nil)
        #expect(await cache.value(forKey: "a") == nil)
    }

    @Test func aFailingStoreIsAReportedMissAndTheLoaderAnswers() async throws {
        let store = InMemoryStore(clock: wall)
        let problems = ProblemLog()
        let cache = TieredCache<String, Int>(
            countLimit: 10,
            store: store,
            clock: wall,
            problemHandler: problems.handler
        )
        await store.set(failsReads: true)
        #expect(try await cache.value(forKey: "a") { _ in 3 } == 3)
        #expect(problems.all.count == 1)
        #expect(cache.statistics.storeErrorCount == 1)
    }

    @Test func bytesTheCodecCannotReadAreAReportedMissAndLeaveTheStore() async throws {
        let store = InMemoryStore(clock: wall)
        await store.put(Data("not json".utf8), forKey: "a")
        let problems = ProblemLog()
        let cache = TieredCache<String, Int>(
            countLimit: 10,
            store: store,
            clock: wall,
            problemHandler: problems.handler
        )
        #expect(await cache.value(forKey: "a") == nil)
        #expect(problems.all.map(\.key) == ["a"])
        if case .codec? = problems.all.first?.error {} else { Issue.record("expected a codec error: \(problems.all)") }
        #expect(await store.entries["a"] == nil)
    }

    @Test func aWriteDuringALoadWinsInBothLevels() async throws {
        let store = InMemoryStore(clock: wall)
        let gate = Gate()
        let cache = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        let load = Task {
            try await cache.value(forKey: "a") { _ in
                await gate.wait()
                return 1
            }
        }
        await eventually { await gate.arrivals == 1 }
        try await cache.setValue(2, forKey: "a")
        await gate.open()
        #expect(try await load.value == 1)  // the load answers its caller
        #expect(cache.memory.value(forKey: "a") == 2)
        #expect(await store.entries["a"]?.value == json(2))
    }

    @Test func removalsActOnTheLevelsNamed() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: "a")
        try await cache.removeValue(forKey: "a", from: .memory)
        #expect(cache.memory.value(forKey: "a") == nil)
        #expect(await store.entries["a"] != nil)
        #expect(await cache.value(forKey: "a") == 1)
        try await cache.removeValue(forKey: "a")
        #expect(cache.memory.value(forKey: "a") == nil)
        #expect(await store.entries["a"] == nil)

        try await cache.setValue(1, forKey: "b")
        try await cache.removeAll(from: .store)
        #expect(cache.memory.value(forKey: "b") == 1)
        #expect(await store.entries.isEmpty)
        try await cache.setValue(2, forKey: "c")
        try await cache.removeAll()
        #expect(cache.memory.count == 0)
        #expect(await store.entries.isEmpty)
    }

    @Test func memoryEvictionsKeepTheStoresCopy() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 2, policy: .lru, store: store, clock: wall)
        for key in 0..<5 { try await cache.setValue(key, forKey: key) }
        #expect(cache.memory.count == 2)
        #expect(await store.entries.count == 5)
        #expect(await cache.value(forKey: 0) == 0)
    }

    @Test func expireAllEmptiesBothLevelsAndATriggerDoesToo() async throws {
        let store = InMemoryStore(clock: wall)
        let cache = TieredCache<String, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: "a")
        try await cache.expireAll()
        #expect(cache.memory.count == 0)
        #expect(cache.memory.statistics.removalCounts[.expired] == 1)
        #expect(await store.entries.isEmpty)

        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        cache.expireAll(whenever: events)
        try await cache.setValue(2, forKey: "b")
        continuation.yield()
        await eventually { await store.entries.isEmpty && cache.memory.count == 0 }
        continuation.finish()
    }

    @Test func writeBehindReadsItsPendingWritesAndFlushes() async throws {
        let store = InMemoryStore(clock: wall)
        let gate = Gate()
        await store.set(writeGate: gate)
        let cache = TieredCache<Int, Int>(
            countLimit: 1,
            policy: .lru,
            store: store,
            writeMode: .writeBehind(maximumPending: 2),
            clock: wall
        )
        try await cache.setValue(1, forKey: 1)
        try await cache.setValue(2, forKey: 2)  // evicts key 1 from memory
        #expect(cache.memory.peekValue(forKey: 1) == nil)
        #expect(await cache.value(forKey: 1) == 1)  // the pending write answers
        #expect(await store.entries.isEmpty)

        // A third write finds two pending and writes through: it waits for the store.
        let finished = CallCounter()
        let third = Task {
            try await cache.setValue(3, forKey: 3)
            finished.increment()
        }
        await eventually { await store.writesStarted == 3 }
        #expect(finished.value == 0)
        await gate.open()
        try await third.value
        await cache.flush()
        #expect(await store.entries.count == 3)
        #expect(await store.entries["1"]?.value == json(1))
    }

    @Test func writeBehindReportsAFailedWriteAndDropsTheKey() async throws {
        let store = InMemoryStore(clock: wall)
        await store.set(failsWrites: true)
        let problems = ProblemLog()
        let cache = TieredCache<Int, Int>(
            countLimit: 10,
            store: store,
            writeMode: .writeBehind(maximumPending: 10),
            clock: wall,
            problemHandler: problems.handler
        )
        try await cache.setValue(1, forKey: 1)
        await cache.flush()
        #expect(problems.all.count == 1)
        #expect(cache.memory.value(forKey: 1) == nil)
    }

    @Test func codecsAndKeyEncodingsRoundTrip() throws {
        struct Point: Codable, Equatable { var x: Int, y: Int }
        let point = Point(x: 1, y: 2)
        #expect(try StoreCodec<Point>.json.decode(StoreCodec<Point>.json.encode(point)) == point)
        #expect(try StoreCodec<Int>.propertyList.decode(StoreCodec<Int>.propertyList.encode(42)) == 42)
        #expect(try StoreCodec<Data>.data.encode(Data([1, 2])) == Data([1, 2]))
        #expect(throws: (any Error).self) { try StoreCodec<Int>.propertyList.decode(Data("<plist/>".utf8)) }
        #expect(try StoreKeyEncoding<Int>.description.encode(-5) == "-5")
        #expect(try StoreKeyEncoding<Point>.json.encode(point) == #"{"x":1,"y":2}"#)
        let id = UUID()
        #expect(try StoreKeyEncoding<UUID>.uuid.encode(id) == id.uuidString)
    }
}

/// A thread-safe count for closures that run in tasks.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

@Suite("TieredCache over DiskStore")
struct TieredDiskStoreTests {
    @Test func valuesOutliveTheProcessAndExpireOnBothLevelsTogether() async throws {
        let directory = StoreDirectory()
        let clock = ManualClock()
        let wall = WallClock.manual(clock)
        let store = try await DiskStore(directory: directory.url, byteLimit: 1 << 16, clock: wall)
        let first = TieredCache<Int, String>(countLimit: 2, store: store, clock: wall)
        for key in 0..<5 { try await first.setValue("v\(key)", forKey: key, expiresAfter: .seconds(60)) }
        try await first.setValue("kept", forKey: 99)
        #expect(try await store.usage().count == 6)
        try await first.close()

        // Another run: an empty memory level over the reopened directory.
        let reopened = try await DiskStore(directory: directory.url, byteLimit: 1 << 16, clock: wall)
        let second = TieredCache<Int, String>(countLimit: 2, store: reopened, clock: wall)
        for key in 0..<5 { #expect(await second.value(forKey: key) == "v\(key)") }
        #expect(second.statistics.storeHitCount == 5)
        clock.advance(by: .seconds(60))
        for key in 0..<5 { #expect(await second.value(forKey: key) == nil) }
        #expect(await second.value(forKey: 99) == "kept")
        #expect(try await reopened.usage().count == 1)
        try await second.close()
    }
}
