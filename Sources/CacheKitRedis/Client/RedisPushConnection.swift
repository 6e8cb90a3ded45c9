#if Redis
import CacheKit
import Synchronization

/// A dedicated connection for what the server pushes: client-tracking invalidations and pub/sub
/// messages, delivered as ``RedisPushEvent``s.
///
/// ```swift
/// let push = RedisPushConnection(
///     configuration: configuration,
///     setup: [["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "app:"], ["SUBSCRIBE", "news"]]
/// )
/// for await event in push.events {
///     switch event {
///     case .armed: break                          // pushes flow from here on
///     case .disconnected: nearCache.removeAll()   // pushes may have been missed
///     case .invalidate(let keys): keys.map { nearCache.remove($0) } ?? nearCache.removeAll()
///     case .message(let channel, let payload): print(channel, payload)
///     case .push: break
///     }
/// }
/// ```
///
/// The connection opens in the background at once, runs `setup` after the greeting
/// (`HELLO`/`AUTH`/`SELECT`) and reports ``RedisPushEvent/armed`` when every setup command has
/// succeeded. It pings the server every `pingInterval`; a ping unanswered within
/// ``RedisConfiguration/commandTimeout``, like any other loss, closes it and reports
/// ``RedisPushEvent/disconnected(_:)``; it then reconnects with
/// ``RedisConfiguration/reconnectBackoff``, runs `setup` again and reports `.armed` again. A failed
/// connection attempt or setup is retried in the same way without an event: only an armed
/// connection's loss is reported. The delays grow with each failure, and with each armed
/// connection lost before it stayed up for the backoff's longest delay; one that stayed up that
/// long starts them afresh.
///
/// Client tracking needs RESP3 (``RedisProtocolVersion/automatic`` or ``RedisProtocolVersion/resp3``):
/// in RESP2 a server accepts `CLIENT TRACKING ON` without `REDIRECT` and then sends nothing. In
/// RESP2, invalidations redirected to a connection subscribed to `__redis__:invalidate` are
/// reported as ``RedisPushEvent/invalidate(keys:)`` too.
///
/// `events` is for one consumer; it buffers what the consumer has not read yet, so the consumer
/// should keep reading. ``close()`` ends the connection and finishes `events`.
public final class RedisPushConnection: Sendable {
    /// The configuration the connection uses.
    public let configuration: RedisConfiguration
    /// The commands run on every (re)connection, each a command name followed by its arguments.
    public let setup: [[RedisArgument]]
    /// How often the connection pings the server to detect a silent loss.
    public let pingInterval: Duration
    /// The connection's state changes and the server's pushes, for one consumer (finished at once
    /// when the connection was created with an event handler, which receives them instead).
    public let events: AsyncStream<RedisPushEvent>

    private struct State {
        var connection: RedisConnection?
        var runner: Task<Void, Never>?
        var isClosed = false
    }

    private let continuation: AsyncStream<RedisPushEvent>.Continuation
    /// Where events go: ``events``, or the handler given at creation.
    private let emit: @Sendable (RedisPushEvent) -> Void
    private let state = _Mutex(State())

