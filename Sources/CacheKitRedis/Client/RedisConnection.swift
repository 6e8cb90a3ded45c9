#if Redis
import NIOCore
import NIOPosix

/// One open, handshaken connection to a Redis server: the channel and its handler.
final class RedisConnection: Sendable {
    let configuration: RedisConfiguration
    private let channel: any Channel
    private let handler: RedisChannelHandler

    private init(configuration: RedisConfiguration, channel: any Channel, handler: RedisChannelHandler) {
        self.configuration = configuration
        self.channel = channel
        self.handler = handler
    }

    /// Whether the channel is still open.
    var isActive: Bool { channel.isActive }

    /// Connects, then greets the server: `HELLO 3` (with `AUTH`) or RESP2's `AUTH`, then `SELECT`.
    static func open(
        _ configuration: RedisConfiguration,
        onPush: @escaping @Sendable (RESPValue) -> Void = { _ in }
    ) async -> Result<RedisConnection, RedisError> {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let handler = RedisChannelHandler(eventLoop: eventLoop, limits: configuration.replyLimits, onPush: onPush)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: configuration.host, port: configuration.port).get()
        } catch {
            return .failure(.connectionFailed(host: configuration.host, port: configuration.port, reason: "\(error)"))
        }
        let connection = RedisConnection(configuration: configuration, channel: channel, handler: handler)
        do {
            try await connection.handshake()
        } catch {
            connection.close()
            return .failure(error)
        }
        return .success(connection)
    }

    private func handshake() async throws(RedisError) {
        var resp2 = configuration.protocolVersion == .resp2
        if !resp2 {
            var arguments: [RedisArgument] = ["3"]
            if let password = configuration.password {
                arguments += ["AUTH", RedisArgument(configuration.username ?? "default"), RedisArgument(password)]
            }
            do {
                _ = try await send("HELLO", arguments)
            } catch .server(let message) where configuration.protocolVersion == .automatic && Self.refusesRESP3(message)
            {
                resp2 = true
            }
        }
        if resp2, let password = configuration.password {
            var arguments: [RedisArgument] = []
            if let username = configuration.username { arguments.append(RedisArgument(username)) }
            arguments.append(RedisArgument(password))
            _ = try await send("AUTH", arguments)
        }
        if configuration.database != 0 {
            _ = try await send("SELECT", [RedisArgument(configuration.database)])
        }
    }

    /// Whether an error reply to `HELLO 3` means the server speaks RESP2 only.
    private static func refusesRESP3(_ message: String) -> Bool {
        message.hasPrefix("NOPROTO") || message.lowercased().contains("unknown command")
    }

    /// Sends a command and waits for its reply, at most the command timeout.
    func send(_ command: String, _ arguments: [RedisArgument]) async throws(RedisError) -> RESPValue {
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        let handler = handler
        let timeout = configuration.commandTimeout
        handler.eventLoop.execute {
            handler.send(command, arguments, timeout: timeout, promise: promise)
        }
        do {
            return try await promise.futureResult.get()
        } catch let error as RedisError {
            throw error
        } catch {
            throw .connectionClosed(reason: "\(error)")
        }
    }

    /// Waits until the connection closes (returning why) or `timeout` passes (returning `nil`).
    func waitForClose(timeout: Duration) async -> RedisError? {
        let promise = channel.eventLoop.makePromise(of: RedisError?.self)
        let handler = handler
        handler.eventLoop.execute {
            handler.waitForClose(timeout: timeout, promise: promise)
        }
        return (try? await promise.futureResult.get()) ?? nil
    }

    /// Closes the connection; the commands in flight fail with ``RedisError/connectionClosed(reason:)``.
    func close(reason: RedisError = .closed) {
        let handler = handler
        handler.eventLoop.execute {
            handler.close(reason: reason)
        }
    }

    /// Closes the connection and waits until it is closed.
    func closeAndWait(reason: RedisError = .closed) async {
        close(reason: reason)
        try? await channel.closeFuture.get()
    }
}
#endif
