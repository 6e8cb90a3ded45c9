/// Where a Redis server is and how to talk to it: address, credentials, database, timeouts,
/// reconnection backoff, pool size, protocol version and reply limits.
///
/// ```swift
/// let client = RedisClient(configuration: RedisConfiguration(host: "127.0.0.1", port: 6379, password: "s3cret"))
/// try await client.set("greeting", to: Array("hello".utf8), expiresAfter: .seconds(60))
/// ```
#if Redis
public struct RedisConfiguration: Sendable, Hashable {
    /// The server's host name or address.
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The ACL user: when set, connections authenticate as `AUTH username password`; when `nil`,
    /// as `AUTH password` (the `default` user).
    public var username: String?
    /// The password; no authentication when `nil`.
    public var password: String?
    /// The database each connection selects (`SELECT`) when it is not 0.
    public var database: Int
    /// How long establishing a TCP connection may take.
    public var connectTimeout: Duration
    /// How long a command waits for its reply. A command without a reply in time fails with
    /// ``RedisError/timeout(command:after:)`` and its connection is closed: the replies still to
    /// come on it could no longer be matched to their commands.
    public var commandTimeout: Duration
    /// The delays between failed connection attempts.
    public var reconnectBackoff: RedisBackoff
    /// The number of connections of a ``RedisClient``.
    public var poolSize: Int
    /// The protocol the connections speak.
    public var protocolVersion: RedisProtocolVersion
    /// The bounds on what a reply may contain.
    public var replyLimits: RedisReplyLimits

    /// A configuration; every parameter has a default that suits a local server.
    public init(
        host: String = "127.0.0.1",
        port: Int = 6379,
        username: String? = nil,
        password: String? = nil,
        database: Int = 0,
        connectTimeout: Duration = .seconds(5),
        commandTimeout: Duration = .seconds(5),
        reconnectBackoff: RedisBackoff = RedisBackoff(),
        poolSize: Int = 2,
        protocolVersion: RedisProtocolVersion = .automatic,
        replyLimits: RedisReplyLimits = RedisReplyLimits()
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.reconnectBackoff = reconnectBackoff
        self.poolSize = max(1, poolSize)
        self.protocolVersion = protocolVersion
        self.replyLimits = replyLimits
    }
}

/// The version of the Redis serialization protocol a connection speaks.
public enum RedisProtocolVersion: Sendable, Hashable {
    /// `HELLO 3`, falling back to RESP2 when the server does not know `HELLO` or refuses version 3.
    case automatic
    /// RESP2 only: no `HELLO`; `AUTH` and `SELECT` are sent as commands of their own.
    case resp2
    /// RESP3 only: a server that refuses `HELLO 3` fails the connection.
    case resp3
}
#endif
