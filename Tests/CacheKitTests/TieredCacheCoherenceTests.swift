import CacheKit
import Foundation
import Testing

/// A tiered cache over a store that other processes share: its memory level follows the store's
/// invalidations.
@Suite("TieredCache over an invalidating store")
struct TieredCacheCoherenceTests {
    let clock = ManualClock()
    var wall: WallClock { .manual(clock) }

    func json(_ value: Int) -> Data { try! JSONEncoder().encode(value) }

    @Test func anInvalidatedEntryLeavesMemoryAndIsReadAgainFromTheStore() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: 1)
        try await cache.setValue(2, forKey: 2)
        #expect(cache.memory.peekValue(forKey: 1) == 1)

        // Another process writes key 1.
        await store.base.put(json(10), forKey: "1")
        store.deliver(.entries(["1"]))
        #expect(cache.memory.peekValue(forKey: 1) == nil)
        #expect(cache.memory.peekValue(forKey: 2) == 2)
        #expect(await cache.value(forKey: 1) == 10)
        #expect(cache.memory.peekValue(forKey: 1) == 10)
        #expect(cache.statistics.invalidationCount == 1)
    }

    @Test func aStoreKeyThatNamesNoKeyChangesNothing() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: 1)
        store.deliver(.entries(["not a number"]))
        #expect(cache.memory.peekValue(forKey: 1) == 1)
    }

    @Test func withoutADecoderAnInvalidationDropsTheWholeMemoryLevel() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(
            countLimit: 10,
            store: store,
            codec: .json,
            keys: .custom { "k\($0)" },
            clock: wall
        )
        try await cache.setValue(1, forKey: 1)
        try await cache.setValue(2, forKey: 2)
        store.deliver(.entries(["k1"]))
        #expect(cache.memory.count == 0)
        #expect(await cache.value(forKey: 2) == 2)  // still in the store
    }

    @Test func aCustomDecoderNamesTheEntryToDrop() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(
            countLimit: 10,
            store: store,
            codec: .json,
            keys: .custom({ "k\($0)" }, decode: { $0.hasPrefix("k") ? Int($0.dropFirst()) : nil }),
            clock: wall
        )
        try await cache.setValue(1, forKey: 1)
        try await cache.setValue(2, forKey: 2)
        store.deliver(.entries(["k1"]))
        #expect(cache.memory.peekValue(forKey: 1) == nil)
        #expect(cache.memory.peekValue(forKey: 2) == 2)
    }

    @Test func anInvalidationDuringAStoreReadKeepsTheReadOutOfMemory() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        await store.base.put(json(1), forKey: "1")
        let gate = Gate()
        await store.base.set(readGate: gate)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        // Through a loader, a memory miss reads the store inside memory's single flight: the read
        // whose value memory would keep.
        let read = Task { try await cache.value(forKey: 1) { _ in 99 } }
        await eventually { await gate.arrivals == 1 }
        // The read has reached the store; another process now writes the key.
        store.deliver(.entries(["1"]))
        await gate.open()
        #expect(try await read.value == 1)  // what the store held when the read began
        #expect(cache.memory.peekValue(forKey: 1) == nil)
    }

    @Test func aReadWithoutLoaderThatSpansAnInvalidationKeepsOnlyWhatALaterReadFound() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        await store.base.put(json(1), forKey: "1")
        let gate = Gate()
        await store.base.set(readGate: gate)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        let read = Task { await cache.value(forKey: 1) }
        await eventually { await gate.arrivals == 1 }
        // The read has reached the store; another process writes the key and says so.
        await store.base.put(json(2), forKey: "1")
        store.deliver(.entries(["1"]))
        await gate.open()
        // A hit is read again inside memory's single flight, after the invalidation.
        #expect(await read.value == 2)
        #expect(cache.memory.peekValue(forKey: 1) == 2)
    }

    @Test func aSuspensionEmptiesMemoryAndBypassesItUntilResumed() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: 1)
        #expect(!cache.isMemoryBypassed)

        store.deliver(.suspended)
        #expect(cache.isMemoryBypassed)
        #expect(cache.memory.count == 0)
        // Reads and writes reach the store, and memory keeps nothing.
        #expect(await cache.value(forKey: 1) == 1)
        try await cache.setValue(2, forKey: 2)
        #expect(cache.memory.count == 0)
        #expect(await store.base.entries["2"] == StoredEntry(value: json(2), expiresAt: nil))
        let loaded = try await cache.value(forKey: 3) { $0 * 10 }
        #expect(loaded == 30)
        #expect(cache.memory.count == 0)
        #expect(cache.statistics.suspensionCount == 1)

        store.deliver(.resumed)
        #expect(!cache.isMemoryBypassed)
        #expect(await cache.value(forKey: 1) == 1)
        #expect(cache.memory.peekValue(forKey: 1) == 1)
    }

    @Test func aReadThatBeganBeforeASuspensionKeepsNothingEvenIfItEndsAfterTheResumption() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        await store.base.put(json(1), forKey: "1")
        let gate = Gate()
        await store.base.set(readGate: gate)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        let read = Task { try await cache.value(forKey: 1) { _ in 99 } }
        await eventually { await gate.arrivals == 1 }
        // Invalidations may have been lost while the read ran.
        store.deliver(.suspended)
        store.deliver(.resumed)
        await gate.open()
        #expect(try await read.value == 1)
        #expect(cache.memory.peekValue(forKey: 1) == nil)
    }

    @Test func aCacheCreatedWhileSuspendedStartsBypassed() async throws {
        let store = InvalidatingInMemoryStore(clock: wall, resumed: false)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        #expect(cache.isMemoryBypassed)
        try await cache.setValue(1, forKey: 1)
        #expect(cache.memory.count == 0)
        store.deliver(.resumed)
        try await cache.setValue(1, forKey: 1)
        #expect(cache.memory.peekValue(forKey: 1) == 1)
    }

    @Test func emptyingTheStoreElsewhereDropsEveryCopy() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        let cache = TieredCache<Int, Int>(countLimit: 10, store: store, clock: wall)
        try await cache.setValue(1, forKey: 1)
        try await cache.setValue(2, forKey: 2)
        store.deliver(.all)
        #expect(cache.memory.count == 0)
        #expect(!cache.isMemoryBypassed)
    }

    @Test func aCacheStopsListeningWhenItIsReleased() async throws {
        let store = InvalidatingInMemoryStore(clock: wall)
        var cache: TieredCache<Int, Int>? = TieredCache(countLimit: 10, store: store, clock: wall)
        #expect(store.handlerCount == 1)
        try await cache?.setValue(1, forKey: 1)
        cache = nil
        #expect(store.handlerCount == 0)
    }

    @Test func keyEncodingsDecodeWhatTheyEncode() throws {
        #expect(StoreKeyEncoding<Int>.description.decode?("42") == 42)
        #expect(StoreKeyEncoding<Int>.description.decode?("x") == nil)
        struct Point: Codable, Hashable, Sendable { var x: Int, y: Int }
        let json = StoreKeyEncoding<Point>.json
        #expect(try json.decode?(json.encode(Point(x: 1, y: 2))) == Point(x: 1, y: 2))
        let id = UUID()
        #expect(StoreKeyEncoding<UUID>.uuid.decode?(id.uuidString) == id)
        #expect(StoreKeyEncoding<Int>.custom { "\($0)" }.decode == nil)
    }
}
