#if Redis
import Testing

@testable import CacheKitRedis

struct RedisPushEventTests {
    private static func blob(_ text: String) -> RESPValue { .blobString(Array(text.utf8)) }

    @Test func invalidationsBecomeKeys() {
        let keys = RedisPushConnection.event(
            for: .push([Self.blob("invalidate"), .array([Self.blob("a"), Self.blob("b")])])
        )
        #expect(keys == .invalidate(keys: ["a", "b"]))
        #expect(RedisPushConnection.event(for: .push([Self.blob("invalidate"), .null])) == .invalidate(keys: nil))
    }

    @Test func messagesBecomeChannelAndPayload() {
        #expect(
            RedisPushConnection.event(for: .push([Self.blob("message"), Self.blob("news"), Self.blob("hi")]))
                == .message(channel: "news", payload: Array("hi".utf8))
        )
        #expect(
            RedisPushConnection.event(
                for: .push([Self.blob("pmessage"), Self.blob("n*"), Self.blob("news"), Self.blob("hi")])
            ) == .message(channel: "news", payload: Array("hi".utf8))
        )
        // RESP2 tracking redirected to a subscribed connection.
        #expect(
            RedisPushConnection.event(
                for: .push([Self.blob("message"), Self.blob("__redis__:invalidate"), .array([Self.blob("k")])])
            ) == .invalidate(keys: ["k"])
        )
    }

    @Test func otherPushesPassThrough() {
        let other: [RESPValue] = [Self.blob("tracking-redir-broken"), .integer(5)]
        #expect(RedisPushConnection.event(for: .push(other)) == .push(other))
        let malformed: [RESPValue] = [Self.blob("invalidate"), .integer(1)]
        #expect(RedisPushConnection.event(for: .push(malformed)) == .push(malformed))
    }
}
#endif
