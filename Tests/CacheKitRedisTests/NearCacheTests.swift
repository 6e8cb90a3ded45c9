#if Redis
import CacheKit
import CacheKitRedis
import Foundation
import Testing

/// Tiered caches over `RedisStore`s on one server: each keeps a near cache in memory, which the
/// server's invalidations keep coherent.
@Suite("Near caching over Redis", .enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct NearCacheTests {
    static let modes: [RedisStore.Invalidation] = [.tracking, .channel("cachekit-test-invalidations")]

    struct Unavailable: Error {}

    /// A near cache on `server`, quick to notice a lost connection.
    func nearCache(
        _ server: RedisServer,
        _ invalidation: RedisStore.Invalidation,
        prefix: String = "near:"
    ) -> TieredCache<String, String> {
        let configuration = server.configuration {
            $0.commandTimeout = .milliseconds(500)
            $0.connectTimeout = .milliseconds(500)
        }
        let store = RedisStore(
            configuration: configuration,
            keyPrefix: prefix,
            invalidation: invalidation,
            pingInterval: .milliseconds(50)
        )
        return TieredCache<String, String>(countLimit: 100, store: store)
    }

    /// Waits (yielding) until `condition` holds, for at most 30 seconds of wall time.
    func eventually(_ what: Comment, _ condition: () async -> Bool) async {
        for _ in 0..<30_000 {
            if await condition() { return }
            try? await Task.sleep(for: .milliseconds(1))
        }
        Issue.record("still not so after 30 s: \(what)")
    }

    @Test(arguments: modes)
    func eachProcessReadsItsOwnWritesAndLosesItsCopyWhenAnotherWrites(_ mode: RedisStore.Invalidation) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let first = nearCache(server, mode)
        let second = nearCache(server, mode)
        await eventually("both armed") { !first.isMemoryBypassed && !second.isMemoryBypassed }

        try await first.setValue("one", forKey: "k")
        #expect(await first.value(forKey: "k") == "one")  // read your writes
        #expect(await second.value(forKey: "k") == "one")
        // The write's own invalidation may reach the second cache after its read: it then reads
        // once more.
        await eventually("the second cache holds the value") {
            await second.value(forKey: "k") == "one" && second.memory.peekValue(forKey: "k") == "one"
        }

        try await first.setValue("two", forKey: "k")
        #expect(await first.value(forKey: "k") == "two")
        await eventually("the second copy dropped") { second.memory.peekValue(forKey: "k") == nil }
        #expect(await second.value(forKey: "k") == "two")
        #expect(second.statistics.invalidationCount >= 1)

        try await second.removeValue(forKey: "k")
        await eventually("the first copy dropped") { first.memory.peekValue(forKey: "k") == nil }
        #expect(await first.value(forKey: "k") == nil)
        try await first.close()
        try await second.close()
    }

    @Test(arguments: modes)
    func removingEverythingEmptiesEveryProcesssMemory(_ mode: RedisStore.Invalidation) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let first = nearCache(server, mode)
        let second = nearCache(server, mode)
        await eventually("both armed") { !first.isMemoryBypassed && !second.isMemoryBypassed }
        for index in 0..<10 { try await first.setValue("v\(index)", forKey: "k\(index)") }
        for index in 0..<10 { #expect(await second.value(forKey: "k\(index)") == "v\(index)") }
        // The writes' own invalidations may reach the second cache after its reads: it reads again.
        await eventually("the second cache holds every value") {
            for index in 0..<10 { _ = await second.value(forKey: "k\(index)") }
            return second.memory.count == 10
        }
        try await first.removeAll()
        await eventually("the second memory level emptied") { second.memory.count == 0 }
        #expect(await second.value(forKey: "k3") == nil)
        try await first.close()
        try await second.close()
    }

    @Test func aRestartedServerBypassesMemoryUntilTrackingIsArmedAgain() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let writer = nearCache(server, .tracking)
        let reader = nearCache(server, .tracking)
        await eventually("both armed") { !writer.isMemoryBypassed && !reader.isMemoryBypassed }
        try await writer.setValue("before", forKey: "k")
        await eventually("the reader holds the value") {
            await reader.value(forKey: "k") == "before" && reader.memory.peekValue(forKey: "k") == "before"
        }

        server.stop(signal: SIGKILL)
        await eventually("the reader bypasses memory") { reader.isMemoryBypassed }
        #expect(reader.memory.count == 0)
        // During the outage a read comes from the loader or fails; never from the old copy.
        let during = try await reader.value(forKey: "k") { _ in "from the loader" }
        #expect(during == "from the loader")
        await #expect(throws: Unavailable.self) {
            _ = try await reader.value(forKey: "k") { _ in throw Unavailable() }
        }
        #expect(reader.memory.count == 0)

        try await server.restart()
        await eventually("tracking armed again") { !writer.isMemoryBypassed && !reader.isMemoryBypassed }
        try await writer.setValue("after", forKey: "k")
        #expect(await reader.value(forKey: "k") == "after")
        try await writer.setValue("later", forKey: "k")
        await eventually("the copy dropped after the restart") { reader.memory.peekValue(forKey: "k") == nil }
        #expect(await reader.value(forKey: "k") == "later")
        #expect(reader.statistics.suspensionCount >= 1)
        try await writer.close()
        try await reader.close()
    }

    @Test func aServerThatStopsAnsweringIsFoundByThePing() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let reader = nearCache(server, .tracking)
        await eventually("armed") { !reader.isMemoryBypassed }
        try await reader.setValue("v", forKey: "k")
        // The server answers nothing until the near cache has noticed, however long that takes
        // on a loaded machine; the connections themselves stay open.
        server.freeze()
        await eventually("the silent server noticed") { reader.statistics.suspensionCount >= 1 }
        #expect(
            reader.memory.peekValue(forKey: "k") == nil,
            "\(reader.statistics) bypassed: \(reader.isMemoryBypassed)"
        )
        server.thaw()
        await eventually("armed again") { !reader.isMemoryBypassed }
        #expect(await reader.value(forKey: "k") == "v")
        try await reader.close()
    }

    @Test func anotherProcessSeesWritesAndItsCopiesAreInvalidated() async throws {
        let server = try await RedisServer.start(password: "near-cache-secret")
        defer { server.stop() }
        let helper = try HelperProcess(["\(server.port)", "near:", "tracking", "near-cache-secret"])
        defer { helper.stop() }
        let local = nearCache(server, .tracking)
        #expect(try await helper.ask("ready") == "ready")
        await eventually("armed") { !local.isMemoryBypassed }

        try await local.setValue("one", forKey: "k")
        #expect(try await helper.ask("get k") == "value one")
        // The write's own invalidation may reach the helper after its read: it then reads again.
        var held = false
        for _ in 0..<1_000 where !held {
            let read = try await helper.ask("get k")
            let memory = try await helper.ask("memory k")
            held = read == "value one" && memory == "value one"
            if !held { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(held, "the helper holds the value in memory")

        try await local.setValue("two", forKey: "k")
        #expect(try await helper.ask("dropped k") == "dropped")
        #expect(try await helper.ask("get k") == "value two")

        #expect(await local.value(forKey: "k") == "two")
        #expect(try await helper.ask("set k three") == "ok")
        await eventually("the local copy dropped") { local.memory.peekValue(forKey: "k") == nil }
        #expect(await local.value(forKey: "k") == "three")

        #expect(try await helper.ask("removeall") == "ok")
        await eventually("the local copy dropped") { local.memory.peekValue(forKey: "k") == nil }
        #expect(await local.value(forKey: "k") == nil)
        try await local.close()
    }
}
#endif
