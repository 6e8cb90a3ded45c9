#if Redis
import CacheKit
import CacheKitRedis
import Foundation
import Synchronization
import Testing

@Suite("RedisStore", .enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct RedisStoreTests {
    let clock = ManualClock()
    var wall: WallClock { .manual(clock) }

    @Test func entriesRoundTripUnderThePrefix() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let store = RedisStore(
            configuration: server.configuration(),
            keyPrefix: "app:",
            invalidation: .none,
            clock: wall
        )
        let client = RedisClient(configuration: server.configuration())
        defer { Task { await client.close() } }
        try await client.set("other", to: Array("outside the prefix".utf8))

        #expect(try await store.entry(forKey: "a") == nil)
        try await store.setEntry(Data("alpha".utf8), forKey: "a", expiresAt: nil)
        try await store.setEntry(Data("beta!".utf8), forKey: "b", expiresAt: nil)
        #expect(try await store.entry(forKey: "a") == StoredEntry(value: Data("alpha".utf8), expiresAt: nil))
        #expect(try await client.get("app:a") != nil)
        #expect(try await store.usage() == CacheStoreUsage(count: 2, bytes: 10))

        #expect(try await store.removeEntry(forKey: "a"))
        #expect(try await !store.removeEntry(forKey: "a"))
        #expect(try await store.entry(forKey: "a") == nil)

        try await store.removeAll()
        #expect(try await store.usage() == CacheStoreUsage(count: 0, bytes: 0))
        #expect(try await client.get("other") == Array("outside the prefix".utf8))
        try await store.close()
    }

    @Test("usage counts every entry and byte over several pages of keys, and none outside the prefix")
    func usageOverManyPages() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let store = RedisStore(configuration: server.configuration(), keyPrefix: "app:", invalidation: .none)
        let client = RedisClient(configuration: server.configuration())
        defer { Task { await client.close() } }
        try await client.set("other", to: Array("outside the prefix".utf8))
        var bytes = 0
        for index in 0..<2_500 {
            let value = Data(repeating: UInt8(index % 251), count: index % 7)
            bytes += value.count
            try await store.setEntry(value, forKey: "k\(index)", expiresAt: nil)
        }
        #expect(try await store.usage() == CacheStoreUsage(count: 2_500, bytes: bytes))
        try await store.close()
    }

    @Test func aPrefixWithGlobCharactersRemovesOnlyItsOwnKeys() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let star = RedisStore(configuration: server.configuration(), keyPrefix: "a*[", invalidation: .none)
        let plain = RedisStore(configuration: server.configuration(), keyPrefix: "ab", invalidation: .none)
        try await star.setEntry(Data([1]), forKey: "x", expiresAt: nil)
        try await plain.setEntry(Data([2]), forKey: "x", expiresAt: nil)
        try await star.removeAll()
        #expect(try await star.entry(forKey: "x") == nil)
        #expect(try await plain.entry(forKey: "x")?.value == Data([2]))
        try await star.close()
        try await plain.close()
    }

    @Test func deadlinesHoldOnTheStoresClockAndRedisExpiresTheKeyToo() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let store = RedisStore(configuration: server.configuration(), keyPrefix: "t:", invalidation: .none, clock: wall)
        let client = RedisClient(configuration: server.configuration())
        defer { Task { await client.close() } }
        let deadline = wall.now().addingTimeInterval(60)
        try await store.setEntry(Data("v".utf8), forKey: "k", expiresAt: deadline)
        let entry = try #require(try await store.entry(forKey: "k"))
        #expect(abs(entry.expiresAt!.timeIntervalSince(deadline)) < 0.002)
        // Redis frees the key itself after the same lifetime.
        guard case .integer(let remaining) = try await client.send("PTTL", ["t:k"]) else {
            Issue.record("PTTL did not answer an integer")
            return
        }
        #expect((50_000...60_000).contains(remaining))

        clock.advance(by: .seconds(61))
        #expect(try await store.entry(forKey: "k") == nil)
        // A deadline already past removes the key.
        try await store.setEntry(Data("old".utf8), forKey: "k", expiresAt: wall.now().addingTimeInterval(-1))
        #expect(try await client.get("t:k") == nil)
        try await store.close()
    }

    @Test func aValueWithoutTheStoresHeaderIsAReportedMissAndStaysInPlace() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let problems = Mutex<[CacheStoreProblem]>([])
        let store = RedisStore(configuration: server.configuration(), keyPrefix: "p:", invalidation: .none) { problem in
            problems.withLock { $0.append(problem) }
        }
        let client = RedisClient(configuration: server.configuration())
        defer { Task { await client.close() } }
        try await client.set("p:foreign", to: Array("written by another program".utf8))
        try await client.set("p:short", to: [0x43])
        #expect(try await store.entry(forKey: "foreign") == nil)
        #expect(try await store.entry(forKey: "short") == nil)
        let reported = problems.withLock { $0 }
        #expect(reported.map(\.key) == ["foreign", "short"])
        guard case .corrupted(_, let reason)? = reported.first?.error else {
            Issue.record("expected a corrupted entry, got \(reported)")
            return
        }
        #expect(reason.contains("CK"))
        #expect(try await client.get("p:foreign") != nil)
        try await store.close()
    }

    @Test func badKeysAndValuesAreRefusedWithTypedErrors() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let store = RedisStore(
            configuration: server.configuration(),
            keyPrefix: "e:",
            invalidation: .none,
            maximumValueBytes: 100
        )
        await #expect(throws: CacheStoreError.tooLarge(key: "big", bytes: 101, limit: 100)) {
            try await store.setEntry(Data(count: 101), forKey: "big", expiresAt: nil)
        }
        await #expect(throws: CacheStoreError.self) { try await store.entry(forKey: "") }
        try await store.close()
        await #expect(throws: CacheStoreError.closed(path: store.path)) { try await store.entry(forKey: "k") }
        try await store.close()  // twice is harmless
    }

    @Test func aServerThatIsDownOrRefusesGivesTypedErrors() async throws {
        let server = try await RedisServer.start(password: "s3cret")
        let configuration = server.configuration { $0.commandTimeout = .seconds(2) }
        let store = RedisStore(configuration: configuration, keyPrefix: "d:", invalidation: .none)
        try await store.setEntry(Data([1]), forKey: "k", expiresAt: nil)
        #expect(try await store.entry(forKey: "k")?.value == Data([1]))

        var wrong = configuration
        wrong.password = "wrong"
        let refused = RedisStore(configuration: wrong, keyPrefix: "d:", invalidation: .none)
        do {
            _ = try await refused.entry(forKey: "k")
            Issue.record("a wrong password was accepted")
        } catch {
            switch error {
            case .serverError(_, let message): #expect(message.contains("WRONGPASS") || message.contains("invalid"))
            case .unavailable(_, let reason): #expect(reason.contains("WRONGPASS") || reason.contains("invalid"))
            default: Issue.record("unexpected error \(error)")
            }
        }
        try await refused.close()

        server.stop()
        do {
            _ = try await store.entry(forKey: "k")
            Issue.record("a read from a stopped server succeeded")
        } catch {
            guard case .unavailable(let path, _) = error else {
                Issue.record("expected unavailable, got \(error)")
                return
            }
            #expect(path == "redis://127.0.0.1:\(server.port)/0")
        }
        try await store.close()
    }
}
#endif
