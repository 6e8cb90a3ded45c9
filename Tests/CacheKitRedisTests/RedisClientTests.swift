import CacheKitRedis
import Testing

@Suite(.enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct RedisClientTests {
    @Test func setGetAndDelete() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration())
        try await client.ping()
        try await client.set("greeting", to: Array("hello".utf8))
        #expect(try await client.get("greeting") == Array("hello".utf8))
        #expect(try await client.get("missing") == nil)
        #expect(try await client.mget(["greeting", "missing"]) == [Array("hello".utf8), nil])
        #expect(try await client.del(["greeting", "missing"]) == 1)
        #expect(try await client.get("greeting") == nil)
        await client.close()
        server.stop()
    }
}
