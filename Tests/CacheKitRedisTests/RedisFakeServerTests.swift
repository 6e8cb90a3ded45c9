#if Redis
import CacheKitRedis
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A server that answers each read with the next of its replies (a read holds one command while the
/// client waits for each reply), then closes the connection after the last one.
private final class ScriptedServerHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var replies: [String]
    private let received: NIOLockedValueBox<[String]>

    init(replies: [String], received: NIOLockedValueBox<[String]>) {
        self.replies = replies
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        received.withLockedValue { $0.append(String(buffer: bytes)) }
        guard !replies.isEmpty else { return }
        let buffer = context.channel.allocator.buffer(string: replies.removeFirst())
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        if replies.isEmpty {
            context.close(promise: nil)
        }
    }
}

struct RedisFakeServerTests {
    /// Runs `body` with the port of a scripted server; returns what the server received.
    @discardableResult
    private static func withFakeServer(
        replies: [String],
        _ body: (Int) async throws -> Void
    ) async throws -> [String] {
        let received = NIOLockedValueBox<[String]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedServerHandler(replies: replies, received: received)
                    )
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
        return received.withLockedValue { $0 }
    }

    @Test("a push connection that a server keeps closing after its setup reconnects with a growing delay")
    func aFlappingServerMeetsAGrowingBackoff() async throws {
        // Each connection (RESP2, no greeting): the setup's PING answered, then closed.
        try await Self.withFakeServer(replies: ["+PONG\r\n"]) { port in
            let configuration = RedisConfiguration(
                port: port,
                reconnectBackoff: RedisBackoff(initial: .milliseconds(10), maximum: .seconds(10)),
                protocolVersion: .resp2
            )
            let armed = NIOLockedValueBox(0)
            let connection = RedisPushConnection(configuration: configuration, setup: [["PING"]]) { event in
                if case .armed = event { armed.withLockedValue { $0 += 1 } }
            }
            // Delays of 10, 20, 40, … ms: 8 connections take 1,270 ms of delays at least. Without
            // the growth each would follow the last after 10 ms. A loaded machine makes fewer.
            try await Task.sleep(for: .seconds(1))
            await connection.close()
            let connections = armed.withLockedValue { $0 }
            #expect(connections <= 8, "\(connections) connections in a second")
        }
    }

    @Test func aServerWithoutHelloIsSpokenToInRESP2() async throws {
        let received = try await Self.withFakeServer(
            replies: ["-ERR unknown command 'HELLO', with args beginning with: '3'\r\n", "+OK\r\n", "+PONG\r\n"]
        ) { port in
            let client = RedisClient(configuration: RedisConfiguration(port: port, password: "pw"))
            try await client.ping()
            await client.close()
        }
        #expect(received.count == 3)
        #expect(received.first?.contains("HELLO") == true)
        #expect(received.dropFirst().first == "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n")
    }

    @Test func aServerRefusingRESP3FailsAForcedRESP3Connection() async throws {
        try await Self.withFakeServer(replies: ["-NOPROTO unsupported protocol version\r\n", "+PONG\r\n"]) { port in
            let client = RedisClient(configuration: RedisConfiguration(port: port, protocolVersion: .resp3))
            await #expect(throws: RedisError.server(message: "NOPROTO unsupported protocol version")) {
                try await client.ping()
            }
            await client.close()
        }
    }

    @Test(arguments: ["$10\r\nabc", "*3\r\n:1\r\n", "", "+OK"])
    func aConnectionClosedMidReplyFailsTheCommand(reply: String) async throws {
        try await Self.withFakeServer(replies: [reply]) { port in
            let client = RedisClient(
                configuration: RedisConfiguration(port: port, commandTimeout: .seconds(60), protocolVersion: .resp2)
            )
            do {
                _ = try await client.send("GET", ["key"])
                Issue.record("a half reply cannot succeed")
            } catch {
                // Failed by the close: the command's timeout would give `.timeout`.
                #expect(isConnectionClosed(error), "\(error)")
            }
            await client.close()
        }
    }

    @Test func aMalformedReplyIsAProtocolViolation() async throws {
        try await Self.withFakeServer(replies: ["?garbage\r\n"]) { port in
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
#endif
