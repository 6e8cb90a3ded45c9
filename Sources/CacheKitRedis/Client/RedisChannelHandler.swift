#if Redis
import NIOCore

/// The pipeline of one Redis connection: writes commands as they come, keeps a FIFO of the promises
/// still waiting for their replies, and hands each reply to the oldest one.
///
/// Pushes are no replies: RESP3's `>` frames, and in RESP2 the `message` arrays of a subscribed
/// connection, go to `onPush` instead of the FIFO. The confirmations of `SUBSCRIBE` and its kin,
/// pushes in RESP3 and arrays in RESP2, one per channel, complete the command that asked for them.
///
/// Every member is used on the channel's event loop only (hence `@unchecked Sendable`: the
/// connection reaches it through `eventLoop.execute`). Promises are completed from here, where no
/// lock is held.
final class RedisChannelHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What completes a command.
    private enum Expectation {
        /// One reply.
        case reply
        /// Confirmations of this kind (`subscribe`, `unsubscribe`, ...): `remaining` of them, or, for
        /// an unsubscription from everything, until the subscription count reaches zero.
        case confirmations(kind: String, remaining: Int?)
    }

    private struct Pending {
        var id: UInt64
        var command: String
        var expectation: Expectation
        var promise: EventLoopPromise<RESPValue>
        var timeout: Scheduled<Void>?
        var confirmations: [RESPValue] = []
    }

    let eventLoop: any EventLoop
    private let onPush: @Sendable (RESPValue) -> Void
    private var decoder: RESPDecoder
    private var context: ChannelHandlerContext?
    private var received: ByteBuffer?
    private var pending = CircularBuffer<Pending>()
    private var nextID: UInt64 = 0
    private var isRESP3 = false
    private var subscriptionCount = 0
    /// Why the connection closed (or is closing), once it is.
    private(set) var closeReason: RedisError?
    private var closeWaiter: EventLoopPromise<RedisError?>?
    private var closeWaiterTimer: Scheduled<Void>?

    init(eventLoop: any EventLoop, limits: RedisReplyLimits, onPush: @escaping @Sendable (RESPValue) -> Void) {
        self.eventLoop = eventLoop
        self.decoder = RESPDecoder(limits: limits)
        self.onPush = onPush
    }

    // MARK: Commands

    /// Writes a command and queues its promise; fails it at once when the connection is closed.
    func send(
        _ command: String,
        _ arguments: [RedisArgument],
        timeout: Duration,
        promise: EventLoopPromise<RESPValue>
    ) {
        eventLoop.assertInEventLoop()
        guard closeReason == nil, let context else {
            promise.fail(closeReason ?? RedisError.connectionClosed(reason: "the connection is not open"))
            return
        }
        let id = nextID
        nextID &+= 1
        let expectation = Self.expectation(command, arguments)
        let scheduled = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            timedOut(id, command: command, after: timeout)
        }
        pending.append(
            Pending(id: id, command: command, expectation: expectation, promise: promise, timeout: scheduled)
        )
        var buffer = context.channel.allocator.buffer(
            capacity: RESPEncoder.encodedLength(command, arguments)
        )
        RESPEncoder.encode(command, arguments, into: &buffer)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// Completes `promise` with the reason once the connection closes, or with `nil` after `timeout`.
    func waitForClose(timeout: Duration, promise: EventLoopPromise<RedisError?>) {
        eventLoop.assertInEventLoop()
        if let closeReason {
            promise.succeed(closeReason)
            return
        }
        closeWaiterTimer?.cancel()
        closeWaiter?.succeed(nil)
        closeWaiter = promise
        closeWaiterTimer = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            let waiter = closeWaiter
            closeWaiter = nil
            closeWaiterTimer = nil
            waiter?.succeed(nil)
        }
    }

    /// Closes the connection; the commands in flight fail with `reason`'s connection-closed error.
    func close(reason: RedisError) {
        eventLoop.assertInEventLoop()
        if closeReason == nil { closeReason = reason }
        context?.close(promise: nil)
    }

    private static func expectation(_ command: String, _ arguments: [RedisArgument]) -> Expectation {
        switch command.uppercased() {
        case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE":
            return .confirmations(kind: command.lowercased(), remaining: max(1, arguments.count))
        case "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE":
            return .confirmations(kind: command.lowercased(), remaining: arguments.isEmpty ? nil : arguments.count)
        default:
            return .reply
        }
    }

    private func timedOut(_ id: UInt64, command: String, after timeout: Duration) {
        guard let index = pending.firstIndex(where: { $0.id == id }) else { return }
        let entry = pending.remove(at: index)
        entry.promise.fail(RedisError.timeout(command: command, after: timeout))
        // The replies still to come can no longer be matched to their commands.
        close(reason: .connectionClosed(reason: "an earlier command (\(command)) timed out"))
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if received == nil || received!.readableBytes == 0 {
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        while closeReason == nil, var buffer = received {
            received = nil
            let value: RESPValue?
            do {
                value = try decoder.decode(&buffer)
            } catch {
                close(reason: error)
                return
            }
            if buffer.readableBytes > 0 {
                // Reclaim what was read once it is most of the buffer, so the buffer does not grow with
                // everything ever received.
                if buffer.readerIndex > 64 * 1024 && buffer.readerIndex > buffer.readableBytes {
                    buffer.discardReadBytes()
                }
                received = buffer
            }
            guard let value else { return }
            handle(value)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if closeReason == nil { closeReason = .connectionClosed(reason: "the server closed the connection") }
        failAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        close(reason: .connectionClosed(reason: "\(error)"))
    }

    private func failAll() {
        let reason = closeReason ?? .connectionClosed(reason: "the connection closed")
        let error: RedisError
        switch reason {
        case .connectionClosed, .closed: error = reason
        default: error = .connectionClosed(reason: reason.description)
        }
        while let entry = pending.popFirst() {
            entry.timeout?.cancel()
            if case .protocolViolation = reason {
                entry.promise.fail(reason)
            } else {
                entry.promise.fail(error)
            }
        }
        closeWaiterTimer?.cancel()
        closeWaiterTimer = nil
        let waiter = closeWaiter
        closeWaiter = nil
        waiter?.succeed(reason)
    }

    // MARK: Replies and pushes

    private static let confirmationKinds: Set<String> = [
        "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
    ]
    private static let messageKinds: Set<String> = ["message", "pmessage", "smessage"]

    private func handle(_ value: RESPValue) {
        switch value {
        case .push(let elements):
            if let kind = Self.kind(elements), Self.confirmationKinds.contains(kind), confirm(kind, elements) {
                return
            }
            onPush(value)
        case .array(let elements) where !isRESP3:
            if let kind = Self.kind(elements) {
                if Self.confirmationKinds.contains(kind), confirm(kind, elements) { return }
                if subscriptionCount > 0 && Self.messageKinds.contains(kind) {
                    onPush(.push(elements))
                    return
                }
            }
            reply(value)
        default:
            reply(value)
        }
    }

    private static func kind(_ elements: [RESPValue]) -> String? {
        guard let first = elements.first else { return nil }
        switch first {
        case .blobString(let bytes) where bytes.count <= 16: return String(decoding: bytes, as: UTF8.self).lowercased()
        case .simpleString(let string) where string.utf8.count <= 16: return string.lowercased()
        default: return nil
        }
    }

    /// Counts a subscription confirmation towards the oldest command when it waits for one of this
    /// kind; `false` when none does.
    private func confirm(_ kind: String, _ elements: [RESPValue]) -> Bool {
        if elements.count >= 3, case .integer(let count) = elements[2] {
            subscriptionCount = Int(clamping: count)
        }
        guard var head = pending.first, case .confirmations(let expected, let remaining) = head.expectation,
            expected == kind
        else { return false }
        head.confirmations.append(.array(elements))
        let done: Bool
        if let remaining {
            head.expectation = .confirmations(kind: expected, remaining: remaining - 1)
            done = remaining <= 1
        } else {
            done = subscriptionCount == 0
        }
        if done {
            pending.removeFirst()
            head.timeout?.cancel()
            head.promise.succeed(.array(head.confirmations))
        } else {
            pending[pending.startIndex] = head
        }
        return true
    }

    private func reply(_ value: RESPValue) {
        guard let entry = pending.popFirst() else {
            close(reason: .protocolViolation("a reply with no command waiting for it: \(value)"))
            return
        }
        entry.timeout?.cancel()
        if case .error(let message) = value {
            entry.promise.fail(RedisError.server(message: message))
            return
        }
        if entry.command.uppercased() == "HELLO", case .map = value {
            isRESP3 = true
        }
        entry.promise.succeed(value)
    }
}
#endif
