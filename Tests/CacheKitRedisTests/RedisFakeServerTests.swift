import CacheKitRedis
import NIOCore
import NIOPosix
import Testing

/// A server that answers the first command with the first bytes of a reply, then closes.
private final class HalfReplyHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let reply: String

    init(reply: String) {
        self.reply = reply
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = context.channel.allocator.buffer(string: reply)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        context.close(promise: nil)
    }
}

struct RedisFakeServerTests {
    private static func withFakeServer(
        reply: String,
        _ body: (Int) async throws -> Void
    ) async throws {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(HalfReplyHandler(reply: reply))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = try #require(channel.localAddress?.port)
        do {
            try await body(port)
        } catch {
            try await channel.close()
            throw error
        }
        try await channel.close()
    }

    @Test(arguments: ["$10\r\nabc", "*3\r\n:1\r\n", "", "+OK"])
    func aConnectionClosedMidReplyFailsTheCommand(reply: String) async throws {
        try await Self.withFakeServer(reply: reply) { port in
            let client = RedisClient(
                configuration: RedisConfiguration(port: port, commandTimeout: .seconds(10), protocolVersion: .resp2)
            )
            let started = ContinuousClock.now
            do {
                _ = try await client.send("GET", ["key"])
                Issue.record("a half reply cannot succeed")
            } catch {
                #expect(isConnectionClosed(error), "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            await client.close()
        }
    }

    @Test func aMalformedReplyIsAProtocolViolation() async throws {
        try await Self.withFakeServer(reply: "?garbage\r\n") { port in
            let client = RedisClient(configuration: RedisConfiguration(port: port, protocolVersion: .resp2))
            do {
                _ = try await client.send("GET", ["key"])
                Issue.record("garbage cannot be a reply")
            } catch {
                guard case .protocolViolation = error as? RedisError else {
                    Issue.record("expected a protocol violation, got \(error)")
                    return
                }
            }
            await client.close()
        }
    }
}
