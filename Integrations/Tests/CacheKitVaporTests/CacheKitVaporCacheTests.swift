import CacheKit
import CacheKitVapor
import Foundation
import Testing
import Vapor
import VaporTesting

/// Vapor's own cache behaviours (a miss, a write read back, expiry, deletion, a custom provider),
/// checked against `CacheKitVaporCache`, with a `ManualClock` for time.
@Suite struct CacheKitVaporCacheTests {
    struct Profile: Codable, Equatable {
        var name: String
        var visits: Int
    }

    @Test func aMissReadsNil() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            #expect(try await app.cache.get("absent", as: String.self) == nil)
        }
    }

    @Test func aValueSetReadsBack() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100, policy: .lru))
            try await app.cache.set("greeting", to: "hello")
            #expect(try await app.cache.get("greeting", as: String.self) == "hello")
            try await app.cache.set("greeting", to: "hi")
            let replaced: String? = try await app.cache.get("greeting")
            #expect(replaced == "hi")
        }
    }

    @Test func codableValuesCrossAsJSON() async throws {
        try await withApp { (app: Application) async throws in
            let cache = CacheKit.Cache<String, Data>(countLimit: 100)
            app.caches.use(.cachekit(cache))
            let profile = Profile(name: "Ada", visits: 3)
            try await app.cache.set("ada", to: profile)
            #expect(try await app.cache.get("ada", as: Profile.self) == profile)
            let stored = try #require(cache.value(forKey: "ada"))
            #expect(try JSONDecoder().decode(Profile.self, from: stored) == profile)
            #expect(cache.totalCost == stored.count)
        }
    }

    @Test func aValueOfAnotherShapeFailsTheRead() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            try await app.cache.set("ada", to: Profile(name: "Ada", visits: 3))
            await #expect(throws: DecodingError.self) { try await app.cache.get("ada", as: Int.self) }
        }
    }

    @Test func expiresInRemovesTheValueWhenItsTimeIsUp() async throws {
        let clock = ManualClock()
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(CacheKit.Cache(countLimit: 100, clock: clock)))
            try await app.cache.set("short", to: "lived", expiresIn: .seconds(1))
            try await app.cache.set("long", to: "lived", expiresIn: .minutes(1))
            try await app.cache.set("forever", to: "lived")
            #expect(try await app.cache.get("short", as: String.self) == "lived")
            clock.advance(by: .seconds(1))
            #expect(try await app.cache.get("short", as: String.self) == nil)
            #expect(try await app.cache.get("long", as: String.self) == "lived")
            clock.advance(by: .seconds(59))
            #expect(try await app.cache.get("long", as: String.self) == nil)
            clock.advance(by: .seconds(86_400))
            #expect(try await app.cache.get("forever", as: String.self) == "lived")
        }
    }

    @Test func aLifetimeOfZeroRemovesTheKey() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            try await app.cache.set("key", to: "value")
            try await app.cache.set("key", to: "other", expiresIn: .seconds(0))
            #expect(try await app.cache.get("key", as: String.self) == nil)
        }
    }

    @Test func settingNilDeletes() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            try await app.cache.set("a", to: "1")
            try await app.cache.set("a", to: String?.none)
            #expect(try await app.cache.get("a", as: String.self) == nil)
            try await app.cache.set("b", to: "2")
            try await app.cache.delete("b")
            #expect(try await app.cache.get("b", as: String.self) == nil)
        }
    }

    @Test func theCountLimitHolds() async throws {
        try await withApp { (app: Application) async throws in
            let cache = CacheKit.Cache<String, Data>(countLimit: 2, policy: .lru)
            app.caches.use(.cachekit(cache))
            try await app.cache.set("a", to: 1)
            try await app.cache.set("b", to: 2)
            _ = try await app.cache.get("a", as: Int.self)
            try await app.cache.set("c", to: 3)
            #expect(cache.count == 2)
            #expect(try await app.cache.get("b", as: Int.self) == nil)
            #expect(try await app.cache.get("a", as: Int.self) == 1)
            #expect(try await app.cache.get("c", as: Int.self) == 3)
        }
    }

    @Test func everyAccessUsesOneInstance() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            let first = try #require(app.cache as? CacheKitVaporCache)
            let second = try #require(app.cache as? CacheKitVaporCache)
            #expect(first.memory === second.memory)
            try await app.cache.set("shared", to: "yes")
            #expect(first.memory.count == 1)

            let request = Request(application: app, on: app.eventLoopGroup.any())
            let forRequest = try #require(request.cache as? CacheKitVaporCache)
            #expect(forRequest.memory === first.memory)
            #expect(forRequest.eventLoop === request.eventLoop)
            #expect(try await request.cache.get("shared", as: String.self) == "yes")
        }
    }

    @Test func aCustomProviderReplacesTheCache() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            let mine = CacheKit.Cache<String, Data>(countLimit: 10)
            mine.setValue(Data(#""preset""#.utf8), forKey: "preset")
            app.caches.use(
                .init { application in
                    application.caches.use { CacheKitVaporCache(mine, on: $0.eventLoopGroup.any()) }
                }
            )
            #expect(try await app.cache.get("preset", as: String.self) == "preset")
            try await app.cache.set("1", to: "2")
            #expect(mine.count == 2)
        }
    }

    @Test func aTieredCacheKeepsValuesInItsStoreAndClosesItAtShutdown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let wallClock = WallClock.manual(clock)
        let store = try await DiskStore(directory: directory, byteLimit: 1 << 20, clock: wallClock)
        let tiered = TieredCache<String, Data>(
            countLimit: 100,
            store: store,
            codec: .data,
            keys: .description,
            clock: wallClock
        )
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(tiered: tiered))
            try await app.cache.set("ada", to: Profile(name: "Ada", visits: 1), expiresIn: .minutes(1))
            let stored = try #require(try await store.entry(forKey: "ada"))
            #expect(try JSONDecoder().decode(Profile.self, from: stored.value) == Profile(name: "Ada", visits: 1))

            tiered.memory.removeAll()
            #expect(try await app.cache.get("ada", as: Profile.self) == Profile(name: "Ada", visits: 1))
            clock.advance(by: .seconds(60))
            #expect(try await app.cache.get("ada", as: Profile.self) == nil)

            try await app.cache.set("grace", to: "hopper")
            try await app.cache.set("grace", to: String?.none)
            #expect(try await store.entry(forKey: "grace") == nil)
        }
        await #expect(throws: CacheStoreError.self) { try await store.usage() }
    }

    @Test func routesReadAndWriteThroughTheRequestsCache() async throws {
        try await withApp { (app: Application) async throws in
            app.caches.use(.cachekit(countLimit: 100))
            app.put("values", ":key") { request async throws -> HTTPStatus in
                let key = try request.parameters.require("key")
                try await request.cache.set(key, to: request.body.string, expiresIn: .minutes(5))
                return .noContent
            }
            app.get("values", ":key") { request async throws -> String in
                let key = try request.parameters.require("key")
                guard let value = try await request.cache.get(key, as: String.self) else { throw Abort(.notFound) }
                return value
            }
            app.delete("values", ":key") { request async throws -> HTTPStatus in
                try await request.cache.delete(try request.parameters.require("key"))
                return .noContent
            }
            let tester = try app.testing()
            try await tester.test(.GET, "values/colour") { #expect($0.status == .notFound) }
            try await tester.test(.PUT, "values/colour", body: ByteBuffer(string: "teal")) {
                #expect($0.status == .noContent)
            }
            try await tester.test(.GET, "values/colour") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == "teal")
            }
            try await tester.test(.DELETE, "values/colour") { #expect($0.status == .noContent) }
            try await tester.test(.GET, "values/colour") { #expect($0.status == .notFound) }
        }
    }
}
