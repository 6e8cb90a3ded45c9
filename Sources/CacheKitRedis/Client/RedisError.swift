/// What a Redis command or connection can fail with.
#if Redis
public enum RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server answered with an error reply; its text exactly as sent (`"WRONGTYPE Operation
    /// against a key holding the wrong kind of value"`, `"NOAUTH Authentication required."`).
    case server(message: String)
    /// No connection could be established (or the client is backing off after failed attempts).
    case connectionFailed(host: String, port: Int, reason: String)
    /// The connection closed while this command was in flight: the command may or may not have run.
    case connectionClosed(reason: String)
    /// No reply came within the command timeout; the connection was closed.
    case timeout(command: String, after: Duration)
    /// The server sent something that is not RESP or exceeds ``RedisReplyLimits``.
    case protocolViolation(String)
    /// The reply has a type this command does not answer with.
    case unexpectedReply(command: String, reply: String)
    /// The client or connection was closed by its owner.
    case closed

    /// A sentence describing the error.
    public var description: String {
        switch self {
        case .server(let message): return "Redis error reply: \(message)"
        case .connectionFailed(let host, let port, let reason):
            return "cannot connect to Redis at \(host):\(port): \(reason)"
        case .connectionClosed(let reason): return "the Redis connection closed with the command in flight: \(reason)"
        case .timeout(let command, let after): return "no reply to \(command) within \(after)"
        case .protocolViolation(let detail): return "Redis protocol violation: \(detail)"
        case .unexpectedReply(let command, let reply): return "unexpected reply to \(command): \(reply)"
        case .closed: return "the Redis client is closed"
        }
    }
}
#endif
