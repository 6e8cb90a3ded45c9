import CacheKit
import CacheKitServiceLifecycle
import Foundation
import ServiceLifecycle
import Synchronization
import Testing

/// `CacheKitService` in a `ServiceGroup`: its periodic duties run on the injected clock, and a
/// graceful shutdown saves, closes and unsubscribes.
@Suite(.timeLimit(.minutes(1))) struct CacheKitServiceTests {
    /// A memory-pressure source whose level the test sets.
    final class FixedPressure: MemoryPressureSource {
        let level = Mutex(MemoryPressureLevel.normal)
        func currentLevel() -> MemoryPressureLevel { level.withLock { $0 } }
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("CacheKitServiceTests-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Yields until `condition` holds (the suite's time limit ends a wait that never does).
    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test func gracefulShutdownSavesTheCacheAndClosesTheStore() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let sessions = Cache<String, Int>(countLimit: 100, clock: clock)
        let persistence = CachePersistence(cache: sessions, fileURL: directory.appendingPathComponent("sessions.json"))
        try persistence.load()
        let store = try await DiskStore(directory: directory.appendingPathComponent("store"), byteLimit: 1 << 20)
        let articles = TieredCache<String, String>(
            countLimit: 10,
            store: store,
            writeMode: .writeBehind(maximumPending: 8)
        )

        let service = CacheKitService([
            .sweeping(sessions, every: .seconds(30), clock: clock),
            .autosaving(persistence, every: .seconds(60), clock: clock),
            .closing(articles),
        ])
        let group = ServiceGroup(services: [service], logger: .init(label: "test"))
        async let running: Void = group.run()

        sessions.setValue(1, forKey: "ada")
        sessions.setValue(2, forKey: "grace", expiresAfter: .seconds(10))
        try await articles.setValue("body", forKey: "article")
        await Self.waitUntil { persistence.isAutosaving }

        await group.triggerGracefulShutdown()
        try await running

        #expect(!persistence.isAutosaving)
        let restored = Cache<String, Int>(countLimit: 100)
        let loaded = try CachePersistence(cache: restored, fileURL: persistence.fileURL).load()
        #expect(loaded == 2)
        #expect(restored["ada"] == 1)
        #expect(restored["grace"] == 2)
        // The store was flushed and closed.
        await #expect(throws: CacheStoreError.self) { try await store.usage() }
        let reopened = try await DiskStore(directory: directory.appendingPathComponent("store"), byteLimit: 1 << 20)
        #expect(try await reopened.entry(forKey: "article") != nil)
        try await reopened.close()
    }

    @Test func sweepingRemovesExpiredEntriesOnTheClock() async throws {
        let clock = ManualClock()
        let cache = Cache<String, Int>(countLimit: 100, clock: clock)
        cache.setValue(1, forKey: "short", expiresAfter: .seconds(10))
        cache.setValue(2, forKey: "kept")
        let service = CacheKitService([.sweeping(cache, every: .seconds(30), clock: clock)])
        let group = ServiceGroup(services: [service], logger: .init(label: "test"))
        async let running: Void = group.run()

        await Self.waitUntil { clock.sleeperCount == 1 }
        #expect(cache.statistics.removalCounts[.expired, default: 0] == 0)
        clock.advance(by: .seconds(30))
        // Statistics are read without sweeping: only the service's sweep counts the expiry.
        await Self.waitUntil { cache.statistics.removalCounts[.expired] == 1 }
        #expect(cache.peekValue(forKey: "kept") == 2)

        await group.triggerGracefulShutdown()
        try await running
    }

    @Test func memoryPressureEmptiesTheCacheWhileTheServiceRuns() async throws {
        let pressure = FixedPressure()
        let monitor = MemoryPressureMonitor(source: pressure, interval: .seconds(1), clock: ManualClock())
        let cache = Cache<Int, Int>(countLimit: 100)
        for i in 0..<10 { cache.setValue(i, forKey: i) }
        let service = CacheKitService([.respondingToMemoryPressure(cache, monitor: monitor)])
        let group = ServiceGroup(services: [service], logger: .init(label: "test"))
        async let running: Void = group.run()

        await Self.waitUntil { monitor.subscriberCount == 1 }
        pressure.level.withLock { $0 = .warning }
        #expect(try monitor.check() == .warning)
        #expect(cache.count == 0)

        await group.triggerGracefulShutdown()
        try await running
        #expect(monitor.subscriberCount == 0)
    }

    @Test func aFailedLastSaveIsThrownAfterEveryEndRan() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cache.json")
        try Data("not a cache file".utf8).write(to: file)
        let cache = Cache<String, Int>(countLimit: 10)
        let persistence = CachePersistence(cache: cache, fileURL: file)
        let closed = Mutex(false)
        let service = CacheKitService([
            .init(end: { closed.withLock { $0 = true } }),
            .autosaving(persistence, every: .seconds(60), clock: ManualClock()),
        ])
        await #expect(throws: CachePersistenceError.self) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                group.cancelAll()
                try await group.waitForAll()
            }
        }
        #expect(closed.withLock { $0 })
        #expect(try Data(contentsOf: file) == Data("not a cache file".utf8))
    }
}