    /// A push connection that starts connecting at once, in the background.
    ///
    /// - Parameter eventHandler: When given, receives every event instead of ``events``, on the
    ///   connection's own thread and in order, with no lock held: one hop less than a task
    ///   reading ``events``, for callers that only hand the event on. It must not block.
    public init(
        configuration: RedisConfiguration,
        setup: [[RedisArgument]],
        pingInterval: Duration = .seconds(1),
        eventHandler: (@Sendable (RedisPushEvent) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.setup = setup
        self.pingInterval = pingInterval
        let (events, continuation) = AsyncStream.makeStream(of: RedisPushEvent.self)
        (self.events, self.continuation) = (events, continuation)
        if let eventHandler {
            continuation.finish()
            emit = eventHandler
        } else {
            emit = { continuation.yield($0) }
        }
        let runner = Task { [self] in await run() }
        state.withLock { $0.runner = runner }
    }

    /// Sends a command on this connection and returns its reply (RESP3 allows any command while
    /// subscribed; RESP2 only the subscription commands and `PING`).
    public func send(_ command: String, _ arguments: [RedisArgument] = []) async throws(RedisError) -> RESPValue {
        let (connection, isClosed) = state.withLock { ($0.connection, $0.isClosed) }
        guard !isClosed else { throw .closed }
        guard let connection else {
            throw .connectionFailed(host: configuration.host, port: configuration.port, reason: "not connected")
        }
        return try await connection.send(command, arguments)
    }

    /// Closes the connection, stops reconnecting and finishes ``events``.
    public func close() async {
        let (connection, runner) = state.withLock { state in
            state.isClosed = true
            let taken = (state.connection, state.runner)
            state.connection = nil
            return taken
        }
        runner?.cancel()
        await connection?.closeAndWait()
        await runner?.value
        continuation.finish()
    }

    private var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: The connection's life

    private func run() async {
        var failures = 0
        while !isClosed {
            if failures > 0 {
                try? await Task.sleep(for: configuration.reconnectBackoff.delay(afterFailures: failures))
                if isClosed { break }
            }
            let emit = emit
            let opened = await RedisConnection.open(configuration) { value in
                emit(Self.event(for: value))
            }
            guard case .success(let connection) = opened else {
                failures += 1
                continue
            }
            let stored = state.withLock { state in
                guard !state.isClosed else { return false }
                state.connection = connection
                return true
            }
            guard stored else {
                await connection.closeAndWait()
                break
            }
            guard await runSetup(on: connection) else {
                await connection.closeAndWait(reason: .connectionClosed(reason: "setup failed"))
                failures += 1
                continue
            }
            emit(.armed)
            let armedAt = ContinuousClock.now
            let lost = await watch(connection)
            let stable = ContinuousClock.now - armedAt >= configuration.reconnectBackoff.maximum
            await connection.closeAndWait(reason: lost)
            state.withLock { state in
                if state.connection === connection { state.connection = nil }
            }
            if isClosed { break }
            emit(.disconnected(lost))
            // A connection that stayed up for the backoff's longest delay starts the delays
            // afresh; one a server closes sooner counts as another failure, so that a server
            // that keeps accepting and then closing the connection meets a growing delay.
            failures = stable ? 1 : failures + 1
        }
    }

    private func runSetup(on connection: RedisConnection) async -> Bool {
        for command in setup {
            guard let name = command.first else { continue }
            do {
                _ = try await connection.send(String(decoding: name.bytes, as: UTF8.self), Array(command.dropFirst()))
            } catch {
                return false
            }
        }
        return true
    }

    /// Pings until the connection is lost; returns why.
    private func watch(_ connection: RedisConnection) async -> RedisError {
        while true {
            if let reason = await connection.waitForClose(timeout: pingInterval) { return reason }
            if isClosed { return .closed }
            do {
                let reply = try await connection.send("PING", [])
                guard Self.isPong(reply) else {
                    return .unexpectedReply(command: "PING", reply: reply.description)
                }
            } catch {
                return error
            }
        }
    }

    /// `PONG`, or in RESP2 on a subscribed connection `["pong", ""]`.
    private static func isPong(_ reply: RESPValue) -> Bool {
        switch reply {
        case .simpleString(let text): return text == "PONG"
        case .array(let elements): return elements.first?.string?.lowercased() == "pong"
        default: return false
        }
    }

    /// The event for a push the handler received.
    static func event(for value: RESPValue) -> RedisPushEvent {
        guard case .push(let elements) = value else { return .push([value]) }
        guard let kind = elements.first?.string?.lowercased() else { return .push(elements) }
        switch kind {
        case "invalidate" where elements.count == 2:
            return invalidation(elements[1]) ?? .push(elements)
        case "message" where elements.count == 3, "smessage" where elements.count == 3:
            return message(channel: elements[1], payload: elements[2]) ?? .push(elements)
        case "pmessage" where elements.count == 4:
            return message(channel: elements[2], payload: elements[3]) ?? .push(elements)
        default:
            return .push(elements)
        }
    }

    private static func invalidation(_ keys: RESPValue) -> RedisPushEvent? {
        switch keys {
        case .null: return .invalidate(keys: nil)
        case .array(let elements), .set(let elements):
            var names: [String] = []
            for element in elements {
                guard let name = element.string else { return nil }
                names.append(name)
            }
            return .invalidate(keys: names)
        default: return nil
        }
    }

    private static func message(channel: RESPValue, payload: RESPValue) -> RedisPushEvent? {
        guard let channel = channel.string else { return nil }
        // RESP2 tracking redirected to this connection arrives on this channel.
        if channel == "__redis__:invalidate", let event = invalidation(payload) { return event }
        guard let bytes = payload.bytes else { return nil }
        return .message(channel: channel, payload: bytes)
    }
}

/// What a ``RedisPushConnection`` reports: its state, and the pushes the server sends it.
public enum RedisPushEvent: Sendable, Hashable {
    /// Connected, and every setup command has succeeded: pushes flow from here on (after each
    /// reconnection too).
    case armed
    /// The connection was lost (closed, reset, a ping unanswered within the command timeout): any push
    /// sent since the last `.armed` may be lost, so a near cache should drop what it holds.
    case disconnected(RedisError)
    /// A client-tracking invalidation: these keys changed; `nil` means every key (`FLUSHALL`,
    /// `FLUSHDB`).
    case invalidate(keys: [String]?)
    /// A pub/sub message on `channel` (for a pattern subscription, the channel it matched).
    case message(channel: String, payload: [UInt8])
    /// Any other push, its elements as sent.
    case push([RESPValue])
}
#endif
